#!/usr/bin/env bash
# The memory simulator against the profiler (docs/MEMORY.md "Validation"): for each case, one real
# training run measured by the profiler (peak bytes of its tracking allocator) beside the simulation
# of the same graph: `dnncast memory MODEL --measure --json`, and the table of all cases.
#
#   scripts/memory-check.sh [--quick] [--zoo | --synthetic] [--exclude MODEL]... [--slice J/N] [--out CSV]
#                           [--dnncast PATH]
#
#   (default)    every zoo CNN at batches 1 and 4 (3x32x32; alexnet 3x64x64, inception_v3 3x96x96, vit_b_16
#                3x224x224 at batches 1 and 2) and 100 synthetic networks (seed s: batch s%8+1, input 3x32x32 /
#                3x48x48 / 3x64x64 by s%3); about an hour on one busy core here
#   --quick      six cases (a minute)
#   --zoo / --synthetic   one half of the sweep
#   --exclude MODEL   leave out that zoo model's cases (make test's slices leave out vit_b_16, whose
#                224x224 runs take 4-8 minutes each here)
#   --slice J/N  the cases dealt into N slices in their order (case i into slice i % N), slice J
#                (1..N) only: what `make test` runs, J chosen by the commit (tests/rotation.h)
#   --out CSV    where rows go as they are measured (default memory-check-<UTC time>.csv in the
#                current folder); --analyse CSV prints the tables of an earlier run
#
# Runs one measurement at a time, each in a child pinned to the CPUs this script may use: on a
# shared machine run it under `taskset -c CPU`. Exit code 1 when a run failed or a simulated peak
# is more than 1% off, 0 otherwise.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
dnncast="${here}/build/dnncast"
out=""
mode="full"
part="both"
analyse_only=""
slice_index=0
slice_count=1
excluded=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) mode="quick"; shift ;;
    --zoo) part="zoo"; shift ;;
    --synthetic) part="synthetic"; shift ;;
    --slice)
      [[ "${2:-}" =~ ^([0-9]+)/([0-9]+)$ ]] && (( BASH_REMATCH[1] >= 1 && BASH_REMATCH[1] <= BASH_REMATCH[2] )) ||
        { echo "memory-check.sh: --slice wants J/N with 1 <= J <= N, got '${2:-}'" >&2; exit 2; }
      slice_index=$((BASH_REMATCH[1] - 1)); slice_count=${BASH_REMATCH[2]}; shift 2 ;;
    --exclude) excluded+=("$2"); shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --dnncast) dnncast="$2"; shift 2 ;;
    --analyse|--analyze) analyse_only="$2"; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "memory-check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

analyse() {
  /usr/bin/python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def table(title, rows, full):
    ok = [r for r in rows if r["status"] == "ok"]
    if not rows:
        return
    errors = [float(r["relative_error"]) for r in ok]
    exact = sum(r["measured_peak_bytes"] == r["simulated_peak_bytes"] for r in ok)
    within = sum(abs(e) <= 0.01 for e in errors)
    worst = max(ok, key=lambda r: abs(float(r["relative_error"])), default=None)
    print(f"**{title}**: {len(rows)} runs, {len(ok)} ok; simulated peak equal to the measured one to the byte: "
          f"{exact}; within 1%: {within}" + (f"; largest error {100 * float(worst['relative_error']):+.4f}% "
          f"({worst['model']} batch {worst['batch']} {worst['input']})" if worst and float(worst["relative_error"]) else ""))
    print()
    shown = rows if full else [r for r in rows if r["status"] != "ok" or r["measured_peak_bytes"] != r["simulated_peak_bytes"]]
    if not shown:
        print("(every run exact; the CSV has all rows)\n")
        return
    print("| model | batch | input | status | measured peak bytes | simulated peak bytes | error |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: |")
    for r in shown:
        error = f"{100 * float(r['relative_error']):+.4f}%" if r["status"] == "ok" else "-"
        print(f"| {r['model']} | {r['batch']} | {r['input']} | {r['status']} | {r['measured_peak_bytes']} | "
              f"{r['simulated_peak_bytes']} | {error} |")
    print()
zoo = [r for r in rows if not r["model"].startswith("synthetic:")]
synthetic = [r for r in rows if r["model"].startswith("synthetic:")]
table("Zoo CNNs", zoo, True)
table("Synthetic networks", synthetic, False)
bad = [r for r in rows if r["status"] != "ok" or abs(float(r["relative_error"])) > 0.01]
sys.exit(1 if bad else 0)
PY
}

if [[ -n "${analyse_only}" ]]; then
  analyse "${analyse_only}"
  exit $?
fi

if [[ ! -x "${dnncast}" ]]; then
  echo "memory-check.sh: ${dnncast} not found; build it (make build) or pass --dnncast PATH" >&2
  exit 2
fi
[[ -n "${out}" ]] || out="memory-check-$(date -u +%Y%m%dT%H%M%SZ).csv"

# Cases: "MODEL BATCH INPUT"
cases=()
if [[ "${mode}" == "quick" ]]; then
  cases=("resnet18 2 3x32x32" "mobilenet_v2 3 3x32x32" "vgg11_bn 2 3x32x32" "synthetic:7 2 3x48x48"
         "synthetic:42 3 3x32x32" "synthetic:77 6 3x64x64")
else
  if [[ "${part}" != "synthetic" ]]; then
    while read -r name family kind rest; do
      [[ "${kind}" == "cnn" ]] || continue
      [[ " ${excluded[*]:-} " == *" ${name} "* ]] && continue
      input="3x32x32"
      batches=(1 4)
      [[ "${name}" == "alexnet" ]] && input="3x64x64"        # its smallest input is 63x63
      [[ "${name}" == "inception_v3" ]] && input="3x96x96"   # its smallest input is 75x75
      [[ "${name}" == "vit_b_16" ]] && input="3x224x224" && batches=(1 2)  # fixed 224x224 input
      for batch in "${batches[@]}"; do cases+=("${name} ${batch} ${input}"); done
    done < <("${dnncast}" inspect --list | tail -n +2)
  fi
  if [[ "${part}" != "zoo" ]]; then
    sizes=(32 48 64)
    for seed in $(seq 0 99); do
      size=${sizes[$((seed % 3))]}
      cases+=("synthetic:${seed} $((seed % 8 + 1)) 3x${size}x${size}")
    done
  fi
fi

if (( slice_count > 1 )); then
  sliced=()
  for index in "${!cases[@]}"; do
    if (( index % slice_count == slice_index )); then sliced+=("${cases[index]}"); fi
  done
  echo "memory-check: slice $((slice_index + 1))/${slice_count} of ${#cases[@]} cases" >&2
  cases=("${sliced[@]}")
fi

echo "model,batch,input,status,measured_peak_bytes,simulated_peak_bytes,relative_error" > "${out}"
echo "memory-check: ${#cases[@]} cases, rows in ${out}" >&2
for entry in "${cases[@]}"; do
  read -r model batch input <<< "${entry}"
  # One real training run (a child process: 2 warm-up iterations, 1 timed) beside the simulation.
  result="$("${dnncast}" memory "${model}" --batch "${batch}" --input "${input}" --threads 1 --measure --json \
            2>/dev/null || true)"
  [[ -n "${result}" ]] || result='{}'
  status="$(jq -r '.measured.status // "error"' <<< "${result}")"
  measured_peak="$(jq -r '.measured.peak_bytes // 0' <<< "${result}")"
  simulated_peak="$(jq -r '.peak_bytes // 0' <<< "${result}")"
  error="$(jq -r '.measured.relative_error // 0' <<< "${result}")"
  echo "${model},${batch},${input},${status},${measured_peak},${simulated_peak},${error}" >> "${out}"
  printf '%-22s batch %-2s %-10s %-6s measured %12s simulated %12s error %s\n' "${model}" "${batch}" "${input}" \
         "${status}" "${measured_peak}" "${simulated_peak}" "${error}" >&2
done
echo >&2
analyse "${out}"
