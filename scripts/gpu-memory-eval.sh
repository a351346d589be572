#!/usr/bin/env bash
# Refit the GPU memory model (what nvidia-smi shows; src/gpu/gpu_memory.h) to GPUMemNet's A100 40GB measurements
# (3,000 MLPs, and the timm training runs of the models data/hardware/timm_zoo_map.csv maps to the zoo) and judge
# it leaving one MLP architecture, one timm model and one timm family out at a time, beside the old models; the
# upper bound's margin and how often "fits" would be wrong near a GPU's memory (issue 46).
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
timm="$public/gpu_memory/timm_a100_40gb.csv.xz"
for file in "$data" "$timm"; do
  [[ -r "$file" ]] || { echo "gpu-memory-eval: cannot read $file (set DNNCAST_PUBLIC_DATA)" >&2; exit 2; }
done
mkdir -p "$out"
xz -dkc "$data" > "$out/gpumemnet_mlp_a100_40gb.csv"
xz -dkc "$timm" > "$out/timm_a100_40gb.csv"
"$dnncast" calibrate-gpu-memory --data "$out/gpumemnet_mlp_a100_40gb.csv" --timm "$out/timm_a100_40gb.csv" \
  --out "$calibration" --table "$out/gpu-memory-table.md" --rows "$out/gpu-memory-rows.csv"
cat "$out/gpu-memory-table.md"
