#!/usr/bin/env bash
# Measure the shipped plans into one dataset, interleaved in chunks, so that a campaign cut short
# (a session's end, a Slurm time limit) still covers every plan, and the noise-floor repeats are
# spread over the whole stretch. Resumable: run it again and it carries on where it stopped.
#
#   scripts/campaign-loop.sh DB [campaign options...]
#   e.g. scripts/campaign-loop.sh data/dnncast-cpu2.db --cpus 1 --threads 1   # one core, the other busy
#        scripts/campaign-loop.sh data/dnncast-cpu2.db --cpus 0-1              # the whole idle machine
#
# Environment: CHUNK (runs per plan per turn, default 30), PLANS (default: synthetic-quick
# synthetic-quick-b zoo-quick zoo-cnn synthetic noise-floor), DNNCAST (default build/dnncast). Progress goes to stdout, one line per run.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
if [[ $# -lt 1 || "$1" == -* ]]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
db="$1"
shift
chunk="${CHUNK:-30}"
dnncast="${DNNCAST:-${here}/build/dnncast}"
read -r -a plans <<<"${PLANS:-synthetic-quick synthetic-quick-b zoo-quick zoo-cnn synthetic noise-floor}"

while true; do
  measured_this_turn=0
  for plan in "${plans[@]}"; do
    # The noise-floor plan gets a third of a chunk: its repeats should span the whole campaign.
    runs="${chunk}"
    [[ "${plan}" == noise-floor ]] && runs=$(( (chunk + 2) / 3 ))
    log="$(mktemp)"
    "${dnncast}" campaign "${here}/data/plans/${plan}.json" --db "${db}" --max-runs "${runs}" --progress lines "$@" \
      2>&1 | tee "${log}"
    measured="$(sed -n 's/.*: measured \([0-9][0-9]*\) runs.*/\1/p' "${log}" | tail -1)"
    rm -f "${log}"
    measured_this_turn=$(( measured_this_turn + ${measured:-0} ))
  done
  if [[ "${measured_this_turn}" -eq 0 ]]; then
    echo "campaign-loop: every plan is complete in ${db}"
    break
  fi
done
