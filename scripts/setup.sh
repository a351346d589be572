#!/usr/bin/env bash
# Installs the Debian 12 packages dnncast needs, only those missing.
# Idempotent and quiet when everything is present; works as root or through sudo.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libtorch-dev                      # executor (libtorch 1.13, CPU)
  libxgboost-dev xgboost            # learners; xgboost's CMake config names /usr/bin/xgboost
  libsqlite3-dev                    # dataset store
  nlohmann-json3-dev                # JSON formats
  libcli11-dev                      # command line
  libeigen3-dev                     # linear learners
  libgtest-dev libgmock-dev         # tests
  libbenchmark-dev                  # bench/
  python3-torch python3-torchvision # cross-checks against torchvision
  libonnx-dev libprotobuf-dev       # ONNX import (src/import/onnx*.cpp): onnx_proto and protobuf 3.21
  libdnnl-dev                       # src/memory/onednn_scratchpad.cpp: oneDNN's C API headers (the library libtorch loads)
  python3-onnx                      # tests/import: torch.onnx.export and hand-built files
  pybind11-dev python3-dev          # the Python package (python/), built for /usr/bin/python3
  python3-venv python3-wheel        # tests/python/install_test.cpp: pip installs the package into a venv (bdist_wheel)
  clang-14 libclang-rt-14-dev       # make fuzz: libFuzzer, ASan and UBSan runtimes (fuzz/)
  clang-format-14                   # make test: the sources as .clang-format lays them out (make format-check)
  chromium python3-pil              # tests/cli: the compare --html report rendered headless, its screenshot decoded
  libcpp-httplib-dev wrk            # dnncast serve (src/cli/serve_http.cpp); scripts/serve-load.sh
  jq sqlite3 xz-utils               # scripts: memory-check.sh and results.sh (jq, sqlite3), the shipped data/*.xz
                                    # (scripts/check-tools.py: every program a script calls is installed here)
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1
  fi
fi
echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
