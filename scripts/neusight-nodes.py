#!/usr/bin/python3
"""Per node kind, dnncast's per-kernel GPU forecast beside NeuSight's per-node labels of the training GPUs (issue 45).

    scripts/neusight-nodes.py [--build BUILD] [--public DIR] [--gpus a100-40gb-pcie,...] [--rows]

NeuSight publishes, for some of its end-to-end transformer labels, one torch.fx node a row with its CUDA-event
latency (../shared/data/public/neusight/labels/GPU/MODEL-MODE-SEQ-BATCH.csv.xz; the first layer and the nodes
outside the layers; the end-to-end label scales the layer by num_layer). Each node is put in a kind by the module
that ran it (its nn_module_stack): gemm (addmm, Linear modules, the LM head), attention (every other node inside an
attention module: the score products, scale, mask, softmax, dropout, copies), norm (LayerNorm), activation (the
MLP's activation, and gelu_new's eight kernels), embedding, and elementwise (residual adds, dropouts, the rest).
A node's latency includes what timing one node alone costs: the file's median latency of nodes that launch no
kernel (size, getitem, getattr) is taken off each node's forward and backward (never below zero). dnncast's side is
`dnncast inspect CONFIG --seq S --batch B --device GPU --phase train|inference --json` (inference: eval mode, as
NeuSight's inference labels ran, their dropouts timed at the no-kernel floor), its layers in the same kinds (their `gpu_kind`,
src/gpu/network_kernels.cpp node_time_kind). Only the
training GPUs' labels are read: NeuSight's test GPUs (H100, L4, A100 80GB) have no per-node file here.
Prints, per GPU and kind, the sum over the GPU's label files of the measured and the forecast time, and their ratio;
exit 2 on bad usage or a missing folder.
"""
import argparse
import ast
import csv
import io
import json
import lzma
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# NeuSight's folder name -> the catalogue's GPU.
GPUS = {"NVIDIA_A100-PCIE-40GB": "a100-40gb-pcie", "Tesla_V100-PCIE-32GB": "v100-32gb", "Tesla_P100-PCIE-16GB": "p100",
        "Tesla_T4": "t4", "Tesla_P4": "p4"}
KINDS = ["gemm", "attention", "norm", "activation", "embedding", "elementwise"]
NO_KERNEL = {"size", "getitem", "getattr"}
LAYER_RE = re.compile(r"\.(?:h|layer|layers)\.0(?:\.|')")


def label_kind(row):
    """The kind of one fx node of a label file; None for a node outside the network (placeholder, output)."""
    op, target, meta = row["op"], row["target"], row["meta"]
    if op in ("placeholder", "output", "get_attr"):
        return None
    stack = meta
    if "addmm" in target or re.search(r"(lm_head|\.(query|key|value|dense|q_proj|k_proj|v_proj|out_proj|fc1|fc2))$",
                                       target) or "Linear'>" in stack.split("),")[-1]:
        if op == "call_module" or "addmm" in target:
            return "gemm"
    if "Attention" in stack:
        return "attention"
    if op == "call_module" and ("ln" in target.split(".")[-1] or "LayerNorm" in target or "layer_norm" in target):
        return "norm"
    if "LayerNorm'>" in stack.split("),")[-1]:
        return "norm"
    if op == "call_module" and ("wte" in target or "wpe" in target or "embed" in target):
        return "embedding"
    if "Embedding" in stack.split("),")[-1]:
        return "embedding"
    if re.search(r"(MLP|Intermediate|mlp)", stack) and re.search(r"(mul|pow|tanh|add|gelu|relu|act)", target):
        return "activation"
    if "activation_fn" in target or "intermediate_act_fn" in target or target.endswith(".act"):
        return "activation"
    return "elementwise"


def read_labels(path):
    with io.TextIOWrapper(lzma.open(path), encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    floors = [float(r["fw_latency"] or 0) for r in rows
              if r["op"] in ("call_method", "call_function") and any(t in r["target"] for t in NO_KERNEL)
              and float(r["fw_latency"] or 0) > 0]
    floor = statistics.median(floors) if floors else 0.0
    return rows, floor


def measured_by_kind(path, layers):
    rows, floor = read_labels(path)
    total = {kind: 0.0 for kind in KINDS}
    for row in rows:
        kind = label_kind(row)
        if kind is None or (row["op"] != "call_module" and any(t in row["target"] for t in NO_KERNEL)):
            continue
        fw, bw = float(row["fw_latency"] or 0), float(row["bw_latency"] or 0)
        busy = max(0.0, fw - floor) + (max(0.0, bw - floor) if bw > 0 else 0.0)
        total[kind] += busy * (layers if LAYER_RE.search(row["meta"] + "'") or LAYER_RE.search(row["target"] + ".")
                               else 1)
    return total, floor


def forecast_by_kind(build, config, seq, batch, gpu, train):
    out = subprocess.run([os.path.join(build, "dnncast"), "inspect", config, "--seq", str(seq), "--batch", str(batch),
                          "--device", gpu, "--phase", "train" if train else "inference", "--json"],
                         capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    total = {kind: 0.0 for kind in KINDS}
    for layer in doc["layers"]:
        kind = layer.get("gpu_kind", "")  # dnncast's own kinds (gpu::node_time_kind); the loss is not a label node
        if kind in total:
            total[kind] += layer.get("gpu_forward_ms", 0) + (layer.get("gpu_backward_ms", 0) if train else 0)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--public", default=os.path.join(ROOT, "..", "shared", "data", "public"))
    parser.add_argument("--rows", action="store_true", help="print every label file's kinds")
    args = parser.parse_args()
    labels = os.path.join(args.public, "neusight", "labels")
    configs = os.path.join(args.public, "neusight", "model_configs")
    if not os.path.isdir(labels) or not os.path.isdir(configs):
        print(f"neusight-nodes: no {labels} or {configs} (set --public)", file=sys.stderr)
        return 2
    sums = {}  # (gpu, mode) -> kind -> [measured, forecast]
    for folder, gpu in sorted(GPUS.items()):
        directory = os.path.join(labels, folder)
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            match = re.fullmatch(r"(\w+?)-(train|inf)-(\d+)-(\d+)\.csv\.xz", name)
            if not match:
                continue
            model, mode, seq, batch = match.group(1), match.group(2), int(match.group(3)), int(match.group(4))
            config = os.path.join(configs, model + ".json")
            with open(os.path.join(directory, name.replace(".csv.xz", ".json"))) as handle:
                layers = int(json.load(handle)["num_layer"])
            measured, floor = measured_by_kind(os.path.join(directory, name), layers)
            forecast = forecast_by_kind(args.build, config, seq, batch, gpu, mode == "train")
            bucket = sums.setdefault((gpu, mode), {kind: [0.0, 0.0] for kind in KINDS})
            for kind in KINDS:
                bucket[kind][0] += measured[kind]
                bucket[kind][1] += forecast[kind]
            if args.rows:
                cells = " ".join(f"{kind} {measured[kind]:.1f}/{forecast[kind]:.1f}" for kind in KINDS)
                print(f"{gpu:15s} {model:11s} {mode:5s} {seq:5d} {batch:3d} floor {floor:.3f} ms  {cells}")
    print("| GPU | labels | " + " | ".join(KINDS) + " |")
    print("| --- | --- | " + " | ".join("---:" for _ in KINDS) + " |")
    for (gpu, mode), bucket in sorted(sums.items()):
        cells = []
        for kind in KINDS:
            measured, forecast = bucket[kind]
            cells.append(f"{forecast / measured:.2f} ({measured:.0f} ms)" if measured > 0.5 else "-")
        print(f"| {gpu} | {'training' if mode == 'train' else 'inference'} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
