#!/usr/bin/python3
"""Which implementation libtorch runs for each pass of a convolution, as oneDNN itself reports it.

Reads cases from stdin, one per line:
    label batch in_channels height width out_channels kernel_h kernel_w stride_h stride_w
          pad_h pad_w dilation_h dilation_w groups bias input_grad threads
runs each convolution forward and backward on the CPU (f32) with oneDNN's verbose log on, and
prints one line per case:
    label forward backward_data backward_weights
each "jit", "gemm" (oneDNN names a gemm implementation, "x64:gemm:jit") or "slow" (no oneDNN
primitive ran: ATen's im2col path); "-" for a backward-data pass that does not run.
tests/features/conv_impl_test.cpp compares these with src/memory's backend rules.
"""
import ctypes
import os
import sys
import tempfile

os.environ["DNNL_VERBOSE"] = "1"
os.environ["ONEDNN_VERBOSE"] = "1"

import torch  # noqa: E402  (after the verbose switch: oneDNN reads it once)

libc = ctypes.CDLL(None)
PASSES = ("forward_training", "backward_data", "backward_weights")


def onednn_log(work):
    """Runs work() and returns the lines oneDNN wrote meanwhile: it logs to the C stdout, so file
    descriptor 1 points at a temporary file while work runs."""
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+") as log:
        os.dup2(log.fileno(), 1)
        try:
            work()
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        return log.read().splitlines()


def run_case(fields):
    (n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g, bias, input_grad, threads) = (int(v) for v in fields)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(c, o, (kh, kw), (sh, sw), (ph, pw), (dh, dw), groups=g, bias=bool(bias))
    x = torch.randn(n, c, h, w, requires_grad=bool(input_grad))
    lines = onednn_log(lambda: conv(x).sum().backward())
    found = {}
    for line in lines:
        parts = line.split(",")
        if len(parts) > 5 and parts[1] == "exec" and parts[3] == "convolution" and parts[5] in PASSES:
            found[parts[5]] = "gemm" if "gemm" in parts[4].split(":") else "jit"
    if not found:
        impls = ["slow", "slow" if input_grad else "-", "slow"]
    else:
        impls = [found.get(p, "?") for p in PASSES]
        if not input_grad:
            impls[1] = "-" if PASSES[1] not in found else impls[1]
    return impls


# oneDNN's "info,cpu,isa:" text -> our name (src/hardware/isa.h), from oneDNN 2.6 cpu_isa_traits.
ISA_TEXTS = [
    ("Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and Intel AMX", "avx512_core_amx"),
    ("Intel AVX-512 with Intel DL Boost and bfloat16 support and Intel AMX", "avx512_core_amx"),
    ("Intel AVX-512 with Intel DL Boost and bfloat16 support", "avx512_core_bf16"),
    ("Intel AVX-512 with Intel DL Boost", "avx512_core_vnni"),
    ("Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions", "avx512_core"),
    ("Intel AVX2 with Intel DL Boost", "avx2_vnni"),
    ("Intel AVX2", "avx2"),
    ("Intel AVX", "avx"),
    ("Intel SSE4.1", "sse41"),
]


def reported_isa():
    """The ISA oneDNN says it dispatches to (its verbose log's first lines)."""
    lines = onednn_log(lambda: torch.nn.functional.conv2d(torch.randn(2, 16, 8, 8), torch.randn(16, 16, 3, 3)))
    for line in lines:
        if ",info,cpu,isa:" in line:
            text = line.split(",info,cpu,isa:", 1)[1].strip()
            for prefix, name in ISA_TEXTS:
                if text.startswith(prefix):
                    return name
            return "unrecognised:" + text
    return "none"


def main():
    print("isa", reported_isa())
    for line in sys.stdin:
        fields = line.split()
        if not fields:
            continue
        label, values = fields[0], fields[1:]
        if len(values) != 17:
            print(f"{label} bad-case")
            continue
        print(label, *run_case(values))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
