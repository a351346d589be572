#!/usr/bin/python3
"""dnncast's multi-GPU forecast beside NeuSight's distributed training labels (issue 48).

    scripts/neusight-distributed.py [--build BUILD] [--public DIR] [--score-test-gpus] [--json]

NeuSight's artifact times 4-GPU Megatron-LM training (through Hugging Face accelerate; fp32, AdamW, gradient
clipping, no mixed precision) of GPT-2 Large and GPT-3 XL on an A100 SXM4 40GB node and an H100 80GB HBM3 node: one
iteration (forward, backward and the optimizer step inside accelerate's Megatron train step) per row, data (dp4),
tensor (tp4) and pipeline (pp4_M, M micro-batches) parallel; the label's batch is the global batch
(../shared/data/public/gpu_benchmarks/neusight_transformer_latency_labels.csv, variant column). Each row becomes

    dnncast predict CONFIG --seq S --batch B --gpus 4 --parallel dp|tp|pp [--micro-batches M] --device GPU
        --optimizer adamw --json

with B the batch of one data-parallel replica (the global batch / 4 for dp4). The H100 is one of NeuSight's test GPUs
and ours: its rows are counted and left unscored unless --score-test-gpus is given (score them once, never tune on
them). Prints each row's measured and forecast time and error, and the mean absolute and signed error per GPU;
exit 2 on bad usage or a missing file.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# NeuSight's device name -> the catalogue's GPU, and whether it is a test GPU of the protocol.
GPUS = {"NVIDIA_A100-SXM4-40GB": ("a100-40gb", False), "NVIDIA_H100_80GB_HBM3": ("h100-sxm", True)}


def rows(path):
    with open(path, newline="") as handle:
        lines = [line for line in handle if not line.startswith("#")]
    for row in csv.DictReader(lines):
        variant = row["variant"]
        if variant[:2] in ("dp", "tp", "pp") and row["device"] in GPUS:
            yield row


def command(build, configs, row):
    variant = row["variant"]
    axis, rest = variant[:2], variant[2:]
    gpus = int(rest.split("_")[0])
    batch = int(row["batch_size"])
    args = [os.path.join(build, "dnncast"), "predict", os.path.join(configs, row["model"] + ".json"),
            "--seq", row["seq_len"], "--gpus", str(gpus), "--parallel", axis,
            "--device", GPUS[row["device"]][0], "--optimizer", "adamw", "--json"]
    if axis == "dp":
        batch //= gpus
    if axis == "pp":
        args += ["--micro-batches", rest.split("_")[1]]
    return args + ["--batch", str(batch)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--public", default=os.path.join(os.path.dirname(ROOT), "shared", "data", "public"))
    parser.add_argument("--score-test-gpus", action="store_true",
                        help="also score the H100 rows (NeuSight's test GPU): once, when asked")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    labels = os.path.join(args.public, "gpu_benchmarks", "neusight_transformer_latency_labels.csv")
    configs = os.path.join(args.public, "neusight", "model_configs")
    for path in (labels, configs, os.path.join(args.build, "dnncast")):
        if not os.path.exists(path):
            print(f"neusight-distributed: {path} not found", file=sys.stderr)
            return 2
    results, held = [], 0
    for row in rows(labels):
        gpu, test = GPUS[row["device"]]
        if test and not args.score_test_gpus:
            held += 1
            continue
        run = subprocess.run(command(args.build, configs, row), capture_output=True, text=True)
        if run.returncode != 0:
            print(f"neusight-distributed: {row['model']} {row['variant']} on {gpu}: {run.stderr.strip()}",
                  file=sys.stderr)
            return 1
        forecast = json.loads(run.stdout)
        measured = float(row["e2e_ms"])
        results.append({"gpu": gpu, "test_gpu": test, "model": row["model"], "seq": int(row["seq_len"]),
                        "batch": int(row["batch_size"]), "variant": row["variant"], "measured_ms": measured,
                        "forecast_ms": forecast["time_ms"], "error": forecast["time_ms"] / measured - 1,
                        "exposed_comm_ms": forecast["parallel"]["exposed_comm_ms"],
                        "bubble_ms": forecast["parallel"]["bubble_ms"]})
    if args.json:
        print(json.dumps({"rows": results, "test_rows_held_out": held}, indent=2))
        return 0
    print(f"{'GPU':<10} {'model':<11} {'seq':>5} {'batch':>5} {'variant':<7} {'measured':>9} {'forecast':>9}  error")
    for r in results:
        print(f"{r['gpu']:<10} {r['model']:<11} {r['seq']:>5} {r['batch']:>5} {r['variant']:<7} "
              f"{r['measured_ms']:>9.1f} {r['forecast_ms']:>9.1f} {100 * r['error']:+6.1f}%")
    for gpu in sorted({r["gpu"] for r in results}):
        errors = [r["error"] for r in results if r["gpu"] == gpu]
        print(f"{gpu}: {len(errors)} rows, mean |error| {100 * statistics.mean(abs(e) for e in errors):.1f}%, "
              f"mean signed {100 * statistics.mean(errors):+.1f}%, largest {100 * max(abs(e) for e in errors):.1f}%")
    if held:
        print(f"{held} rows of NeuSight's test GPU (H100) held out: --score-test-gpus scores them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
