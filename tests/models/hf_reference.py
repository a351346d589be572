#!/usr/bin/python3
"""The parameter count of a Hugging Face config's model, built from torch.nn modules on the meta device as
Hugging Face's modeling_gpt2.py, modeling_bert.py, modeling_opt.py, modeling_llama.py (and Mistral's, the same
layers), modeling_gpt_neox.py, modeling_qwen2.py, modeling_qwen3.py, modeling_gemma.py, modeling_gemma2.py and
modeling_phi3.py, and for the mixtures of experts modeling_mixtral.py, modeling_qwen2_moe.py, modeling_qwen3_moe.py
and DeepSeek-V2's modeling_deepseek.py build it (tied weights counted once), for tests/models/hf_config_test.cpp to hold
dnncast's graph against. On the meta device a 7B model costs no memory. No transformers package is needed.
Rotary position embeddings own no parameters (their inverse frequencies are a buffer), so they do not appear.

    tests/models/hf_reference.py CONFIG.json ...      one line per file: "PATH PARAMETERS"
"""
import json
import sys

import torch
from torch import nn

META = {"device": "meta"}


def linear(inputs, outputs, bias=True):
    return nn.Linear(inputs, outputs, bias=bias, **META)


def norm(width):
    return nn.LayerNorm(width, **META)


def gpt2(config):
    d, inner = config["n_embd"], config.get("n_inner") or 4 * config["n_embd"]
    layers = [nn.ModuleList([norm(d), linear(d, 3 * d), linear(d, d), norm(d), linear(d, inner), linear(inner, d)])
              for _ in range(config["n_layer"])]
    wte = nn.Embedding(config["vocab_size"], d, **META)
    lm_head = linear(d, config["vocab_size"], bias=False)
    lm_head.weight = wte.weight  # tied
    return nn.ModuleList([wte, nn.Embedding(config["n_positions"], d, **META), nn.ModuleList(layers), norm(d), lm_head])


def bert(config):
    d, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    word = nn.Embedding(vocab, d, **META)
    parts = [word, nn.Embedding(config.get("max_position_embeddings", 512), d, **META),
             nn.Embedding(config.get("type_vocab_size", 2), d, **META), norm(d)]
    for _ in range(config["num_hidden_layers"]):
        parts += [linear(d, d), linear(d, d), linear(d, d), linear(d, d), norm(d), linear(d, inner), linear(inner, d),
                  norm(d)]
    if (config.get("architectures") or [""])[0] in ("BertLMHeadModel", "BertForMaskedLM"):
        decoder = linear(d, vocab)
        decoder.weight = word.weight  # tied; its bias is its own
        parts += [linear(d, d), norm(d), decoder]
    else:
        parts += [linear(d, d), linear(d, config.get("num_labels", 2))]  # pooler, classifier
    return nn.ModuleList(parts)


def opt(config):
    d, ffn, vocab = config["hidden_size"], config["ffn_dim"], config["vocab_size"]
    embed = config.get("word_embed_proj_dim", d)
    bias = config.get("enable_bias", True)
    tokens = nn.Embedding(vocab, embed, **META)
    parts = [tokens, nn.Embedding(config["max_position_embeddings"] + 2, d, **META)]
    if embed != d:
        parts += [linear(embed, d, bias=False), linear(d, embed, bias=False)]
    for _ in range(config["num_hidden_layers"]):
        parts += [linear(d, d, bias), linear(d, d, bias), linear(d, d, bias), linear(d, d, bias), norm(d),
                  linear(d, ffn, bias), linear(ffn, d, bias), norm(d)]
    if config.get("do_layer_norm_before", True) and not config.get("_remove_final_layer_norm", False):
        parts.append(norm(d))
    lm_head = linear(embed, vocab, bias=False)
    lm_head.weight = tokens.weight
    parts.append(lm_head)
    return nn.ModuleList(parts)


class RMSNorm(nn.Module):
    """A weight and no bias; the normalisation itself is arithmetic, nothing to count."""

    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(width, **META))


def llama(config):
    """LlamaForCausalLM and MistralForCausalLM: grouped-query k/v projections, SwiGLU MLP, RMSNorm."""
    d, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head = config.get("head_dim") or d // heads
    bias, mlp_bias = config.get("attention_bias", False), config.get("mlp_bias", False)
    tokens = nn.Embedding(vocab, d, **META)
    parts = [tokens]
    for _ in range(config["num_hidden_layers"]):
        attention = [linear(d, heads * head, bias), linear(d, kv_heads * head, bias), linear(d, kv_heads * head, bias),
                     linear(heads * head, d, bias)]
        mlp = [linear(d, inner, mlp_bias), linear(d, inner, mlp_bias), linear(inner, d, mlp_bias)]  # gate, up, down
        parts += [RMSNorm(d)] + attention + [RMSNorm(d)] + mlp
    lm_head = linear(d, vocab, bias=False)
    if config.get("tie_word_embeddings", False):
        lm_head.weight = tokens.weight
    parts += [RMSNorm(d), lm_head]
    return nn.ModuleList(parts)


def llama_shaped(config):
    """Qwen2ForCausalLM, Qwen3ForCausalLM, GemmaForCausalLM, Gemma2ForCausalLM, Phi3ForCausalLM: llama's layer with
    each family's own parts, as its modeling file builds them."""
    kind = config["model_type"]
    gemma = kind in ("gemma", "gemma2")
    d, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head = config.get("head_dim") or (256 if gemma else 128 if kind == "qwen3" else d // heads)
    bias = config.get("attention_bias", False)
    tokens = nn.Embedding(vocab, d, **META)
    parts = [tokens]
    for _ in range(config["num_hidden_layers"]):
        if kind == "phi3":  # qkv_proj and gate_up_proj, no biases
            attention = [linear(d, (heads + 2 * kv_heads) * head, False), linear(heads * head, d, False)]
            mlp = [linear(d, 2 * inner, False), linear(inner, d, False)]
        else:
            qkv_bias = True if kind == "qwen2" else bias  # Qwen2Attention: q, k, v biased, o_proj not
            attention = [linear(d, heads * head, qkv_bias), linear(d, kv_heads * head, qkv_bias),
                         linear(d, kv_heads * head, qkv_bias), linear(heads * head, d, bias)]
            if kind == "qwen3":
                attention += [RMSNorm(head), RMSNorm(head)]  # q_norm, k_norm
            mlp = [linear(d, inner, False), linear(d, inner, False), linear(inner, d, False)]
        norms = [RMSNorm(d) for _ in range(4 if kind == "gemma2" else 2)]
        parts += norms + attention + mlp
    lm_head = linear(d, vocab, bias=False)
    if config.get("tie_word_embeddings", gemma):
        lm_head.weight = tokens.weight
    parts += [RMSNorm(d), lm_head]
    return nn.ModuleList(parts)


def swiglu(d, inner):
    return [linear(d, inner, False), linear(d, inner, False), linear(inner, d, False)]  # gate, up, down (w1, w3, w2)


class MoEGate(nn.Module):
    """DeepSeek-V2's router: a bare weight of experts x hidden, not an nn.Linear."""

    def __init__(self, experts, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(experts, d, **META))


def mixture(config):
    """MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, DeepseekV2ForCausalLM: every expert of every
    sparse layer, the router, the shared expert(s) and their gate; DeepSeek-V2's multi-head latent attention."""
    kind = config["model_type"]
    d, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    layers = config["num_hidden_layers"]
    tokens = nn.Embedding(vocab, d, **META)
    parts = [tokens]
    for index in range(layers):
        if kind == "deepseek_v2":
            nope, rope, value = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]
            rank, q_rank = config["kv_lora_rank"], config.get("q_lora_rank")
            bias = config.get("attention_bias", False)
            if q_rank:
                attention = [linear(d, q_rank, bias), RMSNorm(q_rank), linear(q_rank, heads * (nope + rope), False)]
            else:
                attention = [linear(d, heads * (nope + rope), False)]
            attention += [linear(d, rank + rope, bias), RMSNorm(rank), linear(rank, heads * (nope + value), False),
                          linear(heads * value, d, bias)]
            sparse = (config.get("n_routed_experts") is not None and index >= config.get("first_k_dense_replace", 0)
                      and index % config.get("moe_layer_freq", 1) == 0)
            experts, width = config.get("n_routed_experts"), config.get("moe_intermediate_size")
            shared = config.get("n_shared_experts") or 0
            if sparse:
                mlp = [MoEGate(experts, d)] + [m for _ in range(experts) for m in swiglu(d, width)]
                if shared:
                    mlp += swiglu(d, shared * width)
            else:
                mlp = swiglu(d, inner)
        else:
            head = config.get("head_dim") or (128 if kind == "qwen3_moe" else d // heads)
            qkv_bias = kind == "qwen2_moe" or config.get("attention_bias", False)
            attention = [linear(d, heads * head, qkv_bias), linear(d, kv_heads * head, qkv_bias),
                         linear(d, kv_heads * head, qkv_bias), linear(heads * head, d, False)]
            if kind == "qwen3_moe":
                attention += [RMSNorm(head), RMSNorm(head)]
            if kind == "mixtral":
                experts, width, sparse = config["num_local_experts"], inner, True
            else:
                experts, width = config["num_experts"], config["moe_intermediate_size"]
                sparse = (index not in (config.get("mlp_only_layers") or [])
                          and (index + 1) % config.get("decoder_sparse_step", 1) == 0)
            if sparse:
                mlp = [linear(d, experts, False)] + [m for _ in range(experts) for m in swiglu(d, width)]
                if kind == "qwen2_moe" and config.get("shared_expert_intermediate_size"):
                    mlp += swiglu(d, config["shared_expert_intermediate_size"]) + [linear(d, 1, False)]
            else:
                mlp = swiglu(d, inner)
        parts += [RMSNorm(d), RMSNorm(d)] + attention + mlp
    lm_head = linear(d, vocab, bias=False)
    if config.get("tie_word_embeddings", False):
        lm_head.weight = tokens.weight
    parts += [RMSNorm(d), lm_head]
    return nn.ModuleList(parts)


def gpt_neox(config):
    """GPTNeoXForCausalLM: fused query_key_value with bias, LayerNorms, GELU MLP, embed_out untied by default."""
    d, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    bias = config.get("attention_bias", True)
    embed_in = nn.Embedding(vocab, d, **META)
    parts = [embed_in]
    for _ in range(config["num_hidden_layers"]):
        parts += [norm(d), norm(d), linear(d, 3 * d, bias), linear(d, d, bias), linear(d, inner), linear(inner, d)]
    embed_out = linear(d, vocab, bias=False)
    if config.get("tie_word_embeddings", False):
        embed_out.weight = embed_in.weight
    parts += [norm(d), embed_out]
    return nn.ModuleList(parts)


def count(module):
    return sum(parameter.numel() for parameter in module.parameters())  # parameters() yields a tied one once


for path in sys.argv[1:]:
    with open(path) as file:
        config = json.load(file)
    builders = {"gpt2": gpt2, "bert": bert, "opt": opt, "llama": llama, "mistral": llama, "gpt_neox": gpt_neox,
                "qwen2": llama_shaped, "qwen3": llama_shaped, "gemma": llama_shaped, "gemma2": llama_shaped,
                "phi3": llama_shaped, "mixtral": mixture, "qwen2_moe": mixture, "qwen3_moe": mixture,
                "deepseek_v2": mixture}
    print(path, count(builders[config["model_type"]](config)))
