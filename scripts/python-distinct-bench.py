#!/usr/bin/python3
"""Distinct forecasts from Python (issue 37): N resnet50 forecasts through `dnncast.predict`, each a new
configuration (the walk of `scripts/serve-load.sh --distinct`: batches 1-1024, inputs 32-224 px, SGD or Adam), in one
process, as a notebook sweeping configurations makes them. The first call loads the predictor set and is timed apart.

    scripts/python-distinct-bench.py [--build DIR] [--count N] [--device NAME] [--threads T]

--device: a catalogued GPU (a100-40gb: the GPU time model) instead of this host's CPU set. Prints the first call's
ms, then the median, p10, p90 and mean wall ms per forecast, forecasts per second, and the median CPU ms of the
process per forecast over the N after it. --threads T: the same N forecasts from T Python threads at once (a
ThreadPoolExecutor; each call releases the GIL): the wall time of all N and forecasts per second.
"""
import argparse
from concurrent.futures import ThreadPoolExecutor
import warnings
import os
import statistics
import sys
import time


def configuration(k):
    """The k-th configuration of serve-load.sh's distinct walk."""
    k %= 51200
    size = 32 + 8 * ((k // 1024) % 25)
    return {"batch": 1 + k % 1024, "input_shape": (3, size, size),
            "optimizer": "sgd" if (k // 25600) % 2 == 0 else "adam"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--device", default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import dnncast  # noqa: E402  (the build's package)
    warnings.simplefilter("ignore", dnncast.HostMismatchWarning)  # the shipped set was trained on another CPU: not the point here

    start = time.perf_counter()
    dnncast.predict("resnet50", device=args.device, **configuration(0))
    first_ms = 1e3 * (time.perf_counter() - start)
    if args.threads > 1:
        def one(k):
            return dnncast.predict("resnet50", device=args.device, **configuration(7919 * k)).time_ms
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.threads) as pool:
            answers = list(pool.map(one, range(1, args.count + 1)))
        wall = time.perf_counter() - start
        assert all(value > 0 for value in answers)
        print(f"device: {args.device or 'the CPU of this host'}; first call (loads the set) {first_ms:.1f} ms")
        print(f"{args.count} distinct forecasts on {args.threads} threads: {1e3 * wall:.0f} ms in all, "
              f"{args.count / wall:.0f} forecasts/s")
        return
    times_ms, cpu_ms = [], []
    for k in range(1, args.count + 1):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = dnncast.predict("resnet50", device=args.device, **configuration(7919 * k))  # a stride over the walk
        times_ms.append(1e3 * (time.perf_counter() - start))
        cpu_ms.append(1e3 * (time.process_time() - start_cpu))
        assert result.time_ms > 0
    times_ms.sort()
    quantile = lambda q: times_ms[min(len(times_ms) - 1, int(q * len(times_ms)))]
    print(f"device: {args.device or 'the CPU of this host'}; first call (loads the set) {first_ms:.1f} ms")
    print(f"{args.count} distinct forecasts: median {statistics.median(times_ms):.3f} ms, p10 {quantile(0.1):.3f}, "
          f"p90 {quantile(0.9):.3f}, mean {statistics.mean(times_ms):.3f} ms; "
          f"{1e3 * len(times_ms) / sum(times_ms):.0f} forecasts/s; CPU time median {statistics.median(cpu_ms):.3f} ms "
          f"(the process's, which other processes on a shared host do not inflate)")


if __name__ == "__main__":
    main()
