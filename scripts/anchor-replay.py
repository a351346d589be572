#!/usr/bin/python3
"""A calibration's size anchors replayed over an evaluation's rows (issue 52), apart from dnncast's C++.

    scripts/anchor-replay.py EVAL.tsv --host-check RATIO@SOURCE_MS [--run SOURCE_MS:MEASURED_MS[:INTENSITY] ...]
                             [--probe SOURCE_MS:RATIO:INTENSITY ...] [--build BUILD]

EVAL.tsv is a `scripts/host-check-eval.py --out` file (measured, and the shipped forecast with its 90% interval, per
configuration). The anchors are whole runs of that host: the host check's probes pooled (their geometric-mean ratio
measured / shipped forecast, at the geometric mean of their shipped forecasts) and each calibrated configuration's
run (its shipped forecast, its measured median). Each row is forecast as its shipped forecast times measured /
forecast from the least-squares line through the anchors in log-log at its own shipped forecast (held at the line's
value at the smallest and largest anchor beyond them), its interval the shipped one scaled likewise -- the rule of src/forecast/host_calibration.h (size_anchors) for configurations none
of whose layers were timed, written again here to check it and to score hosts whose calibration folder was not kept.
Prints the MRE, the median measured / forecast and the share inside the interval.

With the host check's probes one by one (--probe, each with its network's arithmetic intensity: training FLOPs per
activation byte, as `dnncast inspect --json` totals them) and the runs' intensities, it replays the mix anchors too
(host_calibration.h mix_anchors, session 34): the least-squares plane log(ratio) = a + b log(intensity) + c
log(source ms), its two slopes held towards 0 by a ridge of 0.1, both inputs clamped to the anchors' range; each
row's intensity from `BUILD/dnncast inspect MODEL --batch B --input I --json`; its interval x/1.50..x1.50
(kMixLogSpread, session 35), x/1.61..x1.61 farther than a factor of e in source time from every anchor
(kMixFarLogSpread, session 40). Each rule also prints the width 90% of its rows needed. Exit 2 on bad usage.
"""
import argparse
import math
import json
import os
import statistics
import subprocess
import sys

RIDGE = 0.1  # kMixRidge (src/forecast/host_calibration.h)
MIX_SPREAD = 0.405  # kMixLogSpread: the plane's 90% interval, x/1.50..x1.50
MIX_FAR_SPREAD = 0.476  # kMixFarLogSpread: x/1.61..x1.61 farther than kMixNearLogDistance from every anchor
MIX_NEAR_DISTANCE = 1.0  # kMixNearLogDistance: in log source time


def mix_spread(mix, source_ms):
    """The plane's interval half-width in log at source_ms (HostCalibration::plane_log_spread)."""
    near = any(abs(math.log(source_ms / anchor[0])) <= MIX_NEAR_DISTANCE for anchor in mix)
    return MIX_SPREAD if near else MIX_FAR_SPREAD


def parse_pair(text, separator, what):
    try:
        first, second = (float(value) for value in text.split(separator))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} {text!r}: expected two numbers joined by {separator!r}")
    if not (first > 0 and second > 0):
        raise argparse.ArgumentTypeError(f"{what} {text!r}: both must be positive")
    return first, second


def interpolated(anchors, source_ms):
    """measured / source at source_ms: the least-squares line through the anchors (source_ms, ratio) in log-log,
    held at its value at the smallest and largest anchor beyond them."""
    xs = [math.log(s) for s, _ in anchors]
    ys = [math.log(r) for _, r in anchors]
    x = min(max(math.log(source_ms), xs[0]), xs[-1])
    mean_x, mean_y = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((a - mean_x) ** 2 for a in xs)
    slope = sum((a - mean_x) * (b - mean_y) for a, b in zip(xs, ys)) / sxx if sxx > 1e-12 else 0.0
    return math.exp(mean_y + slope * (x - mean_x))


def parse_numbers(text, count, what):
    try:
        values = [float(value) for value in text.split(":")]
    except ValueError:
        values = []
    if len(values) not in count or not all(value > 0 for value in values):
        raise argparse.ArgumentTypeError(f"{what} {text!r}: expected {' or '.join(map(str, count))} positive numbers "
                                         "joined by ':'")
    return values


def plane(anchors, source_ms, intensity):
    """measured / source from the ridge plane through anchors (source_ms, ratio, intensity); None where they span
    less than a factor of 2 in intensity or are fewer than 4 (kMinMixAnchors)."""
    us = [math.log(i) for _, _, i in anchors]
    vs = [math.log(s) for s, _, _ in anchors]
    ys = [math.log(r) for _, r, _ in anchors]
    if len(anchors) < 4 or max(us) - min(us) < math.log(2):
        return None
    mu, mv, my = statistics.mean(us), statistics.mean(vs), statistics.mean(ys)
    suu = RIDGE + sum((u - mu) ** 2 for u in us)
    svv = RIDGE + sum((v - mv) ** 2 for v in vs)
    suv = sum((u - mu) * (v - mv) for u, v in zip(us, vs))
    suy = sum((u - mu) * (y - my) for u, y in zip(us, ys))
    svy = sum((v - mv) * (y - my) for v, y in zip(vs, ys))
    det = suu * svv - suv * suv
    b, c = (suy * svv - svy * suv) / det, (svy * suu - suy * suv) / det
    u = min(max(math.log(intensity), min(us)), max(us)) - mu
    v = min(max(math.log(source_ms), min(vs)), max(vs)) - mv
    return math.exp(my + b * u + c * v)


def intensity_of(build, model, batch, input_text):
    out = subprocess.run([os.path.join(build, "dnncast"), "inspect", model, "--batch", batch, "--input", input_text,
                          "--json"], capture_output=True, text=True, check=True).stdout
    document = json.loads(out)
    return (document["flops_fwd"] + document["flops_bwd"]) / document["activation_bytes"]


def score(label, rows, scale_of, spread_of=None):
    """MRE and the share inside the interval: the shipped one scaled, or x/exp(s)..x exp(s), s = spread_of(shipped).
    Also the 90th percentile (nearest rank) of |log(measured / forecast)|, the width a 90% interval would need."""
    errors, ratios, inside = [], [], 0
    for row in rows:
        measured, shipped, low, high = row["values"]
        scale = scale_of(row, shipped)
        forecast = shipped * scale
        errors.append(abs(forecast / measured - 1))
        ratios.append(measured / forecast)
        if spread_of is None:
            inside += low * scale <= measured <= high * scale
        else:
            spread = spread_of(shipped)
            inside += forecast * math.exp(-spread) <= measured <= forecast * math.exp(spread)
    logs = sorted(abs(math.log(ratio)) for ratio in ratios)
    needed = math.exp(logs[math.ceil(0.9 * len(logs)) - 1])
    interval = "scaled" if spread_of is None else (f"x{math.exp(MIX_SPREAD):.2f} each way, "
                                                    f"x{math.exp(MIX_FAR_SPREAD):.2f} far from the anchors")
    print(f"{label}  MRE {100 * statistics.mean(errors):.1f}%, median measured/forecast "
          f"{statistics.geometric_mean(ratios):.2f}, inside the 90% interval ({interval}) {inside}/{len(rows)} "
          f"({100 * inside / len(rows):.0f}%), largest error {100 * max(errors):.0f}%, 90% of errors within "
          f"x{needed:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("eval_tsv")
    parser.add_argument("--host-check", required=True, type=lambda t: parse_pair(t, "@", "--host-check"),
                        help="RATIO@SOURCE_MS: the host check's ratio and its probes' geometric-mean forecast")
    parser.add_argument("--run", action="append", default=[], type=lambda t: parse_numbers(t, (2, 3), "--run"),
                        help="SOURCE_MS:MEASURED_MS[:INTENSITY] of a calibrated configuration's run (repeatable)")
    parser.add_argument("--probe", action="append", default=[], type=lambda t: parse_numbers(t, (3,), "--probe"),
                        help="SOURCE_MS:RATIO:INTENSITY of one host-check probe (repeatable): replays the mix anchors")
    parser.add_argument("--build", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                        "build"), help="where dnncast is (for the rows' intensities)")
    args = parser.parse_args()
    ratio, probe_ms = args.host_check
    anchors = sorted([(probe_ms, ratio)] + [(run[0], run[1] / run[0]) for run in args.run])
    mix = [(source, ratio, intensity) for source, ratio, intensity in args.probe]
    mix += [(run[0], run[1] / run[0], run[2]) for run in args.run if len(run) == 3]
    try:
        with open(args.eval_tsv) as f:
            lines = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
        rows = [dict(zip(lines[0], line)) for line in lines[1:]]
        for row in rows:
            row["values"] = (float(row["measured_ms"]), float(row["shipped_ms"]), float(row["shipped_low"]),
                             float(row["shipped_high"]))
    except (OSError, IndexError, KeyError, ValueError) as error:
        print(f"anchor-replay: {args.eval_tsv}: not a scripts/host-check-eval.py --out file ({error})", file=sys.stderr)
        return 2
    if not rows:
        print(f"anchor-replay: {args.eval_tsv}: no rows", file=sys.stderr)
        return 2
    print(f"{args.eval_tsv}: {len(rows)} configurations, anchors "
          + ", ".join(f"x{r:.3f} at {s:.1f} ms" for s, r in anchors))
    score("anchored", rows, lambda row, shipped: interpolated(anchors, shipped))
    if args.probe:
        try:
            for row in rows:
                row["intensity"] = intensity_of(args.build, row["model"], row["batch"], row["input"])
        except (OSError, subprocess.CalledProcessError, ValueError, KeyError) as error:
            print(f"anchor-replay: cannot read the rows' intensities with {args.build}/dnncast inspect ({error})",
                  file=sys.stderr)
            return 2
        if plane(mix, 100, 100) is None:
            print("anchor-replay: the mix anchors do not make a plane (fewer than 4, or less than a factor of 2 "
                  "between their intensities)", file=sys.stderr)
            return 2
        score("mix     ", rows, lambda row, shipped: plane(mix, shipped, row["intensity"]),
              lambda shipped: mix_spread(mix, shipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
