#!/usr/bin/env bash
# Slurm job array for a dnncast campaign: each array task measures one shard of the plan
# (`--shard i/N`: the configurations whose index mod N == i) into its own database; a dependent
# job merges the shards when all tasks are done. Re-submitting a task (or the array) resumes its
# shard. scripts/slurm-submit.sh submits both with the CPUs and memory the plan needs
# (scripts/slurm-request.sh); by hand (docs/SCALE-OUT.md):
#
#   mkdir -p logs
#   array=$(sbatch --parsable --array=0-15 --export=ALL,SHARDS=16 scripts/slurm-campaign.sh data/plans/zoo-cnn.json)
#   sbatch --dependency=afterok:${array} --export=ALL,SHARDS=16 scripts/slurm-campaign.sh --merge data/plans/zoo-cnn.json
#   sbatch --array=5 --export=ALL,SHARDS=16 scripts/slurm-campaign.sh data/plans/zoo-cnn.json   # resume shard 5 alone
#
# Environment: DNNCAST (the binary, default build/dnncast), OUT_DIR (default results/<plan name>),
# MARGIN_S (seconds kept free before the job's time limit to save the shard, default 900), SHARDS
# (the number of shards N; then the array index is the shard index, so one task can be resubmitted
# alone; without it N is the size of the array), MERGED (--merge: the merged dataset, default
# OUT_DIR/<plan name>.db).
#
# SQLite's WAL mode needs a local file system, so the shard is measured on node-local scratch and
# copied back (through `dataset merge`, which writes a consistent file) when the campaign stops.
#SBATCH --job-name=dnncast-campaign
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=12:00:00
#SBATCH --output=logs/%x-%A_%a.out
set -euo pipefail

usage="usage: sbatch --array=0-(N-1) [--export=ALL,SHARDS=N] scripts/slurm-campaign.sh PLAN.json | --merge PLAN.json"
merge=0
if [[ "${1:-}" == "--merge" ]]; then merge=1; shift; fi
plan="${1:?${usage}}"
dnncast="${DNNCAST:-build/dnncast}"
name="$(basename "${plan}" .json)"
out_dir="${OUT_DIR:-results/${name}}"
margin_s="${MARGIN_S:-900}"

# The merge job: every shard complete (as many runs as the plan gives it, all from one environment:
# a shard measured on two node kinds is refused), then one dataset.
if (( merge )); then
  count="${SHARDS:?--merge needs SHARDS=N}"
  merged="${MERGED:-${out_dir}/${name}.db}"
  shards=()
  for (( index = 0; index < count; ++index )); do
    shard_db="${out_dir}/shard-${index}-of-${count}.db"
    [[ -f "${shard_db}" ]] || { echo "merge: ${shard_db} missing: resubmit shard ${index}" >&2; exit 1; }
    header="$("${dnncast}" campaign "${plan}" --db "${out_dir}/none.db" --shard "${index}/${count}" --dry-run 2>&1)"
    planned="$(sed -n 's|.* shard [0-9]*/[0-9]*: \([0-9]*\) runs,.*|\1|p' <<<"${header%%$'\n'*}")"
    stats="$("${dnncast}" dataset stats "${shard_db}")"
    stats="$(grep -m1 '^runs ' <<<"${stats}" || true)"
    have="$(sed -n 's/^runs \([0-9]*\).*/\1/p' <<<"${stats}")"
    environments="$(sed -n 's/.*environments \([0-9]*\).*/\1/p' <<<"${stats}")"
    echo "merge: shard ${index}/${count}: ${have:-?} of ${planned:-?} runs, ${environments:-?} environment(s)"
    [[ -n "${planned}" && "${have}" == "${planned}" ]] || { echo "merge: shard ${index} is incomplete: resubmit it" >&2; exit 1; }
    [[ "${environments}" == "1" ]] || { echo "merge: shard ${index} mixes ${environments} environments" >&2; exit 1; }
    shards+=("${shard_db}")
  done
  rm -f "${merged}.partial"
  "${dnncast}" dataset merge "${shards[@]}" -o "${merged}.partial"
  mv "${merged}.partial" "${merged}"
  "${dnncast}" dataset stats "${merged}"
  exit 0
fi

# 0-based shard index: with SHARDS the array index itself, else its place in the array.
if [[ -n "${SHARDS:-}" ]]; then
  count="${SHARDS}"
  index="${SLURM_ARRAY_TASK_ID:-0}"
  (( index >= 0 && index < count )) || { echo "array index ${index} is not a shard of ${count}" >&2; exit 1; }
else
  count="${SLURM_ARRAY_TASK_COUNT:-1}"
  index=$(( ${SLURM_ARRAY_TASK_ID:-0} - ${SLURM_ARRAY_TASK_MIN:-0} ))
fi
shard_db="${out_dir}/shard-${index}-of-${count}.db"
mkdir -p "${out_dir}" logs

# Seconds left before the job's time limit ("[days-]hours:minutes:seconds" from squeue).
seconds_left() {
  local left days=0 h=0 m=0 s=0
  left="$(squeue -h -j "${SLURM_JOB_ID}" -o %L 2>/dev/null || true)"
  if [[ -z "${left}" || "${left}" == "UNLIMITED" || "${left}" == "NOT_SET" ]]; then echo 0; return; fi
  if [[ "${left}" == *-* ]]; then days="${left%%-*}"; left="${left#*-}"; fi
  IFS=: read -r -a parts <<< "${left}"
  case "${#parts[@]}" in
    3) h="${parts[0]}"; m="${parts[1]}"; s="${parts[2]}" ;;
    2) m="${parts[0]}"; s="${parts[1]}" ;;
    1) s="${parts[0]}" ;;
  esac
  echo $(( 10#${days} * 86400 + 10#${h} * 3600 + 10#${m} * 60 + 10#${s} ))
}

stop_after=0
if [[ -n "${SLURM_JOB_ID:-}" ]]; then
  left="$(seconds_left)"
  if (( left > margin_s )); then stop_after=$(( left - margin_s )); fi
fi

scratch="${SLURM_TMPDIR:-${TMPDIR:-/tmp}}/dnncast-${SLURM_JOB_ID:-local}-${index}"
mkdir -p "${scratch}"
local_db="${scratch}/shard.db"
rm -f "${local_db}" "${local_db}-wal" "${local_db}-shm"
# Resume: start from what earlier submissions of this shard measured.
if [[ -f "${shard_db}" ]]; then "${dnncast}" dataset merge "${shard_db}" -o "${local_db}"; fi

save() {
  "${dnncast}" dataset merge "${local_db}" -o "${shard_db}.partial" && mv "${shard_db}.partial" "${shard_db}"
  rm -rf "${scratch}"
}
trap save EXIT
# scancel and the time limit send SIGTERM: exit through the EXIT trap, which saves what was measured.
trap 'exit 143' TERM INT

echo "shard ${index}/${count} of ${plan} on $(hostname), CPUs $(taskset -cp $$ | sed 's/.*: //'), stop after ${stop_after} s"
# Other jobs must not share these CPUs while measuring (Slurm's cgroup gives this task its own);
# the campaign pins itself to them and records the load from other processes with every run.
"${dnncast}" campaign "${plan}" --db "${local_db}" --shard "${index}/${count}" --stop-after "${stop_after}" \
  --progress lines
