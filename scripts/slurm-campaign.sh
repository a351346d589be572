#!/usr/bin/env bash
# Example Slurm job array for a dnncast campaign: each array task measures one shard of the plan
# (`--shard i/N`: the configurations whose index mod N == i) into its own database; merge the
# shards when all tasks are done. Re-submitting the same array resumes every shard.
#
#   sbatch --array=0-15 scripts/slurm-campaign.sh data/plans/zoo-cnn.json
#   build/dnncast dataset merge results/zoo-cnn/shard-*-of-16.db -o data/zoo-cnn.db
#
# Environment: DNNCAST (the binary, default build/dnncast), OUT_DIR (default results/<plan name>),
# MARGIN_S (seconds kept free before the job's time limit to save the shard, default 900).
#
# SQLite's WAL mode needs a local file system, so the shard is measured on node-local scratch and
# copied back (through `dataset merge`, which writes a consistent file) when the campaign stops.
#SBATCH --job-name=dnncast-campaign
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=12:00:00
#SBATCH --output=logs/%x-%A_%a.out
set -euo pipefail

plan="${1:?usage: sbatch --array=0-(N-1) scripts/slurm-campaign.sh PLAN.json}"
dnncast="${DNNCAST:-build/dnncast}"
name="$(basename "${plan}" .json)"
out_dir="${OUT_DIR:-results/${name}}"
margin_s="${MARGIN_S:-900}"

# 0-based shard index over the whole array, whatever --array range was used.
count="${SLURM_ARRAY_TASK_COUNT:-1}"
index=$(( ${SLURM_ARRAY_TASK_ID:-0} - ${SLURM_ARRAY_TASK_MIN:-0} ))
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

echo "shard ${index}/${count} of ${plan} on $(hostname), CPUs $(taskset -cp $$ | sed 's/.*: //'), stop after ${stop_after} s"
# Other jobs must not share these CPUs while measuring (Slurm's cgroup gives this task its own);
# the campaign pins itself to them and records the load from other processes with every run.
"${dnncast}" campaign "${plan}" --db "${local_db}" --shard "${index}/${count}" --stop-after "${stop_after}" \
  --progress lines
