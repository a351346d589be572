#!/usr/bin/python3
"""XLA's speed-up in Lambda's TensorFlow CNN table: each run with XLA beside the same system's run without.

Lambda's tf_cnn_benchmarks logs (../shared/data/public/gpu_benchmarks/lambda_tf_cnn_benchmarks_1gpu.csv) time the
same GPU, model, precision and batch on one machine twice, with XLA's auto-clustering and without; the log system
names differ only by an "XLA" part. This prints, per model and precision, the ratio time without XLA / time with
it over those pairs (above 1: XLA faster), the numbers docs/GPU.md quotes for why `dnncast calibrate-gpus` does
not count an XLA row as a repeat of the row without (the tables' noise floor).

    scripts/xla-pairs.py [TABLE]
"""
import csv
import os
import re
import sys
from collections import defaultdict

here = os.path.dirname(os.path.abspath(__file__))
default = os.path.join(here, "..", "..", "shared", "data", "public", "gpu_benchmarks",
                       "lambda_tf_cnn_benchmarks_1gpu.csv")
path = sys.argv[1] if len(sys.argv) > 1 else default
if not os.path.exists(path):
    sys.exit(f"xla-pairs: no {path} (give the table's path)")

with open(path, newline="") as f:
    rows = list(csv.DictReader(line for line in f if not line.startswith("#")))

times = {}
for row in rows:
    if not row["ms_per_iter_derived"]:
        continue
    system = re.sub(r"_?XLA_?", "_", row["log_system_name"]).replace("__", "_").strip("_")
    key = (system, row["model"], row["precision"], row["batch_size"], row["xla"])
    times[key] = float(row["ms_per_iter_derived"])

ratios = defaultdict(list)
for (system, model, precision, batch, xla), with_xla in times.items():
    if xla != "yes":
        continue
    without = times.get((system, model, precision, batch, "no"))
    if without:
        ratios[(model, precision)].append(without / with_xla)

if not ratios:
    sys.exit("xla-pairs: no system timed with and without XLA")
print(f"{'model':<12} {'precision':<9} {'pairs':>5}  without / with XLA (above 1: XLA faster)")
every = []
for (model, precision), values in sorted(ratios.items()):
    values.sort()
    every += values
    listed = " ".join(f"{v:.2f}" for v in values)
    print(f"{model:<12} {precision:<9} {len(values):>5}  {values[0]:.2f}-{values[-1]:.2f}  ({listed})")
every.sort()
print(f"all: {len(every)} pairs, {every[0]:.2f}-{every[-1]:.2f}, median {every[len(every) // 2]:.2f}")
