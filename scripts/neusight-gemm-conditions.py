#!/usr/bin/python3
"""Do NeuSight's two kinds of GEMM measurement agree on the same GPU? (issue 45)

    scripts/neusight-gemm-conditions.py [--public DIR] [--max-distance D] [--rows]

The per-kernel model is fitted on NeuSight's kernel tables (ops/train/linear/GPU.csv.xz: one linear call a row, timed
alone in a sweep of random shapes) and judged on its per-node labels (labels/GPU/MODEL-MODE-SEQ-BATCH.csv.xz: one
torch.fx node a row, timed inside a transformer). For every GEMM node of the labels (addmm and Linear modules; each
shape once per file), this finds the same GPU's kernel-table row nearest in log(M), log(N), log(K) (distance at most
--max-distance, default 0.05: sizes within about 13%), scales its latency by the FLOP ratio, and sets it beside the
node's forward latency (less the file's median latency of nodes that launch no kernel, as scripts/neusight-nodes.py
does). Prints, per GPU, how many nodes had a near row and the median and range of table / label: 1.0 where the two
agree. No dnncast code is involved; only NeuSight's files are read. Exit 2 on a missing folder.
"""
import argparse
import ast
import csv
import glob
import io
import lzma
import math
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUS = ["Tesla_P4", "Tesla_P100-PCIE-16GB", "Tesla_T4", "Tesla_V100-PCIE-32GB", "NVIDIA_A100-PCIE-40GB"]
LINEAR_SUFFIXES = ("query", "key", "value", "dense", "q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2", "lm_head")


def read_xz_csv(path):
    csv.field_size_limit(1 << 30)
    return list(csv.DictReader(io.TextIOWrapper(lzma.open(path), encoding="utf8")))


def gemm_nodes(rows):
    """(M, N, K, forward ms) of each GEMM node, each shape once, the no-kernel floor taken off."""
    floor = [float(r["fw_latency"]) for r in rows if r["target"] in ("size", "getattr") or "getitem" in r["target"]]
    floor = statistics.median(floor) if floor else 0.0
    seen, out = set(), []
    for r in rows:
        is_module = r["op"] == "call_module" and r["target"].endswith(LINEAR_SUFFIXES)
        if "addmm" not in r["target"] and not is_module:
            continue
        shapes = ast.literal_eval(r["input_shapes"])
        if "addmm" in r["target"]:
            (m, k), n = shapes[1], shapes[2][1]
        else:
            x = shapes[0]
            m, k, n = math.prod(x[:-1]), x[-1], ast.literal_eval(r["output_shape"])[-1]
        if (m, n, k) in seen:
            continue
        seen.add((m, n, k))
        out.append((m, n, k, max(float(r["fw_latency"]) - floor, 1e-6)))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--public", default=os.path.join(ROOT, "..", "shared", "data", "public", "neusight"))
    parser.add_argument("--max-distance", type=float, default=0.05)
    parser.add_argument("--rows", action="store_true", help="print every matched node")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.public, "ops", "train", "linear")):
        print(f"neusight-gemm-conditions: no {args.public}/ops/train/linear", file=sys.stderr)
        return 2
    print(f"{'gpu':24s} {'nodes':>5s} {'near':>5s} {'table/label median':>19s} {'range':>13s}")
    for gpu in GPUS:
        table_path = os.path.join(args.public, "ops", "train", "linear", gpu + ".csv.xz")
        label_files = sorted(glob.glob(os.path.join(args.public, "labels", gpu, "*.csv.xz")))
        if not os.path.exists(table_path) or not label_files:
            continue
        table = [(float(r["B"]) * float(r["M"]), float(r["N"]), float(r["K"]), float(r["Latency"]))
                 for r in read_xz_csv(table_path)]
        ratios, nodes = [], 0
        for label_file in label_files:
            for m, n, k, label_ms in gemm_nodes(read_xz_csv(label_file)):
                nodes += 1
                best = min(table, key=lambda t: (math.log(t[0] / m)) ** 2 + (math.log(t[1] / n)) ** 2 +
                           (math.log(t[2] / k)) ** 2)
                distance = (math.log(best[0] / m)) ** 2 + (math.log(best[1] / n)) ** 2 + (math.log(best[2] / k)) ** 2
                if distance > args.max_distance:
                    continue
                scaled = best[3] * (m * n * k) / (best[0] * best[1] * best[2])
                ratios.append(scaled / label_ms)
                if args.rows:
                    print(f"  {os.path.basename(label_file)[:30]:30s} M={m} N={n} K={k}: label {label_ms:.3f} ms, "
                          f"table {scaled:.3f} ms (row {best[0]:.0f}x{best[1]:.0f}x{best[2]:.0f}), "
                          f"{scaled / label_ms:.2f}")
        if ratios:
            print(f"{gpu:24s} {nodes:5d} {len(ratios):5d} {statistics.median(ratios):19.2f} "
                  f"{min(ratios):6.2f}-{max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
