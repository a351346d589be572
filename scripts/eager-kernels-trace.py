#!/usr/bin/python3
"""The kernels PyTorch eager launches for each node of a llama-shaped decoder layer, traced on this CPU, beside the
kernels dnncast's GPU model times for the same nodes (issue 45; docs/GPU.md, "The per-kernel model").

The layer is written as Hugging Face's eager code runs it (LlamaRMSNorm, apply_rotary_pos_emb with rotate_half,
eager_attention_forward with its additive causal mask, the SwiGLU MLP; fp32, training, attention dropout 0), at a
small size. --family phi3 runs Phi3's instead: one qkv_proj sliced into q, k and v (three SliceBackward0s and the
sums of their gradients), one gate_up_proj chunked into gate and up (one SplitBackward0, a cat). --family gemma runs
Gemma's (GemmaRMSNorm's weight an offset from 1, the tanh GELU). --family gpt2 runs GPT2Block's (LayerNorm, Conv1D's
addmm, c_attn split into q, k and v, GPT2Attention._attn with its scale and torch.where causal mask, _merge_heads,
NewGELUActivation; dropout 0). --family bert runs BertLayer's (separate q, k and v projections, transpose_for_scores,
the scale and the extended mask added to the scores, erf GELU, post-norm). --family opt runs OPTDecoderLayer's (q
scaled, _shape's contiguous copies, bmm, the causal mask added and clamped by torch.max, ReLU, pre-norm).

A TorchDispatchMode sees every ATen op of one forward and one backward as the dispatcher runs it, an op at a time:
what an op calls inside itself is not seen (aten::mean is one kernel on a GPU, whatever it calls on a
CPU). An op is a kernel unless it only makes a view (its output shares an input's storage and it writes nothing),
allocates, or has no tensor output, or reads nothing but single elements (the Python scalars ATen wraps launch
nothing on a GPU). Forward kernels belong to the node whose region runs them; backward kernels to the node whose
forward made the autograd function running (a pre-hook on each function, set as the forward leaves each node), and
a gradient sum to the function after which autograd adds it. A kernel's bytes are those of its tensor arguments and
outputs, fp32, a broadcast argument counted once.

dnncast's side is `dnncast inspect CONFIG --seq S --batch B --device a100-40gb --json`: each layer's gpu_kernels.
Only memory-bound kernels are compared (GEMMs are timed as GEMMs either way): per node and phase, their count and
bytes.

    scripts/eager-kernels-trace.py [--dnncast build/dnncast] [--family llama|phi3|gemma|gpt2|bert|opt]
                                   [--kv-heads N] [--rows] [--check]

--check exits 1 when a node's count differs, or its bytes by more than --tolerance (default 10%).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GEMM_OPS = {"mm", "bmm", "addmm", "baddbmm"}
# Ops that allocate and write nothing (or only metadata): no kernel.
# Composite ops whose kernels the mode does not see one by one: slice_backward is zeros of the input's size and a copy
# of the gradient into its slice (two kernels: the zeros written, the slice read and written).
TWO_KERNELS = {"slice_backward", "select_backward"}
# native_layer_norm_backward is one op here and two kernels on a GPU (CUDA's layer_norm_grad_input_kernel, then
# GammaBetaBackward for the weight's and bias's gradients, reading the gradient and the input again).
LAYER_NORM_BACKWARD = "native_layer_norm_backward"
NO_KERNEL = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh", "is_same_size",
             "_local_scalar_dense", "detach", "alias"}


def numel(shape):
    return math.prod(shape) if shape else 1


class Size:
    def __init__(self, family, batch, seq, hidden, heads, kv_heads, intermediate):
        self.family, self.fused = family, family == "phi3"
        self.batch, self.seq, self.hidden, self.heads, self.kv_heads = batch, seq, hidden, heads, kv_heads
        self.head_dim, self.intermediate = hidden // heads, intermediate


def layer_prefix(size):
    return {"gpt2": "transformer.h.0.", "bert": "encoder.layer.0.", "opt": "model.decoder.layers.0."}.get(
        size.family, "model.layers.0.")


def config_json(size):
    """A one-layer LlamaConfig (Phi3Config, GPT2Config) of this size, as dnncast reads it."""
    if size.family == "gpt2":
        return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": size.hidden,
                "n_head": size.heads, "n_layer": 1, "n_positions": 4 * size.seq, "vocab_size": 128,
                "n_inner": size.intermediate, "activation_function": "gelu_new", "resid_pdrop": 0.0,
                "embd_pdrop": 0.0, "attn_pdrop": 0.0, "layer_norm_epsilon": 1e-5}
    if size.family == "bert":
        return {"model_type": "bert", "architectures": ["BertForMaskedLM"], "hidden_size": size.hidden,
                "num_attention_heads": size.heads, "num_hidden_layers": 1, "intermediate_size": size.intermediate,
                "max_position_embeddings": 4 * size.seq, "type_vocab_size": 2, "vocab_size": 128,
                "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
                "layer_norm_eps": 1e-12}
    if size.family == "opt":
        return {"model_type": "opt", "architectures": ["OPTForCausalLM"], "hidden_size": size.hidden,
                "num_attention_heads": size.heads, "num_hidden_layers": 1, "ffn_dim": size.intermediate,
                "max_position_embeddings": 4 * size.seq, "vocab_size": 128, "word_embed_proj_dim": size.hidden,
                "activation_function": "relu", "do_layer_norm_before": True, "enable_bias": True, "dropout": 0.0,
                "attention_dropout": 0.0}
    architecture = {"phi3": "Phi3ForCausalLM", "gemma": "GemmaForCausalLM"}.get(size.family, "LlamaForCausalLM")
    config = {"model_type": size.family, "architectures": [architecture], "hidden_size": size.hidden,
              "intermediate_size": size.intermediate, "num_attention_heads": size.heads,
              "num_key_value_heads": size.kv_heads, "num_hidden_layers": 1, "vocab_size": 128,
              "max_position_embeddings": 4 * size.seq, "rms_norm_eps": 1e-5, "hidden_act": "silu",
              "tie_word_embeddings": False}
    if size.family == "gemma":
        config.update({"head_dim": size.head_dim, "hidden_activation": "gelu_pytorch_tanh"})
    return config


def parameter_maker(torch):
    """weight(*shape): a parameter drawn from the seeded generator, as each layer below draws them in order."""
    def weight(*shape):
        return (torch.randn(*shape) * 0.05).requires_grad_()
    return weight


def layer_norms(torch, h, keys):
    """Each key's LayerNorm weight (ones) and bias (zeros, key + "_b") of width h."""
    params = {}
    for key in keys:
        params[key], params[key + "_b"] = torch.ones(h, requires_grad=True), torch.zeros(h, requires_grad=True)
    return params


def node_runner(size, state, tag):
    """node(name, compute): runs compute as the region of the layer's node `name` (named as dnncast names it:
    state["node"] while it runs) and marks the autograd functions it made as that node's (tag)."""
    def node(name, compute):
        state["node"] = layer_prefix(size) + name
        value = compute()
        tag(state["node"], value)
        return value
    return node


def llama_layer(torch, size, state, tag):
    """Layer 0 of a LlamaForCausalLM as transformers' eager code runs it, each node's region named as dnncast names
    the node (state["node"] while it runs; tag(name, output) marks its autograd functions). Returns (forward
    function, its input, the parameters)."""
    import torch.nn.functional as F
    n, s, h, heads, kv, d, inter = (size.batch, size.seq, size.hidden, size.heads, size.kv_heads, size.head_dim,
                                    size.intermediate)
    torch.manual_seed(0)

    weight = parameter_maker(torch)
    w = {"ln1": torch.ones(h, requires_grad=True), "ln2": torch.ones(h, requires_grad=True),
         "o": weight(h, heads * d), "down": weight(h, inter)}
    if size.fused:
        w.update({"qkv": weight((heads + 2 * kv) * d, h), "gate_up": weight(2 * inter, h)})
    else:
        w.update({"q": weight(heads * d, h), "k": weight(kv * d, h), "v": weight(kv * d, h),
                  "gate": weight(inter, h), "up": weight(inter, h)})
    # Phi3Attention's slices of qkv_proj's output: q, then k, then v.
    bounds = {"q": (0, heads * d), "k": (heads * d, (heads + kv) * d), "v": ((heads + kv) * d, (heads + 2 * kv) * d)}
    # LlamaRotaryEmbedding runs once per model forward (cos and sin, batch x seq x head_dim), as does the 4-D causal
    # mask of the eager path: inputs to the layer here.
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2).float() / d))
    freqs = torch.outer(torch.arange(s).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().expand(n, s, d).contiguous(), emb.sin().expand(n, s, d).contiguous()
    mask = torch.full((s, s), torch.finfo(torch.float32).min).triu(1).expand(n, 1, s, s).contiguous()

    node = node_runner(size, state, tag)

    def rms_norm(x, gain):  # LlamaRMSNorm.forward
        if size.family == "gemma":  # GemmaRMSNorm.forward: its weight is an offset from 1
            normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)
            return (normed * (1.0 + gain.float())).type_as(x)
        input_dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + 1e-5)
        return gain * x.to(input_dtype)

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def rotary(x):  # apply_rotary_pos_emb, one of q and k (unsqueeze_dim 1)
        return (x * cos.unsqueeze(1)) + (rotate_half(x) * sin.unsqueeze(1))

    def repeat_kv(x, n_rep):
        b, k_heads, length, dim = x.shape
        x = x[:, :, None, :, :].expand(b, k_heads, n_rep, length, dim)
        return x.reshape(b, k_heads * n_rep, length, dim)

    def attention(q, k, v):  # eager_attention_forward (attention_dropout 0.0)
        scores = torch.matmul(q, k.transpose(2, 3)) * d ** -0.5
        scores = scores + mask[:, :, :, : k.shape[-2]]
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        probs = F.dropout(probs, p=0.0, training=True)
        return torch.matmul(probs, v)

    def forward(x):
        y = node("input_layernorm", lambda: rms_norm(x, w["ln1"]))
        parts = {}
        if size.fused:
            qkv = node("self_attn.qkv_proj", lambda: F.linear(y, w["qkv"]))
        for name, key, count in (("q_proj", "q", heads), ("k_proj", "k", kv), ("v_proj", "v", kv)):
            if size.fused:
                p = node("self_attn." + name, lambda: qkv[..., bounds[key][0]:bounds[key][1]])
            else:
                p = node("self_attn." + name, lambda: F.linear(y, w[key]))
            p = node("self_attn." + name + "_view", lambda: p.view(n, s, count, d))
            parts[key] = node("self_attn." + name + "_heads", lambda: p.transpose(1, 2))
        q = node("self_attn.rotary_q", lambda: rotary(parts["q"]))
        k = node("self_attn.rotary_k", lambda: rotary(parts["k"]))
        v = parts["v"]
        if kv != heads:
            k = node("self_attn.repeat_k", lambda: repeat_kv(k, heads // kv))
            v = node("self_attn.repeat_v", lambda: repeat_kv(v, heads // kv))
        a = node("self_attn.attention", lambda: attention(q, k, v))
        a = node("self_attn.merge_heads", lambda: a.transpose(1, 2).contiguous())
        a = node("self_attn.merge_view", lambda: a.reshape(n, s, -1))
        a = node("self_attn.o_proj", lambda: F.linear(a, w["o"]))
        x = node("add_1", lambda: x + a)
        y = node("post_attention_layernorm", lambda: rms_norm(x, w["ln2"]))
        if size.fused:  # Phi3MLP: up_states * act(gate), gate and up chunked from one projection
            gate_up = node("mlp.gate_up_proj", lambda: F.linear(y, w["gate_up"]))
            gate, up = node("mlp.gate", lambda: gate_up.chunk(2, dim=-1))
            gate = node("mlp.activation_fn", lambda: F.silu(gate))
            m = node("mlp.up_times_gate", lambda: up * gate)
            m = node("mlp.down_proj", lambda: F.linear(m, w["down"]))
            return node("add_2", lambda: x + m)
        gate = node("mlp.gate_proj", lambda: F.linear(y, w["gate"]))
        gate = node("mlp.act_fn", lambda: F.gelu(gate, approximate="tanh") if size.family == "gemma" else F.silu(gate))
        up = node("mlp.up_proj", lambda: F.linear(y, w["up"]))
        m = node("mlp.gate_times_up", lambda: gate * up)
        m = node("mlp.down_proj", lambda: F.linear(m, w["down"]))
        return node("add_2", lambda: x + m)

    # The layer's input comes from the embedding (a leaf here), its output's gradient from the next layer.
    return forward, torch.randn(n, s, h, requires_grad=True), list(w.values())


def gpt2_layer(torch, size, state, tag):
    """Layer 0 of a GPT2LMHeadModel as transformers' eager code runs it (GPT2Block with dropout 0), each node's region
    named as dnncast names the node. Returns (forward function, its input, the parameters)."""
    import torch.nn.functional as F
    n, s, h, heads, d, inter = size.batch, size.seq, size.hidden, size.heads, size.head_dim, size.intermediate
    torch.manual_seed(0)

    weight = parameter_maker(torch)
    w = {**layer_norms(torch, h, ("ln1", "ln2")),
         "attn": weight(h, 3 * h), "attn_b": weight(3 * h), "proj": weight(h, h), "proj_b": weight(h),
         "fc": weight(h, inter), "fc_b": weight(inter), "fc_proj": weight(inter, h), "fc_proj_b": weight(h)}
    causal = torch.tril(torch.ones((4 * s, 4 * s), dtype=torch.bool)).view(1, 1, 4 * s, 4 * s)  # GPT2Attention.bias

    node = node_runner(size, state, tag)

    def conv1d(x, key):  # Conv1D.forward
        size_out = x.size()[:-1] + (w[key].size(-1),)
        return torch.addmm(w[key + "_b"], x.view(-1, x.size(-1)), w[key]).view(size_out)

    def attn(query, key, value):  # GPT2Attention._attn
        weights = torch.matmul(query, key.transpose(-1, -2))
        weights = weights / torch.full([], value.size(-1) ** 0.5, dtype=weights.dtype)
        q_len, k_len = query.size(-2), key.size(-2)
        mask = causal[:, :, k_len - q_len:k_len, :k_len]
        weights = torch.where(mask, weights.to(weights.dtype), torch.full([], torch.finfo(weights.dtype).min))
        weights = F.softmax(weights, dim=-1).type(value.dtype)
        return torch.matmul(weights, value)

    def gelu_new(x):  # NewGELUActivation
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    def forward(x):
        y = node("ln_1", lambda: F.layer_norm(x, (h,), w["ln1"], w["ln1_b"], 1e-5))
        qkv = node("attn.c_attn", lambda: conv1d(y, "attn"))
        parts = dict(zip(("query", "key", "value"), node("attn.query", lambda: qkv.split(h, dim=2))))
        for name in ("query", "key", "value"):  # _split_heads
            p = node("attn." + name + "_view", lambda: parts[name].view(n, s, heads, d))
            parts[name] = node("attn." + name + "_heads", lambda: p.permute(0, 2, 1, 3))
        a = node("attn.attention", lambda: attn(parts["query"], parts["key"], parts["value"]))
        a = node("attn.merge_heads", lambda: a.permute(0, 2, 1, 3).contiguous())  # _merge_heads
        a = node("attn.merge_view", lambda: a.view(n, s, h))
        a = node("attn.c_proj", lambda: conv1d(a, "proj"))
        x = node("add_1", lambda: a + x)
        y = node("ln_2", lambda: F.layer_norm(x, (h,), w["ln2"], w["ln2_b"], 1e-5))
        m = node("mlp.c_fc", lambda: conv1d(y, "fc"))
        m = node("mlp.act", lambda: gelu_new(m))
        m = node("mlp.c_proj", lambda: conv1d(m, "fc_proj"))
        return node("add_2", lambda: x + m)

    return forward, torch.randn(n, s, h, requires_grad=True), list(w.values())


def bert_layer(torch, size, state, tag):
    """Layer 0 of a BertForMaskedLM as transformers' eager code runs it (BertLayer with dropout 0), each node's region
    named as dnncast names the node. Returns (forward function, its input, the parameters)."""
    import torch.nn.functional as F
    n, s, h, heads, d, inter = size.batch, size.seq, size.hidden, size.heads, size.head_dim, size.intermediate
    torch.manual_seed(0)

    weight = parameter_maker(torch)
    w = {}
    for key, shape in (("query", (h, h)), ("key", (h, h)), ("value", (h, h)), ("attn_out", (h, h)),
                       ("inter", (inter, h)), ("out", (h, inter))):
        w[key], w[key + "_b"] = weight(*shape), weight(shape[0])
    w.update(layer_norms(torch, h, ("ln1", "ln2")))
    # BertModel's extended attention mask, made once per model forward: (1 - mask) * min, batch x 1 x 1 x seq.
    mask = torch.zeros(n, 1, 1, s)

    node = node_runner(size, state, tag)

    def forward(x):
        parts = {}
        for name in ("query", "key", "value"):  # BertSelfAttention's projections and transpose_for_scores
            p = node("attention.self." + name, lambda: F.linear(x, w[name], w[name + "_b"]))
            p = node("attention.self." + name + "_view", lambda: p.view(n, s, heads, d))
            parts[name] = node("attention.self." + name + "_heads", lambda: p.permute(0, 2, 1, 3))

        def attention():
            scores = torch.matmul(parts["query"], parts["key"].transpose(-1, -2))
            scores = scores / math.sqrt(d)
            scores = scores + mask
            return torch.matmul(F.softmax(scores, dim=-1), parts["value"])
        a = node("attention.self.attention", attention)
        a = node("attention.self.merge_heads", lambda: a.permute(0, 2, 1, 3).contiguous())
        a = node("attention.self.merge_view", lambda: a.view(n, s, h))
        a = node("attention.output.dense", lambda: F.linear(a, w["attn_out"], w["attn_out_b"]))
        a = node("attention.output.add", lambda: a + x)  # BertSelfOutput: LayerNorm(hidden_states + input_tensor)
        y = node("attention.output.LayerNorm", lambda: F.layer_norm(a, (h,), w["ln1"], w["ln1_b"], 1e-12))
        m = node("intermediate.dense", lambda: F.linear(y, w["inter"], w["inter_b"]))
        m = node("intermediate.intermediate_act_fn", lambda: F.gelu(m))
        m = node("output.dense", lambda: F.linear(m, w["out"], w["out_b"]))
        m = node("output.add", lambda: m + y)
        return node("output.LayerNorm", lambda: F.layer_norm(m, (h,), w["ln2"], w["ln2_b"], 1e-12))

    return forward, torch.randn(n, s, h, requires_grad=True), list(w.values())


def opt_layer(torch, size, state, tag):
    """Layer 0 of an OPTForCausalLM as transformers' eager code runs it (OPTDecoderLayer, pre-norm, dropout 0), each
    node's region named as dnncast names the node; the attention's region runs OPTAttention's scale of q and
    _shape's contiguous copies, which dnncast books on the attention. Returns (forward function, its input, the
    parameters)."""
    import torch.nn.functional as F
    n, s, h, heads, d, inter = size.batch, size.seq, size.hidden, size.heads, size.head_dim, size.intermediate
    torch.manual_seed(0)

    weight = parameter_maker(torch)
    w = {}
    for key, shape in (("q", (h, h)), ("k", (h, h)), ("v", (h, h)), ("out", (h, h)), ("fc1", (inter, h)),
                       ("fc2", (h, inter))):
        w[key], w[key + "_b"] = weight(*shape), weight(shape[0])
    w.update(layer_norms(torch, h, ("ln1", "ln2")))
    # OPTDecoder's 4-D causal mask, made once per model forward: batch x 1 x seq x seq.
    mask = torch.full((s, s), torch.finfo(torch.float32).min).triu(1).expand(n, 1, s, s).contiguous()

    node = node_runner(size, state, tag)

    def forward(x):
        y = node("self_attn_layer_norm", lambda: F.layer_norm(x, (h,), w["ln1"], w["ln1_b"]))
        parts = {}
        for key in ("q", "k", "v"):
            p = node("self_attn." + key + "_proj", lambda: F.linear(y, w[key], w[key + "_b"]))
            p = node("self_attn." + key + "_proj_view", lambda: p.view(n, s, heads, d))
            parts[key] = node("self_attn." + key + "_proj_heads", lambda: p.transpose(1, 2))

        def attention():  # OPTAttention.forward between the projections and out_proj
            q = (parts["q"] * d ** -0.5).contiguous().view(n * heads, s, d)
            k = parts["k"].contiguous().view(n * heads, s, d)
            v = parts["v"].contiguous().view(n * heads, s, d)
            weights = torch.bmm(q, k.transpose(1, 2)).view(n, heads, s, s) + mask
            weights = torch.max(weights, torch.tensor(torch.finfo(weights.dtype).min)).view(n * heads, s, s)
            return torch.bmm(F.softmax(weights, dim=-1), v).view(n, heads, s, d)
        a = node("self_attn.attention", attention)
        a = node("self_attn.merge_heads", lambda: a.transpose(1, 2).contiguous())
        a = node("self_attn.merge_view", lambda: a.reshape(n, s, h))
        a = node("self_attn.out_proj", lambda: F.linear(a, w["out"], w["out_b"]))
        x = node("add_1", lambda: x + a)
        y = node("final_layer_norm", lambda: F.layer_norm(x, (h,), w["ln2"], w["ln2_b"]))
        m = node("fc1", lambda: F.linear(y, w["fc1"], w["fc1_b"]))
        m = node("activation_fn", lambda: F.relu(m))
        m = node("fc2", lambda: F.linear(m, w["fc2"], w["fc2_b"]))
        return node("add_2", lambda: x + m)

    return forward, torch.randn(n, s, h, requires_grad=True), list(w.values())


def trace(size):
    """{node: {"forward"|"backward": [(aten op, bytes, gemm)]}} of one forward and one backward of the layer."""
    import torch
    from torch.utils._pytree import tree_flatten
    from torch.utils._python_dispatch import TorchDispatchMode
    torch.set_num_threads(1)
    nodes = defaultdict(lambda: {"forward": [], "backward": []})
    state = {"phase": "forward", "node": "?"}

    def distinct(tensor):  # elements a kernel reads once: a broadcast (stride 0) dimension is read once
        return math.prod(size for size, stride in zip(tensor.shape, tensor.stride()) if stride != 0)

    def storage(tensor):
        return tensor.storage().data_ptr() if tensor.numel() > 0 else None

    class Kernels(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            inputs = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            outputs = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
            in_place = name.endswith("_")
            shared = {storage(t) for t in inputs} - {None}
            view = not in_place and outputs and all(storage(t) in shared for t in outputs)
            if name in NO_KERNEL or not outputs or view or max(t.numel() for t in inputs + outputs) <= 1:
                return out
            written = 0 if in_place else sum(t.numel() * t.element_size() for t in outputs)
            read = sum(distinct(t) * t.element_size() for t in inputs if t.numel() > 1)
            if name in ("fill", "zero", "fill_", "zero_"):
                read = 0 if in_place else read  # in place: writes its one argument (counted as read above)
            kernels = nodes[state["node"]][state["phase"]]
            if name == LAYER_NORM_BACKWARD and len(outputs) == 3:
                grad_input = outputs[0].numel() * outputs[0].element_size()
                kernels.append(("aten::layer_norm_grad_input", read + grad_input, False))
                kernels.append(("aten::gamma_beta_backward", read + written - grad_input, False))
            elif name in TWO_KERNELS:
                kernels.append(("aten::zero_", written, False))
                kernels.append(("aten::copy_", 2 * read, False))
            else:
                kernels.append(("aten::" + name, read + written, name in GEMM_OPS))
            return out

    def enter(name):
        def hook(grad_outputs):
            state["node"] = name
        return hook

    def tag(name, value):
        """Marks the autograd functions the node's region made (those not marked by an earlier node) as its own."""
        nodes[name]  # the node is listed, kernels or not
        value = value[0] if isinstance(value, tuple) else value  # a split's parts share one function
        pending = [value.grad_fn] if value.grad_fn is not None else []
        while pending:
            function = pending.pop()
            if function is None or "node" in function.metadata:
                continue
            function.metadata["node"] = name
            function.register_prehook(enter(name))
            pending.extend(next_function for next_function, _ in function.next_functions)

    layer = {"gpt2": gpt2_layer, "bert": bert_layer, "opt": opt_layer}.get(size.family, llama_layer)
    forward, x, params = layer(torch, size, state, tag)
    with Kernels():
        out = forward(x)
    grad = torch.randn_like(out)
    state["phase"], state["node"] = "backward", "?"
    with Kernels():
        torch.autograd.grad(out, [x] + params, grad)
    # The view of a head split (.view(...).transpose(1, 2)) copies the permuted gradient in its ViewBackward0, or the
    # projection before it does, to flatten it (BERT's keys, whose gradient comes back transposed and survives the
    # view); dnncast books that copy on the permute after the view (network_kernels.cpp).
    for node in list(nodes):
        if node.endswith("_view") and not node.endswith(".merge_view"):
            nodes[node[:-len("_view")] + "_heads"]["backward"] += nodes[node]["backward"]
            nodes[node]["backward"] = []
            projection = nodes.get(node[:-len("_view")], {"backward": []})["backward"]
            copies = [k for k in projection if k[0] == "aten::clone"]
            nodes[node[:-len("_view")] + "_heads"]["backward"] += copies
            projection[:] = [k for k in projection if k[0] != "aten::clone"]
    return nodes


def dnncast_kernels(dnncast, size):
    """{node: {"forward"|"backward": [(family, bytes)]}} from `dnncast inspect --json` of the same layer."""
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, size.family + "-tiny.json")
        with open(path, "w") as out:
            json.dump(config_json(size), out)
        done = subprocess.run([dnncast, "inspect", path, "--seq", str(size.seq), "--batch", str(size.batch),
                               "--device", "a100-40gb", "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("eager-kernels-trace: dnncast inspect failed: " + done.stderr.strip())
    nodes = {}
    for layer in json.loads(done.stdout)["layers"]:
        kernels = layer.get("gpu_kernels")
        if kernels is None:
            sys.exit("eager-kernels-trace: dnncast inspect --json gives no gpu_kernels per layer (an older dnncast?)")
        nodes[layer["name"]] = {phase: [(k["family"], k["bytes"]) for k in kernels[phase]]
                                for phase in ("forward", "backward")}
    return nodes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dnncast", default=os.path.join(ROOT, "build", "dnncast"))
    parser.add_argument("--family", choices=("llama", "phi3", "gemma", "gpt2", "bert", "opt"), default="llama")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=4)
    parser.add_argument("--intermediate", type=int, default=160)
    parser.add_argument("--rows", action="store_true", help="every kernel of every node")
    parser.add_argument("--check", action="store_true", help="exit 1 when a node departs")
    parser.add_argument("--tolerance", type=float, default=0.10)
    args = parser.parse_args()
    size = Size(args.family, args.batch, args.seq, args.hidden, args.heads, args.kv_heads, args.intermediate)
    traced = trace(size)
    ours = dnncast_kernels(args.dnncast, size)
    print(f"{size.family} layer 0, batch {size.batch}, seq {size.seq}, hidden {size.hidden}, heads {size.heads} "
          f"(kv {size.kv_heads}), fp32: memory-bound kernels per node, PyTorch eager traced on this CPU / dnncast")
    print(f"  {'node':44s} {'phase':8s} {'kernels':>9s} {'bytes (KiB)':>19s} {'GEMMs':>7s}")
    departures = 0
    totals = defaultdict(lambda: [0, 0, 0.0, 0.0])  # phase -> traced count, dnncast count, their bytes
    for node in list(ours):
        if not node.startswith(layer_prefix(size)):
            continue
        for phase in ("forward", "backward"):
            theirs = [k for k in traced.get(node, {}).get(phase, []) if not k[2]]
            mine = [k for k in ours[node][phase] if k[0] != "gemm"]
            gemms = (sum(1 for k in traced.get(node, {}).get(phase, []) if k[2]),
                     sum(1 for k in ours[node][phase] if k[0] == "gemm"))
            if not theirs and not mine and gemms == (0, 0):
                continue
            bytes_theirs, bytes_mine = sum(k[1] for k in theirs), sum(k[1] for k in mine)
            for slot, value in enumerate((len(theirs), len(mine), bytes_theirs, bytes_mine)):
                totals[phase][slot] += value
            off = len(theirs) != len(mine) or abs(bytes_mine - bytes_theirs) > args.tolerance * max(bytes_theirs, 1)
            departures += off
            print(f"  {node[len(layer_prefix(size)):]:44s} {phase:8s} {len(theirs):4d} /{len(mine):3d} "
                  f"{bytes_theirs / 1024:9.1f} /{bytes_mine / 1024:8.1f} {gemms[0]:3d} /{gemms[1]:2d}"
                  f"{'   <- departs' if off else ''}")
            if args.rows:
                print("      traced: " + ", ".join(f"{n[6:]} {b / 1024:.1f}" for n, b, g in theirs))
    unattributed = traced.get("?", {"forward": [], "backward": []})
    for phase in ("forward", "backward"):
        if unattributed[phase]:
            departures += 1
            print(f"  not attributed to a node ({phase}): " + ", ".join(n for n, b, g in unattributed[phase]))
    for phase, (count_theirs, count_mine, bytes_theirs, bytes_mine) in totals.items():
        print(f"  {'the layer':44s} {phase:8s} {count_theirs:4d} /{count_mine:3d} {bytes_theirs / 1024:9.1f} /"
              f"{bytes_mine / 1024:8.1f}")
    print(f"{departures} node phases depart")
    if args.check and departures:
        sys.exit(1)


if __name__ == "__main__":
    main()
