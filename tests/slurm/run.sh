#!/usr/bin/env bash
# Slurm.CampaignArray (ctest label "slurm", issue 23): a campaign collected as a Slurm job array on a
# real one-node cluster (scripts/slurm-local.sh) holds exactly the runs of a single-process campaign.
#
#   tests/slurm/run.sh DNNCAST [plain|fault|all]      (default all; KEEP=1 keeps the work folder)
#
#   0. Installs slurm-wlm and munge when missing; starts munged, slurmctld and slurmd on loopback
#      with a fresh munge key and everything in a temporary folder; stops them at the end, failed or not.
#   1. The memory limit is live: a task asking for less than the plan needs is killed by Slurm.
#   2. Reference: a single-process campaign of tests/slurm/plan.json (measured for real, outside Slurm).
#   3. plain: scripts/slurm-submit.sh submits 4 shards (CPUs and memory from scripts/slurm-request.sh)
#      and a merge job (--dependency=afterok); the merged database holds the reference's runs, by
#      network hash + configuration, none lost or duplicated, each with its shard's environment,
#      which is the reference's (one node), every run ok (none killed for memory).
#   4. fault: the same, but shard 1 is cancelled (scancel) while it measures its second run; the merge
#      job then never starts (DependencyNeverSatisfied); shard 1 alone is resubmitted, resumes from
#      its saved run, and a new merge job is exact again.
# Exit 77 (ctest: skipped) when Slurm cannot be installed or root is missing, unless CI=true, where
# that is a failure: CI must run this test.
set -euo pipefail

dnncast="$(realpath "${1:?usage: tests/slurm/run.sh DNNCAST [plain|fault|all]}")"
mode="${2:-all}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
plan="${root}/tests/slurm/plan.json"
shards=4
started=${SECONDS}

say() { echo "slurm test [$(( SECONDS - started )) s]: $*"; }
fail() { echo "slurm test: FAILED: $*" >&2; exit 1; }
unavailable() {
  if [[ "${CI:-}" == "true" ]]; then fail "$* (CI=true: a missing dependency fails, it is not skipped)"; fi
  echo "slurm test: skipped: $*"; exit 77
}

# 0. Slurm and munge, root, a cluster.
if [[ "$(id -u)" -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then exec sudo -E bash "$0" "$@"; fi
  unavailable "the one-node cluster runs slurmctld, slurmd and munged as root; not root and no sudo"
fi
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  bash "${root}/scripts/slurm-local.sh" install || unavailable "could not install slurm-wlm and munge"
fi
for tool in sqlite3 python3; do command -v "${tool}" >/dev/null 2>&1 || unavailable "${tool} missing"; done

work="$(mktemp -d /tmp/dnncast-slurm-test.XXXXXX)"
cluster="${work}/cluster"
finish() {
  local status=$?
  bash "${root}/scripts/slurm-local.sh" stop "${cluster}" || true
  if (( status != 0 )); then
    echo "slurm test: logs of ${work}:" >&2
    for log in "${work}"/logs/*.out "${cluster}"/log/slurmctld.log "${cluster}"/log/slurmd.log; do
      [[ -f "${log}" ]] && { echo "==> ${log} (last 30 lines)"; tail -n 30 "${log}"; } >&2
    done
  fi
  if [[ "${KEEP:-0}" == "1" || ( "${status}" -ne 0 && "${CI:-}" != "true" ) ]]; then
    echo "slurm test: kept ${work}" >&2
  else
    rm -rf "${work}"
  fi
  exit "${status}"
}
trap finish EXIT
eval "$(bash "${root}/scripts/slurm-local.sh" start "${cluster}")"
say "one-node cluster up ($(sinfo -h -o '%N: %c CPUs, %m MB'))"
cd "${work}"
mkdir -p logs
export DNNCAST="${dnncast}"

# State of a job (or array task "ID_I") while slurmctld remembers it (MinJobAge=3600).
job_state() { squeue -h -t all -j "$1" -o %T 2>/dev/null | awk 'NR == 1'; }
job_reason() { squeue -h -t all -j "$1" -o %r 2>/dev/null | awk 'NR == 1'; }
# Waits until every job of the list has ended; fails on a state other than COMPLETED.
wait_completed() {
  local limit_s="$1"; shift
  local deadline=$(( SECONDS + limit_s )) job state
  for job in "$@"; do
    while :; do
      state="$(squeue -h -t all -j "${job}" -o %T 2>/dev/null | sort -u | tr '\n' ' ')"
      case "${state}" in
        "COMPLETED ") break ;;
        *FAILED*|*CANCELLED*|*OUT_OF_MEMORY*|*TIMEOUT*|*NODE_FAIL*) fail "job ${job}: ${state}" ;;
      esac
      [[ "$(job_reason "${job}")" == "DependencyNeverSatisfied" ]] && fail "job ${job}: DependencyNeverSatisfied"
      (( SECONDS < deadline )) || fail "job ${job} still '${state}' after ${limit_s} s"
      sleep 1
    done
  done
}

# 1. The cluster enforces --mem (jobacct_gather OverMemoryKill): 150 MiB is too little for a campaign.
small="$(sbatch --parsable --mem=150M --cpus-per-task=1 --output=logs/too-small-%j.out \
  --wrap "'${dnncast}' campaign '${plan}' --db too-small.db --threads 1 --max-runs 1")"
deadline=$(( SECONDS + 120 ))
while [[ "$(job_state "${small}")" =~ ^(PENDING|RUNNING|COMPLETING)$ ]] && (( SECONDS < deadline )); do sleep 1; done
[[ "$(job_state "${small}")" != "COMPLETED" ]] || fail "a campaign task with --mem=150M completed: the memory limit is not enforced"
grep -q "exceeded memory limit" "logs/too-small-${small}.out" || fail "job ${small} was not killed for memory: $(cat "logs/too-small-${small}.out")"
say "memory limit enforced: a task with --mem=150M was killed ($(job_state "${small}"))"

request="$(bash "${root}/scripts/slurm-request.sh" "${plan}" 2>logs/request.out)" || fail "slurm-request.sh: $(cat logs/request.out)"
say "request per task from the plan: ${request} ($(cat logs/request.out))"
[[ "${request}" == *"--cpus-per-task=2 "* ]] || fail "the plan's largest thread count is 2, request: ${request}"

# 2. The reference: one process, the whole plan, on as many CPUs as a task gets (the environment's
#    fingerprint counts the usable cores).
"${dnncast}" campaign "${plan}" --db reference.db --progress lines --cpus 0-1 >logs/reference.out 2>&1 ||
  fail "reference campaign: $(tail -n 5 logs/reference.out)"
reference_runs="$(sqlite3 reference.db 'SELECT count(*) FROM runs')"
planned="$("${dnncast}" campaign "${plan}" --db none.db --dry-run 2>&1 | sed -n 's/.* = \([0-9]*\) runs;.*/\1/p')"
[[ "${reference_runs}" == "${planned}" ]] || fail "reference holds ${reference_runs} runs, the plan ${planned}"
say "reference campaign: ${reference_runs} runs in one process"

# Run key: network hash + configuration; with the environment's fingerprint (hash) as last column.
KEY_SQL="SELECT n.hash, r.batch, r.input, r.seq_len, r.optimizer, r.precision, r.threads, r.device, r.repeat_index"
keys() { sqlite3 -separator ' ' "$1" "${KEY_SQL} FROM runs r JOIN networks n ON n.id = r.network_id" | sort; }
keys_env() {
  sqlite3 -separator ' ' "$1" "${KEY_SQL}, e.hash FROM runs r JOIN networks n ON n.id = r.network_id
    JOIN environments e ON e.id = r.environment_id" | sort
}
environment_row() { sqlite3 "$1" "SELECT * FROM environments WHERE id IN (SELECT environment_id FROM runs)" | cut -d'|' -f2-; }

# The merged database holds exactly the reference's runs, each with its shard's environment.
check_merged() {
  local label="$1" out_dir="$2" merged="$2/plan.db" index
  [[ -f "${merged}" ]] || fail "${label}: ${merged} missing"
  diff <(keys reference.db) <(keys "${merged}") >"logs/${label}-diff.txt" ||
    fail "${label}: merged runs differ from the single-process campaign (< reference, > merged): $(cat "logs/${label}-diff.txt")"
  [[ -z "$(keys "${merged}" | uniq -d)" ]] || fail "${label}: duplicated runs in ${merged}"
  for (( index = 0; index < shards; ++index )); do keys_env "${out_dir}/shard-${index}-of-${shards}.db"; done | sort >"logs/${label}-shards.txt"
  diff "logs/${label}-shards.txt" <(keys_env "${merged}") >/dev/null ||
    fail "${label}: the merged runs do not carry their shards' environments: $(diff "logs/${label}-shards.txt" <(keys_env "${merged}"))"
  [[ "$(environment_row "${merged}")" == "$(environment_row reference.db)" ]] ||
    fail "${label}: environment differs from the single-process campaign's: $(environment_row "${merged}") vs $(environment_row reference.db)"
  local not_ok
  not_ok="$(sqlite3 "${merged}" "SELECT count(*) FROM runs WHERE status != 'ok'")"
  [[ "${not_ok}" == "0" ]] || fail "${label}: ${not_ok} runs not ok: $(sqlite3 "${merged}" "SELECT status, message FROM runs WHERE status != 'ok'")"
  say "${label}: merged ${merged}: $(keys "${merged}" | wc -l) runs = the reference's, no duplicate, shard environments kept, all ok"
}

# 3. Plain: array + afterok merge.
if [[ "${mode}" == "plain" || "${mode}" == "all" ]]; then
  read -r array merge < <(OUT_DIR="${work}/plain" REQUEST="${request}" bash "${root}/scripts/slurm-submit.sh" "${plan}" "${shards}" --time=30:00)
  say "plain: array ${array}, merge ${merge}"
  wait_completed 600 "${array}" "${merge}"
  say "plain: array and merge completed"
  check_merged plain "${work}/plain"
fi

# 4. Fault: cancel shard 1 during its second run, resubmit it, merge again.
if [[ "${mode}" == "fault" || "${mode}" == "all" ]]; then
  out_dir="${work}/fault"
  read -r array merge < <(OUT_DIR="${out_dir}" REQUEST="${request}" bash "${root}/scripts/slurm-submit.sh" "${plan}" "${shards}" --time=30:00)
  say "fault: array ${array}, merge ${merge}"
  task_log="logs/dnncast-campaign-${array}_1.out"
  deadline=$(( SECONDS + 600 ))
  until [[ -f "${task_log}" ]] && grep -q '^\[1/2\]' "${task_log}"; do
    (( SECONDS < deadline )) || fail "fault: shard 1 never finished its first run"
    [[ "$(job_state "${array}_1")" =~ ^(PENDING|RUNNING)$ ]] || fail "fault: shard 1 is $(job_state "${array}_1") before its first run"
    sleep 0.5
  done
  scancel "${array}_1"
  say "fault: cancelled task ${array}_1 after its first run: $(grep '^\[1/2\]' "${task_log}" | cut -c1-60)"
  deadline=$(( SECONDS + 120 ))
  while [[ "$(job_state "${array}_1")" != "CANCELLED" ]]; do
    (( SECONDS < deadline )) || fail "fault: task ${array}_1 is $(job_state "${array}_1") after scancel"
    sleep 1
  done
  saved="$(sqlite3 "${out_dir}/shard-1-of-${shards}.db" 'SELECT count(*) FROM runs' 2>/dev/null || echo none)"
  [[ "${saved}" == "1" ]] || fail "fault: the cancelled shard saved ${saved} runs, expected 1 (its first; the second was running)"
  grep -q '^\[2/2\]' "${task_log}" && fail "fault: shard 1 finished its second run before the cancel reached it"
  # The merge job waits for all tasks to succeed: it must never start on a partial result.
  deadline=$(( SECONDS + 300 ))
  until [[ "$(job_reason "${merge}")" == "DependencyNeverSatisfied" ]]; do
    [[ "$(job_state "${merge}")" == "PENDING" ]] || fail "fault: merge job ${merge} is $(job_state "${merge}") after a cancelled task"
    (( SECONDS < deadline )) || fail "fault: merge job ${merge} still '$(job_reason "${merge}")', not DependencyNeverSatisfied"
    sleep 1
  done
  scancel "${merge}"
  say "fault: shard 1 saved 1 run; merge ${merge} never started (DependencyNeverSatisfied), cancelled"
  # shellcheck disable=SC2086  # the request is a list of options
  again="$(sbatch --parsable --array=1 ${request} --time=30:00 --export="ALL,SHARDS=${shards},OUT_DIR=${out_dir}" \
    --output="logs/%x-%A_%a.out" "${root}/scripts/slurm-campaign.sh" "${plan}")"
  merge2="$(sbatch --parsable --dependency="afterok:${again},afterany:${array}" --job-name=dnncast-merge --cpus-per-task=2 \
    --mem=2G --export="ALL,SHARDS=${shards},OUT_DIR=${out_dir}" --output="logs/%x-%j.out" \
    "${root}/scripts/slurm-campaign.sh" --merge "${plan}")"
  say "fault: shard 1 resubmitted as ${again}, merge ${merge2}"
  wait_completed 600 "${again}" "${merge2}"
  grep -q "shard 1/${shards}: 2 runs, 1 already in" "logs/dnncast-campaign-${again}_1.out" ||
    fail "fault: the resubmitted shard did not resume from its saved run: $(head -3 "logs/dnncast-campaign-${again}_1.out")"
  grep -q "measured 1 runs" "logs/dnncast-campaign-${again}_1.out" || fail "fault: the resubmitted shard measured more than its missing run"
  say "fault: shard 1 resumed (1 run already in, 1 measured)"
  check_merged fault "${out_dir}"
fi
say "passed"
