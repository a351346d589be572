#!/usr/bin/python3
"""The memory simulator against every profiled run of a dataset (docs/MEMORY.md "Validation").

    /usr/bin/python3 scripts/memory-vs-dataset.py DB [--dnncast build/dnncast] [--show 15]

For each distinct configuration (network, batch, input, optimizer, threads) with an ok run and a
measured peak, runs `dnncast memory ... --json` and compares its peak_bytes with the profiler's
(the median run's peak above the baseline). Prints the count of exact matches, the number within
1%, and the worst cases. Exit code 1 when any configuration is more than 1% off.
"""
import argparse
import json
import sqlite3
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--dnncast", default="build/dnncast")
    parser.add_argument("--show", type=int, default=15)
    args = parser.parse_args()
    con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    rows = con.execute(
        """select n.name, r.batch, r.input, r.optimizer, r.threads, max(r.peak_bytes)
           from runs r join networks n on n.id = r.network_id
           where r.status = 'ok' and r.peak_bytes is not null and r.device = 'cpu' and r.precision = 'fp32'
           group by n.name, r.batch, r.input, r.optimizer, r.threads""").fetchall()
    off = []
    failed = 0
    for name, batch, shape, optimizer, threads, measured in rows:
        command = [args.dnncast, "memory", name, "--batch", str(batch), "--input", shape, "--optimizer", optimizer,
                   "--threads", str(threads), "--json"]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            failed += 1
            print(f"failed: {' '.join(command)}: {result.stderr.strip()}")
            continue
        simulated = json.loads(result.stdout)["peak_bytes"]
        if simulated != measured:
            off.append((abs(simulated - measured) / measured, name, batch, shape, optimizer, threads, simulated, measured))
    within = sum(1 for case in off if case[0] <= 0.01)
    exact = len(rows) - failed - len(off)
    print(f"{args.db}: {len(rows)} configurations, {exact} byte-exact, {exact + within} within 1%, "
          f"{len(off) - within} more than 1% off, {failed} failed")
    for case in sorted(off, reverse=True)[: args.show]:
        print("  %+.4f%%  %s b%d %s %s t%d: simulated %d B, measured %d B" %
              (100 * (case[6] - case[7]) / case[7], *case[1:]))
    return 1 if failed or len(off) > within else 0


if __name__ == "__main__":
    sys.exit(main())
