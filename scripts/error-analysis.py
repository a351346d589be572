#!/usr/bin/python3
"""Where the time predictor's error sits, from `dnncast evaluate --predictions FILE.csv` (docs/RESULTS.md,
"Where the error is"): by plan; networks the training part measured at other configurations vs networks
it never saw; how consistent the error of one configuration is between its repeats (a model's own
error repeats, measurement noise does not); the layer-wise sum beside the learned model; the scale of
the forecasts that would minimise the MRE.

    build/dnncast evaluate --db DATA.db --split random --learner xgboost --target time --predictions p.csv
    /usr/bin/python3 scripts/error-analysis.py p.csv DATA.db
"""
import argparse
import collections
import csv
import math
import sqlite3
import statistics


def mre(values):
    return f"{100 * statistics.mean(values):.1f}%" if values else "n/a"


def correlation(pairs):
    if len(pairs) < 3:
        return float("nan")
    xs, ys = zip(*pairs)
    mx, my = statistics.mean(xs), statistics.mean(ys)
    cov = sum((x - mx) * (y - my) for x, y in pairs)
    vx = sum((x - mx) ** 2 for x in xs)
    vy = sum((y - my) ** 2 for y in ys)
    return cov / math.sqrt(vx * vy) if vx > 0 and vy > 0 else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("predictions", help="CSV of dnncast evaluate --predictions")
    parser.add_argument("db", help="the dataset evaluated (for how often each network was measured)")
    args = parser.parse_args()

    rows = [row for row in csv.DictReader(open(args.predictions)) if row["target"] == "time"]
    if not rows:
        raise SystemExit(f"{args.predictions}: no time predictions")
    for row in rows:
        row["measured"] = float(row["measured"])
        row["forecast"] = float(row["forecast"])
        row["error"] = abs(row["forecast"] - row["measured"]) / row["measured"]
    print(f"{len(rows)} test runs, learned MRE {mre([r['error'] for r in rows])}")

    print("\nby plan (test runs, learned MRE, median signed error):")
    by_plan = collections.defaultdict(list)
    for row in rows:
        by_plan[row["plan"]].append(row)
    for plan, items in sorted(by_plan.items(), key=lambda item: -len(item[1])):
        signed = statistics.median((r["forecast"] - r["measured"]) / r["measured"] for r in items)
        print(f"  {plan:28s} {len(items):5d} {mre([r['error'] for r in items]):>7s} {100 * signed:+6.1f}%")

    # Networks measured at other configurations than their test ones: ok runs in the dataset beyond
    # the network's test runs (some of them may be other test configurations, most are training).
    db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    runs_of = collections.Counter(
        name for (name,) in db.execute(
            "SELECT n.name FROM runs r JOIN networks n ON n.id = r.network_id WHERE r.status = 'ok'"))
    test_runs_of = collections.Counter(row["network"] for row in rows)
    print("\nnetworks measured at other configurations too, or only at their test ones:")
    groups = collections.defaultdict(list)
    for row in rows:
        seen = runs_of[row["network"]] > test_runs_of[row["network"]]
        kind = "synthetic" if row["family"] == "synthetic" else "designed"
        groups[(kind, "seen" if seen else "unseen")].append(row["error"])
    for key in sorted(groups):
        print(f"  {key[0]:10s} {key[1]:7s} {len(groups[key]):5d} runs  learned MRE {mre(groups[key])}")

    # Configurations with 2+ test repeats: the model's log error against each repeat.
    by_config = collections.defaultdict(list)
    for row in rows:
        key = (row["network"], row["environment"], row["batch"], row["input"], row["seq_len"], row["optimizer"],
               row["precision"], row["threads"])
        by_config[key].append(row)
    pairs, single, against_mean = [], [], []
    for items in by_config.values():
        if len(items) < 2:
            continue
        logs = [math.log(r["forecast"] / r["measured"]) for r in items]
        pairs.append((logs[0], logs[1]))
        mean = statistics.mean(r["measured"] for r in items)
        against_mean.append(abs(items[0]["forecast"] - mean) / mean)
        single.extend(r["error"] for r in items)
    print(f"\nconfigurations with 2+ test repeats: {len(pairs)}")
    print(f"  learned MRE against single runs {mre(single)}, against the mean of the repeats {mre(against_mean)}")
    print(f"  correlation of the model's log error between two repeats: {correlation(pairs):.2f} "
          "(1: all of it is the model's, 0: all of it is noise)")

    layered = [row for row in rows if row.get("layerwise")]
    if layered:
        errors = [abs(float(r["layerwise"]) - r["measured"]) / r["measured"] for r in layered]
        print(f"\nlayer-wise sum alone (scaled): MRE {mre(errors)} over {len(layered)} runs "
              f"(learned on the same runs: {mre([r['error'] for r in layered])})")

    print("\nforecasts scaled by a constant (what minimises the MRE; not applied by dnncast):")
    for scale in (1.0, 0.98, 0.96, 0.94, 0.92, 0.90):
        errors = [abs(scale * r["forecast"] - r["measured"]) / r["measured"] for r in rows]
        print(f"  x {scale:.2f}: MRE {mre(errors)}")


if __name__ == "__main__":
    main()
