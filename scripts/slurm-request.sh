#!/usr/bin/env bash
# The Slurm resources one task of a campaign array needs, from the plan itself:
#
#   scripts/slurm-request.sh PLAN.json        # prints e.g. "--cpus-per-task=2 --mem=1332M"
#
# CPUs: the largest thread count of the plan's runs (`dnncast campaign` refuses a run with more
# threads than CPUs it may use). Memory: the memory simulator's peak (`dnncast memory ... --json`,
# required_bytes: parameters, gradients, optimizer state, activations, workspaces) of the plan's
# largest run, times MEM_FACTOR (default 1.5: the heap around the tensors), plus MEM_BASE_MIB
# (default 1024: the campaign process and the measurement's child process each map libtorch; Slurm
# adds up the resident memory of both, about 0.6 GiB seen on small runs). Every array task asks for
# the plan's largest need: Slurm gives one request to all tasks of an array.
#
# The runs are those of `dnncast campaign PLAN --dry-run`, listed shard by shard (a dry run shows 20
# runs at most). Per network, input, optimizer and precision one run is simulated: the plan's largest
# batch with its most threads (the peak grows with both), an upper bound of those runs' peaks. Environment: DNNCAST (default build/dnncast), JOBS (parallel
# simulations, default nproc). Details of every simulated run go to stderr.
set -euo pipefail

plan="${1:?usage: scripts/slurm-request.sh PLAN.json}"
dnncast="${DNNCAST:-build/dnncast}"
mem_factor="${MEM_FACTOR:-1.5}"
mem_base_mib="${MEM_BASE_MIB:-1024}"
jobs="${JOBS:-$(nproc)}"

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
no_db="${work}/none.db"  # never created: a dry run against it lists every run of the plan

listing="$("${dnncast}" campaign "${plan}" --db "${no_db}" --dry-run 2>&1)" || { echo "${listing}" >&2; exit 1; }
header="${listing%%$'\n'*}"
total="$(sed -n 's/.* = \([0-9][0-9]*\) runs;.*/\1/p' <<<"${header}")"
[[ -n "${total}" ]] || { echo "slurm-request.sh: cannot read the run count from: ${header}" >&2; exit 1; }
(( total > 0 )) || { echo "slurm-request.sh: ${plan} has no runs" >&2; exit 1; }
listing_shards=$(( (total + 19) / 20 ))
for (( shard = 0; shard < listing_shards; ++shard )); do
  "${dnncast}" campaign "${plan}" --db "${no_db}" --dry-run --shard "${shard}/${listing_shards}" 2>&1 | tail -n +2
done >"${work}/runs.txt"
listed="$(grep -c ' #[0-9]*$' "${work}/runs.txt" || true)"
if grep -q '\.\.\. and' "${work}/runs.txt" || [[ "${listed}" != "${total}" ]]; then
  echo "slurm-request.sh: listed ${listed} of the ${total} runs of ${plan}" >&2; exit 1
fi

# "  MODEL bBATCH INPUT OPTIMIZER PRECISION tTHREADS #REPEAT" -> per model, input, optimizer and
# precision the largest batch and the most threads (each can only raise the peak).
awk '{ batch = substr($2, 2) + 0; threads = substr($6, 2) + 0; key = $1 " " $3 " " $4 " " $5;
       if (batch > best_batch[key]) best_batch[key] = batch;
       if (threads > best_threads[key]) best_threads[key] = threads }
     END { for (key in best_batch) { split(key, f, " "); print f[1], best_batch[key], f[2], f[3], f[4], best_threads[key] } }' \
  "${work}/runs.txt" | sort >"${work}/largest.txt"
max_threads="$(awk '{ if ($6 > m) m = $6 } END { print m }' "${work}/largest.txt")"

# One simulation per line, JOBS at a time; "required_bytes MODEL bBATCH INPUT OPTIMIZER tTHREADS".
simulate() {
  local model="$1" batch="$2" input="$3" optimizer="$4" precision="$5" threads="$6" shape_option bytes
  if [[ "${input}" == seq* ]]; then shape_option=(--seq "${input#seq}"); else shape_option=(--input "${input}"); fi
  bytes="$("${DNNCAST}" memory "${model}" --batch "${batch}" "${shape_option[@]}" --optimizer "${optimizer}" \
    --precision "${precision}" --threads "${threads}" --json | sed -n 's/^ *"required_bytes": *\([0-9]*\).*/\1/p')"
  [[ -n "${bytes}" ]] || { echo "slurm-request.sh: no simulated peak for ${model} b${batch} ${input}" >&2; return 1; }
  echo "${bytes} ${model} b${batch} ${input} ${optimizer} t${threads}"
}
export -f simulate
export DNNCAST="${dnncast}"
xargs -P "${jobs}" -L 1 bash -c 'simulate "$@"' _ <"${work}/largest.txt" | sort -n >"${work}/peaks.txt"
[[ "$(wc -l <"${work}/peaks.txt")" == "$(wc -l <"${work}/largest.txt")" ]] || {
  echo "slurm-request.sh: a simulation failed" >&2; exit 1; }

read -r peak_bytes peak_run < <(tail -1 "${work}/peaks.txt")
mem_mib="$(awk -v b="${peak_bytes}" -v f="${mem_factor}" -v base="${mem_base_mib}" \
  'BEGIN { m = base + f * b / 1048576; printf "%d", (m == int(m)) ? m : int(m) + 1 }')"
echo "slurm-request.sh: ${plan}: ${total} runs, ${max_threads} threads at most; largest simulated peak" \
  "${peak_bytes} bytes (${peak_run}); --mem = ${mem_base_mib} MiB + ${mem_factor} x peak" >&2
echo "--cpus-per-task=${max_threads} --mem=${mem_mib}M"
