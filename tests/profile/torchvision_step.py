#!/usr/bin/python3
"""One measurement of a torchvision model's training step, the reference the executor is checked
against (tests/profile/*fidelity*). Run with Debian's /usr/bin/python3 (python3-torch 1.13).

    /usr/bin/python3 tests/profile/torchvision_step.py MODEL --batch N --input CxHxW
                     [--optimizer sgd|adam|adamw] [--threads T] [--budget S] [--ci F]

The same protocol as the executor (src/profile/executor.cpp), written independently: pinned to the
first T allowed CPUs, torch.set_num_threads(T); random input and labels; iteration = zero_grad,
forward, cross-entropy, backward, optimizer step (SGD momentum 0.9 lr 0.01 / Adam / AdamW);
warm-up until the last two iterations are not 2% faster than the best before them; timing until
the distribution-free 95% CI of the median is within +-F or the budget runs out (5 iterations at
least); the executor's drift probe timed before and after. Prints one JSON object: time statistics, parameter/gradient/optimizer-state bytes.
Optimizer state counts tensors with elements per parameter (momentum, exp_avg, ...); torch 1.13's
0-dim 'step' tensors of Adam are reported apart (libtorch's C++ optimizers keep step as an integer).
"""
import argparse
import json
import math
import os
import sys
import time


def median_rel_ci(values):
    n = len(values)
    if n < 6:
        return math.inf
    s = sorted(values)
    spread = 1.96 * math.sqrt(n) / 2
    lo = max(int(math.floor(n / 2 - spread)), 1)
    hi = min(int(math.ceil(n / 2 + spread)) + 1, n)
    med = percentile(s, 0.5)
    return (s[hi - 1] - s[lo - 1]) / 2 / med


def percentile(values, fraction):
    s = sorted(values)
    pos = fraction * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    w = pos - lo
    return s[lo] * (1 - w) + s[hi] * w


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--input", default="3x64x64")
    parser.add_argument("--optimizer", default="sgd")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--budget", type=float, default=5.0)
    parser.add_argument("--ci", type=float, default=0.02)
    parser.add_argument("--classes", type=int, default=1000)
    args = parser.parse_args()

    cpus = sorted(os.sched_getaffinity(0))[: args.threads]
    os.sched_setaffinity(0, cpus)
    import torch
    import torchvision

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    c, h, w = (int(v) for v in args.input.split("x"))
    model = getattr(torchvision.models, args.model)(weights=None, num_classes=args.classes)
    model.train()
    x = torch.randn(args.batch, c, h, w)
    labels = torch.randint(args.classes, (args.batch,))
    params = list(model.parameters())
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    elif args.optimizer == "adam":
        opt = torch.optim.Adam(params, lr=1e-3)
    else:
        opt = torch.optim.AdamW(params, lr=1e-3)

    def probe():
        # The executor's drift probe (src/profile/executor.cpp run_probe_ms), one thread, same ops.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        with torch.no_grad():
            a = torch.sin(torch.arange(256 * 256, dtype=torch.float32)).reshape(256, 256)
            b = torch.cos(torch.arange(256 * 256, dtype=torch.float32)).reshape(256, 256)
            image = torch.sin(torch.arange(32 * 32 * 32, dtype=torch.float32)).reshape(1, 32, 32, 32)
            kernel = torch.cos(torch.arange(32 * 32 * 9, dtype=torch.float32)).reshape(32, 32, 3, 3) * 0.1

            def one_pass():
                c = a
                for _ in range(8):
                    c = torch.mm(c, b) * (1.0 / 256)
                y = image
                for _ in range(4):
                    y = torch.nn.functional.conv2d(y, kernel, None, 1, 1) * 0.1
                return c.sum().item() + y.sum().item()

            one_pass()
            times = []
            for _ in range(5):
                start = time.perf_counter()
                one_pass()
                times.append((time.perf_counter() - start) * 1000)
        torch.set_num_threads(threads)
        return percentile(times, 0.5)

    probe_before = probe()

    def step():
        start = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        return (time.perf_counter() - start) * 1000

    warm = []
    t0 = time.perf_counter()
    while True:
        warm.append(step())
        if len(warm) >= 3:
            best = min(warm[:-2])
            if warm[-1] >= 0.98 * best and warm[-2] >= 0.98 * best:
                break
        if len(warm) >= 2 and time.perf_counter() - t0 > args.budget:
            break
    times = []
    t0 = time.perf_counter()
    while True:
        times.append(step())
        if len(times) < 5:
            continue
        if time.perf_counter() - t0 > args.budget:
            break
        if len(times) >= 6 and median_rel_ci(times) <= args.ci:
            break

    probe_after = probe()
    state_bytes = 0
    step_bytes = 0
    for state in opt.state.values():
        for key, value in state.items():
            if torch.is_tensor(value):
                if value.dim() == 0 and key == "step":
                    step_bytes += value.numel() * value.element_size()
                else:
                    state_bytes += value.numel() * value.element_size()
    out = {
        "model": args.model,
        "time_ms": {"median": percentile(times, 0.5), "p10": percentile(times, 0.1), "p90": percentile(times, 0.9),
                    "mean": sum(times) / len(times), "n": len(times)},
        "warmup_iterations": len(warm),
        "probe_ms": {"before": probe_before, "after": probe_after},
        "params": sum(p.numel() for p in params),
        "param_bytes": sum(p.numel() * p.element_size() for p in params),
        "grad_bytes": sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None),
        "optimizer_state_bytes": state_bytes,
        "optimizer_step_bytes": step_bytes,
        "torch_version": torch.__version__,
        "cpus": cpus,
    }
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
