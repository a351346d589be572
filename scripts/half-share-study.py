#!/usr/bin/python3
"""The half-precision model's GEMM share at the FP32 rate, chosen leave-one-GPU-out on the BERT SQuAD rows (issue 45).

    scripts/half-share-study.py [--build BUILD] [--grid 0,0.025,...] [--containers "NGC 22.09"] [--keep DIR]

For each share S of the grid: the half-precision model refitted on Vidur's A40 kernels with it (`dnncast
calibrate-gpu-kernels --half --gemm-vector-share S --out ...`, which also prints the A40's kernels judged with each of
its models held out) into a copy of data/hardware, and NVIDIA's BERT SQuAD rows timed through it
(`scripts/amp-transformers.py --json` with DNNCAST_HARDWARE set to the copy). Printed per precision: each S's mean
relative error over the rows of the chosen containers and over all rows, and leave-one-GPU-out: each GPU scored with
the S that does best on the other GPUs' rows of those containers. The test GPUs of NeuSight's protocol (the H100 and
its family, L4, A100 80GB) are never timed, fitted or scored here (amp-transformers.py leaves them out; Vidur's A100
and H100 rows are in no fit). About 15 s per share. Exit 2 on bad usage or a missing file.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--grid", default="0,0.025,0.05,0.075,0.1,0.125,0.15,0.2")
    parser.add_argument("--containers", default="NGC 22.09",
                        help="the rows the share is chosen on: comma-separated NGC containers (default: NGC 22.09)")
    parser.add_argument("--keep", help="keep each share's data/hardware copy under this folder")
    args = parser.parse_args()
    dnncast = os.path.join(args.build, "dnncast")
    if not os.path.exists(dnncast):
        print(f"half-share-study: need {dnncast} (make build-cli)", file=sys.stderr)
        return 2
    try:
        grid = [float(value) for value in args.grid.split(",")]
    except ValueError:
        print(f"half-share-study: --grid {args.grid!r} is not a comma-separated list of numbers", file=sys.stderr)
        return 2
    if not grid or any(not 0 <= value < 10 for value in grid):
        print("half-share-study: every share of --grid must be from 0 to 10", file=sys.stderr)
        return 2
    containers = {name.strip() for name in args.containers.split(",") if name.strip()}
    work = args.keep or tempfile.mkdtemp(prefix="dnncast-half-share-")
    rows, judged = {}, {}
    for share in grid:
        hardware = os.path.join(work, f"share-{share:g}")
        shutil.rmtree(hardware, ignore_errors=True)
        shutil.copytree(os.path.join(ROOT, "data", "hardware"), hardware)
        shutil.rmtree(os.path.join(hardware, "gpu_kernels_fp16"))
        fitted = subprocess.run([dnncast, "calibrate-gpu-kernels", "--half", "--gemm-vector-share", f"{share:g}",
                                 "--out", os.path.join(hardware, "gpu_kernels_fp16")], capture_output=True, text=True)
        if fitted.returncode != 0:
            print(f"half-share-study: the fit at share {share:g} failed: {fitted.stderr.strip()}", file=sys.stderr)
            return 1
        judged[share] = {m.group(1): m.group(2) for m in re.finditer(r"a40\s+(\w+)\s+\d+\s+([\d.]+%)", fitted.stdout)}
        env = dict(os.environ, DNNCAST_HARDWARE=hardware)
        timed = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "amp-transformers.py"), "--build",
                                args.build, "--json"], capture_output=True, text=True, env=env)
        if timed.returncode != 0:
            print(f"half-share-study: amp-transformers.py failed: {timed.stderr.strip()}", file=sys.stderr)
            return 1
        rows[share] = [row for row in json.loads(timed.stdout) if not row["test"]]
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)

    def error(row):
        return abs(row["after"] / row["measured"] - 1)

    print("A40 fp16 kernels, each model held out (calibrate-gpu-kernels --half): GEMM / norm / elementwise")
    for share in grid:
        print(f"  share {share:<6g} " + " / ".join(judged[share].get(family, "-")
                                                    for family in ("gemm", "norm", "elementwise")))
    print()
    chosen_on = ", ".join(sorted(containers))
    for precision in ("amp", "tf32"):
        by_share = {share: [row for row in rows[share] if row["precision"] == precision] for share in grid}
        inside = {share: [row for row in by_share[share] if row["container"] in containers] for share in grid}
        if not inside[grid[0]]:
            print(f"{precision}: no row of {chosen_on}")
            continue
        print(f"{precision}: mean relative error, rows of {chosen_on} ({len(inside[grid[0]])}) / all rows "
              f"({len(by_share[grid[0]])})")
        for share in grid:
            print(f"  share {share:<6g} {100 * statistics.mean(map(error, inside[share])):5.1f}% / "
                  f"{100 * statistics.mean(map(error, by_share[share])):5.1f}%")
        gpus = sorted({row["gpu"] for row in inside[grid[0]]})
        held, picks = [], []
        for gpu in gpus:
            best = min(grid, key=lambda share: statistics.mean(
                error(row) for row in inside[share] if row["gpu"] != gpu) if any(
                row["gpu"] != gpu for row in inside[share]) else 0)
            picks.append(best)
            held += [error(row) for row in inside[best] if row["gpu"] == gpu]
        fitted = min(grid, key=lambda share: statistics.mean(map(error, inside[share])))
        print(f"  leave-one-GPU-out over {len(gpus)} GPUs: {100 * statistics.mean(held):.1f}% (shares picked: "
              f"{', '.join(f'{p:g}' for p in sorted(set(picks)))}); fitted on every GPU: {fitted:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
