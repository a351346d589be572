#!/usr/bin/python3
"""The noise floor of a dataset (docs/MEASUREMENT.md): how far repeats of one configuration, each
measured in its own process at a different time, lie apart -- raw median time and drift-normalised
time -- and what the machine was doing meanwhile (load from other processes, the drift probe).

    /usr/bin/python3 scripts/noise-floor-db.py DATA.db [--plan noise-floor] [--by-plan]

--by-plan adds `dnncast evaluate`'s noise floor (each repeat against the mean of the others, scaled
by sqrt((k-1)/k) for a configuration measured k times: the error against the configuration's mean)
per plan that measured the configuration first.
"""
import argparse
import itertools
import sqlite3
import statistics
import sys


def summary(values):
    values = sorted(values)
    if not values:
        return "n/a"
    p90 = values[int(0.9 * (len(values) - 1))]
    return f"{100 * statistics.mean(values):.1f}% / {100 * statistics.median(values):.1f}% / {100 * p90:.1f}%"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db")
    parser.add_argument("--plan", default=None, help="only runs of this plan (default: every repeated configuration)")
    parser.add_argument("--by-plan", action="store_true", help="evaluate's noise floor per plan of the first run")
    args = parser.parse_args()
    try:
        db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    except sqlite3.Error as error:
        sys.exit(f"noise-floor-db.py: {args.db}: {error}")
    if "time_ms_normalised" not in columns:
        sys.exit(f"noise-floor-db.py: {args.db} is not a dnncast dataset")
    where = "status = 'ok' AND time_ms_median > 0"
    params = []
    if args.plan and "plan" in columns:
        where += " AND plan = ?"
        params.append(args.plan)
    rows = db.execute(
        "SELECT network_id, environment_id, batch, input, optimizer, threads, repeat_index, time_ms_median, "
        "time_ms_normalised, probe_ms_before, probe_ms_after, load_other_cpus, measured_at, plan FROM runs WHERE " +
        where + " ORDER BY measured_at", params).fetchall()
    groups = {}
    for row in rows:
        groups.setdefault(row[:6], []).append(row)
    repeated = {key: runs for key, runs in groups.items() if len(runs) >= 2}
    if not repeated:
        sys.exit("noise-floor-db.py: no configuration was measured twice")
    runs = [run for group in repeated.values() for run in group]
    times = sorted(run[12] for run in runs)
    loads = [run[11] for run in runs if run[11] is not None]
    probes = [p for run in runs for p in (run[9], run[10]) if p]
    print(f"{len(repeated)} configurations measured 2-{max(len(g) for g in repeated.values())} times, "
          f"{len(runs)} runs from {times[0]} to {times[-1]}")
    print(f"other processes kept {statistics.median(loads):.2f} CPUs busy (median; max {max(loads):.2f}) while timing")
    print(f"drift probe: median {statistics.median(probes):.1f} ms, min {min(probes):.1f}, max {max(probes):.1f}")
    consecutive = {"raw": [], "normalised": []}
    pairs = {"raw": [], "normalised": []}
    for group in repeated.values():
        for column, index in (("raw", 7), ("normalised", 8)):
            values = [run[index] for run in group if run[index]]
            for a, b in zip(values, values[1:]):
                consecutive[column].append(abs(a - b) / ((a + b) / 2))
            for a, b in itertools.combinations(values, 2):
                pairs[column].append(abs(a - b) / ((a + b) / 2))
    print()
    print("| | consecutive repeats | any two repeats |")
    print("|---|---|---|")
    for column in ("raw", "normalised"):
        print(f"| {column} | {summary(consecutive[column])} | {summary(pairs[column])} |")
    print()
    print("cells: mean / median / p90 of |a - b| / mean(a, b) over pairs of repeats of one configuration")
    if args.by_plan:
        floors = {}
        for group in repeated.values():
            values = [run[7] for run in group]
            k = len(values)
            scale = ((k - 1) / k) ** 0.5
            errors = [scale * abs((sum(values) - x) / (k - 1) - x) / x for x in values]
            first = min(group, key=lambda run: (run[6], run[12]))[13]
            for key in (first, "all"):
                floors.setdefault(key, ([], []))
                floors[key][0].append(k)
                floors[key][1].extend(errors)
        print()
        print("| plan of the first run | configurations | runs | noise floor (mean / median / p90) |")
        print("|---|---:|---:|---|")
        for plan in sorted(floors, key=lambda name: (name == "all", name)):
            counts, errors = floors[plan]
            print(f"| {plan} | {len(counts)} | {sum(counts)} | {summary(errors)} |")
        print()
        print("noise floor: |x - mean of the other repeats| / x * sqrt((k-1)/k), as `dnncast evaluate` computes it")


if __name__ == "__main__":
    main()
