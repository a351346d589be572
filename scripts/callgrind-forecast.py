#!/usr/bin/python3
"""Instructions per GPU forecast of a predict_bench benchmark, under callgrind: the noise of a shared machine does
not move them, so two builds compare where their wall times differ by less than the rounds' spread (docs/RESULTS.md,
issue 48).

Runs `valgrind --tool=callgrind BENCH --benchmark_filter=NAME$ --benchmark_min_time=SECONDS`, then takes
dnncast::gpu::forecast_gpu(request, calibration)'s inclusive instructions from `callgrind_annotate --tree=caller`,
less those of the model loads that run once per process inside its first call (called at most twice in the run),
over its number of calls. Needs valgrind (`apt-get install valgrind`).

  /usr/bin/python3 scripts/callgrind-forecast.py BENCH NAME [NAME...] [--seconds 3] [--parts]

e.g. scripts/callgrind-forecast.py build/bench/predict_bench GpuForecastLlama2Config ParallelForecastLlama70bTp8
--parts adds the step's memory simulation, the GPU's kernel list and the graph's build, per forecast.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

FORECAST = "dnncast::gpu::forecast_gpu(dnncast::gpu::GpuForecastRequest const&, dnncast::gpu::GpuCalibration const&)"
ONCE = ["dnncast::gpu::GpuKernelModel::load(", "dnncast::gpu::shipped_half_kernel_model()",
        "dnncast::gpu::load_eager_kernels(", "dnncast::gpu::load_gpu_memory_calibration(",
        "dnncast::gpu::load_collectives("]
PARTS = [("memory simulated", "dnncast::memory::simulate_memory("),
         ("kernels listed", "dnncast::gpu::gpu_work(dnncast::Graph const&, dnncast::gpu::GpuPrecision, "
                            "dnncast::Optimizer, bool, bool"),
         ("graph built", "dnncast::import::load_model(")]


def blocks(annotated):
    """Each function's block of callgrind_annotate --tree=caller: (inclusive, name line, total calls from callers)."""
    for block in annotated.split("\n\n"):
        lines = block.split("\n")
        star = [line for line in lines if "*  " in line]
        if not star:
            continue
        cost = int(star[0].split()[0].replace(",", ""))
        calls = 0
        for line in lines:
            if "  < " in line:
                found = re.search(r"\((\d[\d,]*)x\)", line)
                if found:
                    calls += int(found.group(1).replace(",", ""))
        yield cost, star[0], calls


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench")
    parser.add_argument("names", nargs="+")
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--parts", action="store_true")
    args = parser.parse_args()
    for tool in ("valgrind", "callgrind_annotate"):
        if not shutil.which(tool):
            sys.exit(f"callgrind-forecast: no {tool} on PATH (apt-get install valgrind)")
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"callgrind-forecast: {args.bench} is not an executable benchmark program")
    for name in args.names:
        with tempfile.TemporaryDirectory() as work:
            out = os.path.join(work, "callgrind.out")
            run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", args.bench,
                                  f"--benchmark_filter={name}$", f"--benchmark_min_time={args.seconds}"],
                                 capture_output=True, text=True)
            if run.returncode != 0 or not os.path.exists(out):
                sys.exit(f"callgrind-forecast: {args.bench} {name} failed: {run.stderr.strip().splitlines()[-1:]}")
            annotated = subprocess.run(["callgrind_annotate", "--tree=caller", "--inclusive=yes", out],
                                       capture_output=True, text=True, check=True).stdout
        found = list(blocks(annotated))

        def inclusive(pattern):
            for cost, line, calls in found:
                if pattern in line:
                    return cost, calls
            return 0, 0

        total, calls = inclusive(FORECAST)
        if calls == 0:
            sys.exit(f"callgrind-forecast: {name} ran no GPU forecast (is it a forecast_gpu benchmark?)")
        once = sum(cost for cost, count in map(inclusive, ONCE) if 0 < count <= 2)
        line = f"{name}: {calls} forecasts, {(total - once) / calls / 1e6:.2f} M instructions each"
        if args.parts:
            line += "".join(f"; {label} {inclusive(pattern)[0] / calls / 1e6:.2f} M" for label, pattern in PARTS)
        print(line + f" (one-time loads {once / 1e6:.1f} M taken off)", flush=True)


if __name__ == "__main__":
    main()
