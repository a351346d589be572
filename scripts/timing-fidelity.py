#!/usr/bin/python3
"""Timing fidelity, measured honestly (issue 16; docs/MEASUREMENT.md "Timing fidelity"): the executor
(`dnncast profile`) against PyTorch's own training loop (tests/profile/torchvision_step.py: the
torchvision model, SGD momentum 0.9, cross-entropy), on the same configurations, in interleaved
rounds: each round measures every workload once on each side, the two sides of a workload back to
back in an order that alternates between rounds, each measurement a fresh process pinned to the
same CPUs. A round's ratio is executor median / PyTorch median; the figure per workload is the
median of its rounds' ratios with its distribution-free 95% confidence interval (order statistics),
and rounds continue until every interval is within +-TARGET of its median or MAX rounds are spent.

    /usr/bin/python3 scripts/timing-fidelity.py [--dnncast build/dnncast] [--rounds-min 8]
        [--rounds-max 30] [--target 0.05] [--budget 1.5] [--set small|real] [--workloads NAME,...] [--json-out FILE]
        [--markdown] [--from-json FILE]

--from-json FILE prints the report of an earlier run's --json-out file without measuring
(data/noise/timing-fidelity-*.json, the table in docs/MEASUREMENT.md).

Run it on an otherwise idle machine, or pinned away from other work: `taskset -c 1 ...` pins both
sides to CPU 1 (each side uses the first --threads CPUs of the affinity mask it inherits).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (name, model, batch, input): batch 2 at least (PyTorch refuses batch-norm training on one value per
# channel, a 1x1 map at batch 1; the executor does not: a difference the numerics check should name).
# Small ones, where PyTorch's per-op Python overhead weighs most, and
# large ones, where the kernels dominate. All at 1 thread, fp32, SGD.
SMALL = 3  # the first SMALL workloads are the small ones (pooled apart in the report)
WORKLOADS = [
    ("resnet18 b2 32px", "resnet18", 2, "3x32x32"),
    ("mobilenet_v2 b2 32px", "mobilenet_v2", 2, "3x32x32"),
    ("squeezenet1_1 b2 64px", "squeezenet1_1", 2, "3x64x64"),
    # ---- above: small (under ~100 ms an iteration); below: large
    ("resnet18 b8 64px", "resnet18", 8, "3x64x64"),
    ("mobilenet_v2 b8 64px", "mobilenet_v2", 8, "3x64x64"),
    ("vgg11 b2 64px", "vgg11", 2, "3x64x64"),
    ("resnet50 b4 96px", "resnet50", 4, "3x96x96"),
]
# --set real (issue 52): the sizes users train at, 64-224 px and batch 1-64 across the zoo's families (residual,
# depthwise, dense, plain, fire modules), the demo's resnet50 b32 224 among them. Pooled as one group.
REAL = [
    ("resnet18 b2 224px", "resnet18", 2, "3x224x224"),  # the smallest batch batch norm trains on at 1x1 maps
    ("resnet18 b32 224px", "resnet18", 32, "3x224x224"),
    ("resnet50 b32 224px", "resnet50", 32, "3x224x224"),
    ("mobilenet_v2 b16 224px", "mobilenet_v2", 16, "3x224x224"),
    ("efficientnet_b0 b8 160px", "efficientnet_b0", 8, "3x160x160"),
    ("densenet121 b8 128px", "densenet121", 8, "3x128x128"),
    ("vgg11 b8 128px", "vgg11", 8, "3x128x128"),
    ("squeezenet1_1 b64 64px", "squeezenet1_1", 64, "3x64x64"),
]
WORKLOAD_SETS = {"small": WORKLOADS, "real": REAL}
# Settings both sides inherit from this process, recorded with the figures: oneDNN's and ATen's dispatch
# (`ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2` runs the AVX2 kernels) and glibc's malloc tunables, which
# decide how many of a step's large tensors come fresh from the kernel (docs/MEASUREMENT.md, "the page faults").
ENVIRONMENT = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "GLIBC_TUNABLES", "OMP_NUM_THREADS")


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def median_ci(values):
    """Distribution-free 95% CI of the median: order statistics n/2 -+ 1.96 sqrt(n)/2 (the
    executor's own rule, src/profile/measure.cpp). (low, high); infinite below 6 values."""
    n = len(values)
    if n < 6:
        return (-math.inf, math.inf)
    s = sorted(values)
    spread = 1.96 * math.sqrt(n) / 2
    lo = max(int(math.floor(n / 2 - spread)), 1)
    hi = min(int(math.ceil(n / 2 + spread)) + 1, n)
    return (s[lo - 1], s[hi - 1])


def run_ours(args, model, batch, shape):
    command = [args.dnncast, "profile", model, "--batch", str(batch), "--input", shape, "--optimizer", "sgd",
               "--threads", "1", "--budget", str(args.budget), "--json"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=600)
    doc = json.loads(out.stdout[out.stdout.find("{"):])
    m = doc["measurements"][0] if "measurements" in doc else doc
    if m.get("status") != "ok":
        raise RuntimeError("dnncast profile %s: %s" % (model, m.get("message", out.stderr.strip())))
    return m["time_ms"]["median"]


def run_theirs(args, model, batch, shape):
    command = [sys.executable, os.path.join(ROOT, "tests/profile/torchvision_step.py"), model, "--batch", str(batch),
               "--input", shape, "--optimizer", "sgd", "--threads", "1", "--budget", str(args.budget)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("torchvision_step.py %s: %s" % (model, out.stderr.strip()[-400:]))
    doc = json.loads(out.stdout[out.stdout.find("{"):])
    return doc["time_ms"]["median"]


def pool(report):
    """Every round's ratio of the small workloads, of the large ones, of the real sizes, and of all, pooled."""
    pooled = []
    measured = [r["workload"] for r in report]
    for label, names in (("small workloads, pooled", [w[0] for w in WORKLOADS[:SMALL]]),
                         ("large workloads, pooled", [w[0] for w in WORKLOADS[SMALL:]]),
                         ("real sizes, pooled", [w[0] for w in REAL]),
                         ("all workloads, pooled", measured)):
        ratios = [x for r in report if r["workload"] in names and r["rounds"] > 0 for x in r["ratios"]]
        if len(ratios) < 6:
            continue
        lo, hi = median_ci(ratios)
        m = median(ratios)
        pooled.append({"workload": label, "rounds": len(ratios), "ratio_median": m, "ratio_ci95": [lo, hi],
                       "ci_half_width": max(m - lo, hi - m) / m, "ratio_min": min(ratios), "ratio_max": max(ratios)})
    return pooled


def host_fingerprint():
    """The CPU as /proc/cpuinfo names it (model name, cpuid family and model, AVX-512 and AMX flags), for the record."""
    fields, flags = {}, set()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key in ("model name", "cpu family", "model") and key not in fields:
                    fields[key] = value
                if key == "flags":
                    flags.update(f for f in value.split() if f.startswith(("avx512", "amx")))
    except OSError:
        pass
    return {"cpu": fields.get("model name", "?"), "cpu_family": fields.get("cpu family", "?"),
            "cpu_model": fields.get("model", "?"), "isa_flags": sorted(flags), "cpus_online": os.cpu_count()}


def print_report(document, markdown):
    report, pooled = document["workloads"], document["pooled"]
    if markdown:
        print("| Workload (1 thread, SGD) | Rounds | Executor ms | PyTorch ms | Ratio (median) | 95% CI | CI half-width | Range of rounds |")
        print("|---|---|---|---|---|---|---|---|")
        for r in report:
            if r["rounds"] == 0:
                print("| %s | 0 | failed: %s | | | | | |" % (r["workload"], r["error"]))
                continue
            print("| %s | %d | %.1f | %.1f | %.3f | %.3f-%.3f | +-%.1f%% | %.2f-%.2f |" % (
                r["workload"], r["rounds"], r["executor_ms_median"], r["pytorch_ms_median"], r["ratio_median"],
                r["ratio_ci95"][0], r["ratio_ci95"][1], 100 * r["ci_half_width"], r["ratio_min"], r["ratio_max"]))
        for r in pooled:
            print("| **%s** | %d ratios | | | %.3f | %.3f-%.3f | +-%.1f%% | %.2f-%.2f |" % (
                r["workload"], r["rounds"], r["ratio_median"], r["ratio_ci95"][0], r["ratio_ci95"][1],
                100 * r["ci_half_width"], r["ratio_min"], r["ratio_max"]))
    else:
        json.dump(document, sys.stdout, indent=1)
        print()



def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dnncast", default=os.path.join(ROOT, "build/dnncast"))
    parser.add_argument("--rounds-min", type=int, default=8)
    parser.add_argument("--rounds-max", type=int, default=30)
    parser.add_argument("--target", type=float, default=0.05, help="CI half-width goal, relative (default 0.05)")
    parser.add_argument("--budget", type=float, default=1.5, help="timing budget of each measurement, s")
    parser.add_argument("--set", choices=sorted(WORKLOAD_SETS), default="small",
                        help="small: under 100 ms to a few s an iteration (default); real: 64-224 px, batch 2-64 (issue 52)")
    parser.add_argument("--workloads", default="", help="comma-separated workload names (default all of the set)")
    parser.add_argument("--json-out", default="")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--from-json", default="", help="report an earlier --json-out file; measure nothing")
    args = parser.parse_args()
    if args.from_json:
        with open(args.from_json) as source:
            document = json.load(source)
        document["pooled"] = pool(document["workloads"])
        print_report(document, args.markdown)
        return
    if args.rounds_min < 6 or args.rounds_max < args.rounds_min:
        sys.exit("timing-fidelity.py: need 6 <= --rounds-min <= --rounds-max")
    workloads = WORKLOAD_SETS[args.set]
    chosen = [w for w in workloads if not args.workloads or w[0] in args.workloads.split(",")]
    if not chosen:
        sys.exit("timing-fidelity.py: no workload named %s in --set %s (known: %s)" % (
            args.workloads, args.set, ", ".join(w[0] for w in workloads)))

    rows = {w[0]: {"ours": [], "theirs": [], "ratios": []} for w in chosen}
    started = time.time()
    active = list(chosen)
    for round_index in range(args.rounds_max):
        for name, model, batch, shape in active:
            first_ours = round_index % 2 == 0
            sides = [run_ours, run_theirs] if first_ours else [run_theirs, run_ours]
            row = rows[name]
            try:
                results = [side(args, model, batch, shape) for side in sides]
            except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as error:
                row["error"] = str(error).splitlines()[-1] if str(error) else type(error).__name__
                print("timing-fidelity.py: %s: %s" % (name, row["error"]), file=sys.stderr, flush=True)
                continue
            ours, theirs = results if first_ours else results[::-1]
            row["ours"].append(ours)
            row["theirs"].append(theirs)
            row["ratios"].append(ours / theirs)
        # A workload is done when its interval is tight enough (after rounds-min).
        still = []
        for w in active:
            if "error" in rows[w[0]]:
                continue
            ratios = rows[w[0]]["ratios"]
            lo, hi = median_ci(ratios)
            m = median(ratios)
            done = len(ratios) >= args.rounds_min and max(m - lo, hi - m) / m <= args.target
            if not done:
                still.append(w)
        print("round %d (%.0f s): %s" % (round_index + 1, time.time() - started,
              "; ".join("%s %.3f" % (w[0], rows[w[0]]["ratios"][-1]) for w in active if rows[w[0]]["ratios"])), file=sys.stderr, flush=True)
        active = still
        if not active:
            break

    report = []
    for name, model, batch, shape in chosen:
        row = rows[name]
        ratios = row["ratios"]
        if not ratios:
            report.append({"workload": name, "model": model, "batch": batch, "input": shape, "rounds": 0,
                           "error": row.get("error", "not measured")})
            continue
        lo, hi = median_ci(ratios)
        m = median(ratios)
        report.append({"workload": name, "model": model, "batch": batch, "input": shape, "rounds": len(ratios),
                       "executor_ms_median": median(row["ours"]), "pytorch_ms_median": median(row["theirs"]),
                       "ratio_median": m, "ratio_ci95": [lo, hi], "ci_half_width": max(m - lo, hi - m) / m,
                       "ratio_min": min(ratios), "ratio_max": max(ratios), "ratios": ratios,
                       "error": row.get("error", "")})
    pooled = pool(report)
    # What both sides inherit that changes their kernels or their memory (the dispatch, glibc's malloc settings).
    environment = {name: os.environ[name] for name in ENVIRONMENT if name in os.environ}
    document = {"host": host_fingerprint(), "environment": environment, "pooled": pooled,
                "target_ci_half_width": args.target,
                "budget_s": args.budget, "threads": 1,
                "cpus": sorted(os.sched_getaffinity(0)), "seconds": time.time() - started, "workloads": report}
    if args.json_out:
        with open(args.json_out, "w") as out:
            json.dump(document, out, indent=1)
            out.write("\n")
    print_report(document, args.markdown)

if __name__ == "__main__":
    main()
