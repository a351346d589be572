#!/usr/bin/python3
"""Two dnncast builds timed side by side on one command: CPU time per process, runs interleaved, pinned.

    scripts/cli-side-by-side.py OLD_DNNCAST NEW_DNNCAST [--runs N] [--cpu K] -- COMMAND ARGS...

e.g. main's build against a branch's, for `dnncast memory ... --max-batch gpu`:

    git worktree add ../old <commit> && cmake -S ../old -B ../old/build && make -C ../old/build dnncast
    scripts/cli-side-by-side.py ../old/build/dnncast build/dnncast -- memory \\
        tests/models/hf_configs/llama-2-7b-hf.json --seq 512 --lora r=16 --quantize nf4 --precision bf16 \\
        --device rtx4090 --max-batch gpu --json

Each run is one process (its start, the catalogue read and the forecast), so the difference of the medians is the
forecast's and the start is common to both. Every run's output must be byte-identical between the two builds
unless --allow-different is given: a faster build that answers otherwise is not the same forecast.

    scripts/cli-side-by-side.py OLD NEW --answers scripts/answers/memory-max-batch.txt [--ignore-key simulations]

compares answers only (no timing): each line of the file is one command's arguments, run once by each build; the
commands whose output (stdout and stderr) differs are listed with the first differing line, JSON keys named by
--ignore-key left out of the comparison. Exit 1 when any differs.
"""
import json
import argparse
import os
import resource
import statistics
import subprocess
import sys


def without_keys(text, keys):
    """The output with the named JSON keys dropped (a JSON document after any leading note lines)."""
    start = text.find("{")
    if not keys or start < 0:
        return text
    try:
        document = json.loads(text[start:])
    except ValueError:
        return text

    def drop(value):
        if isinstance(value, dict):
            return {k: drop(v) for k, v in value.items() if k not in keys}
        if isinstance(value, list):
            return [drop(v) for v in value]
        return value

    return text[:start] + json.dumps(drop(document), indent=1, sort_keys=True)


def compare_answers(args) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env.setdefault("DNNCAST_HARDWARE", os.path.join(root, "data", "hardware"))
    try:
        with open(args.answers) as source:
            commands = [line.split() for line in source if line.strip() and not line.startswith("#")]
    except OSError as error:
        print(f"cli-side-by-side: {args.answers}: {error.strerror}", file=sys.stderr)
        return 2
    differing = 0
    for command in commands:
        outputs = []
        for binary in (args.old, args.new):
            run = subprocess.run([binary] + command, env=env, capture_output=True, text=True, cwd=root)
            outputs.append(without_keys(run.stdout, set(args.ignore_key)) + run.stderr + f"\nexit {run.returncode}")
        if outputs[0] != outputs[1]:
            differing += 1
            first = next((a, b) for a, b in zip(outputs[0].splitlines() + [""], outputs[1].splitlines() + [""])
                         if a != b)
            print(f"differs: {' '.join(command)}\n  old: {first[0].strip()[:160]}\n  new: {first[1].strip()[:160]}")
    print(f"{len(commands)} commands, {differing} with different answers"
          + (f" (keys left out: {', '.join(args.ignore_key)})" if args.ignore_key else ""))
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cpu", type=int, default=1, help="the CPU both are pinned to (taskset -c)")
    parser.add_argument("--allow-different", action="store_true", help="outputs may differ (report it only)")
    parser.add_argument("--answers", default="", help="a file of commands, one per line: compare their outputs only")
    parser.add_argument("--ignore-key", action="append", default=[], help="with --answers: a JSON key left out")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if args.answers:
        return compare_answers(args)
    if not command:
        parser.error("no dnncast command after --")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    for binary in (args.old, args.new):
        if not os.access(binary, os.X_OK):
            print(f"cli-side-by-side: {binary} is not an executable", file=sys.stderr)
            return 2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env.setdefault("DNNCAST_HARDWARE", os.path.join(root, "data", "hardware"))
    times = {"old": [], "new": []}
    outputs = {}
    for _ in range(args.runs):
        for name, binary in (("old", args.old), ("new", args.new)):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            run = subprocess.run(["taskset", "-c", str(args.cpu), binary] + command, env=env, capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if run.returncode != 0:
                print(f"cli-side-by-side: {name} exited {run.returncode}: {run.stderr.decode().strip()[:300]}",
                      file=sys.stderr)
                return 1
            outputs[name] = run.stdout
            times[name].append(1000.0 * (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    same = outputs["old"] == outputs["new"]
    old, new = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"CPU ms per process, medians of {args.runs} interleaved runs on CPU {args.cpu}:")
    print(f"  old {old:8.1f}   (min {min(times['old']):.1f})   {args.old}")
    print(f"  new {new:8.1f}   (min {min(times['new']):.1f})   {args.new}")
    print(f"  new / old {new / old:.3f};  outputs {'identical' if same else 'DIFFERENT'}")
    return 0 if same or args.allow_different else 1


if __name__ == "__main__":
    sys.exit(main())
