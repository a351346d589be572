#!/usr/bin/python3
"""One table of requests through the three front ends (issue 33; run by tests/python/front_ends_test.cpp).

    tests/python/front_ends.py BUILD

Each request goes to the CLI (BUILD/dnncast COMMAND ... --json), to `dnncast serve` (POST /v1/COMMAND, a server
started here on a free loopback port) and to Python (dnncast.COMMAND(...), BUILD/python on sys.path). A request
that is answered must get the same JSON from all three; a bad one must fail in all three (exit 2, HTTP 4xx,
ValueError) with the same message once the option is spelled alike ("--max-batch" and "max_batch"; serve's
"field 'x': " prefix dropped). Prints one line per request; exit 1 when any differs.
"""
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build"
sys.path.insert(0, os.path.join(BUILD, "python"))
import dnncast  # noqa: E402  (after sys.path)

# (what, command, request): the request in serve's field names; the CLI's flags and Python's keywords follow.
CASES = [
    ("CPU set", "predict", {"model": "resnet18", "batch": 8, "input": "3x64x64"}),
    ("CPU set, epoch, adam", "predict", {"model": "mobilenet_v2", "batch": 4, "input": "3x96x96",
                                         "optimizer": "adam", "epoch_samples": 1000}),
    ("catalogued GPU", "predict", {"model": "resnet50", "batch": 32, "device": "a100-40gb"}),
    ("catalogued GPU by alias, largest batch", "predict", {"model": "resnet50", "batch": 16, "device": "A100 40GB",
                                                           "max_batch": True}),
    ("catalogued GPU, tensorflow, amp", "predict", {"model": "vgg16", "batch": 8, "device": "v100",
                                                    "framework": "tensorflow", "precision": "amp"}),
    ("bf16 on a GPU without bf16", "predict", {"model": "vgg16", "batch": 8, "device": "v100", "precision": "bf16"}),
    ("transformer on a GPU", "predict", {"model": "bert_base", "batch": 4, "seq": 128, "device": "t4"}),
    ("forward-backward on a GPU", "predict", {"model": "gpt2_small", "batch": 2, "seq": 128, "device": "h100",
                                              "phase": "forward-backward"}),
    ("layer times on a GPU", "inspect", {"model": "gpt2_small", "batch": 2, "seq": 64, "device": "l4"}),
    ("unknown phase", "predict", {"model": "resnet18", "batch": 8, "device": "t4", "phase": "backward"}),
    ("memory on CPU", "memory", {"model": "resnet18", "batch": 8, "input": "3x64x64"}),
    ("memory on a catalogued GPU", "memory", {"model": "resnet50", "batch": 32, "device": "a100-40gb"}),
    ("memory on cuda with a context", "memory", {"model": "resnet18", "batch": 8, "device": "cuda",
                                                 "cuda_context": "300MiB"}),
    ("memory with LoRA", "memory", {"model": "bert_base", "batch": 2, "seq": 32, "lora": "r=8,alpha=16,targets=query,value"}),
    ("LoRA on a GPU", "predict", {"model": "gpt2_small", "batch": 4, "seq": 64, "device": "t4",
                                  "lora": "r=4,targets=c_attn"}),
    ("LoRA rank 0", "memory", {"model": "bert_base", "seq": 32, "lora": "r=0"}),
    ("QLoRA on a GPU", "memory", {"model": "gpt2_small", "batch": 4, "seq": 64, "device": "t4", "precision": "bf16",
                                  "lora": "r=4,targets=c_attn", "quantize": "nf4"}),
    ("QLoRA GPU time", "predict", {"model": "gpt2_small", "batch": 4, "seq": 64, "device": "t4",
                                   "lora": "r=4,targets=c_attn", "quantize": "int8"}),
    ("quantized without LoRA", "memory", {"model": "gpt2_small", "seq": 64, "quantize": "nf4"}),
    ("paged optimizer states", "memory", {"model": "gpt2_small", "batch": 2, "seq": 64, "device": "a100-40gb",
                                          "optimizer": "adamw", "paged_optimizer": True}),
    ("tensor and pipeline parallel", "predict", {"model": "gpt2_small", "batch": 8, "seq": 128, "device": "a100-40gb",
                                                 "optimizer": "adamw", "gpus": 8, "parallel": "tp=2,pp=2",
                                                 "micro_batches": 4}),
    ("data parallel", "predict", {"model": "gpt2_small", "batch": 2, "seq": 128, "device": "a100-40gb", "gpus": 4,
                                  "parallel": "dp"}),
    ("parallel degrees not dividing the GPUs", "predict", {"model": "gpt2_small", "batch": 2, "seq": 64,
                                                           "device": "a100-40gb", "gpus": 4, "parallel": "tp=3"}),
    ("several GPUs without a plan", "predict", {"model": "gpt2_small", "batch": 2, "seq": 64, "device": "a100-40gb",
                                                "gpus": 4}),
    ("memory per GPU, tensor parallel", "memory", {"model": "gpt2_small", "batch": 4, "seq": 128,
                                                   "device": "a100-40gb", "gpus": 4, "parallel": "tp=2,pp=2",
                                                   "micro_batches": 2, "fits": "gpu"}),
    ("largest batch per replica under a pipeline", "memory", {"model": "gpt2_small", "batch": 4, "seq": 128,
                                                             "device": "a100-40gb", "gpus": 4, "parallel": "tp=2,pp=2",
                                                             "micro_batches": 2, "max_batch_bytes": "gpu"}),
    ("longest sequence under a plan", "memory", {"model": "gpt2_small", "seq": 64, "device": "a100-40gb", "gpus": 2,
                                                 "parallel": "tp", "max_seq_bytes": "gpu"}),
    ("memory: sharding and parallel together", "memory", {"model": "gpt2_small", "seq": 64, "device": "a100-40gb",
                                                          "gpus": 4, "parallel": "tp", "sharding": "zero3"}),
    ("parallel on the CPU", "predict", {"model": "gpt2_small", "batch": 2, "seq": 64, "gpus": 2, "parallel": "dp"}),
    ("paged optimizer states on the CPU", "memory", {"model": "gpt2_small", "seq": 64, "paged_optimizer": True}),
    ("expert balance on a dense model", "memory", {"model": "gpt2_small", "seq": 64, "expert_balance": 2}),
    ("expert balance below 1", "inspect", {"model": "gpt2_small", "seq": 64, "expert_balance": 0.5}),
    ("LoRA target matching nothing", "predict", {"model": "gpt2_small", "batch": 4, "seq": 32, "device": "t4",
                                                  "lora": "r=8,targets=q,v"}),
    ("epoch in tokens on a GPU", "predict", {"model": "gpt2_small", "batch": 8, "seq": 512, "device": "a100-80gb",
                                             "epoch_tokens": 1000000}),
    ("epoch in tokens without a sequence", "predict", {"model": "gpt2_small", "batch": 8, "device": "a100-80gb",
                                                       "epoch_tokens": 1000000}),
    ("ZeRO-3 over 8 GPUs, longest sequence", "memory", {"model": "gpt2_small", "batch": 2, "seq": 128,
                                                        "device": "a100-80gb", "optimizer": "adam",
                                                        "sharding": "zero3", "gpus": 8, "max_seq_bytes": "gpu"}),
    ("hybrid sharding over two nodes", "memory", {"model": "bert_base", "batch": 4, "seq": 64, "device": "h100-sxm",
                                                  "sharding": "hsdp", "gpus": 16, "gpus_per_node": 8}),
    ("fused attention on a GPU", "memory", {"model": "gpt2_small", "batch": 4, "seq": 512, "device": "a100-80gb",
                                            "attention": "sdpa"}),
    ("fused attention, GPU time", "predict", {"model": "bert_base", "batch": 8, "seq": 256, "device": "l4",
                                              "attention": "sdpa"}),
    ("fused attention on the CPU", "memory", {"model": "gpt2_small", "seq": 64, "attention": "sdpa"}),
    ("unknown attention", "inspect", {"model": "gpt2_small", "seq": 64, "attention": "flash3"}),
    ("ZeRO-3 on one GPU", "memory", {"model": "gpt2_small", "seq": 64, "device": "a100-80gb", "sharding": "zero3"}),
    ("memory with checkpointing", "memory", {"model": "gpt2_small", "batch": 2, "seq": 64, "checkpointing": True}),
    ("memory with LoRA and checkpointing", "memory", {"model": "bert_base", "batch": 2, "seq": 32,
                                                      "lora": "r=8,targets=query,value", "checkpointing": True}),
    ("checkpointing, CPU set", "predict", {"model": "gpt2_small", "batch": 2, "seq": 64, "checkpointing": True}),
    ("checkpointing on a GPU", "predict", {"model": "gpt2_small", "batch": 4, "seq": 64, "device": "t4",
                                           "checkpointing": True}),
    ("checkpointing without blocks", "memory", {"model": "resnet18", "batch": 8, "input": "3x64x64",
                                                "checkpointing": True}),
    ("memory with gradient accumulation", "memory", {"model": "bert_base", "batch": 2, "seq": 32, "grad_accum": 4}),
    ("memory with gradient accumulation 0", "memory", {"model": "bert_base", "batch": 2, "seq": 32, "grad_accum": 0}),
    ("gradient accumulation, CPU set", "predict", {"model": "resnet18", "batch": 8, "input": "3x64x64",
                                                   "grad_accum": 4, "epoch_samples": 1000}),
    ("gradient accumulation on a GPU", "predict", {"model": "bert_base", "batch": 8, "seq": 128, "device": "l4",
                                                   "grad_accum": 4}),
    ("gradient accumulation without a step", "predict", {"model": "bert_base", "batch": 8, "seq": 128, "device": "l4",
                                                         "grad_accum": 4, "phase": "inference"}),
    ("one-GPU instances", "compare", {"model": "resnet18", "batch": 32, "gpus": "t4", "provider": "aws"}),
    ("multi-GPU instances under ZeRO-3", "compare", {"model": "gpt2_small", "batch": 4, "seq": 256, "optimizer": "adam",
                                                      "gpus": "a100-80gb,t4", "provider": "lambda,aws",
                                                      "multi_gpu": True, "sharding": "zero3"}),
    ("multi-GPU instances, ddp by default", "compare", {"model": "bert_base", "batch": 8, "seq": 128, "gpus": "h100-sxm",
                                                         "multi_gpu": True, "epoch_samples": 100000}),
    ("sharding without multi_gpu", "compare", {"model": "resnet18", "batch": 8, "sharding": "zero3"}),
    ("unknown sharding in compare", "compare", {"model": "resnet18", "batch": 8, "multi_gpu": True, "sharding": "zero4"}),
    ("ZeRO-3 where no instance has two GPUs", "compare", {"model": "resnet18", "batch": 8, "gpus": "gh200",
                                                          "provider": "lambda", "multi_gpu": True, "sharding": "zero3"}),
    ("unknown device", "predict", {"model": "resnet50", "batch": 8, "device": "a100-4gb"}),
    ("a zero-width space after a GPU", "predict", {"model": "resnet50", "batch": 8, "device": "t4\u200b"}),
    ("memory: unknown device", "memory", {"model": "resnet50", "batch": 8, "device": "tpu-v9"}),
    ("GPU option without a GPU", "predict", {"model": "resnet18", "batch": 8, "framework": "tensorflow"}),
    ("unknown optimizer", "predict", {"model": "resnet18", "batch": 8, "optimizer": "lion"}),
    ("unknown GPU precision", "predict", {"model": "resnet18", "batch": 8, "device": "t4", "precision": "fp8"}),
    # What sizes the model, checked by one function for all three (import::make_model_source, issue 50).
    ("an input and a sequence length", "memory", {"model": "gpt2_small", "input": "3x32x32", "seq": 32}),
    ("sequence length 0", "memory", {"model": "gpt2_small", "seq": 0}),
    ("classes 0", "predict", {"model": "resnet18", "batch": 8, "classes": 0}),
    ("batch 0", "memory", {"model": "resnet18", "batch": 0}),
    ("batch past the limit", "compare", {"model": "resnet18", "batch": 2 ** 41}),
    ("sequence length past the limit", "inspect", {"model": "bert_base", "seq": 2 ** 31}),
]
FLAG = {"epoch_samples": "--epoch-samples", "max_batch": "--max-batch", "cuda_context": "--cuda-context",
        "gpus_per_node": "--gpus-per-node", "max_seq_bytes": "--max-seq", "max_batch_bytes": "--max-batch",
        "epoch_tokens": "--epoch-tokens", "grad_accum": "--grad-accum", "multi_gpu": "--multi-gpu",
        "paged_optimizer": "--paged-optimizer", "expert_balance": "--expert-balance",
        "micro_batches": "--micro-batches"}
KEYWORD = {"input": "input_shape"}


def cli(command, request):
    args = [os.path.join(BUILD, "dnncast"), command, request["model"]]
    for key, value in request.items():
        if key == "model":
            continue
        flag = FLAG.get(key, "--" + key)
        args += [flag] if value is True else [flag, str(value)]
    done = subprocess.run(args + ["--json"], capture_output=True, text=True)
    if done.returncode == 0:
        return "answer", json.loads(done.stdout)
    message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    return f"exit {done.returncode}", re.sub(r"^dnncast [a-z-]+: error: ", "", message)


def http(port, command, request):
    body = json.dumps(request).encode()
    call = urllib.request.Request(f"http://127.0.0.1:{port}/v1/{command}", data=body,
                                  headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(call, timeout=120) as reply:
            return "answer", json.loads(reply.read())
    except urllib.error.HTTPError as error:
        message = json.loads(error.read()).get("error", "")
        return f"http {error.code}", re.sub(r"^field '[a-z_]+': ", "", message)


def python(command, request):
    keywords = {KEYWORD.get(key, key): value for key, value in request.items() if key != "model"}
    if "input_shape" in keywords:
        keywords["input_shape"] = tuple(int(dim) for dim in keywords["input_shape"].split("x"))
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "answer", getattr(dnncast, command)(request["model"], **keywords).to_dict()
    except ValueError as error:
        return "ValueError", str(error)


def spelled_alike(message):
    """--max-batch -> max_batch: the option as serve and Python name it (Python's input_shape is serve's input);
    a flag FLAG spells otherwise (--max-seq) by its key there (max_seq_bytes)."""
    keys = {}
    for key, flag in FLAG.items():
        keys.setdefault(flag, key)  # --max-batch: predict's max_batch (memory's max_batch_bytes is its other use)
    message = re.sub(r"--([a-z][a-z-]*)",
                     lambda match: keys.get(match.group(0), match.group(1).replace("-", "_")), message)
    return re.sub(r"\binput_shape\b", "input", message)


def main():
    server = subprocess.Popen([os.path.join(BUILD, "dnncast"), "serve", "--listen", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not found:
            print(f"serve did not start: {line!r}")
            return 1
        port = int(found.group(1))
        problems = 0
        for what, command, request in CASES:
            answers = {"cli": cli(command, request), "http": http(port, command, request),
                       "python": python(command, request)}
            kinds = {name: kind for name, (kind, _) in answers.items()}
            answered = [kind == "answer" for kind in kinds.values()]
            if all(answered):
                same = answers["cli"][1] == answers["http"][1] == answers["python"][1]
                detail = "" if same else "".join(
                    f"\n    {name}: {json.dumps(value, sort_keys=True)[:400]}" for name, (_, value) in answers.items())
            elif not any(answered):
                messages = {name: spelled_alike(text) for name, (_, text) in answers.items()}
                same = (kinds["cli"] == "exit 2" and kinds["http"] in ("http 400", "http 404")
                        and kinds["python"] == "ValueError" and len(set(messages.values())) == 1 and messages["cli"])
                detail = "".join(f"\n    {name} ({kinds[name]}): {text}" for name, text in messages.items())
            else:
                same, detail = False, "".join(f"\n    {name}: {kind}" for name, kind in kinds.items())
            problems += not same
            print(f"{'ok  ' if same else 'DIFF'} {command} {what}: {'answered' if all(answered) else 'refused'}"
                  f"{detail if not same or not all(answered) else ''}")
        return 1 if problems else 0
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
