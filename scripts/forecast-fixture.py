#!/usr/bin/python3
"""Runs `dnncast predict --json` and `dnncast memory --json` on every configuration of a configs.tsv and
either writes what they print (--write) or checks it against a file written before (--check).

Issue 17's behaviour-unchanged check: tests/cli/forecast_fixture/before.json was written by the code before the redesign (a2d2084); after it,
every number, flag and string must come out the same. Only the predictor's absolute path is left out
(it names the checkout), and the checkout's root in other strings reads $ROOT. Exit code 1 names each difference; 2 on bad arguments.

  /usr/bin/python3 scripts/forecast-fixture.py --dnncast build/dnncast --check tests/cli/forecast_fixture/before.json

Numbers changed on purpose since are listed in changed.json beside the checked file: per configuration the
keys' new values and why; --check lays them over the old file first, so every other number is still held to
the old code's and these to the new. --changed-from FILE writes that list's entries: the differences between
FILE (the old output) and what the build prints now, for the configurations --only names.
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys

IGNORED_KEYS = {"predictor"}  # an absolute path: differs between checkouts
# predict's host_match describes the machine the check runs on (its CPU model, vendor and caches against the
# predictor's environment), not the code: a fixture written on one host cannot hold it for another
# (tests/cli/predict_test.cpp PredictHostMatch checks it on every host). memory's follows --isa alone: kept.
IGNORED_PREDICT_KEYS = {"host_match"}
# Keys predict's JSON gained after a fixture was written, with the one value they take wherever the old
# code's forecast is unchanged: checked to hold that value there (any other value is a difference).
ADDED_PREDICT_KEYS = {"time_model": "whole"}  # issue 20: which time model made the forecast
# Time models that changed forecasts on purpose after the fixture was written, each with the condition under which
# predict must choose it (on its JSON). Where predict chose one, that condition must hold, the time keys are not
# compared, and everything else must still match (memory, input, threads, host...). Issue 20: at image inputs as
# large as the shipped set's largest trained one (224x224), the corrected layer-wise model.
def _pixels(forecast):
    dims = str(forecast.get("input", "")).split("x")
    return int(dims[1]) * int(dims[2]) if len(dims) == 3 and all(d.isdigit() for d in dims) else 0


CHANGED_TIME_MODELS = {"corrected layer-wise": lambda forecast: _pixels(forecast) >= 224 * 224}
WIDEN_NOTE = "the 90% interval is widened "  # followed by "3x each way: ..."
FROM_PREDICTOR = ", from the predictor of "  # env on a host no predictor was trained on: "<host>, from ... <set>"
WITH_ISA = " with ISA "  # "<host> with ISA avx2, from the predictor of <set> with ISA ..." where the labels agree
TIME_KEYS = {"time_ms", "time_ms_low", "time_ms_high", "learner", "cv_mre", "notes", "time_model", "epoch_s"}
# Other strings name files of the checkout (a remedy's --plan): the checkout's root is written as $ROOT.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
EPYC_SET = os.path.join(ROOT, "data", "predictors", "amd-epyc-2cpu")


def read_configs(path):
    configs = []
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 5:
                sys.exit(f"forecast-fixture: {path}: expected 5 tab-separated fields, got {len(fields)}: {line!r}")
            configs.append(dict(zip(["id", "model", "args", "threads", "isa"], fields)))
    return configs


def commands(config, dnncast):
    common = [config["model"]] + shlex.split(config["args"]) + ["--threads", config["threads"], "--json"]
    # The fixture holds the AMD EPYC set's forecasts: named, since a host of another shipped set's fingerprint (the
    # Intel Xeon's, session 47) would have predict take that one.
    predict = [dnncast, "predict"] + common + ["--host-isa", config["isa"], "--predictor", EPYC_SET]
    if config["threads"] == "2":  # half of them also forecast an epoch
        predict += ["--epoch-samples", "50000"]
    memory = [dnncast, "memory"] + common + ["--isa", config["isa"]]
    return {"predict": predict, "memory": memory}


def run(argv, cwd):
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    result = {"rc": done.returncode}
    try:
        result["json"] = json.loads(done.stdout)
    except json.JSONDecodeError:
        result["stdout"] = done.stdout
    if done.returncode != 0:
        result["stderr"] = done.stderr.strip().splitlines()[-1:] if done.stderr.strip() else []
    return result


def strip(value, ignored=IGNORED_KEYS):
    if isinstance(value, dict):
        return {k: strip(v, ignored) for k, v in value.items() if k not in ignored}
    if isinstance(value, list):
        return [strip(v, ignored) for v in value]
    if isinstance(value, str):
        return value.replace(ROOT + "/", "$ROOT/")
    return value


# Keys memory's JSON gained after the fixture was written (issue 35): the graph's parameter count and how many of
# them train. No fixture configuration freezes a layer, so the two must be equal; where they are, both are taken
# out before the comparison (where they are not, they stay and show as a difference).
ADDED_MEMORY_KEYS = ("parameters", "trainable_parameters")


def drop_added_memory_keys(results):
    for entry in results.values():
        now = entry.get("memory", {}).get("json")
        if isinstance(now, dict) and all(key in now for key in ADDED_MEMORY_KEYS):
            if now["parameters"] == now["trainable_parameters"] and now["parameters"] > 0:
                for key in ADDED_MEMORY_KEYS:
                    del now[key]


def ignored_keys(command):
    return IGNORED_KEYS | (IGNORED_PREDICT_KEYS if command == "predict" else set())


def differences(before, after, path=""):
    if type(before) is not type(after):
        return [f"{path}: {before!r} before, {after!r} after"]
    if isinstance(before, dict):
        out = []
        for key in sorted(set(before) | set(after)):
            if key not in after:
                out.append(f"{path}.{key}: missing after")
            elif key not in before:
                out.append(f"{path}.{key}: new after ({after[key]!r})")
            else:
                out += differences(before[key], after[key], f"{path}.{key}")
        return out
    if isinstance(before, list):
        if len(before) != len(after):
            return [f"{path}: {len(before)} entries before, {len(after)} after"]
        return [d for i, (b, a) in enumerate(zip(before, after)) for d in differences(b, a, f"{path}[{i}]")]
    return [] if before == after else [f"{path}: {before!r} before, {after!r} after"]


CHANGED_FILE = "changed.json"  # beside the --check file: {id: {"why": ..., "memory": {...}, "predict": {...}}}


def overlay(base, patch):
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            overlay(base[key], value)
        else:
            base[key] = value


def changed_leaves(before, after):
    """The parts of `after` that differ from `before` (dicts recursed into; anything else whole)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = {}
        for key, value in after.items():
            if key not in before or before[key] != value:
                out[key] = changed_leaves(before.get(key), value) if key in before else value
        return out
    return after


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dnncast", required=True)
    parser.add_argument("--only", metavar="ID", action="append", help="run only these configurations (--check: compare only them)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--configs", default=os.path.join(os.path.dirname(__file__), "..", "tests", "cli",
                                                          "forecast_fixture", "configs.tsv"))
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="FILE")
    mode.add_argument("--check", metavar="FILE")
    mode.add_argument("--changed-from", metavar="FILE")
    parser.add_argument("--why", default="", help="--changed-from: the reason written into each entry")
    args = parser.parse_args()
    dnncast = os.path.abspath(args.dnncast)
    cwd = os.path.dirname(os.path.abspath(args.configs))  # graph files are named relative to configs.tsv
    configs = [c for c in read_configs(args.configs) if not args.only or c["id"] in args.only]
    if args.only and len(configs) != len(set(args.only)):
        sys.exit(f"forecast-fixture: --only names an id that {args.configs} lacks")
    jobs = [(c, name, argv) for c in configs for name, argv in commands(c, dnncast).items()]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outputs = list(pool.map(lambda job: strip(run(job[2], cwd), ignored_keys(job[1])), jobs))
    results = {c["id"]: {"config": c} for c in configs}
    for (config, name, _), output in zip(jobs, outputs):
        results[config["id"]][name] = output
    if not args.write:
        drop_added_memory_keys(results)
    if args.write:
        with open(args.write, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
            f.write("\n")
        failed = [k for k, v in results.items() if v["predict"]["rc"] or v["memory"]["rc"]]
        print(f"forecast-fixture: wrote {len(results)} configurations to {args.write}"
              + (f"; non-zero exit codes: {', '.join(failed)}" if failed else ""))
        return 0
    if args.changed_from:
        with open(args.changed_from) as f:
            old = json.load(f)
        entries = {}
        for key, entry in results.items():
            patch = {}
            memory = changed_leaves(old[key]["memory"], entry["memory"])
            if memory:
                patch["memory"] = memory
            # predict: the memory forecast's keys only (its time keys depend on the host's predictor match)
            now, was = entry["predict"].get("json", {}), old[key]["predict"].get("json", {})
            forecast = {k: v for k, v in now.items() if "bytes" in k and was.get(k) != v}
            if forecast:
                patch["predict"] = {"json": forecast}
            if patch:
                entries[key] = dict(why=args.why, **patch)
        print(json.dumps(entries, indent=1, sort_keys=True))
        return 0
    with open(args.check) as f:
        before = json.load(f)
    changed_path = os.path.join(os.path.dirname(os.path.abspath(args.check)), CHANGED_FILE)
    if os.path.exists(changed_path):
        with open(changed_path) as f:
            for key, entry in json.load(f).items():
                if key in before:
                    overlay(before[key], {name: value for name, value in entry.items() if name != "why"})
    if args.only:
        before = {k: v for k, v in before.items() if k in args.only}
    drop_added_memory_keys(before)
    for entry in before.values():  # written before a key was ignored: compared without it
        if isinstance(entry, dict) and "predict" in entry:
            entry["predict"] = strip(entry["predict"], ignored_keys("predict"))
            old = entry["predict"].get("json")
            if isinstance(old, dict):  # written before a key was added: it must hold its unchanged value
                for key, value in ADDED_PREDICT_KEYS.items():
                    old.setdefault(key, value)
    changed = []
    # Issue 36: on a host no predictor was trained on, predict widens the time interval by a factor each way and
    # says so in a note (the fixture was written on a host that matched). Where that note is, the interval must be
    # exactly the old one widened; the note and the widening are then taken out before the comparison.
    # Session 40: there the forecast's env also names this host first ("<host>, from the predictor of <set>").
    for key, entry in results.items():
        now = entry.get("predict", {}).get("json")
        old = before.get(key, {}).get("predict", {}).get("json")
        if not isinstance(now, dict) or not isinstance(old, dict):
            continue
        # Session 48: where the two CPUs read alike (an AVX2 dispatch of the set's own CPU), each side adds its ISA.
        if isinstance(now.get("env"), str) and FROM_PREDICTOR in now["env"]:
            source = now["env"].split(FROM_PREDICTOR, 1)[1]
            if source == str(old.get("env")) or source.startswith(str(old.get("env")) + WITH_ISA):
                now["env"] = old["env"]
        widened = [n for n in now.get("notes", []) if n.startswith(WIDEN_NOTE)]
        if not widened:
            continue
        factor = float(widened[0][len(WIDEN_NOTE):].split("x", 1)[0])
        now["notes"] = [n for n in now["notes"] if not n.startswith(WIDEN_NOTE)]
        for name, scale in (("time_ms_low", 1 / factor), ("time_ms_high", factor)):
            if name in now and name in old and abs(now[name] - old[name] * scale) <= 1e-9 * abs(old[name] * scale):
                now[name] = old[name]
            elif name in now and name in old and now.get("time_model") == old.get("time_model", "whole"):
                changed.append(f".{key}.predict.json.{name}: {now[name]!r}, expected {old[name]!r} widened {factor}x")
    for key, entry in results.items():
        now = entry.get("predict", {}).get("json")
        old = before.get(key, {}).get("predict", {}).get("json")
        if not isinstance(now, dict) or not isinstance(old, dict):
            continue
        model = now.get("time_model")
        chosen = [name for name, condition in CHANGED_TIME_MODELS.items() if condition(now)]
        if model in CHANGED_TIME_MODELS or chosen:
            if [model] != chosen:
                changed.append(f".{key}.predict.json.time_model: {model!r}, expected {chosen[0] if chosen else 'whole'!r} here")
            for forecast in (now, old):
                for name in TIME_KEYS:
                    forecast.pop(name, None)
    diffs = changed + differences(before, results, "")
    for d in diffs[:50]:
        print(f"forecast-fixture: {d}")
    if diffs:
        print(f"forecast-fixture: {len(diffs)} differences from {args.check}")
        return 1
    print(f"forecast-fixture: {len(results)} configurations x (predict, memory): identical to {args.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
