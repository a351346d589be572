#!/usr/bin/python3
"""How near its peak each GPU runs large kernels, per source of the per-kernel rows (issue 45, docs/GPU.md).

    dnncast calibrate-gpu-kernels --leave-one-out --held-out-rows ROWS.csv
    scripts/kernel-regimes.py ROWS.csv [--family gemm] [--min-gflop 10]

Reads the held-out rows `calibrate-gpu-kernels --held-out-rows` writes and prints, per GPU and source (NeuSight's
calls timed one at a time, DeepBench's queued back to back), for the kernels of the family with at least MIN_GFLOP of
work: their count, the median of roofline / measured (how near the peak they ran), the median of measured / model
(the model's bias, each GPU held out of its fit) and the mean relative error of model and roofline.
Exit 2 on bad usage or an unreadable file.
"""
import argparse
import csv
import statistics
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows")
    parser.add_argument("--family", default="gemm")
    parser.add_argument("--min-gflop", type=float, default=10.0)
    args = parser.parse_args()
    groups = {}
    try:
        with open(args.rows) as f:
            for row in csv.DictReader(f):
                if row["family"] != args.family or float(row["flops"]) < args.min_gflop * 1e9:
                    continue
                measured, model, roofline = (float(row[k]) for k in ("measured_s", "model_s", "roofline_s"))
                if measured > 0 and model > 0:
                    groups.setdefault((row["gpu"], row["source"]), []).append((measured, model, roofline))
    except (OSError, KeyError, ValueError) as error:
        print(f"kernel-regimes: cannot read {args.rows}: {error}", file=sys.stderr)
        return 2
    if not groups:
        print(f"kernel-regimes: no {args.family} rows of {args.min_gflop:g} GFLOP or more in {args.rows}",
              file=sys.stderr)
        return 2
    print(f"{args.family} kernels of >= {args.min_gflop:g} GFLOP, each GPU held out of the fit")
    print(f"{'gpu':16} {'source':10} {'rows':>5} {'peak reached':>12} {'measured/model':>15} "
          f"{'model MRE':>10} {'roofline MRE':>13}")
    for (gpu, source), rows in sorted(groups.items()):
        reached = statistics.median(r / m for m, _, r in rows)
        bias = statistics.median(m / p for m, p, _ in rows)
        model_mre = statistics.mean(abs(p / m - 1) for m, p, _ in rows)
        roof_mre = statistics.mean(abs(r / m - 1) for m, _, r in rows)
        print(f"{gpu:16} {source:10} {len(rows):5d} {reached:12.2f} {bias:15.2f} {100 * model_mre:9.1f}% "
              f"{100 * roof_mre:12.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
