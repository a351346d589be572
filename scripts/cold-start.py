#!/usr/bin/python3
"""Cold start of the `dnncast` commands that forecast (issue 33): each command run afresh N times (a new process each
time, as a user or a script calls it), wall time and peak resident memory; medians, with the spread.

    scripts/cold-start.py [--build DIR] [--runs N] [--binary NAME]

--binary dnncast-measure times the same commands in the program that links libtorch (what `dnncast` was before
issue 33 split it).

Prints whether the binary links libtorch and SQLite (`ldd`), then a Markdown table: command, median wall ms
(p10-p90), median peak RSS MB.
"""
import argparse
import os
import statistics
import subprocess
import sys

COMMANDS = [
    ["inspect", "resnet18", "--json"],
    ["memory", "resnet50", "--batch", "32", "--json"],
    ["predict", "resnet50", "--batch", "32", "--json"],
    ["predict", "resnet50", "--batch", "32", "--input", "3x64x64", "--json"],
    ["predict", "resnet50", "--batch", "32", "--device", "a100-40gb", "--json"],
    ["predict", "bert_base", "--batch", "8", "--seq", "128", "--device", "t4", "--json"],
]


def warm(binary, args):
    """One run first: the page cache is warm, so what is measured is the process, not the disk."""
    done = subprocess.run([binary] + args, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"cold-start.py: {' '.join(args)} failed: {done.stderr.decode(errors='replace').strip()}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--binary", default="dnncast")
    options = parser.parse_args()
    binary = os.path.join(options.build, options.binary)
    libraries = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    print(f"`{binary}` links libtorch: {'yes' if 'libtorch' in libraries else 'no'}; "
          f"SQLite: {'yes' if 'libsqlite3' in libraries else 'no'}; {options.runs} runs each\n")
    print("| command | wall ms, median (p10-p90) | peak RSS MB |")
    print("| --- | --- | --- |")
    for args in COMMANDS:
        warm(binary, args)
        walls, peaks = [], []
        for _ in range(options.runs):
            # Each run in a fresh child of a fresh Python, so that RUSAGE_CHILDREN's maximum is this run's.
            probe = subprocess.run([sys.executable, "-c", f"""
import resource, subprocess, time
start = time.perf_counter()
subprocess.run({[binary] + args!r}, capture_output=True, check=True)
wall = (time.perf_counter() - start) * 1000
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
"""], capture_output=True, text=True, check=True)
            wall, peak = (float(value) for value in probe.stdout.split())
            walls.append(wall)
            peaks.append(peak)
        deciles = statistics.quantiles(walls, n=10)
        print(f"| `dnncast {' '.join(args)}` | {statistics.median(walls):.0f} ({deciles[0]:.0f}-{deciles[-1]:.0f}) "
              f"| {statistics.median(peaks):.0f} |")


if __name__ == "__main__":
    main()
