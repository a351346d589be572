#!/usr/bin/env bash
# The cross-host table of docs/RESULTS.md "Calibrating on this host (issue 36)": for each ordered pair of the
# three CPU environments of data/, the first one's predictor set carried to the second by nothing, by
# `calibrate --from-db --budget 20` (the guided-sampling remedy of before) and by the host calibration at 2, 5
# and 10 minutes of the second host's recorded time (`calibrate --from-db --layer-bench`), each scored on the
# second host's runs it did not take, beside that host's noise floor.
#
#   scripts/cross-host.sh [BUILD]      # BUILD: the build folder (default build); about 10 minutes on 2 cores
#
# The EPYC's set is the shipped one (data/predictors/amd-epyc-2cpu); the Zen 3's and the Intel Xeon's are trained
# here from their own data (`dnncast train --layer-bench`, 60 s of AutoML each) into $WORK (default
# /tmp/dnncast-cross-host), where the datasets are decompressed too.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DNNCAST=$BUILD/dnncast
WORK=${WORK:-/tmp/dnncast-cross-host}
mkdir -p "$WORK"
for name in dnncast-cpu2 dnncast-zen3-avx2 zoo-quick-intel-xeon-f6m167 zoo-224-intel-xeon layers-epyc-avx512 \
            layers-zen3-avx2 layers-intel-xeon; do
  [ -f "$WORK/$name.db" ] || xz -dkc "data/$name.db.xz" >"$WORK/$name.db"
done
# The Intel host's whole runs, one dataset: every 1-thread configuration of zoo-quick (32-96 px, batches 1-8; session
# 47, as the Zen 3's) and zoo-224-host (224 px, batches 16-64; session 19). Until session 46 the first part was the 24
# runs of zoo-quick in data/calibrate-intel-xeon.db.xz.
[ -f "$WORK/intel-xeon.db" ] || "$DNNCAST" dataset merge "$WORK/zoo-quick-intel-xeon-f6m167.db" \
  "$WORK/zoo-224-intel-xeon.db" -o "$WORK/intel-xeon.db" >/dev/null
train() {  # NAME DB LAYERS
  [ -f "$WORK/set-$1/time/manifest.json" ] ||
    "$DNNCAST" train --db "$2" --layer-bench "$3" --out "$WORK/set-$1" --budget-s 60 --quiet >"$WORK/train-$1.log" 2>&1
}
train zen3 "$WORK/dnncast-zen3-avx2.db" "$WORK/layers-zen3-avx2.db"
train intel "$WORK/intel-xeon.db" "$WORK/layers-intel-xeon.db"

declare -A SET=([epyc]=data/predictors/amd-epyc-2cpu [zen3]=$WORK/set-zen3 [intel]=$WORK/set-intel)
declare -A RUNS=([epyc]=$WORK/dnncast-cpu2.db [zen3]=$WORK/dnncast-zen3-avx2.db [intel]=$WORK/intel-xeon.db)
declare -A LAYERS=([epyc]=$WORK/layers-epyc-avx512.db [zen3]=$WORK/layers-zen3-avx2.db [intel]=$WORK/layers-intel-xeon.db)

echo "| source -> target | target configurations (noise floor) | none | calibrate --budget 20 | whole runs 2 / 5 / 10 min | whole runs as size anchors 2 / 5 / 10 min | by intensity and size 2 / 5 / 10 min | + probe layers, 5 min | own layers + whole runs, 5 min | inside the 90% interval: none (widened) / 5 min |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for source in epyc zen3 intel; do
  for target in epyc zen3 intel; do
    [ "$source" = "$target" ] && continue
    report=$("$DNNCAST" calibrate --predictor "${SET[$source]}" --from-db "${RUNS[$target]}" --layer-bench "${LAYERS[$target]}" --minutes 2,5,10 --json)
    budget20=$("$DNNCAST" calibrate --predictor "${SET[$source]}" --from-db "${RUNS[$target]}" --budget 20 --draws 5 --json |
      /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.1f%%" % r["guided"]["mape_pct"]["chosen"]["mean"])')
    printf '%s\n' "$report" >"$WORK/report-$source-$target.json"
    /usr/bin/python3 - "$source" "$target" "$budget20" "$WORK/report-$source-$target.json" <<'EOF'
import json, sys
source, target, budget20, path = sys.argv[1:5]
r = json.load(open(path))
b = {x["minutes"]: x for x in r["budgets"]}
shift = " / ".join("%.1f%%" % b[m]["mre_pct"]["shift_only"] if b[m]["mre_pct"]["shift_only"] is not None else "-"
                   for m in (2.0, 5.0, 10.0))
anchored = " / ".join("%.1f%%" % b[m]["mre_pct"]["anchored"] if b[m]["mre_pct"]["anchored"] is not None else "-"
                      for m in (2.0, 5.0, 10.0))
mixed = " / ".join("%.1f%%" % b[m]["mre_pct"]["mixed"] if b[m]["mre_pct"]["mixed"] is not None else "-"
                   for m in (2.0, 5.0, 10.0))
own = b[5.0]["own_layers"] or None
own_cell = "%.1f%% on %d (none %.1f%%)" % (own["mre_pct"], own["scored"], own["none_mre_pct"]) if own else "-"
print("| %s -> %s | %d (%.1f%%) | %.1f%% | %s | %s | %s | %s | %.1f%% | %s | %.0f%% / %.0f%% |" % (
    source, target, r["samples"], r["noise_floor_pct"], r["uncalibrated"]["mre_pct"], budget20, shift, anchored, mixed,
    b[5.0]["mre_pct"]["both"], own_cell, r["uncalibrated"]["within_interval_pct"], b[5.0]["within_interval_pct"]))
EOF
  done
done
