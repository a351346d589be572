#!/usr/bin/python3
"""Mixed-precision transformer training end to end: dnncast's GPU forecasts beside the public BERT SQuAD rows (issue 45).

    scripts/amp-transformers.py [--build BUILD] [--public DIR] [--before HARDWARE_DIR] [--score-test-gpus] [--rows]
                                [--json]

The rows: ../shared/data/public/gpu_benchmarks/lambda_pytorch_dle_1gpu.csv, NVIDIA DeepLearningExamples' BERT-base and
BERT-large fine-tuning on SQuAD (sequence 384) in NGC PyTorch containers, one GPU, amp (fp16 autocast) and the
default fp32 (TF32 on Ampere and later); time per iteration = batch / the printed throughput. dnncast's side is
`dnncast predict CONFIG --seq 384 --batch B --device GPU --precision amp|tf32 --optimizer adamw --json`, CONFIG a
BertForQuestionAnswering config of the model's published sizes (dnncast builds it with a two-way token classifier:
the QA head's FLOPs are < 0.1% of the step). `--before DIR` also times every row with DNNCAST_HARDWARE=DIR (a copy
of data/hardware without gpu_kernels_fp16: the calibrated curves) for a before / after table.

NeuSight's test GPUs and ours (H100 in every form and its family: GH200, H200; A100 80GB; L4) are scored only with
--score-test-gpus (once, when asked). Rows of GPUs the catalogue lacks are counted and left out.
Noise floor: rows of the same GPU, model, precision and batch measured more than once (other hosts or versions of
the benchmark) -- their mean deviation from their group's mean; and between software versions, the same GPU, model and
precision timed in two NGC containers (time per sequence). Each summary is also split by container: NGC 20.01's rows
(Turing and Volta, PyTorch 1.4 with apex) run older software than the per-kernel models' measurements (PyTorch 2.x).
Exit 2 on bad usage or a missing file.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {  # the published BERT sizes (Devlin et al. 2019, Table of model sizes)
    "bert_base_squad": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                        "intermediate_size": 3072},
    "bert_large_squad": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                         "intermediate_size": 4096},
}
PRECISIONS = {"amp_fp16": "amp", "fp32_or_tf32": "tf32"}
AMPERE_AND_LATER = {"Ampere", "Ada Lovelace", "Hopper", "Blackwell"}


def strip_host(name):
    for prefix in ("Lambda Cloud - ", "LambdaCloud 1x ", "LambdaCloud "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name[:-3] if name.endswith(" V1") else name


def predict(dnncast, config, row, precision, hardware=None):
    env = dict(os.environ)
    if hardware:
        env["DNNCAST_HARDWARE"] = hardware
    command = [dnncast, "predict", config, "--seq", "384", "--batch", row["batch_size"], "--device", row["device"],
               "--precision", precision, "--optimizer", "adamw", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return None, done.stderr.strip()
    result = json.loads(done.stdout)
    return result, ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--public", default=os.path.join(ROOT, "..", "shared", "data", "public", "gpu_benchmarks"))
    parser.add_argument("--before", help="a data/hardware copy without gpu_kernels_fp16: the curves' forecasts")
    parser.add_argument("--score-test-gpus", action="store_true")
    parser.add_argument("--rows", action="store_true", help="print every row")
    parser.add_argument("--json", action="store_true", help="print the scored rows as JSON instead (no summary)")
    args = parser.parse_args()
    dnncast = os.path.join(args.build, "dnncast")
    table = os.path.join(args.public, "lambda_pytorch_dle_1gpu.csv")
    if not os.path.exists(dnncast) or not os.path.exists(table):
        print(f"amp-transformers: need {dnncast} and {table}", file=sys.stderr)
        return 2
    devices = json.loads(subprocess.run([dnncast, "devices", "--json"], capture_output=True, text=True,
                                        check=True).stdout)
    specs = {gpu["name"]: gpu for gpu in devices["gpus"]}
    with open(table) as f:
        f.readline()
        rows = [r for r in csv.DictReader(f) if r["model"] in SIZES and r["precision"] in PRECISIONS]
    unusable = [r for r in rows if not r["ms_per_iter_derived"] or int(r["batch_size"]) < 1]
    rows = [r for r in rows if r not in unusable]  # a batch of 0 (RTX 3070, BERT-large fp32: did not fit)
    configs = {}
    tmp = tempfile.mkdtemp(prefix="dnncast-amp-")
    for model, sizes in SIZES.items():
        config = {"architectures": ["BertForQuestionAnswering"], "model_type": "bert", "hidden_act": "gelu",
                  "max_position_embeddings": 512, "type_vocab_size": 2, "vocab_size": 30522, "num_labels": 2}
        config.update(sizes)
        configs[model] = os.path.join(tmp, model + ".json")
        with open(configs[model], "w") as f:
            json.dump(config, f)
    # Noise floor over repeated (GPU, model, precision, batch).
    groups = {}
    for r in rows:
        groups.setdefault((strip_host(r["gpu"]), r["model"], r["precision"], r["batch_size"]), []).append(
            float(r["ms_per_iter_derived"]))
    deviations = [abs(v - statistics.mean(g)) / statistics.mean(g) for g in groups.values() if len(g) > 1 for v in g]
    skipped, held_out, results = {}, 0, []
    for r in rows:
        r["device"] = strip_host(r["gpu"])  # dnncast resolves the table's name through the catalogue's aliases
        precision = PRECISIONS[r["precision"]]
        after, error = predict(dnncast, configs[r["model"]], r, precision)
        if after is None:
            reason = error.split(": error: ")[-1].split(" in the catalogue")[0].split(" (did you mean")[0]
            reason = reason[reason.find("unknown GPU"):] if "unknown GPU" in reason else reason
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        device = after["device"]
        test = specs[device]["neusight_test_gpu"]  # dnncast's own rule (`devices --json`)
        if test and not args.score_test_gpus:
            held_out += 1  # timed, never looked at
            continue
        spec = specs[device]
        if precision == "tf32" and not spec.get("tf32_tensor_tflops") and spec.get("architecture") in AMPERE_AND_LATER:
            reason = f"GPU '{device}' has no tf32_tensor_tflops (an {spec['architecture']} GPU: it has TF32)"
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        r["device"] = device
        before = predict(dnncast, configs[r["model"]], r, precision, args.before)[0] if args.before else None
        measured = float(r["ms_per_iter_derived"])
        results.append({"gpu": device, "model": r["model"], "precision": precision, "batch": int(r["batch_size"]),
                        "container": r["container"],
                        "measured": measured, "after": after["time_ms"], "model_used": after["time_model"],
                        "before": before["time_ms"] if before else None, "test": test})
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    if args.rows:
        print(f"{'gpu':16s} {'model':17s} {'prec':5s} {'batch':>5s} {'container':10s} {'measured':>9s} {'before':>9s}"
              f" {'after':>9s} {'error':>7s}  timed by")
        for x in results:
            before = f"{x['before']:9.1f}" if x["before"] is not None else f"{'-':>9s}"
            print(f"{x['gpu']:16s} {x['model']:17s} {x['precision']:5s} {x['batch']:5d} {x['container']:10s}"
                  f" {x['measured']:9.1f} {before} {x['after']:9.1f} {100 * (x['after'] / x['measured'] - 1):+6.1f}%"
                  f"  {x['model_used']}")
        print()

    def summary(subset, label):
        if not subset:
            return
        after = [abs(x["after"] / x["measured"] - 1) for x in subset]
        signed = [x["after"] / x["measured"] - 1 for x in subset]
        line = f"  {label:34s} {len(subset):4d} rows   after {100 * statistics.mean(after):5.1f}%" \
               f" (signed {100 * statistics.mean(signed):+5.1f}%, within 15%: {sum(e <= 0.15 for e in after)})"
        if subset[0]["before"] is not None:
            before = [abs(x["before"] / x["measured"] - 1) for x in subset]
            line += f"   before {100 * statistics.mean(before):5.1f}%"
        print(line)

    print(f"{len(results)} BERT SQuAD rows timed from {table}; {held_out} rows of the test GPUs left out"
          f"{'' if not args.score_test_gpus else ' (none: --score-test-gpus)'}; rows with no time: {len(unusable)}")
    for reason, count in sorted(skipped.items()):
        print(f"  left out, {count} rows: {reason}")
    print(f"noise floor: {100 * statistics.mean(deviations):.1f}% over {len(deviations)} repeated rows"
          if deviations else "noise floor: no repeated rows")
    # Between software versions: the same GPU, model and precision timed in two NGC containers (at the batch each
    # version chose), time per sequence against the mean of its group's containers.
    versions = {}
    for x in results:
        versions.setdefault((x["gpu"], x["model"], x["precision"], x["container"]), []).append(
            x["measured"] / x["batch"])
    by_group = {}
    for (gpu, model, precision, container), values in versions.items():
        by_group.setdefault((gpu, model, precision), []).append(statistics.mean(values))
    spread = [abs(v / statistics.mean(g) - 1) for g in by_group.values() if len(g) > 1 for v in g]
    if spread:
        print(f"between NGC containers (time per sequence, same GPU, model and precision): {100 * statistics.mean(spread):.1f}%"
              f" over {len(spread)} container rows")
    for precision in ("amp", "tf32"):
        for test in (False, True):
            subset = [x for x in results if x["precision"] == precision and x["test"] == test]
            summary(subset, f"{precision}{' (test GPUs)' if test else ''}")
            for timed in ("per-kernel", "calibrated curves"):
                part = [x for x in subset if x["model_used"] == timed]
                if part and len(part) != len(subset):
                    summary(part, f"  of which timed by {timed}")
            for container in sorted({x["container"] for x in subset}):
                summary([x for x in subset if x["container"] == container], f"  in {container}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
