#!/usr/bin/env bash
# Refit the per-kernel GPU time model (src/gpu/kernel_model.h) to NeuSight's per-kernel measurements and DeepBench's
# training convolutions (forward, input and weight gradients) and GEMMs, judge it
# per kernel with each training GPU held out and end to end on NeuSight's transformer labels of the training GPUs
# (the test GPUs H100, L4 and A100 80GB, with the fit that never saw them, only when SCORE_TEST_GPUS=1: once,
# when asked), then refit the end-to-end calibration on the public CNN tables with it and judge that with each GPU
# and each model held out (docs/RESULTS.md, issues 34 and 45).
#
#   scripts/gpu-kernels-eval.sh [OUT_DIR]
#
# Writes data/hardware/gpu_kernels/ (KERNELS=DIR writes elsewhere), data/hardware/gpu_calibration.csv and
# data/hardware/gpu_forecast_residuals.csv (CALIBRATION=FILE, RESIDUALS=FILE), and the two reports
# OUT_DIR/gpu-kernels.txt and OUT_DIR/gpu-calibration.txt (default build/gpu-kernels). About 2 minutes on 2 cores.
# Environment: DNNCAST (default build/dnncast), PUBLIC (default ../shared/data/public).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
out="${1:-build/gpu-kernels}"
dnncast="${DNNCAST:-build/dnncast}"
public="${PUBLIC:-../shared/data/public}"
kernels="${KERNELS:-data/hardware/gpu_kernels}"
calibration="${CALIBRATION:-data/hardware/gpu_calibration.csv}"
residuals="${RESIDUALS:-data/hardware/gpu_forecast_residuals.csv}"
for need in "$public/neusight/ops/train" "$public/neusight/model_configs" "$public/gpu_benchmarks"; do
  [[ -d "$need" ]] || { echo "gpu-kernels-eval: no $need (set PUBLIC)" >&2; exit 2; }
done
mkdir -p "$out"
score=()
[[ "${SCORE_TEST_GPUS:-0}" == 1 ]] && score=(--score-test-gpus)
"$dnncast" calibrate-gpu-kernels --ops "$public/neusight/ops/train" \
  --deepbench "$public/gpu_benchmarks/deepbench_conv_train_fp32.csv" \
  --deepbench-gemm "$public/gpu_benchmarks/deepbench_gemm_train_fp32.csv" --leave-one-out --rows "${score[@]}" \
  --labels "$public/gpu_benchmarks/neusight_transformer_latency_labels.csv" \
  --configs "$public/neusight/model_configs" --out "$kernels" | tee "$out/gpu-kernels.txt"
# The calibration reads the shipped per-kernel model: refit it after the model.
DNNCAST_PUBLIC_DATA="$public/gpu_benchmarks" "$dnncast" calibrate-gpus --leave-one-out both \
  --out "$calibration" --residuals "$residuals" | tee "$out/gpu-calibration.txt"
