#!/usr/bin/python3
"""Fine-tuning memory side by side (issue 35; docs/RESULTS.md "Will this fine-tune fit?").

    scripts/llm-memory-table.py [--dnncast build/dnncast] [--gpu a100-80gb] [--markdown]

For fixed configurations (GPT-2, a 1.1B and a 7B llama-style model; full fine-tune and LoRA; with and without
activation checkpointing; in bf16 with fused attention) prints dnncast's simulated peak as nvidia-smi would show it
(`dnncast memory CONFIG --device GPU --json`) beside what the estimators users reach for would say, each written
here from its own documentation:

  accelerate   `accelerate estimate-memory`, "Training using Adam": about 4x the model's size in its dtype (1x
               the model, 1x the gradients, 2x the optimizer), weights only: no batch, no sequence, no activations
               (https://huggingface.co/docs/accelerate/usage_guides/model_size_estimator).
  zero2, zero3 DeepSpeed's model-state estimators on one GPU without offload
               (https://deepspeed.readthedocs.io/en/latest/memory.html): estimate_zero2_model_states_mem_needs
               4 * params + 16 * params / gpus; estimate_zero3_model_states_mem_needs
               4 * largest_layer_params + 18 * params / gpus. Model states only (fp16 mixed precision, Adam).
  16 B/param   the rule of thumb of Hugging Face's "Model training anatomy"
               (https://huggingface.co/docs/transformers/model_memory_anatomy): fp32 weights 4, gradients 4,
               AdamW states 8 bytes per parameter; activations "depend on many factors" and are left out.

None of the four sees LoRA, the batch or the sequence: their number is the same for a full fine-tune and for LoRA.

A second table (issue 47): QLoRA, the base quantized as bitsandbytes stores it (`--quantize nf4|int8` with `--lora`,
`--precision bf16`), beside accelerate's answer for the model in int4 or int8 (its --dtypes int4 / int8: the model's
size at half a byte or a byte per parameter, "Training using Adam" 4x that). dnncast's QLoRA rests on no measurement
(bitsandbytes is not in Debian); neither does accelerate's.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "..", "tests", "models", "hf_configs")

# (label, config file, seq, batch, extra flags)
CASES = [
    ("GPT-2 124M, full", "gpt2.json", 1024, 8, []),
    ("GPT-2 124M, LoRA r=8 c_attn", "gpt2.json", 1024, 8, ["--lora", "r=8,targets=c_attn"]),
    ("TinyLlama 1.1B, full", "tinyllama-1.1b.json", 2048, 4, []),
    ("TinyLlama 1.1B, LoRA r=16 q,v", "tinyllama-1.1b.json", 2048, 4, ["--lora", "r=16"]),
    ("Llama-2-7B, full", "llama-2-7b-hf.json", 2048, 1, []),
    ("Llama-2-7B, LoRA r=16 q,v", "llama-2-7b-hf.json", 2048, 1, ["--lora", "r=16"]),
]

# (label, config file, seq, batch, lora, quantize)
QLORA_CASES = [
    ("TinyLlama 1.1B, QLoRA nf4 r=16 q,v", "tinyllama-1.1b.json", 2048, 4, "r=16", "nf4"),
    ("Llama-2-7B, QLoRA nf4 r=16 q,v", "llama-2-7b-hf.json", 512, 1, "r=16", "nf4"),
    ("Llama-2-7B, QLoRA nf4 r=16 all projections", "llama-2-7b-hf.json", 2048, 1,
     "r=16,targets=q,k,v,o,gate,up,down", "nf4"),
    ("Llama-2-7B, LoRA r=16 q,v on int8", "llama-2-7b-hf.json", 512, 1, "r=16", "int8"),
]

GIB = float(1 << 30)


def run(dnncast, config, seq, batch, flags, gpu):
    args = [dnncast, "memory", os.path.join(CONFIGS, config), "--seq", str(seq), "--batch", str(batch),
            "--optimizer", "adamw", "--device", gpu, "--fits", "gpu", "--json"] + flags
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"llm-memory-table: {' '.join(args)}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def largest_linear(dnncast, config, seq):
    """Parameters of the largest layer (DeepSpeed's largest_layer_params), from `dnncast inspect --json`."""
    done = subprocess.run([dnncast, "inspect", os.path.join(CONFIGS, config), "--seq", str(seq), "--json"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"llm-memory-table: inspect {config}: {done.stderr.strip()}")
    return max(layer["params"] for layer in json.loads(done.stdout)["layers"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dnncast", default=os.path.join(HERE, "..", "build", "dnncast"))
    parser.add_argument("--gpu", default="a100-80gb")
    args = parser.parse_args()
    rows = []
    for label, config, seq, batch, flags in CASES:
        largest = largest_linear(args.dnncast, config, seq)
        doc = run(args.dnncast, config, seq, batch, flags, args.gpu)
        checkpointed = run(args.dnncast, config, seq, batch, flags + ["--checkpointing"], args.gpu)
        lean = run(args.dnncast, config, seq, batch,
                   flags + ["--checkpointing", "--precision", "bf16-pure", "--attention", "sdpa"], args.gpu)
        # The estimators are given the base model (a Hub name, as users call them): LoRA's adapters are not in it.
        params = doc["parameters"] - (doc["trainable_parameters"] if "--lora" in flags else 0)
        rows.append({
            "case": label, "seq": seq, "batch": batch,
            "trainable": doc["trainable_parameters"], "params": doc["parameters"],
            "dnncast": (doc["required_bytes"], doc["fits"]["fits"]),
            "checkpointed": (checkpointed["required_bytes"], checkpointed["fits"]["fits"]),
            "lean": (lean["required_bytes"], lean["fits"]["fits"]),
            "accelerate": 4 * 4 * params,  # fp32 model size x 4
            "zero2": 4 * params + 16 * params,  # one GPU
            "zero3": 4 * largest + 18 * params,
            "rule16": 16 * params,
        })
    print(f"GPU {args.gpu} (fits: within its memory), AdamW. dnncast: `dnncast memory CONFIG --seq S "
          f"--batch B --optimizer adamw --device {args.gpu} --fits gpu` [--checkpointing] [--precision bf16-pure "
          f"--attention sdpa]; the others from their documented formulas (scripts/llm-memory-table.py)\n")
    print("| configuration | seq x batch | trained / all parameters | dnncast fp32 | + checkpointing | "
          "+ bf16-pure, sdpa | accelerate (Adam) | DeepSpeed ZeRO-2, 1 GPU | DeepSpeed ZeRO-3, 1 GPU | 16 B/param |")
    print("|---|---|---|---|---|---|---|---|---|---|")

    def cell(pair):
        return f"{pair[0] / GIB:.1f} GiB {'fits' if pair[1] else 'no'}"
    for r in rows:
        print(f"| {r['case']} | {r['seq']} x {r['batch']} | {r['trainable']:,} / {r['params']:,} | "
              f"{cell(r['dnncast'])} | {cell(r['checkpointed'])} | {cell(r['lean'])} | {r['accelerate'] / GIB:.1f} GiB | "
              f"{r['zero2'] / GIB:.1f} GiB | {r['zero3'] / GIB:.1f} GiB | {r['rule16'] / GIB:.1f} GiB |")
    qlora_table(args)
    return 0


def qlora_table(args):
    print(f"\nQLoRA on {args.gpu}, AdamW, `--precision bf16 --lora ... --quantize ...` [--checkpointing]; accelerate's "
          f"\"Training using Adam\" for the model in the quantized dtype (4 x its size)\n")
    print("| configuration | seq x batch | dnncast | + checkpointing | accelerate (Adam, int4 / int8) |")
    print("|---|---|---|---|---|")
    for label, config, seq, batch, lora, quantize in QLORA_CASES:
        flags = ["--precision", "bf16", "--lora", lora, "--quantize", quantize]
        doc = run(args.dnncast, config, seq, batch, flags, args.gpu)
        checkpointed = run(args.dnncast, config, seq, batch, flags + ["--checkpointing"], args.gpu)
        base = doc["parameters"] - doc["trainable_parameters"]
        accelerate = 4 * (0.5 if quantize == "nf4" else 1.0) * base
        print(f"| {label} | {seq} x {batch} | {doc['required_bytes'] / GIB:.1f} GiB "
              f"{'fits' if doc['fits']['fits'] else 'no'} | {checkpointed['required_bytes'] / GIB:.1f} GiB "
              f"{'fits' if checkpointed['fits']['fits'] else 'no'} | {accelerate / GIB:.1f} GiB |")


if __name__ == "__main__":
    sys.exit(main())
