#!/usr/bin/python3
"""Mean relative error of a GPU residuals file (`dnncast calibrate-gpus --residuals FILE`) over the training GPUs.

Reads the held-out forecasts a residuals file records (each row's GPU held out of the fit, and its model) and prints
their mean relative error over the rows of the training GPUs, over those GPUs and per framework, leaving out the rows
of NeuSight's test GPUs, as `dnncast calibrate-gpus` does without --score-test-gpus (which GPUs those are, dnncast
says: `devices --json`, each GPU's neusight_test_gpu; DNNCAST names the binary, build/dnncast by default). With it an
older file (`git show COMMIT:data/hardware/gpu_forecast_residuals.csv`) is scored on the same rows as the shipped one:

    scripts/gpu-residuals-mre.py [--gpus NAME,...] [FILE ...]   (default data/hardware/gpu_forecast_residuals.csv)

Per precision too (fp16, tf32, fp32). --gpus NAME,... adds, per precision, those GPUs' rows held out by GPU: their
mean relative error and the median of forecast / measured (above 1: forecast too slow). A test GPU named there is
refused (its rows are scored only by `dnncast calibrate-gpus --score-test-gpus`, once). Exit 2 on bad usage.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DNNCAST = os.environ.get("DNNCAST", os.path.join(ROOT, "build", "dnncast"))
try:
    TEST_GPUS = {gpu["name"] for gpu in json.loads(subprocess.run(
        [DNNCAST, "devices", "--json"], capture_output=True, text=True, check=True).stdout)["gpus"]
        if gpu["neusight_test_gpu"]}
except (OSError, subprocess.CalledProcessError, ValueError, KeyError) as error:
    sys.exit(f"gpu-residuals-mre: cannot ask {DNNCAST} which GPUs are test GPUs: {error}")


def is_test_gpu(name):
    return name in TEST_GPUS


def score(path, gpus):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    if not rows:
        sys.exit(f"gpu-residuals-mre: {path}: no rows")
    print(f"{path}: {len(rows)} rows, {sum(is_test_gpu(r['gpu']) for r in rows)} of the test GPUs left out")
    for column, group in (("held_gpu_ms", "gpu"), ("held_model_ms", "model")):
        by_group, by_framework, by_precision, every = defaultdict(list), defaultdict(list), defaultdict(list), []
        for row in rows:
            if is_test_gpu(row["gpu"]):
                continue
            error = abs(float(row[column]) / float(row["measured_ms"]) - 1)
            every.append(error)
            by_group[row[group]].append(error)
            by_framework[row["framework"]].append(error)
            by_precision[row["precision"]].append(error)
        per_group = sum(sum(v) / len(v) for v in by_group.values()) / len(by_group)
        frameworks, precisions = (", ".join(f"{name} {100 * sum(v) / len(v):.1f}% ({len(v)})"
                                            for name, v in sorted(by.items())) for by in (by_framework, by_precision))
        print(f"  each {group} held out: {100 * sum(every) / len(every):.1f}% over {len(every)} rows, "
              f"{100 * per_group:.1f}% over {len(by_group)} {group}s; {frameworks}; {precisions}")
    if gpus:
        ratios = defaultdict(list)
        for row in rows:
            if row["gpu"] in gpus:
                ratios[row["precision"]].append(float(row["held_gpu_ms"]) / float(row["measured_ms"]))
        for precision, values in sorted(ratios.items()):
            print(f"  {','.join(sorted(gpus))} {precision}: {len(values)} rows, each GPU held out "
                  f"{100 * sum(abs(v - 1) for v in values) / len(values):.1f}%, median forecast / measured "
                  f"{statistics.median(values):.2f}")


parser = argparse.ArgumentParser(description="Mean relative error of GPU residuals files over the training GPUs.")
parser.add_argument("--gpus", default="", help="comma-separated training GPUs: their rows per precision")
parser.add_argument("files", nargs="*")
args = parser.parse_args()
chosen = {name for name in args.gpus.split(",") if name}
for name in sorted(chosen):
    if is_test_gpu(name):
        print(f"gpu-residuals-mre: {name} is one of NeuSight's test GPUs: scored only by "
              "`dnncast calibrate-gpus --score-test-gpus`", file=sys.stderr)
        sys.exit(2)
for path in args.files or [os.path.join(ROOT, "data", "hardware", "gpu_forecast_residuals.csv")]:
    if not os.path.exists(path):
        print(f"gpu-residuals-mre: no file {path}", file=sys.stderr)
        sys.exit(2)
    score(path, chosen)
