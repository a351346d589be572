#!/usr/bin/python3
"""Single-layer benchmarks of two hosts side by side: the ratio of warm forward + backward times (A / B) over
the shapes both measured (same key), overall and by kind.

  /usr/bin/python3 scripts/layer-compare.py layers-intel-xeon.db layers-zen3-avx2.db   (decompressed data/*.db.xz)
"""
import collections
import sqlite3
import statistics
import sys

if len(sys.argv) != 3:
    sys.exit("usage: layer-compare.py A.db B.db")
QUERY = "SELECT key, kind, forward_ms + backward_ms FROM layer_benchmarks WHERE status = 'ok'"
a = {key: (kind, ms) for key, kind, ms in sqlite3.connect(sys.argv[1]).execute(QUERY)}
b = {key: (kind, ms) for key, kind, ms in sqlite3.connect(sys.argv[2]).execute(QUERY)}
by_kind = collections.defaultdict(list)
for key in a.keys() & b.keys():
    by_kind[a[key][0]].append(a[key][1] / b[key][1])
ratios = [r for values in by_kind.values() for r in values]
if not ratios:
    sys.exit("layer-compare: no shape measured in both")
print(f"{len(ratios)} shapes in both; warm forward + backward, time in A / time in B: median {statistics.median(ratios):.2f}")
for kind in sorted(by_kind):
    v = sorted(by_kind[kind])
    print(f"  {kind:10s} {len(v):4d}  median {statistics.median(v):.2f}  p10 {v[len(v) // 10]:.2f}  p90 {v[9 * len(v) // 10]:.2f}")
