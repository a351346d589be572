#!/usr/bin/env bash
# Submits a campaign to Slurm: an array of SHARDS tasks of scripts/slurm-campaign.sh, each asking for
# the CPUs and memory the plan needs (scripts/slurm-request.sh), and a merge job that starts when all
# of them succeeded (--dependency=afterok). Prints "ARRAY_JOB_ID MERGE_JOB_ID".
#
#   scripts/slurm-submit.sh PLAN.json SHARDS [SBATCH_OPTION ...]
#   scripts/slurm-submit.sh data/plans/zoo-cnn.json 16 --time=12:00:00 --partition=cpu
#
# SBATCH_OPTIONs go to the array only (e.g. --gres=gpu:a100:1 --constraint=...); the merge job takes
# the tasks' CPUs (its dry runs check each run could be measured) and MERGE_MEM (default 2G). Environment: DNNCAST (default build/dnncast), OUT_DIR, MARGIN_S
# (passed on to the tasks), REQUEST (the array's resource options; default: scripts/slurm-request.sh
# PLAN), LOG_DIR (default logs).
set -euo pipefail

plan="${1:?usage: scripts/slurm-submit.sh PLAN.json SHARDS [SBATCH_OPTION ...]}"
shards="${2:?usage: scripts/slurm-submit.sh PLAN.json SHARDS [SBATCH_OPTION ...]}"
shift 2
[[ "${shards}" =~ ^[1-9][0-9]*$ ]] || { echo "slurm-submit.sh: SHARDS must be a positive number, not '${shards}'" >&2; exit 1; }
here="$(cd "$(dirname "$0")" && pwd)"
export DNNCAST="${DNNCAST:-build/dnncast}"
log_dir="${LOG_DIR:-logs}"
request="${REQUEST:-$("${here}/slurm-request.sh" "${plan}")}"
mkdir -p "${log_dir}"  # Slurm opens --output before the script runs: a missing folder loses the log

# shellcheck disable=SC2086  # the request is a list of options
array="$(sbatch --parsable --array="0-$(( shards - 1 ))" ${request} --export="ALL,SHARDS=${shards}" \
  --output="${log_dir}/%x-%A_%a.out" "$@" "${here}/slurm-campaign.sh" "${plan}")"
array="${array%%;*}"
# The merge job's dry runs check that each run could be measured: as many CPUs as the most threads.
merge_cpus="$(grep -o -e '--cpus-per-task=[0-9]*' <<<"${request}" || echo --cpus-per-task=1)"
merge="$(sbatch --parsable --dependency="afterok:${array}" --job-name=dnncast-merge "${merge_cpus}" \
  --mem="${MERGE_MEM:-2G}" --export="ALL,SHARDS=${shards}" --output="${log_dir}/%x-%j.out" \
  "${here}/slurm-campaign.sh" --merge "${plan}")"
merge="${merge%%;*}"
echo "slurm-submit.sh: array ${array} (${shards} tasks, ${request}), merge ${merge} after it" >&2
echo "${array} ${merge}"
