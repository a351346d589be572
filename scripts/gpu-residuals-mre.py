#!/usr/bin/python3
"""Mean relative error of a GPU residuals file (`dnncast calibrate-gpus --residuals FILE`) over the training GPUs.

Reads the held-out forecasts a residuals file records (each row's GPU held out of the fit, and its model) and prints
their mean relative error over the rows of the training GPUs, over those GPUs and per framework, leaving out the rows
of NeuSight's test GPUs, as `dnncast calibrate-gpus` does without --score-test-gpus (which GPUs those are, dnncast
says: `devices --json`, each GPU's neusight_test_gpu; DNNCAST names the binary, build/dnncast by default). With it an
older file (`git show COMMIT:data/hardware/gpu_forecast_residuals.csv`) is scored on the same rows as the shipped one:

    scripts/gpu-residuals-mre.py [FILE ...]     (default data/hardware/gpu_forecast_residuals.csv)
"""
import csv
import json
import os
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


def score(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    if not rows:
        sys.exit(f"gpu-residuals-mre: {path}: no rows")
    print(f"{path}: {len(rows)} rows, {sum(is_test_gpu(r['gpu']) for r in rows)} of the test GPUs left out")
    for column, group in (("held_gpu_ms", "gpu"), ("held_model_ms", "model")):
        by_group, by_framework, every = defaultdict(list), defaultdict(list), []
        for row in rows:
            if is_test_gpu(row["gpu"]):
                continue
            error = abs(float(row[column]) / float(row["measured_ms"]) - 1)
            every.append(error)
            by_group[row[group]].append(error)
            by_framework[row["framework"]].append(error)
        per_group = sum(sum(v) / len(v) for v in by_group.values()) / len(by_group)
        frameworks = ", ".join(f"{name} {100 * sum(v) / len(v):.1f}% ({len(v)})"
                               for name, v in sorted(by_framework.items()))
        print(f"  each {group} held out: {100 * sum(every) / len(every):.1f}% over {len(every)} rows, "
              f"{100 * per_group:.1f}% over {len(by_group)} {group}s; {frameworks}")


for path in sys.argv[1:] or [os.path.join(ROOT, "data", "hardware", "gpu_forecast_residuals.csv")]:
    score(path)
