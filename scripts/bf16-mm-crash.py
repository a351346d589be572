#!/usr/bin/python3
"""Which bf16 matrix products kill libtorch on this host (docs/MEMORY.md, "Mixed precision"): each torch.mm of an
M x K by a K x N bf16 matrix (one thread) runs in its own /usr/bin/python3 child; prints the shapes whose child died,
with the signal. On the AMX host of session 23 (Intel Xeon family 6 model 167, Debian's libtorch 1.13 and oneDNN
2.6.3) 20 x 63 x 80 dies with SIGILL; under ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 it runs.

  /usr/bin/python3 scripts/bf16-mm-crash.py [M,M,..] [K,K,..] [N,N,..]    # default: the grid of the doc
"""
import itertools
import subprocess
import sys

CHILD = ("import sys, torch; torch.set_num_threads(1); m, k, n = map(int, sys.argv[1:4]); "
         "torch.mm(torch.randn(m, k, dtype=torch.bfloat16), torch.randn(k, n, dtype=torch.bfloat16))")


def sizes(argument, default):
    return [int(x) for x in argument.split(",")] if argument else default


def main():
    ms = sizes(sys.argv[1] if len(sys.argv) > 1 else "", [16, 20, 32, 48])
    ks = sizes(sys.argv[2] if len(sys.argv) > 2 else "", [21, 63, 64, 65])
    ns = sizes(sys.argv[3] if len(sys.argv) > 3 else "", [16, 20, 48, 80])
    died = []
    shapes = list(itertools.product(ms, ks, ns))
    for m, k, n in shapes:
        child = subprocess.run(["/usr/bin/python3", "-c", CHILD, str(m), str(k), str(n)], capture_output=True)
        if child.returncode != 0:
            died.append((m, k, n, -child.returncode if child.returncode < 0 else child.returncode))
    print("bf16 torch.mm: %d shapes, %d died" % (len(shapes), len(died)))
    for m, k, n, code in died:
        print("  %d x %d by %d x %d: %s" % (m, k, k, n, "signal %d" % code))
    return 0


if __name__ == "__main__":
    sys.exit(main())
