#!/usr/bin/python3
"""Independent check of the linear-shift reference of issue 7 and of `dnncast transfer`'s LMS.

Numpy only, no dnncast code. For each target (200/400/800) and metric of the OpML'19 TX2 Xception
data: match target rows to source (600x600) rows by their option values, draw `budget` random target
rows, fit target = a * source_measured + b by least squares on them, and take the MAPE over every
other target row. Mean over `draws` random draws. Also DM (source values unchanged, all rows).

usage: /usr/bin/python3 scripts/transfer_linear_shift.py [--budget 0.0244] [--draws 20] [--seed 1]
"""
import argparse
import csv
import math
import os

import numpy as np

OPTIONS = ["core0_on", "core1_on", "core2_on", "core3_on", "core_freq_hz", "gpu_on", "gpu_freq_hz",
           "emc_on", "emc_freq_hz"]
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "public",
                    "opml19_tx2_xception")


def read(size, data=DATA):
    with open(os.path.join(data, f"xception_{size}.csv")) as handle:
        rows = list(csv.DictReader(handle))
    return {tuple(row[o] for o in OPTIONS): row for row in rows}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=float, default=0.0244)
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", default=DATA)
    args = parser.parse_args()
    source = read("600x600", args.data)
    rng = np.random.default_rng(args.seed)
    print("metric target budget_rows lms_mape_pct dm_mape_pct")
    for metric in ["inference_time_s", "power_consumption"]:
        for size in ["200x200", "400x400", "800x800"]:
            target = read(size, args.data)
            keys = sorted(target)
            assert set(keys) == set(source), "source and target configurations differ"
            x = np.array([float(source[k][metric]) for k in keys])
            y = np.array([float(target[k][metric]) for k in keys])
            rows = len(keys)
            budget = max(2, int(math.ceil(args.budget * rows))) if args.budget < 1 else int(args.budget)
            errors = []
            for _ in range(args.draws):
                picked = rng.choice(rows, size=budget, replace=False)
                rest = np.setdiff1d(np.arange(rows), picked)
                a, b = np.polyfit(x[picked], y[picked], 1)
                errors.append(np.mean(np.abs(a * x[rest] + b - y[rest]) / y[rest]) * 100)
            dm = np.mean(np.abs(x - y) / y) * 100
            print(f"{metric} {size} {budget} {np.mean(errors):.1f} {dm:.1f}")


if __name__ == "__main__":
    main()
