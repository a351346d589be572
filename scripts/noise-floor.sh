#!/usr/bin/env bash
# The noise floor of this machine (docs/MEASUREMENT.md): measures a few fixed training
# configurations round-robin for a stretch of time, each measurement in a fresh process
# (`dnncast profile --json`), and reports how far independent repeats of the same configuration
# lie apart, raw and drift-normalised.
#
#   scripts/noise-floor.sh [--minutes M] [--out FILE] [--dnncast PATH]   measure (default 30 min)
#   scripts/noise-floor.sh --analyse FILE                                 print the tables only
#
# Output: one JSON line per measurement (the profile JSON plus "config_name" and "started_at"),
# appended to FILE (default data/noise/noise-<host>-<UTC time>.jsonl), then the analysis.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
minutes=30
out=""
dnncast="${here}/build/dnncast"
analyse_only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --dnncast) dnncast="$2"; shift 2 ;;
    --analyse|--analyze) analyse_only="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "noise-floor.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

analyse() {
  /usr/bin/python3 - "$1" <<'PY'
import itertools, json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
ok = [r for r in rows if r.get("status") == "ok"]
print(f"{len(rows)} measurements ({len(ok)} ok) from {rows[0]['started_at']} to {rows[-1]['started_at']}" if rows else "no measurements")
if not ok:
    sys.exit(0)
env = ok[0]["env"]
print(f"machine: {env['cpu_model']}, {env['cores']} CPUs, {env['memory_bytes'] / 2**30:.1f} GiB, "
      f"libtorch {env['torch_version']} ({env['build_type']}), threads {env['threads']} pinned to CPU {env['cpus']}")
loads = [r["load"]["other_cpus"] for r in ok]
probes = [p for r in ok for p in (r["probe_ms"]["before"], r["probe_ms"]["after"])]
print(f"other processes kept {statistics.median(loads):.2f} CPUs busy (median; p10 {sorted(loads)[len(loads)//10]:.2f}, "
      f"max {max(loads):.2f}) while timing; 1-min loadavg median {statistics.median(r['load']['loadavg_before'] for r in ok):.1f}")
print(f"probe: median {statistics.median(probes):.1f} ms, min {min(probes):.1f}, max {max(probes):.1f} "
      f"(reference {ok[0]['probe_ms']['reference']:.1f} ms)")
print()

def rel(a, b):
    return abs(a - b) / ((a + b) / 2)

def summary(values):
    values = sorted(values)
    if not values:
        return "n/a"
    return f"{100 * statistics.mean(values):.1f}% / {100 * values[len(values) // 2]:.1f}% / {100 * values[int(0.9 * (len(values) - 1))]:.1f}%"

print("| configuration | n | median ms | consecutive repeats: raw | normalised | any two repeats: raw | normalised | within-run p90/p10 |")
print("|---|---|---|---|---|---|---|---|")
every = {"raw_adj": [], "norm_adj": [], "raw_all": [], "norm_all": []}
for name in sorted(set(r["config_name"] for r in ok)):
    runs = [r for r in ok if r["config_name"] == name]
    raw = [r["time_ms"]["median"] for r in runs]
    norm = [r["time_ms_normalised"] for r in runs]
    adj_raw = [rel(a, b) for a, b in zip(raw, raw[1:])]
    adj_norm = [rel(a, b) for a, b in zip(norm, norm[1:])]
    all_raw = [rel(a, b) for a, b in itertools.combinations(raw, 2)]
    all_norm = [rel(a, b) for a, b in itertools.combinations(norm, 2)]
    every["raw_adj"] += adj_raw; every["norm_adj"] += adj_norm
    every["raw_all"] += all_raw; every["norm_all"] += all_norm
    within = statistics.median(r["time_ms"]["p90"] / r["time_ms"]["p10"] - 1 for r in runs)
    print(f"| {name} | {len(runs)} | {statistics.median(raw):.1f} | {summary(adj_raw)} | {summary(adj_norm)} | "
          f"{summary(all_raw)} | {summary(all_norm)} | {100 * within:.1f}% |")
print(f"| **all** | {len(ok)} | | {summary(every['raw_adj'])} | {summary(every['norm_adj'])} | "
      f"{summary(every['raw_all'])} | {summary(every['norm_all'])} | |")
print()
print("Cells: mean / median / p90 of |a - b| / mean(a, b) over pairs of repeats (the median iteration time of")
print("each measurement); 'consecutive' = the next measurement of the same configuration (one round later),")
print("'any two' = every pair over the whole stretch. 'within-run p90/p10' = spread of iterations inside one process.")
PY
}

if [[ -n "${analyse_only}" ]]; then
  analyse "${analyse_only}"
  exit 0
fi

[[ -x "${dnncast}" ]] || { echo "noise-floor.sh: ${dnncast} not found; build first (make build) or pass --dnncast" >&2; exit 2; }
mkdir -p "${here}/data/noise"
[[ -n "${out}" ]] || out="${here}/data/noise/noise-$(hostname)-$(date -u +%Y%m%dT%H%M%SZ).jsonl"

# Small training steps of three families (dense conv, depthwise conv, plain VGG-style), one thread.
configs=(
  "resnet18-b4-32 resnet18 --batch 4 --input 3x32x32"
  "mobilenet_v2-b4-32 mobilenet_v2 --batch 4 --input 3x32x32"
  "squeezenet1_1-b4-64 squeezenet1_1 --batch 4 --input 3x64x64"
)
end=$(( $(date +%s) + minutes * 60 ))
echo "noise-floor.sh: measuring for ${minutes} min into ${out}" >&2
round=0
while [[ $(date +%s) -lt ${end} ]]; do
  for entry in "${configs[@]}"; do
    read -r name model rest <<<"${entry}"
    started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    # shellcheck disable=SC2086
    if json="$("${dnncast}" profile "${model}" ${rest} --threads 1 --budget 3 --json 2>/dev/null)"; then :; fi
    [[ -n "${json}" ]] || { echo "round ${round} ${name}: no output" >&2; continue; }
    /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.pop("repeats",None); d["config_name"]=sys.argv[2]; d["started_at"]=sys.argv[3]; print(json.dumps(d))' \
      "${json}" "${name}" "${started}" >>"${out}"
  done
  round=$((round + 1))
done
analyse "${out}"
