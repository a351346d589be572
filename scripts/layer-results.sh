#!/bin/bash
# The tables of docs/RESULTS.md "Layer benchmarks and the hybrid (issue 20)": the whole-network
# learner, the layer-wise sum and the hybrid side by side (`evaluate --model whole,layerwise,hybrid`),
# on the AVX-512 dataset's per-layer runs and on the AVX2 dataset with the shipped layer benchmarks.
#   scripts/layer-results.sh [BUILD]      (BUILD: the build folder, default build; about 30 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DNNCAST=$BUILD/dnncast
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for name in dnncast-cpu2 dnncast-zen3-avx2 layers-zen3-avx2 layers-zen3-avx2-repeat; do xz -dkc data/$name.db.xz > "$TMP/$name.db"; done
evaluate() { "$DNNCAST" evaluate --target time --learner xgboost --model whole,layerwise,hybrid --markdown --quiet "$@"; }
for split in batch random family; do
  echo "### AVX-512 (data/dnncast-cpu2.db), split $split"
  evaluate --db "$TMP/dnncast-cpu2.db" --split $split
done
for split in random family; do
  for target in warm cold; do
    echo "### AVX2, split $split, layer-wise model on data/layers-zen3-avx2.db ($target)"
    evaluate --db "$TMP/dnncast-zen3-avx2.db" --split $split --layer-bench "$TMP/layers-zen3-avx2.db" --bench-target $target
  done
done
echo "### The warm-cache caveat"
/usr/bin/python3 scripts/layer-ratios.py --runs "$TMP/dnncast-cpu2.db" --bench "$TMP/layers-zen3-avx2.db" \
  --repeat "$TMP/layers-zen3-avx2-repeat.db"
