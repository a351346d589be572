#!/usr/bin/python3
"""The warm-cache caveat of single-layer timings, measured (docs/MEASUREMENT.md "Layer benchmarks").

  scripts/layer-ratios.py --runs DATA.db      per op: a node's time inside real iterations / alone
                                              (table layer_times of per-layer runs)
  scripts/layer-ratios.py --bench BENCH.db    per kind: cold / warm of single-layer benchmarks
                                              (table layer_benchmarks), and backward / forward
  scripts/layer-ratios.py --bench BENCH.db --repeat AGAIN.db
                                              also the noise floor: the same cases measured again in
                                              another process (bench-layers --sample N with the same
                                              seed), |a - mean| / mean per kind, warm forward + backward
Medians with p10-p90 and counts; rows under 50 us alone are left out (clock resolution).
"""
import argparse
import sqlite3
import statistics


def quantiles(values):
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]
    return statistics.median(values), pick(0.1), pick(0.9)


def table(title, groups):
    print(title)
    print("| group | rows | median | p10 | p90 |")
    print("|---|---:|---:|---:|---:|")
    for name, values in sorted(groups.items(), key=lambda item: -len(item[1])):
        if len(values) < 20:
            continue
        median, low, high = quantiles(values)
        print(f"| {name} | {len(values)} | {median:.2f} | {low:.2f} | {high:.2f} |")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs")
    parser.add_argument("--bench")
    parser.add_argument("--repeat")
    args = parser.parse_args()
    if args.runs:
        db = sqlite3.connect(f"file:{args.runs}?mode=ro", uri=True)
        groups = {}
        for op, alone, inside in db.execute(
                "SELECT op, forward_ms + backward_ms, iteration_forward_ms + iteration_backward_ms FROM layer_times "
                "WHERE iteration_forward_ms IS NOT NULL AND forward_ms + backward_ms >= 0.05"):
            groups.setdefault(op, []).append(inside / alone)
        table(f"In-iteration / alone, per op ({args.runs}):", groups)
    if args.bench:
        db = sqlite3.connect(f"file:{args.bench}?mode=ro", uri=True)
        cold, backward = {}, {}
        for kind, fwd, bwd, cfwd, cbwd in db.execute(
                "SELECT kind, forward_ms, backward_ms, cold_forward_ms, cold_backward_ms FROM layer_benchmarks "
                "WHERE status = 'ok' AND forward_ms + backward_ms >= 0.05"):
            cold.setdefault(kind, []).append((cfwd + cbwd) / (fwd + bwd))
            if fwd > 0:
                backward.setdefault(kind, []).append(bwd / fwd)
        table(f"Cold / warm (forward + backward), per kind ({args.bench}):", cold)
        table(f"Backward / forward (warm), per kind ({args.bench}):", backward)
    if args.bench and args.repeat:
        first = {key: (kind, fwd + bwd) for key, kind, fwd, bwd in sqlite3.connect(f"file:{args.bench}?mode=ro", uri=True).execute(
            "SELECT key, kind, forward_ms, backward_ms FROM layer_benchmarks WHERE status = 'ok'")}
        noise, every = {}, []
        for key, fwd, bwd in sqlite3.connect(f"file:{args.repeat}?mode=ro", uri=True).execute(
                "SELECT key, forward_ms, backward_ms FROM layer_benchmarks WHERE status = 'ok'"):
            if key not in first or first[key][1] + fwd + bwd <= 0:
                continue
            kind, a = first[key]
            b = fwd + bwd
            error = abs(a - b) / (a + b)  # |a - mean| / mean
            noise.setdefault(kind, []).append(error)
            every.append(error)
        noise["all kinds"] = every
        print(f"Noise floor: {len(every)} cases measured twice, |a - mean| / mean, mean error (MRE):")
        print("| kind | cases | MRE | median |")
        print("|---|---:|---:|---:|")
        for name, values in sorted(noise.items(), key=lambda item: -len(item[1])):
            print(f"| {name} | {len(values)} | {100 * statistics.mean(values):.1f}% | {100 * statistics.median(values):.1f}% |")
        print()


if __name__ == "__main__":
    main()
