#!/usr/bin/env bash
# `make test` (CI=true .ci/run) of a fresh clone of this repository in a fresh minimal Debian 12 root (issue 37):
# what the README promises to start from, checked without this machine's packages.
#
#   sudo scripts/debian-root-test.sh ROOT [SHARED]     # ROOT: an empty folder or one made by an earlier run
#
#   1. debootstrap --variant=minbase bookworm ROOT (installs debootstrap itself when missing), then only what the
#      README names as the start: build-essential, make, cmake, git, python3. Nothing of scripts/setup.sh.
#   2. Binds /proc, /dev and /sys recursively (a booted machine has /sys/fs/cgroup, which slurmd needs), the
#      host's resolver and apt sources, and SHARED (default: ../shared beside this checkout, the public data the
#      tests read) read-only at ROOT/root/shared.
#   3. git clone of this checkout's HEAD into ROOT/root/dnncast, then `CI=true bash .ci/run` inside: setup.sh
#      installs the rest, the build, the tests, the fuzz smoke run. Exit status: .ci/run's.
# Needs root (chroot, mount) and the network (Debian's mirror). About 40-60 minutes on 2 CPUs.
set -euo pipefail
root="${1:?usage: scripts/debian-root-test.sh ROOT [SHARED]}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
shared="${2:-${repo}/../shared}"
[[ "$(id -u)" -eq 0 ]] || { echo "debian-root-test: needs root (chroot and mount)" >&2; exit 2; }
[[ -d "${shared}" ]] || { echo "debian-root-test: no shared data folder at ${shared}" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
if [[ ! -x "${root}/bin/bash" ]]; then
  command -v debootstrap >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q debootstrap >/dev/null; }
  mkdir -p "${root}"
  debootstrap --variant=minbase bookworm "${root}" http://deb.debian.org/debian >/dev/null
fi
for d in proc dev dev/pts; do mountpoint -q "${root}/${d}" || mount --bind "/${d}" "${root}/${d}"; done
mountpoint -q "${root}/sys" || mount --rbind /sys "${root}/sys"
mkdir -p "${root}/root/shared"
mountpoint -q "${root}/root/shared" || mount --bind -o ro "${shared}" "${root}/root/shared"
cp /etc/resolv.conf /etc/hosts "${root}/etc/"
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
  cp /etc/apt/sources.list.d/debian.sources "${root}/etc/apt/sources.list.d/" && rm -f "${root}/etc/apt/sources.list"
fi
chroot "${root}" /bin/bash -c 'apt-get update -q >/dev/null && apt-get install -y -q build-essential make cmake git python3 >/dev/null'
rm -rf "${root}/root/dnncast"
git clone -q "${repo}" "${root}/root/dnncast"
echo "debian-root-test: $(git -C "${root}/root/dnncast" log --oneline -1 | cut -c1-80) in ${root}"
status=0
chroot "${root}" /bin/bash -c 'cd /root/dnncast && CI=true bash .ci/run' || status=$?
echo "debian-root-test: .ci/run exited ${status}"
exit "${status}"
