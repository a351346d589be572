#!/usr/bin/python3
"""PyTorch's side of the numerical fidelity check (tests/profile/numerics_test.cpp): one training
step (forward, loss, backward) computed by PyTorch itself from the executor's dump
(dnncast::profile::dump_training_step: manifest.json, graph.json, raw tensors). Run with Debian's
/usr/bin/python3 (python3-torch 1.13, torchvision 0.14).

    /usr/bin/python3 tests/profile/torch_reference_step.py CASES.json

CASES.json is a list of {"dir": DIR, "reference": "torchvision" | "interpreter", "model": NAME,
"kwargs": {...}}, one Python process for all of them. For each case it writes DIR/reference.json:
{"loss": x, "grads": {parameter name: file}, "input_grads": {input node: file},
"buffers": {buffer name: file}} (raw little-endian f32 files in DIR/reference/), or {"error": text}.

Two references, both independent of src/profile/executor.cpp:
- torchvision: torchvision.models.NAME(weights=None, **kwargs) in train mode, every nn.Dropout and
  StochasticDepth probability set to 0 (the dump runs with dropout 0); its parameters are copied by
  name from the dump, and any name or shape that does not match, either way, is an error.
- interpreter: the dumped graph (dnncast-graph/1) run node by node with torch.nn.functional, each op
  as the op registry documents it (src/graph/ops_*.cpp header comments), for the op cases and for
  families torchvision lacks (bert, gpt2). Nodes marked checkpoint=1 (graph/checkpoint.h) run block by
  block through torch.utils.checkpoint.checkpoint(use_reentrant=True); a block none of whose inputs
  requires grad gets its input made to require it first, as PEFT's enable_input_require_grads does.
The loss of each graph output follows the manifest's target kind: cross_entropy (N x C logits),
token_cross_entropy (N x ... x V logits flattened to rows), mse, or loss_node (the output is the loss).
"""
import json
import math
import os
import sys
import traceback

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils.checkpoint

NUMPY_TYPES = {"f32": np.float32, "i64": np.int64, "bool": np.bool_}


def read_tensor(folder, entry, key="file"):
    data = np.fromfile(os.path.join(folder, entry[key]), dtype=NUMPY_TYPES[entry["dtype"]])
    return torch.from_numpy(data.reshape(entry["shape"]))


def write_tensor(folder, name, tensor):
    os.makedirs(os.path.join(folder, "reference"), exist_ok=True)
    path = os.path.join("reference", name)
    tensor.detach().contiguous().to(torch.float32).numpy().tofile(os.path.join(folder, path))
    return path


class Dump:
    def __init__(self, folder):
        self.folder = folder
        with open(os.path.join(folder, "manifest.json")) as f:
            self.manifest = json.load(f)
        if self.manifest.get("format") != "dnncast-step/1":
            raise ValueError("%s: not a dnncast-step/1 manifest" % folder)
        self.params = {e["name"]: read_tensor(folder, e) for e in self.manifest["parameters"]}
        self.inputs = [(e["node"], read_tensor(folder, e)) for e in self.manifest["inputs"]]
        self.targets = self.manifest["targets"]
        self.buffers = {e["name"]: read_tensor(folder, e) for e in self.manifest["buffers"]}

    def target(self, index):
        entry = self.targets[index]
        return read_tensor(self.folder, entry) if "file" in entry else None


def total_loss(dump, outputs):
    total = None
    for index, out in enumerate(outputs):
        kind = dump.targets[index]["kind"]
        target = dump.target(index)
        if kind == "cross_entropy":
            loss = F.cross_entropy(out, target)
        elif kind == "token_cross_entropy":
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
        elif kind == "mse":
            loss = F.mse_loss(out, target)
        elif kind == "loss_node":
            loss = out
        else:
            raise ValueError("unknown target kind " + kind)
        total = loss if total is None else total + loss
    return total


# ---- The interpreter of dnncast-graph/1 -----------------------------------------------------------


def pair(value, default):
    if value is None:
        value = default
    if isinstance(value, int):
        return [value, value]
    return list(value) * 2 if len(value) == 1 else list(value)


def rotary(x, rotary_dim, theta):
    """Rotary position embedding of x (N x h x L x d) on its first rotary_dim features, the pairs (i, i + r/2)."""
    length, half = x.shape[-2], rotary_dim // 2
    frequencies = 1.0 / theta ** (torch.arange(half, dtype=torch.float32) * 2 / rotary_dim)
    angles = torch.outer(torch.arange(length, dtype=torch.float32), frequencies)
    cos, sin = angles.cos(), angles.sin()
    first, second, rest = x[..., :half], x[..., half:rotary_dim], x[..., rotary_dim:]
    return torch.cat([first * cos - second * sin, second * cos + first * sin, rest], dim=-1)


class Interpreter:
    """Each op from its documented semantics; parameters and buffers by PyTorch's names."""

    def __init__(self, graph, params, buffers):
        self.graph = graph
        self.params = params  # name -> leaf tensor (requires grad)
        self.buffers = buffers  # name -> tensor (BatchNorm running stats start fresh, like PyTorch)
        self.used = set()

    def param(self, name, required=True):
        if name not in self.params:
            if required:
                raise KeyError("the graph needs parameter '%s', the dump has none" % name)
            return None
        self.used.add(name)
        return self.params[name]

    def checkpointed(self, nodes, start, values):
        """Runs the checkpointed block starting at nodes[start]; returns the index after it."""
        block = nodes[start]["attrs"]["block"]
        end = start
        while end < len(nodes) and nodes[end]["attrs"].get("checkpoint", 0) and nodes[end]["attrs"].get("block") == block:
            end += 1
        names = set(n["name"] for n in nodes[start:end])
        outer = []
        for node in nodes[start:end]:
            outer += [name for name in node["inputs"] if name not in names and name not in outer]
        later = set(name for node in nodes[end:] for name in node["inputs"])
        consumed = set(name for node in nodes for name in node["inputs"])
        outputs = [n["name"] for n in nodes[start:end] if n["name"] in later or n["name"] not in consumed]

        def run_block(*tensors):
            local = dict(zip(outer, tensors))
            for node in nodes[start:end]:
                local[node["name"]] = self.node(node, [local[name] for name in node["inputs"]])
            return tuple(local[name] for name in outputs)

        tensors = [values[name] for name in outer]
        if not any(t.requires_grad for t in tensors):
            tensors = [t.detach().requires_grad_(True) if t.is_floating_point() else t for t in tensors]
        results = torch.utils.checkpoint.checkpoint(run_block, *tensors, use_reentrant=True)
        values.update(zip(outputs, results))
        return end

    def run(self, inputs):
        values = {}
        consumed = set()
        feed = iter(inputs)
        nodes = self.graph["nodes"]
        skip_to = 0
        for position, node in enumerate(nodes):
            consumed.update(node["inputs"])
            if position < skip_to:
                continue
            if node["attrs"].get("checkpoint", 0):
                skip_to = self.checkpointed(nodes, position, values)
                continue
            args = [values[name] for name in node["inputs"]]
            if node["op"] == "Input":
                name, tensor = next(feed)
                if name != node["name"]:
                    raise ValueError("input order: dump has %s, graph has %s" % (name, node["name"]))
                values[node["name"]] = tensor
            else:
                values[node["name"]] = self.node(node, args)
            expected = list(node["shape"])
            got = list(values[node["name"]].shape)
            if got != expected:
                raise ValueError("node '%s' (%s): output %s, the graph says %s" % (node["name"], node["op"], got, expected))
        return [values[n["name"]] for n in self.graph["nodes"] if n["name"] not in consumed]

    def node(self, node, x):
        op, a, name = node["op"], node["attrs"], node["name"]
        if op == "Conv2d":
            return F.conv2d(x[0], self.param(name + ".weight"), self.param(name + ".bias", a.get("bias", 1) != 0),
                            pair(a.get("stride"), 1), pair(a.get("padding"), 0), pair(a.get("dilation"), 1),
                            a.get("groups", 1))
        if op == "ConvTranspose2d":
            return F.conv_transpose2d(x[0], self.param(name + ".weight"), self.param(name + ".bias", a.get("bias", 1) != 0),
                                      pair(a.get("stride"), 1), pair(a.get("padding"), 0),
                                      pair(a.get("output_padding"), 0), a.get("groups", 1), pair(a.get("dilation"), 1))
        if op == "Linear":
            weight = self.param(a["tied_to"] + ".weight") if "tied_to" in a else self.param(name + ".weight")
            return F.linear(x[0], weight, self.param(name + ".bias", a.get("bias", 1) != 0))
        if op == "BatchNorm2d":
            return F.batch_norm(x[0], self.buffers[name + ".running_mean"], self.buffers[name + ".running_var"],
                                self.param(name + ".weight"), self.param(name + ".bias"), training=True,
                                momentum=a.get("momentum", 0.1), eps=a.get("eps", 1e-5))
        if op == "LayerNorm":
            affine = a.get("elementwise_affine", 1) != 0
            return F.layer_norm(x[0], a["normalized_shape"], self.param(name + ".weight", affine),
                                self.param(name + ".bias", affine), a.get("eps", 1e-5))
        if op == "GroupNorm":
            affine = a.get("affine", 1) != 0
            return F.group_norm(x[0], a["groups"], self.param(name + ".weight", affine),
                                self.param(name + ".bias", affine), a.get("eps", 1e-5))
        if op == "RMSNorm":
            y = x[0] * torch.rsqrt(x[0].pow(2).mean(-1, keepdim=True) + a.get("eps", 1e-6))
            return self.param(name + ".weight") * y
        if op == "RotaryEmbedding":
            return rotary(x[0], a.get("rotary_dim", x[0].shape[-1]), a.get("theta", 10000.0))
        if op == "RepeatInterleave":
            return torch.repeat_interleave(x[0], a["repeats"], dim=a["axis"])
        if op == "TopKRouting":  # as Hugging Face's sparse MoE blocks route (src/graph/ops_moe.cpp)
            probabilities = F.softmax(x[0], dim=-1, dtype=torch.float)
            weights, _ = torch.topk(probabilities, a["top_k"], dim=-1)
            if a.get("normalize", 0):
                weights = weights / weights.sum(dim=-1, keepdim=True)
            return (weights * a.get("scale", 1.0)).to(x[1].dtype)
        if op in ("ExpertGather", "ExpertCombine"):
            # Positions start .. start + count of the T x top_k routed slots: token p mod T, slot p // T.
            rows = x[1].shape[:-1].numel() if op == "ExpertCombine" else x[0].shape[:-1].numel()
            k = x[1].shape[-1] if op == "ExpertCombine" else a["top_k"]
            positions = range(a["start"], a["start"] + a["count"])
            tokens = torch.tensor([p % rows for p in positions])
            if op == "ExpertGather":
                return x[0].reshape(rows, -1)[tokens]
            weights = x[1].reshape(rows, k)[tokens, torch.tensor([p // rows for p in positions])]
            total = x[2] if len(x) > 2 else torch.zeros(rows, x[0].shape[-1], dtype=x[1].dtype)
            return total.index_put((tokens,), x[0] * weights[:, None], accumulate=True)
        if op == "LayerScale":
            axis = a.get("axis", 1) % x[0].dim()
            gamma = self.param(name)
            expected = [x[0].shape[axis]] + [1] * (x[0].dim() - axis - 1)
            if list(gamma.shape) != expected:
                raise ValueError("%s: gamma %s, expected %s" % (name, list(gamma.shape), expected))
            return x[0] * gamma
        activations = {"ReLU": F.relu, "ReLU6": F.relu6, "GELU": F.gelu, "SiLU": F.silu, "Sigmoid": torch.sigmoid,
                       "Tanh": torch.tanh, "Hardswish": F.hardswish, "Hardsigmoid": F.hardsigmoid}
        if op in activations:
            return activations[op](x[0])
        if op == "Softmax":
            return F.softmax(x[0], dim=a.get("axis", -1))
        if op == "Add":
            return x[0] + x[1]
        if op == "Mul":
            return x[0] * a["scalar"] if len(x) == 1 else x[0] * x[1]  # one input: LoRA's scaling
        if op == "Dropout":
            if a.get("p", 0.5) != 0:
                raise ValueError("%s: dropout p %s (the dump runs with p = 0)" % (name, a.get("p")))
            return F.dropout(x[0], 0.0, training=True)
        if op == "MaxPool2d":
            kernel = pair(a["kernel"], 1)
            return F.max_pool2d(x[0], kernel, pair(a.get("stride"), kernel), pair(a.get("padding"), 0),
                                pair(a.get("dilation"), 1), ceil_mode=a.get("ceil_mode", 0) != 0)
        if op == "AvgPool2d":
            kernel = pair(a["kernel"], 1)
            return F.avg_pool2d(x[0], kernel, pair(a.get("stride"), kernel), pair(a.get("padding"), 0),
                                ceil_mode=a.get("ceil_mode", 0) != 0, count_include_pad=a.get("count_include_pad", 1) != 0)
        if op == "AdaptiveAvgPool2d":
            return F.adaptive_avg_pool2d(x[0], pair(a["output_size"], 1))
        if op == "Flatten":
            return torch.flatten(x[0], a.get("start_dim", 1), a.get("end_dim", -1))
        if op == "Concat":
            return torch.cat(x, dim=a.get("axis", 1))
        if op == "Reshape":
            shape = [x[0].shape[i] if d == 0 else d for i, d in enumerate(a["shape"])]
            return x[0].reshape(shape)
        if op == "Permute":
            y = x[0].permute(a["dims"])
            return y.contiguous() if a.get("contiguous", 0) else y
        if op == "Transpose":
            y = x[0].transpose(a["dim0"], a["dim1"])
            return y.contiguous() if a.get("contiguous", 0) else y
        if op == "Slice":
            index = [slice(None)] * x[0].dim()
            index[a["axis"]] = slice(a["start"], a["end"])
            return x[0][tuple(index)]
        if op == "ChannelShuffle":
            n, c, h, w = x[0].shape
            g = a["groups"]
            return x[0].reshape(n, g, c // g, h, w).transpose(1, 2).reshape(n, c, h, w)
        if op == "MatMul":
            return torch.matmul(x[0], x[1])
        if op == "Embedding":
            return F.embedding(x[0], self.param(name + ".weight"))
        if op == "ScaledDotProductAttention":
            q, k, v = x
            if a.get("dropout_p", 0) != 0:
                raise ValueError("%s: dropout_p %s (the dump runs with 0)" % (name, a.get("dropout_p")))
            for unread in ("softcap", "window"):
                if a.get(unread, 0):
                    raise ValueError("%s: the interpreter lacks attention's %s" % (name, unread))
            scores = torch.matmul(q, k.transpose(-2, -1)) * a.get("scale", 1.0 / math.sqrt(q.shape[-1]))
            if a.get("causal", 0):
                future = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).triu(1)
                scores = scores.masked_fill(future, float("-inf"))
            return torch.matmul(F.softmax(scores, dim=-1), v)
        if op == "PositionEmbedding":
            table = self.param(name)
            if table.shape[1] != a["length"]:
                raise ValueError("%s: table of %d rows, length %d" % (name, table.shape[1], a["length"]))
            return x[0] + table[:, : x[0].shape[1]]
        if op == "ClassToken":
            token = self.param(name)
            return torch.cat([token.expand(x[0].shape[0], -1, -1), x[0]], dim=1)
        if op == "CrossEntropyLoss":
            return F.cross_entropy(x[0], self.buffers[name + ".target"])
        if op == "MSELoss":
            return F.mse_loss(x[0], x[1] if len(x) == 2 else self.buffers[name + ".target"])
        raise ValueError("the interpreter lacks op %s (node %s)" % (op, name))


def run_interpreter(dump, case):
    with open(os.path.join(dump.folder, "graph.json")) as f:
        graph = json.load(f)
    params = {name: t.clone().requires_grad_(True) for name, t in dump.params.items()}
    # frozen=1 (LoRA's base weights): requires_grad False, as PEFT leaves them; no gradient to compare.
    for node in graph["nodes"]:
        if node["attrs"].get("frozen", 0):
            for suffix in ("", ".weight", ".bias"):
                if node["name"] + suffix in params:
                    params[node["name"] + suffix].requires_grad_(False)
    buffers = {}
    for node in graph["nodes"]:
        if node["op"] == "BatchNorm2d":  # fresh running statistics, as nn.BatchNorm2d starts
            channels = node["shape"][1]
            buffers[node["name"] + ".running_mean"] = torch.zeros(channels)
            buffers[node["name"] + ".running_var"] = torch.ones(channels)
        elif node["op"] in ("CrossEntropyLoss", "MSELoss") and node["name"] + ".target" in dump.buffers:
            buffers[node["name"] + ".target"] = dump.buffers[node["name"] + ".target"]
    inputs = [(n, t.clone().requires_grad_(True) if t.is_floating_point() else t) for n, t in dump.inputs]
    interpreter = Interpreter(graph, params, buffers)
    loss = total_loss(dump, interpreter.run(inputs))
    unused = sorted(set(params) - interpreter.used)
    if unused:
        raise ValueError("parameters of the dump no node used: " + ", ".join(unused[:5]))
    loss.backward()
    return loss, params, inputs, buffers


# ---- torchvision -------------------------------------------------------------------------------------


def torchvision_name(name):
    # nn.MultiheadAttention keeps its packed projection as bare parameters.
    return name.replace("in_proj_weight", "in_proj.weight").replace("in_proj_bias", "in_proj.bias")


def without_init(build):
    """build() with torch.nn.init's fillers as no-ops: every parameter is overwritten from the dump
    (one left out is an error), so torchvision's initialisation (seconds for vgg11) is skipped."""
    names = [n for n in dir(torch.nn.init) if n.endswith("_") and not n.startswith("_")]
    saved = {n: getattr(torch.nn.init, n) for n in names}
    try:
        for name in saved:
            setattr(torch.nn.init, name, lambda tensor, *args, **kwargs: tensor)
        return build()
    finally:
        for name, function in saved.items():
            setattr(torch.nn.init, name, function)


def run_torchvision(dump, case):
    import torchvision
    from torchvision.ops import StochasticDepth

    model = without_init(lambda: getattr(torchvision.models, case["model"])(weights=None, **case.get("kwargs", {})))
    model.train()
    for module in model.modules():
        if isinstance(module, (torch.nn.Dropout, StochasticDepth)):
            module.p = 0.0
    problems = []
    copied = set()
    params = {}
    with torch.no_grad():
        for name, param in model.named_parameters():
            ours = torchvision_name(name)
            if ours not in dump.params:
                problems.append("torchvision's %s (%s) is not in the dump" % (name, list(param.shape)))
            elif list(dump.params[ours].shape) != list(param.shape):
                problems.append("%s: torchvision %s, dump %s" % (name, list(param.shape), list(dump.params[ours].shape)))
            else:
                param.copy_(dump.params[ours])
                copied.add(ours)
                params[ours] = param
    for name in sorted(set(dump.params) - copied):
        problems.append("the dump's %s (%s) is not torchvision's" % (name, list(dump.params[name].shape)))
    if problems:
        raise ValueError("%d parameter mismatches: %s" % (len(problems), "; ".join(problems[:6])))
    if len(dump.inputs) != 1:
        raise ValueError("a torchvision model takes one input, the dump has %d" % len(dump.inputs))
    x = dump.inputs[0][1].clone().requires_grad_(True)
    out = model(x)
    if not isinstance(out, torch.Tensor):
        raise ValueError("torchvision returned %s (auxiliary heads left on?)" % type(out).__name__)
    loss = total_loss(dump, [out])
    loss.backward()
    buffers = {torchvision_name(n): b for n, b in model.named_buffers()}
    return loss, params, [(dump.inputs[0][0], x)], buffers


def run_case(case):
    dump = Dump(case["dir"])
    torch.manual_seed(0)
    runner = run_torchvision if case["reference"] == "torchvision" else run_interpreter
    loss, params, inputs, buffers = runner(dump, case)
    result = {"loss": float(loss.item()), "grads": {}, "input_grads": {}, "buffers": {}}
    for index, (name, param) in enumerate(params.items()):
        if param.grad is not None:
            result["grads"][name] = write_tensor(dump.folder, "param_%d.grad.bin" % index, param.grad)
    for index, (name, tensor) in enumerate(inputs):
        if tensor.is_floating_point() and tensor.grad is not None:
            result["input_grads"][name] = write_tensor(dump.folder, "input_%d.grad.bin" % index, tensor.grad)
    for index, (name, tensor) in enumerate(sorted(buffers.items())):
        if name in dump.buffers and tensor.is_floating_point():
            result["buffers"][name] = write_tensor(dump.folder, "buffer_%d.bin" % index, tensor)
    return result


def main():
    torch.set_num_threads(1)
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    for case in cases:
        try:
            result = run_case(case)
        except Exception as error:  # a case's failure is its result; the others still run
            result = {"error": "%s: %s" % (type(error).__name__, error)}
            traceback.print_exc()
        with open(os.path.join(case["dir"], "reference.json"), "w") as f:
            json.dump(result, f)
        print("%s: %s" % (case["dir"], result.get("error", "loss %.6g" % result.get("loss", float("nan")))), flush=True)


if __name__ == "__main__":
    main()
