#!/usr/bin/env bash
# Profile zoo models on an NVIDIA GPU (issue 3 "GPU"): builds the profiler alone against a CUDA
# libtorch (scripts/gpu-profile/CMakeLists.txt: libtorch + a C++17 compiler + the header-only
# nlohmann-json and CLI11), then measures a fixed set of training configurations with
# `dnncast-profile --device cuda --json`, stopping before the time limit (default 9 min).
#
#   scripts/gpu-profile.sh [--torch-dir DIR] [--out DIR] [--minutes M] [--quick]
#
# Torch_DIR: --torch-dir, else $Torch_DIR, else the CMake folder of the PyTorch that `python3`
# imports (python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')/Torch.
# Writes DIR (default data/gpu/<gpu>-<UTC time>/): one JSON per configuration (status, time
# statistics, peak allocated/reserved bytes, energy from NVML, the environment fingerprint),
# fingerprint.txt (nvidia-smi -q, the compiler, libtorch), and summary.tsv.
# Needs: nvidia-smi, cmake >= 3.18, g++, a CUDA toolkit where that libtorch's CMake config asks for
# one (PyTorch wheels' Caffe2 config runs find_package(CUDA)/CUDAToolkit: set CUDA_HOME or CUDACXX).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
torch_dir="${Torch_DIR:-}"
out=""
minutes=9
quick=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --torch-dir) torch_dir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "gpu-profile.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
deadline=$(( start + minutes * 60 ))

command -v nvidia-smi >/dev/null || { echo "gpu-profile.sh: nvidia-smi not found: no NVIDIA driver here" >&2; exit 2; }
nvidia-smi -L >/dev/null || { echo "gpu-profile.sh: nvidia-smi sees no GPU" >&2; exit 2; }
python="$(command -v python3 || true)"
if [[ -z "${torch_dir}" ]]; then
  [[ -n "${python}" ]] || { echo "gpu-profile.sh: no python3 to find libtorch; pass --torch-dir" >&2; exit 2; }
  torch_dir="$("${python}" -c 'import torch, os; print(os.path.join(torch.utils.cmake_prefix_path, "Torch"))')"
fi
[[ -f "${torch_dir}/TorchConfig.cmake" ]] || { echo "gpu-profile.sh: no TorchConfig.cmake in ${torch_dir}" >&2; exit 2; }

# PyTorch wheels before 2.7 were built with the old libstdc++ ABI; everything linked with them must be too.
abi=1
if [[ -n "${python}" ]] && "${python}" -c 'import torch' 2>/dev/null; then
  abi="$("${python}" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')"
fi

gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' /' '__')"
[[ -n "${out}" ]] || out="${here}/data/gpu/${gpu_name}-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "${out}"
build="${here}/build-gpu"
echo "gpu-profile.sh: libtorch ${torch_dir} (CXX11 ABI ${abi}); building into ${build}" >&2
cmake -S "${here}/scripts/gpu-profile" -B "${build}" -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="${torch_dir}" \
  -DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=${abi}" >"${out}/cmake.log" 2>&1 \
  || { tail -30 "${out}/cmake.log" >&2; echo "gpu-profile.sh: cmake failed (log: ${out}/cmake.log)" >&2; exit 1; }
cmake --build "${build}" -j "$(nproc)" >"${out}/build.log" 2>&1 \
  || { grep -m 20 -E "error" "${out}/build.log" >&2; echo "gpu-profile.sh: build failed (log: ${out}/build.log)" >&2; exit 1; }
profiler="${build}/dnncast-profile"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "compiler: $(c++ --version | head -1)"
  echo "libtorch: ${torch_dir}"
  [[ -n "${python}" ]] && "${python}" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>/dev/null || true
  nvidia-smi -q
} >"${out}/fingerprint.txt" 2>&1

# model | options: image models at 224x224, sequence models at their default length.
configs=(
  "resnet50 --batch 32" "resnet50 --batch 64" "resnet50 --batch 64 --precision fp16"
  "mobilenet_v2 --batch 64" "vgg16 --batch 32" "densenet121 --batch 32" "efficientnet_b0 --batch 32"
  "resnet18 --batch 128" "resnet18 --batch 128 --precision bf16"
  "vit_b_16 --batch 16" "bert_base --batch 16 --seq 128" "gpt2_small --batch 8 --seq 256"
  "resnet50 --batch 4096"
)
[[ -n "${quick}" ]] && configs=("resnet18 --batch 32" "resnet18 --batch 32 --precision fp16")

printf "config\tstatus\tmedian_ms\tp10_ms\tp90_ms\tpeak_bytes\tpeak_reserved_bytes\tenergy_j\n" >"${out}/summary.tsv"
for config in "${configs[@]}"; do
  if [[ $(date +%s) -ge $(( deadline - 45 )) ]]; then
    echo "gpu-profile.sh: time limit reached, skipping '${config}' and the rest" >&2
    break
  fi
  name="$(echo "${config}" | tr -s ' -' '_' | sed 's/^_//; s/_$//')"
  # shellcheck disable=SC2086
  "${profiler}" ${config} --device cuda --repeat 2 --budget 3 --timeout 120 --json >"${out}/${name}.json" 2>"${out}/${name}.err" || true
  if [[ -s "${out}/${name}.json" ]] && [[ -n "${python}" ]]; then
    "${python}" - "${out}/${name}.json" "${config}" >>"${out}/summary.tsv" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d.get("time_ms") or {}
print("\t".join(str(x) for x in [sys.argv[2], d["status"], t.get("median"), t.get("p10"), t.get("p90"),
                                 d.get("peak_bytes"), d.get("peak_reserved_bytes"), d.get("energy_j")]))
PY
  else
    printf "%s\tno output\t\t\t\t\t\t%s\n" "${config}" "$(head -c 200 "${out}/${name}.err" | tr '\n\t' '  ')" >>"${out}/summary.tsv"
  fi
  echo "gpu-profile.sh: ${config}: done ($(( $(date +%s) - start )) s)" >&2
done
column -t -s $'\t' "${out}/summary.tsv" || cat "${out}/summary.tsv"
echo "gpu-profile.sh: results in ${out} ($(( $(date +%s) - start )) s)" >&2
