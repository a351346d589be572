#!/usr/bin/python3
"""A calibration's size anchors replayed over an evaluation's rows (issue 52), apart from dnncast's C++.

    scripts/anchor-replay.py EVAL.tsv --host-check RATIO@SOURCE_MS [--run SOURCE_MS:MEASURED_MS ...]

EVAL.tsv is a `scripts/host-check-eval.py --out` file (measured, and the shipped forecast with its 90% interval, per
configuration). The anchors are whole runs of that host: the host check's probes pooled (their geometric-mean ratio
measured / shipped forecast, at the geometric mean of their shipped forecasts) and each calibrated configuration's
run (its shipped forecast, its measured median). Each row is forecast as its shipped forecast times measured /
forecast from the least-squares line through the anchors in log-log at its own shipped forecast (held at the line's
value at the smallest and largest anchor beyond them), its interval the shipped one scaled likewise -- the rule of src/forecast/host_calibration.h (size_anchors) for configurations none
of whose layers were timed, written again here to check it and to score hosts whose calibration folder was not kept.
Prints the MRE, the median measured / forecast and the share inside the interval. Exit 2 on bad usage.
"""
import argparse
import math
import statistics
import sys


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("eval_tsv")
    parser.add_argument("--host-check", required=True, type=lambda t: parse_pair(t, "@", "--host-check"),
                        help="RATIO@SOURCE_MS: the host check's ratio and its probes' geometric-mean forecast")
    parser.add_argument("--run", action="append", default=[], type=lambda t: parse_pair(t, ":", "--run"),
                        help="SOURCE_MS:MEASURED_MS of a calibrated configuration's run (repeatable)")
    args = parser.parse_args()
    ratio, probe_ms = args.host_check
    anchors = sorted([(probe_ms, ratio)] + [(source, measured / source) for source, measured in args.run])
    try:
        with open(args.eval_tsv) as f:
            lines = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
        columns, rows = lines[0], [dict(zip(lines[0], line)) for line in lines[1:]]
        values = [(float(r["measured_ms"]), float(r["shipped_ms"]), float(r["shipped_low"]), float(r["shipped_high"]))
                  for r in rows]
    except (OSError, IndexError, KeyError, ValueError) as error:
        print(f"anchor-replay: {args.eval_tsv}: not a scripts/host-check-eval.py --out file ({error})", file=sys.stderr)
        return 2
    if not values:
        print(f"anchor-replay: {args.eval_tsv}: no rows", file=sys.stderr)
        return 2
    errors, ratios, inside = [], [], 0
    for measured, shipped, low, high in values:
        scale = interpolated(anchors, shipped)
        forecast = shipped * scale
        errors.append(abs(forecast / measured - 1))
        ratios.append(measured / forecast)
        inside += low * scale <= measured <= high * scale
    print(f"{args.eval_tsv}: {len(values)} configurations, anchors "
          + ", ".join(f"x{r:.3f} at {s:.1f} ms" for s, r in anchors))
    print(f"anchored  MRE {100 * statistics.mean(errors):.1f}%, median measured/forecast "
          f"{statistics.geometric_mean(ratios):.2f}, inside the 90% interval {inside}/{len(values)} "
          f"({100 * inside / len(values):.0f}%), largest error {100 * max(errors):.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
