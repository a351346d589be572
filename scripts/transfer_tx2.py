#!/usr/bin/python3
"""Reproduction table of docs/TRANSFER.md: `dnncast transfer` on the OpML'19 TX2 Xception data.

Source 600x600; targets 200x200, 400x400, 800x800; both metrics; budgets 1%, 2.44%, 5%, 10%;
strategies dm, lms, nmls, gs, random, scratch_all; learners rt, nn, xgb; 20 draws.
Prints one markdown table per budget (MAPE %, mean over the draws) and writes every result as JSON.

usage: taskset -c 0 /usr/bin/python3 scripts/transfer_tx2.py [--dnncast build/dnncast] [--json out.json]
"""
import argparse
import json
import os
import subprocess

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "..", "shared", "data", "public", "opml19_tx2_xception")
OPTIONS = "core1_on,core2_on,core3_on,core_freq_hz,gpu_freq_hz,emc_freq_hz"
METRICS = [("inference_time_s", "time"), ("power_consumption", "power")]
TARGETS = ["200x200", "400x400", "800x800"]
BUDGETS = [0.01, 0.0244, 0.05, 0.10]
STRATEGIES = ["dm", "lms", "nmls", "gs", "random", "scratch_all"]
LEARNERS = ["rt", "nn", "xgb"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dnncast", default=os.path.join(ROOT, "build", "dnncast"))
    parser.add_argument("--json", default="")
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--budgets", default=",".join(str(b) for b in BUDGETS))
    args = parser.parse_args()
    results = []
    for budget in [float(b) for b in args.budgets.split(",")]:
        rows = []
        for metric, label in METRICS:
            for target in TARGETS:
                command = [args.dnncast, "transfer", "--source", os.path.join(DATA, "xception_600x600.csv"),
                           "--target", os.path.join(DATA, f"xception_{target}.csv"), "--options", OPTIONS,
                           "--metric", metric, "--budget", str(budget), "--draws", str(args.draws),
                           "--strategy", ",".join(STRATEGIES), "--learner", ",".join(LEARNERS), "--json"]
                result = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
                result["label"] = f"{label} {target}"
                results.append(result)
                cells = {(c["strategy"], c["learner"]): c["mape_pct"] for c in result["cells"]}
                row = [f"{label} {target}"]
                for strategy in STRATEGIES:
                    row.append(" / ".join(f"{cells[(strategy, learner)]:.1f}" for learner in LEARNERS))
                best = min((cells[(s, l)], s, l) for s in ["dm", "lms", "nmls", "gs"] for l in LEARNERS)
                row.append(f"{best[1]} ({best[2]})")
                rows.append(row)
        print(f"\nbudget {budget} ({result['budget_rows']} of {result['target_rows']} target rows); "
              f"MAPE % rt / nn / xgb, mean of {args.draws} draws\n")
        print("| target | " + " | ".join(STRATEGIES) + " | best transfer |")
        print("|" + " --- |" * (len(STRATEGIES) + 2))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
