#!/usr/bin/python3
"""A calibration's size anchors replayed over an evaluation's rows (issue 52), apart from dnncast's C++.

    scripts/anchor-replay.py EVAL.tsv --host-check RATIO@SOURCE_MS [--run SOURCE_MS:MEASURED_MS ...]

EVAL.tsv is a `scripts/host-check-eval.py --out` file (measured, and the shipped forecast with its 90% interval, per
configuration). The anchors are whole runs of that host: the host check's probes pooled (their geometric-mean ratio
measured / shipped forecast, at the geometric mean of their shipped forecasts) and each calibrated configuration's
run (its shipped forecast, its measured median). Each row is forecast as its shipped forecast times measured /
forecast interpolated in log-log between the anchors by its own shipped forecast (flat beyond the ends), its interval
the shipped one scaled likewise -- the rule of src/forecast/host_calibration.h (size_anchors) for configurations none
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
    """measured / source at source_ms: anchors (source_ms, ratio) rising, log-log, flat beyond the ends."""
    x = math.log(source_ms)
    points = [(math.log(s), math.log(r)) for s, r in anchors]
    if x <= points[0][0]:
        return math.exp(points[0][1])
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            return math.exp(y0 + (x - x0) / (x1 - x0) * (y1 - y0) if x1 > x0 else y1)
    return math.exp(points[-1][1])


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
