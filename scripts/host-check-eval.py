#!/usr/bin/python3
"""The host check judged on this host (issue 52): CPU forecasts with and without it beside real measurements here.

    scripts/host-check-eval.py [--build BUILD] [--budget SECONDS] [--out FILE.tsv] [--measured FILE.tsv]

Each configuration (zoo networks the shipped data covers, small enough to time in seconds; none of them a probe of
the check) is measured here with `dnncast profile` (one thread, its own process) and forecast with `dnncast predict`
twice: as shipped (--no-host-check) and with this host's check applied (run first with `dnncast host-check` when none
is cached; where a calibration of this host exists, `predict` follows it instead and the column is "calibrated": with
DNNCAST_CALIBRATIONS pointing at a folder `dnncast calibrate MODEL` wrote, this judges one model's calibration on the
other configurations). Prints per configuration the measurement and both forecasts with their intervals, then the mean relative
error, the share inside the 90% interval and how many forecasts said the host is off. --out keeps the rows (TSV) with
this host's CPU fingerprint in a comment line. --measured FILE.tsv (an earlier --out of this host) takes the
measurements from there instead of timing them again: the forecasts alone are made anew (a calibration refitted with
`dnncast calibrate --refit DIR`, judged on the same measurements). --leave-out-db DATA.db leaves out the configurations
a dataset measured (a predictor set trained on it has seen them). Exit 2 on bad usage.
"""
import argparse
import datetime
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = [  # model, batch, input, optimizer
    ("resnet18", 8, "3x64x64", "sgd"), ("resnet18", 2, "3x128x128", "adam"), ("resnet34", 4, "3x64x64", "sgd"),
    ("resnet50", 4, "3x64x64", "sgd"), ("resnet50", 2, "3x128x128", "adam"), ("mobilenet_v2", 8, "3x64x64", "sgd"),
    ("mobilenet_v2", 4, "3x128x128", "adam"), ("mobilenet_v3_small", 16, "3x64x64", "sgd"),
    ("mobilenet_v3_large", 4, "3x96x96", "sgd"), ("efficientnet_b0", 4, "3x64x64", "sgd"),
    ("efficientnet_b0", 8, "3x32x32", "adam"), ("densenet121", 2, "3x64x64", "sgd"),
    ("shufflenet_v2_x1_0", 8, "3x64x64", "sgd"), ("shufflenet_v2_x0_5", 16, "3x96x96", "adam"),
    ("squeezenet1_0", 8, "3x64x64", "sgd"), ("squeezenet1_1", 16, "3x96x96", "sgd"), ("googlenet", 4, "3x64x64", "sgd"),
    ("mnasnet1_0", 8, "3x64x64", "sgd"), ("mnasnet0_5", 16, "3x96x96", "adam"), ("alexnet", 8, "3x128x128", "sgd"),
    ("vgg11", 2, "3x64x64", "sgd"), ("regnet_x_400mf", 8, "3x64x64", "sgd"), ("resnext50_32x4d", 2, "3x64x64", "sgd"),
    ("wide_resnet50_2", 2, "3x64x64", "sgd"),
]


def run_json(command, env=None):
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--budget", type=float, default=1.0, help="profile --budget per configuration (s)")
    parser.add_argument("--out", help="write the rows here (TSV)")
    parser.add_argument("--measured", help="take the measurements from this earlier --out (TSV) of this host")
    parser.add_argument("--leave-out-db", help="leave out the configurations this dataset (SQLite) has runs of")
    args = parser.parse_args()
    seen = set()
    if args.leave_out_db:
        try:
            with sqlite3.connect(f"file:{args.leave_out_db}?mode=ro", uri=True) as db:
                seen = set(db.execute("SELECT n.name, r.batch, r.input, r.optimizer FROM runs r JOIN networks n "
                                      "ON n.id = r.network_id WHERE r.status = 'ok' AND r.threads = 1").fetchall())
        except sqlite3.Error as error:
            print(f"host-check-eval: --leave-out-db {args.leave_out_db}: {error}", file=sys.stderr)
            return 2
    dnncast = os.path.join(args.build, "dnncast")
    if not os.path.exists(dnncast):
        print(f"host-check-eval: no {dnncast}", file=sys.stderr)
        return 2
    check = run_json([dnncast, "host-check", "--json"])
    print(f"host check: {check['ratio']:.2f}x (probes {check['low']:.2f}-{check['high']:.2f}x), "
          f"{'off' if check['off'] else 'in line'}; checked {check['checked']}")
    # "shipped" is the shipped set alone: no calibration of this host either (an empty calibrations folder).
    empty = tempfile.TemporaryDirectory(prefix="dnncast-no-calibration-")  # removed when main returns
    uncalibrated = dict(os.environ, DNNCAST_CALIBRATIONS=empty.name)
    earlier, header = {}, None
    if args.measured:
        try:
            with open(args.measured) as f:
                header = f.readline().rstrip("\n")
                columns = f.readline().rstrip("\n").split("\t")
                for line in f:
                    row = dict(zip(columns, line.rstrip("\n").split("\t")))
                    earlier[(row["model"], int(row["batch"]), row["input"], row["optimizer"])] = float(row["measured_ms"])
        except (OSError, KeyError, ValueError) as error:
            print(f"host-check-eval: --measured {args.measured}: not an earlier --out of this script ({error})",
                  file=sys.stderr)
            return 2
    rows = []
    left_out = [config for config in CONFIGS if config in seen]
    if left_out:
        print(f"left out, measured in {args.leave_out_db}: " + ", ".join(f"{m} b{b} {i} {o}" for m, b, i, o in left_out))
    for model, batch, shape, optimizer in CONFIGS:
        if (model, batch, shape, optimizer) in seen:
            continue
        common = [model, "--batch", str(batch), "--input", shape, "--optimizer", optimizer]
        try:
            if args.measured:
                if (model, batch, shape, optimizer) not in earlier:
                    continue
                measured = {"time_ms": {"median": earlier[(model, batch, shape, optimizer)]}, "env": None}
            else:
                measured = run_json([dnncast, "profile", *common, "--budget", str(args.budget), "--json"])
            shipped = run_json([dnncast, "predict", *common, "--no-host-check", "--json"], env=uncalibrated)
            checked = run_json([dnncast, "predict", *common, "--json"])
        except RuntimeError as error:
            print(f"  left out: {error}", file=sys.stderr)
            continue
        row = {"model": model, "batch": batch, "input": shape, "optimizer": optimizer,
               "measured": measured["time_ms"]["median"], "env": measured["env"]}
        for label, result in (("shipped", shipped), ("checked", checked)):
            row[label] = (result["time_ms"], result["time_ms_low"], result["time_ms_high"],
                          "speed" in (result.get("host_match") or {}))
        row["by"] = "calibration" if checked.get("calibration") else "host-check"
        rows.append(row)
        print(f"  {model:20s} b{batch:<3d} {shape:10s} {optimizer:5s} measured {row['measured']:8.1f}  shipped "
              f"{row['shipped'][0]:8.1f} [{row['shipped'][1]:7.1f}, {row['shipped'][2]:8.1f}]  checked "
              f"{row['checked'][0]:8.1f} [{row['checked'][1]:7.1f}, {row['checked'][2]:8.1f}]", flush=True)
    if not rows:
        return 1
    by = sorted({r["by"] for r in rows})
    print(f"the second forecast follows: {', '.join(by)}")
    for label in ("shipped", "checked"):
        errors = [abs(r[label][0] / r["measured"] - 1) for r in rows]
        inside = sum(r[label][1] <= r["measured"] <= r[label][2] for r in rows)
        said = sum(r[label][3] for r in rows)
        ratio = statistics.geometric_mean([r["measured"] / r[label][0] for r in rows])
        print(f"{label:8s} {len(rows)} configurations: MRE {100 * statistics.mean(errors):.1f}%, median "
              f"measured/forecast {ratio:.2f}, inside the 90% interval {inside}/{len(rows)} "
              f"({100 * inside / len(rows):.0f}%), said the host is off: {said}/{len(rows)}")
    if args.out:
        env = rows[0]["env"]
        with open(args.out, "w") as f:
            if header is not None:  # the measurements' host, as the earlier file says it
                now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                f.write(f"{header}; forecasts made again {now} (host check {check['ratio']:.3f}x)\n")
            else:
                f.write(f"# scripts/host-check-eval.py on {env['cpu_model']} cpuid family {env['cpu_family']} model "
                        f"{env['cpu_model_number']}, isa {env['isa']}, {env['cores']} CPUs; host check "
                        f"{check['ratio']:.3f}x ({check['low']:.3f}-{check['high']:.3f}), checked {check['checked']}\n")
            f.write("model\tbatch\tinput\toptimizer\tmeasured_ms\tshipped_ms\tshipped_low\tshipped_high\tchecked_ms"
                    "\tchecked_low\tchecked_high\tchecked_by\n")
            for r in rows:
                f.write("\t".join(str(v) for v in [r["model"], r["batch"], r["input"], r["optimizer"], r["measured"],
                                                    *r["shipped"][:3], *r["checked"][:3], r["by"]]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
