#!/bin/bash
# The tables of docs/RESULTS.md "Layer benchmarks and the hybrid (issue 20)": the whole-network
# learner, the layer-wise sum and the hybrid side by side (`evaluate --model whole,layerwise,hybrid`),
# on the AVX-512 dataset's per-layer runs, on the same with the AVX-512 EPYC's single-layer benchmarks
# (and `scaled`: the whole learner carried past the trained batches by the layer-wise model; `corrected`:
# the layer-wise sum times a learned correction; split `input`: the largest image size held out), and on
# the AVX2 dataset with its own layer benchmarks.
#   scripts/layer-results.sh [BUILD]      (BUILD: the build folder, default build; about 80 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DNNCAST=$BUILD/dnncast
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for name in dnncast-cpu2 dnncast-zen3-avx2 layers-zen3-avx2 layers-zen3-avx2-repeat layers-epyc-avx512; do xz -dkc data/$name.db.xz > "$TMP/$name.db"; done
evaluate() { "$DNNCAST" evaluate --target time --learner xgboost --markdown --quiet "$@"; }
for split in batch random family; do
  echo "### AVX-512 (data/dnncast-cpu2.db), split $split"
  evaluate --db "$TMP/dnncast-cpu2.db" --split $split --model whole,layerwise,hybrid
done
for split in batch random family input; do
  echo "### AVX-512 (data/dnncast-cpu2.db), split $split, layer-wise model also on data/layers-epyc-avx512.db (warm)"
  evaluate --db "$TMP/dnncast-cpu2.db" --split $split --layer-bench "$TMP/layers-epyc-avx512.db" \
    --model whole,layerwise,hybrid,scaled,corrected
done
for split in random family; do
  for target in warm cold; do
    echo "### AVX2, split $split, layer-wise model on data/layers-zen3-avx2.db ($target)"
    evaluate --db "$TMP/dnncast-zen3-avx2.db" --split $split --layer-bench "$TMP/layers-zen3-avx2.db" --bench-target $target \
      --model whole,layerwise,hybrid
  done
done
echo "### The warm-cache caveat"
/usr/bin/python3 scripts/layer-ratios.py --runs "$TMP/dnncast-cpu2.db" --bench "$TMP/layers-zen3-avx2.db" \
  --repeat "$TMP/layers-zen3-avx2-repeat.db"
