#!/usr/bin/env bash
# Refit the GPU memory model (what nvidia-smi shows; src/gpu/gpu_memory.h) to GPUMemNet's 3,000 A100 40GB
# MLP measurements and judge it leaving one MLP architecture out at a time, beside the old model.
#
#   scripts/gpu-memory-eval.sh [OUT_DIR]
#
# Writes data/hardware/gpu_memory_calibration.csv (the shipped constants; CALIBRATION=FILE writes elsewhere),
# OUT_DIR/gpu-memory-table.md (the table of docs/RESULTS.md, "GPU memory as nvidia-smi sees it") and
# OUT_DIR/gpu-memory-rows.csv (every row). OUT_DIR defaults to build/gpu-memory. About a second.
# Environment: DNNCAST (default build/dnncast), DNNCAST_PUBLIC_DATA (default ../shared/data/public).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
out="${1:-build/gpu-memory}"
dnncast="${DNNCAST:-build/dnncast}"
calibration="${CALIBRATION:-data/hardware/gpu_memory_calibration.csv}"
public="${DNNCAST_PUBLIC_DATA:-../shared/data/public}"
data="$public/gpu_memory/gpumemnet_mlp_a100_40gb.csv.xz"
[[ -r "$data" ]] || { echo "gpu-memory-eval: cannot read $data (set DNNCAST_PUBLIC_DATA)" >&2; exit 2; }
mkdir -p "$out"
xz -dkc "$data" > "$out/gpumemnet_mlp_a100_40gb.csv"
"$dnncast" calibrate-gpu-memory --data "$out/gpumemnet_mlp_a100_40gb.csv" --out "$calibration" \
  --table "$out/gpu-memory-table.md" --rows "$out/gpu-memory-rows.csv"
cat "$out/gpu-memory-table.md"
