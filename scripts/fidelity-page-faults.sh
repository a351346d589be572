#!/bin/bash
# The executor (`dnncast profile`) and PyTorch's own step (tests/profile/torchvision_step.py) side by side, with each
# process's minor page faults (issue 52: both take their large tensors fresh from the kernel, as many as glibc's heap
# history decides, and the step's time follows the count):
#
#   scripts/fidelity-page-faults.sh [BUILD] [CPU] [ROUNDS] > FILE.tsv
#
# One thread, SGD, --budget 8, both sides pinned to CPU (default 1), ROUNDS (default 3) rounds per workload, the two
# sides of a round back to back. Columns: workload, round, side, the median iteration (ms), iterations (warm-up and
# timed), the whole process's minor faults (start-up included) and faults per iteration. data/noise/fidelity-page-
# faults-epyc-f26m2.tsv is one run.
set -euo pipefail
build=${1:-build}
cpu=${2:-1}
rounds=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo -e "workload\tround\tside\ttime_ms_median\titerations\tminor_faults\tfaults_per_iteration"
for config in "mobilenet_v2 16 3x224x224" "resnet50 32 3x224x224"; do
  set -- $config
  for round in $(seq 1 "$rounds"); do
    for side in executor pytorch; do
      if [ "$side" = executor ]; then
        /usr/bin/time -f "%R" -o "$work/faults" taskset -c "$cpu" "$build/dnncast" profile "$1" --batch "$2" \
          --input "$3" --threads 1 --budget 8 --json >"$work/out.json" 2>/dev/null
      else
        /usr/bin/time -f "%R" -o "$work/faults" taskset -c "$cpu" /usr/bin/python3 \
          "$root/tests/profile/torchvision_step.py" "$1" --batch "$2" --input "$3" --threads 1 --budget 8 \
          >"$work/out.json" 2>/dev/null
      fi
      /usr/bin/python3 - "$work/out.json" "$(tail -1 "$work/faults")" "$1 b$2 $3" "$round" "$side" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
doc = json.loads(text[text.find("{"):])
iterations = doc["time_ms"]["n"] + doc.get("warmup_iterations", 0)
faults = int(sys.argv[2])
print(f"{sys.argv[3]}\t{sys.argv[4]}\t{sys.argv[5]}\t{doc['time_ms']['median']:.1f}\t{iterations}\t{faults}\t{faults // iterations}")
PY
    done
  done
done
