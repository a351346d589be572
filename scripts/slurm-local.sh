#!/usr/bin/env bash
# A one-node Slurm cluster on loopback, for tests and for trying scripts/slurm-campaign.sh without a
# cluster: munged with a key made here, slurmctld and slurmd, every file (configuration, state, spool,
# logs, sockets) in one folder. No systemd, no cgroups (proctrack/linuxproc, task/affinity), runs as
# root. The memory a job requests is enforced by polling (jobacct_gather/linux with OverMemoryKill):
# a job whose processes' RSS exceeds its --mem is killed, as cgroups would on a real cluster.
#
#   scripts/slurm-local.sh install        # Debian's slurm-wlm and munge, when missing (root or sudo)
#   scripts/slurm-local.sh start DIR      # prints "export SLURM_CONF=DIR/etc/slurm.conf"
#   scripts/slurm-local.sh stop DIR       # stops the three daemons; DIR stays (logs)
#
# Clients (sbatch, squeue, scancel, scontrol) find the cluster through SLURM_CONF.
set -euo pipefail

die() { echo "slurm-local.sh: $*" >&2; exit 1; }

install_packages() {
  local missing=() pkg
  for pkg in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q "install ok installed" || missing+=("${pkg}")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  local sudo=""
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "need root or sudo to install: ${missing[*]}"
    sudo="sudo"
  fi
  echo "slurm-local.sh: installing ${missing[*]}"
  # The packages' own services are not started (no systemd here; policy-rc.d may refuse too): the
  # daemons of this script are the only ones.
  ${sudo} env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  ${sudo} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local dir="$1"
  [[ "$(id -u)" -eq 0 ]] || die "start: the one-node cluster runs its daemons as root (SlurmUser=root)"
  for tool in munged slurmctld slurmd sinfo; do
    command -v "${tool}" >/dev/null 2>&1 || die "start: ${tool} missing (scripts/slurm-local.sh install)"
  done
  mkdir -p "${dir}"
  dir="$(cd "${dir}" && pwd)"
  mkdir -p "${dir}"/{etc,state,spool,log,munge,run}
  chmod 700 "${dir}/munge"

  # munge: a fresh key, its own socket; --force because the folder is not the packaged /etc/munge.
  dd if=/dev/urandom of="${dir}/munge/munge.key" bs=1 count=1024 status=none
  chmod 400 "${dir}/munge/munge.key"
  munged --force --key-file="${dir}/munge/munge.key" --socket="${dir}/munge/munge.socket" \
    --pid-file="${dir}/run/munged.pid" --log-file="${dir}/log/munged.log" --seed-file="${dir}/munge/munged.seed"

  # The node as slurmd sees it (CPUs, sockets, RealMemory), under the short host name on 127.0.0.1.
  local node ctld_port slurmd_port hw
  node="$(hostname -s)"
  ctld_port="$(free_port)"
  slurmd_port="$(free_port)"
  while [[ "${slurmd_port}" == "${ctld_port}" ]]; do slurmd_port="$(free_port)"; done
  hw="$(slurmd -C | head -1 | sed -e 's/^NodeName=[^ ]* //')"
  cat >"${dir}/etc/slurm.conf" <<EOF
# One-node cluster of scripts/slurm-local.sh ($(date -u +%FT%TZ))
ClusterName=dnncast-local
SlurmctldHost=${node}(127.0.0.1)
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${dir}/munge/munge.socket
StateSaveLocation=${dir}/state
SlurmdSpoolDir=${dir}/spool
SlurmctldPidFile=${dir}/run/slurmctld.pid
SlurmdPidFile=${dir}/run/slurmd.pid
SlurmctldLogFile=${dir}/log/slurmctld.log
SlurmdLogFile=${dir}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
KillWait=10
MinJobAge=3600
NodeName=${node} NodeAddr=127.0.0.1 ${hw} State=UNKNOWN
PartitionName=local Nodes=${node} Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="${dir}/etc/slurm.conf"
  slurmctld -i
  slurmd -N "${node}"

  local waited=0 state=""
  while (( waited < 60 )); do
    state="$(sinfo -h -n "${node}" -o %T 2>/dev/null || true)"
    [[ "${state}" == "idle" ]] && break
    sleep 1; waited=$(( waited + 1 ))
  done
  if [[ "${state}" != "idle" ]]; then
    echo "slurm-local.sh: node ${node} is '${state}' after ${waited} s, not idle; logs:" >&2
    tail -n 20 "${dir}/log/slurmctld.log" "${dir}/log/slurmd.log" >&2 || true
    stop "${dir}"
    exit 1
  fi
  echo "export SLURM_CONF=${SLURM_CONF}"
}

stop_pid_file() {
  local pid_file="$1" pid waited=0
  [[ -f "${pid_file}" ]] || return 0
  pid="$(cat "${pid_file}")"
  if [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null; then
    kill "${pid}" 2>/dev/null || true
    while kill -0 "${pid}" 2>/dev/null && (( waited < 20 )); do sleep 0.5; waited=$(( waited + 1 )); done
    kill -9 "${pid}" 2>/dev/null || true
  fi
  rm -f "${pid_file}"
}

stop() {
  local dir="$1"
  [[ -d "${dir}" ]] || return 0
  # Jobs still running are ended first (slurmd, stopping, leaves its steps' processes alone).
  if [[ -f "${dir}/etc/slurm.conf" && -f "${dir}/run/slurmctld.pid" ]]; then
    SLURM_CONF="${dir}/etc/slurm.conf" timeout 10 scancel --full --signal=KILL --user=root 2>/dev/null || true
    sleep 1
  fi
  stop_pid_file "${dir}/run/slurmd.pid"
  stop_pid_file "${dir}/run/slurmctld.pid"
  stop_pid_file "${dir}/run/munged.pid"
}

case "${1:-}" in
  install) install_packages ;;
  start) [[ $# -eq 2 ]] || die "usage: $0 start DIR"; start "$2" ;;
  stop) [[ $# -eq 2 ]] || die "usage: $0 stop DIR"; stop "$2" ;;
  *) die "usage: $0 install | start DIR | stop DIR" ;;
esac
