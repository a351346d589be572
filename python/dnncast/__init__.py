"""dnncast from Python: forecast the cost of training a network before launching it.

    import dnncast
    dnncast.inspect("resnet18").params                        # a zoo name, graph JSON or ONNX file
    dnncast.predict(my_module, batch=128, input_shape=(3, 32, 32), epoch_samples=50000).epoch_s
    dnncast.memory(my_module, batch=128, input_shape=(3, 32, 32), fits="8GiB").fits.fits
    dnncast.compare("gpt2_small", batch=8, seq=512, gpus="a100-80gb", multi_gpu=True, sharding="zero3").rows

Each function calls what the matching command calls (`dnncast inspect`, `predict`, `memory`, `compare`; the
forecast API of src/apps/forecast.h) and answers a Result whose fields are those of the command's
--json output. A torch.nn.Module is exported to ONNX (torch.onnx.export in training mode, so that
BatchNorm and Dropout stay) with a dummy input of input_shape, and read as an ONNX file is.

Bad input raises ValueError with the command's message (argument errors name the keyword, not the
flag); a bug inside raises RuntimeError. See docs/PYTHON.md.
"""

import contextlib
import copy
import json
import os
import shutil
import sys
import tempfile
import warnings

from . import _dnncast

__all__ = ["inspect", "predict", "memory", "compare", "optimizers", "Result", "HostMismatchWarning"]


class HostMismatchWarning(UserWarning):
    """The note `dnncast predict` / `memory` print on stderr: the predictor was not trained on this
    host, or the CPU ISA simulated is not this host's (the result says so in host_match too)."""


def _data_folder(name):
    """data/<name> of the source tree (predictors: the shipped sets; hardware: the GPU catalogue), found
    as the CLI finds it from its executable: walking up from this package (build/python/dnncast -> the
    source tree's data/<name>), else the source tree the module was built from."""
    folder = os.path.dirname(os.path.abspath(__file__))
    while True:
        candidate = os.path.join(folder, "data", name)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.join(_dnncast.source_dir, "data", name)
        folder = parent


# The library reads the shipped sets' folder from DNNCAST_PREDICTORS and the GPU catalogue's (the
# peaks of a GPU predictor set's environment) from DNNCAST_HARDWARE, or beside the running
# executable, which here is the interpreter: name them unless the caller has.
os.environ.setdefault("DNNCAST_PREDICTORS", _data_folder("predictors"))
os.environ.setdefault("DNNCAST_HARDWARE", _data_folder("hardware"))


class Result:
    """A forecast as plain fields (the CLI's --json): attributes, `result["field"]`, `to_dict()`.

    Nested objects are Results too, lists of objects lists of Results; a field the CLI writes as
    null is None.
    """

    def __init__(self, fields, kind="Result"):
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_kind", kind)

    @staticmethod
    def _wrap(value):
        if isinstance(value, dict):
            return Result(value)
        if isinstance(value, list):
            return [Result._wrap(item) for item in value]
        return value

    def __getattr__(self, name):
        fields = object.__getattribute__(self, "_fields")
        if name in fields:
            return Result._wrap(fields[name])
        raise AttributeError(f"{object.__getattribute__(self, '_kind')} has no field {name!r}; "
                             f"its fields: {', '.join(fields)}")

    def __setattr__(self, name, value):
        raise AttributeError("a Result is read-only; to_dict() gives a copy to change")

    def __getitem__(self, name):
        return Result._wrap(self._fields[name])

    def __contains__(self, name):
        return name in self._fields

    def __iter__(self):
        return iter(self._fields)

    def __dir__(self):
        return list(self._fields)

    def __eq__(self, other):
        return isinstance(other, Result) and self._fields == other._fields

    def __repr__(self):
        shown = {key: value for key, value in self._fields.items() if not isinstance(value, (list, dict))}
        return f"{self._kind}({', '.join(f'{key}={value!r}' for key, value in shown.items())})"

    def to_dict(self):
        """The fields as the CLI's --json has them (a deep copy)."""
        return copy.deepcopy(self._fields)


def _int(value, keyword):
    """None -> 0 (not given); an integer (or anything with __index__) as itself."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"{keyword} must be an integer, got {value!r}")
    try:
        number = int(value.__index__())
    except (AttributeError, TypeError):
        raise ValueError(f"{keyword} must be an integer, got {value!r}") from None
    if not -2**63 <= number < 2**63:  # as the CLI says it (pybind11 would refuse it with its whole signature)
        raise ValueError(f"{keyword}: {number} is past what a 64-bit integer holds")
    return number


def _text(value, keyword, default=""):
    """None -> default (not given); "" is refused, as the CLI refuses --device '' and serve "device": ""."""
    if value is None:
        return default
    if value == "":
        raise ValueError(f"{keyword}: empty; leave it out for its default")
    return value


def _given(value, keyword):
    """None -> None (not given: the C++ side leaves it out); else _int's integer."""
    return None if value is None else _int(value, keyword)


def _bytes(value, keyword):
    """None -> "" (not given); an integer count of bytes, or text with units ("24GiB", "1.5GB")."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return str(_int(value, keyword))


def _shape(input_shape):
    """(3, 224, 224), [3, 224, 224] or "3x224x224" -> [3, 224, 224]; None -> []."""
    if input_shape is None:
        return []
    if isinstance(input_shape, str):
        parts = input_shape.split("x")
        if not all(part.strip().isdigit() for part in parts):
            raise ValueError(f"input_shape {input_shape!r}: expected CxHxW, three positive integers "
                             "joined by 'x' (e.g. 3x224x224)")
        return [int(part) for part in parts]
    try:
        return [_int(dim, "input_shape") for dim in input_shape]
    except TypeError:
        raise ValueError(f"input_shape must be a tuple of integers such as (3, 224, 224), "
                         f"got {input_shape!r}") from None


def _torch():
    """torch, when the caller has it imported (dnncast never imports it for a name or a file)."""
    return sys.modules.get("torch")


def optimizers():
    """The optimizers dnncast models, as (name, torch.optim class name) in the library's table order."""
    return [tuple(row) for row in _dnncast.optimizers()]


def _optimizer_name(optimizer):
    """A name the CLI takes (optimizers()), or a torch.optim optimizer of one of those classes."""
    if isinstance(optimizer, str):
        return optimizer
    names = ", ".join(name for name, _ in optimizers())
    torch = _torch()
    if torch is not None and isinstance(optimizer, torch.optim.Optimizer):
        # The exact class first (AdamW derives from Adam in some torch versions), then a subclass of one.
        kinds = [(getattr(torch.optim, cls, None), name) for name, cls in optimizers()]
        for kind, name in kinds:
            if kind is not None and type(optimizer) is kind:
                return name
        for kind, name in kinds:
            if kind is not None and isinstance(optimizer, kind):
                return name
        classes = ", ".join("torch.optim." + cls for _, cls in optimizers())
        raise ValueError(f"optimizer {type(optimizer).__module__}.{type(optimizer).__name__} is not modelled; "
                         f"dnncast models {classes} (or give their names: {names})")
    raise ValueError(f"optimizer must be a name ({names}) or a torch.optim.Optimizer, got {optimizer!r}")


def _export_module(module, input_shape, path, opset):
    """Writes `module` as ONNX to `path`, traced in training mode on a dummy batch of 2 (the batch
    axis dynamic, so that the forecast's batch replaces it). The module's buffers (BatchNorm's
    running statistics, which a training-mode forward updates) and its train/eval mode are restored.
    """
    torch = _torch()
    if not input_shape:
        raise ValueError("a torch.nn.Module needs input_shape=, the shape of one sample without the batch "
                         "(e.g. (3, 224, 224)), to export it with a dummy input")
    shape = _shape(input_shape)
    was_training = module.training
    with torch.no_grad():
        saved = [(buffer, buffer.detach().clone()) for buffer in module.buffers()]
    parameter = next(module.parameters(), None)
    device = parameter.device if parameter is not None else torch.device("cpu")
    try:
        kwargs = {"opset_version": opset} if opset else {}
        # The dummy input and Dropout draw random numbers: the caller's generators are left as they
        # were. The exporter warns about what training mode asks of it (BatchNorm's
        # num_batches_tracked update dropped, constant folding off): by design here.
        with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dummy = torch.randn(2, *shape, device=device,
                                dtype=parameter.dtype if parameter is not None else torch.float32)
            torch.onnx.export(module, (dummy,), path, training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, input_names=["input"], output_names=["output"],
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, **kwargs)
    except ValueError:
        raise
    except Exception as error:  # torch's own errors: the module cannot be traced or exported
        raise ValueError(f"cannot export {type(module).__name__} to ONNX with a dummy input of shape "
                         f"{tuple([2] + shape)}: {error}") from error
    finally:
        with torch.no_grad():
            for buffer, value in saved:
                buffer.copy_(value)
        module.train(was_training)


@contextlib.contextmanager
def _model_source(model, input_shape, opset):
    """Yields (the source text load_model reads, the name to report, True for a module)."""
    if isinstance(model, (str, os.PathLike)):
        yield os.fspath(model), None, False
        return
    torch = _torch()
    if torch is None or not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a zoo name, a graph JSON or ONNX path, or a torch.nn.Module, "
                         f"got {type(model).__name__}")
    folder = tempfile.mkdtemp(prefix="dnncast-")
    try:
        path = os.path.join(folder, type(model).__name__ + ".onnx")
        _export_module(model, input_shape, path, opset)
        yield path, type(model).__name__, True
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _result(text, kind, name, note="", field="model"):
    if note:
        warnings.warn(note, HostMismatchWarning, stacklevel=3)
    fields = json.loads(text)
    if name is not None:  # a module: its class, not the temporary file it was exported to
        fields[field] = name
    return Result(fields, kind)


def inspect(model, input_shape=None, batch=None, seq=None, classes=None, allow_unknown=False, opset=None,
            device=None, lora=None, checkpointing=False, attention=None, quantize=None, expert_balance=None):
    """Per-layer shapes, parameters, MACs, FLOPs and bytes, with totals: `dnncast inspect --json`.
    device: a GPU of `dnncast devices`: also each layer's forward and backward time on it (gpu_forward_ms,
    gpu_backward_ms, which with checkpointing includes gpu_recompute_ms; fp32, the per-kernel model).

    model: a zoo name, a graph JSON or ONNX path, synthetic:SEED, or a torch.nn.Module.
    input_shape: (C, H, W) (a module: the shape of one sample); batch: default 1, or the file's own.
    allow_unknown: ONNX operators dnncast does not know become elementwise nodes (else an error).
    lora: LoRA fine-tuning with the base weights frozen, as the CLI's --lora: "r=16,alpha=32,targets=q,v".
    quantize: with lora, the frozen base weights quantized as bitsandbytes stores them, "nf4" (QLoRA) or "int8", as
    the CLI's --quantize (not measured: bitsandbytes runs on CUDA only).
    checkpointing: activation checkpointing per transformer block, as the CLI's --checkpointing.
    expert_balance: a mixture of experts' busiest expert's routed tokens over the mean (default 1, balanced), as
    the CLI's --expert-balance.
    """
    with _model_source(model, input_shape, opset) as (source, name, is_module):
        shape = [] if is_module else _shape(input_shape)
        batch_size = _int(batch, "batch") if batch is not None else (1 if is_module else None)
        text = _dnncast.inspect(source, batch_size, shape, _given(seq, "seq"), _given(classes, "classes"),
                                bool(allow_unknown), lora, bool(checkpointing), _text(device, "device"), attention,
                                quantize, _balance(expert_balance))
    return _result(text, "Inspection", name)


def predict(model, batch, input_shape=None, optimizer="sgd", threads=None, device=None, epoch_samples=None,
            seq=None, classes=None, precision="fp32", predictor=None, host_isa=None, allow_unknown=False,
            opset=None, framework="pytorch", max_batch=False, phase="train", lora=None, checkpointing=False,
            grad_accum=1, epoch_tokens=None, attention=None, quantize=None, expert_balance=None, gpus=1, parallel=None,
            micro_batches=1, gpus_per_node=8):
    """Time per iteration (with its 90% interval), per epoch (epoch_samples, or epoch_tokens with seq) and peak memory of
    training, from a trained predictor set: `dnncast predict --json`.

    optimizer: a name of optimizers(), or a torch.optim optimizer; threads: default the environment's;
    device: a predictor set's name, its GPU, or cpu (default: this host's CPU set), or a GPU of
    `dnncast devices` (the GPU time model; then framework: pytorch | tensorflow, max_batch: also the
    largest batch that fits its memory, phase: train | forward-backward | inference); predictor: a set or bundle folder (default: the shipped
    data/predictors). lora: LoRA fine-tuning, base weights frozen, as the CLI's --lora ("r=16,targets=q,v");
    quantize: "nf4" | "int8" with lora, as the CLI's --quantize (a GPU device only). checkpointing: activation checkpointing per transformer block, as the CLI's --checkpointing. grad_accum:
    forward-backward passes of the batch per optimizer step (gradient accumulation), as the CLI's --grad-accum.
    expert_balance: a mixture of experts' busiest expert's routed tokens over the mean (default 1, balanced), as
    the CLI's --expert-balance. gpus, parallel ("dp", "tp", "pp" or degrees "tp=2,pp=2"), micro_batches,
    gpus_per_node: training on several GPUs of a GPU device, batch being each data-parallel replica's, as the CLI's
    --gpus, --parallel, --micro-batches and --gpus-per-node.
    """
    optimizer_name = _optimizer_name(optimizer)
    with _model_source(model, input_shape, opset) as (source, name, is_module):
        shape = [] if is_module else _shape(input_shape)
        text, note = _dnncast.predict(source, _int(batch, "batch"), shape, _given(seq, "seq"),
                                      _given(classes, "classes"), bool(allow_unknown), lora, bool(checkpointing),
                                      optimizer_name, precision,
                                      _int(threads, "threads"), _text(device, "device"), _int(epoch_samples, "epoch_samples"),
                                      _text(predictor, "predictor"), _text(host_isa, "host_isa"), _text(framework, "framework", "pytorch"), bool(max_batch), _text(phase, "phase", "train"),
                                      _int(grad_accum, "grad_accum"), _int(epoch_tokens, "epoch_tokens"),
                                      attention, quantize, _balance(expert_balance), _int(gpus, "gpus"),
                                      _text(parallel, "parallel"), _int(micro_batches, "micro_batches"),
                                      _int(gpus_per_node, "gpus_per_node"))
    return _result(text, "Forecast", name, note)


def _memory_command(source, batch, shape, seq, classes, settings):
    """The `dnncast memory` command line that measures this configuration (the ISA match's remedy),
    with the flags a user would type: those whose value is not the CLI's default."""
    words = ["dnncast", "memory", source, "--batch", str(batch)]
    if shape:
        words += ["--input", "x".join(str(dim) for dim in shape)]
    if seq:
        words += ["--seq", str(seq)]
    if classes:
        words += ["--classes", str(classes)]
    for flag, value, default in settings:
        if value is True:
            words.append(flag)
        elif value not in (None, "", False, default):
            words += [flag, str(value)]
    return " ".join(words + ["--measure"])


def memory(model, batch=1, input_shape=None, optimizer="sgd", device="cpu", threads=1, fits=None,
           max_batch_bytes=None, seq=None, classes=None, precision="fp32", batch_cap=1 << 20,
           cuda_context=None, isa=None, timeline=False, allow_unknown=False, opset=None, lora=None,
           checkpointing=False, grad_accum=1, sharding=None, gpus=1, gpus_per_node=8, max_seq_bytes=None,
           attention=None, quantize=None, expert_balance=None, paged_optimizer=False, parallel=None, micro_batches=1):
    """Simulated peak memory of training, its breakdown at the peak, whether it fits (fits: bytes,
    e.g. 24 * 2**30 or "24GiB", or "gpu": the device's memory), the largest batch (max_batch_bytes) and the
    longest sequence (max_seq_bytes) that fit: `dnncast memory --json`. sharding ("ddp", "zero1", "zero2",
    "zero3", "fsdp", "hsdp") over gpus (gpus_per_node per machine): one GPU's memory, a model.

    device: cpu | cuda (the cuda model is unverified) | a catalogued GPU (as nvidia-smi shows it); threads: intra-op threads (default 1);
    isa: the CPU ISA whose kernels to simulate (default: this host's). lora: LoRA fine-tuning, base weights
    frozen, as the CLI's --lora ("r=16,alpha=32,targets=q,v"); quantize: "nf4" | "int8" with lora, as the CLI's
    --quantize (bitsandbytes' layouts, not measured). checkpointing: activation checkpointing per
    transformer block, as the CLI's --checkpointing. grad_accum: micro-batches of forward + backward per
    optimizer step (gradient accumulation), as the CLI's --grad-accum. paged_optimizer: a GPU device's optimizer
    states in CUDA unified memory (bitsandbytes' paged optimizers), not counted in what must fit, as the CLI's
    --paged-optimizer.
    expert_balance: a mixture of experts' busiest expert's routed tokens over the mean (default 1, balanced), as
    the CLI's --expert-balance. gpus, parallel ("dp", "tp", "pp" or degrees "tp=2,pp=2"), micro_batches,
    gpus_per_node: training on several GPUs of a GPU device, batch being each data-parallel replica's, as the CLI's
    --gpus, --parallel, --micro-batches and --gpus-per-node.
    """
    optimizer_name = _optimizer_name(optimizer)
    fits_text, limit_text = _bytes(fits, "fits"), _bytes(max_batch_bytes, "max_batch_bytes")
    seq_limit_text = _bytes(max_seq_bytes, "max_seq_bytes")
    context_text = _bytes(cuda_context, "cuda_context")
    with _model_source(model, input_shape, opset) as (source, name, is_module):
        shape = [] if is_module else _shape(input_shape)
        batch_size, seq_len, class_count = _int(batch, "batch"), _int(seq, "seq"), _int(classes, "classes")
        settings = [("--optimizer", optimizer_name, "sgd"), ("--precision", precision, "fp32"),
                    ("--device", device, "cpu"), ("--threads", _int(threads, "threads"), 1),
                    ("--fits", fits_text, None), ("--max-batch", limit_text, None),
                    ("--batch-cap", _int(batch_cap, "batch_cap"), 1 << 20), ("--cuda-context", context_text, None),
                    ("--isa", isa, None), ("--timeline", bool(timeline), False),
                    ("--allow-unknown", bool(allow_unknown), False), ("--lora", lora, None),
                    ("--quantize", quantize, None), ("--expert-balance", _balance(expert_balance), None),
                    ("--checkpointing", bool(checkpointing), False),
                    ("--grad-accum", _int(grad_accum, "grad_accum"), 1),
                    ("--sharding", sharding, None), ("--gpus", _int(gpus, "gpus"), 1),
                    ("--gpus-per-node", _int(gpus_per_node, "gpus_per_node"), 8), ("--max-seq", seq_limit_text, None),
                    ("--attention", attention, None), ("--paged-optimizer", bool(paged_optimizer), False),
                    ("--parallel", parallel, None), ("--micro-batches", _int(micro_batches, "micro_batches"), 1)]
        # A module's temporary file is gone when the caller reads the remedy: name the file that
        # torch.onnx.export of the module would write instead.
        command = _memory_command(name + ".onnx", batch_size, shape, seq_len, class_count, settings) if is_module else ""
        text, note = _dnncast.memory(source, batch_size, shape, _given(seq, "seq"), _given(classes, "classes"),
                                     bool(allow_unknown), lora,
                                     bool(checkpointing), optimizer_name, precision, device, _int(threads, "threads"), fits_text,
                                     limit_text, _int(batch_cap, "batch_cap"), context_text, _text(isa, "isa"),
                                     bool(timeline), command, _text(sharding, "sharding"), _int(gpus, "gpus"),
                                     _int(gpus_per_node, "gpus_per_node"), seq_limit_text, attention,
                                     _int(grad_accum, "grad_accum"), quantize, _balance(expert_balance),
                                     bool(paged_optimizer), _text(parallel, "parallel"),
                                     _int(micro_batches, "micro_batches"))
    return _result(text, "MemoryForecast", name, note)


def _balance(value):
    """expert_balance: None, or a number (the busiest expert's routed tokens over the mean), as the CLI's
    --expert-balance."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expert_balance: expected a number, got {value!r}")
    return float(value)


def _names(value, keyword):
    """None -> []; "aws,gcp" or ["aws", "gcp"] -> ["aws", "gcp"] (serve's rule: empty items dropped)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [item for item in value.split(",") if item]
    if not all(isinstance(item, str) for item in value):
        raise ValueError(f"{keyword}: expected a list of strings, got {value!r}")
    return list(value)


def compare(model, batch, input_shape=None, seq=None, classes=None, precision="fp32", framework="pytorch",
            optimizer="sgd", phase="train", epochs=1, epoch_samples=None, provider=None, gpus=None, spot=False,
            multi_gpu=False, sharding=None, allow_unknown=False, opset=None, lora=None, checkpointing=False,
            attention=None, quantize=None, expert_balance=None, parallel=None):
    """Which cloud instance trains the model fastest and which cheapest: per instance of the catalogue, time and
    cost of the run, whether it fits and the Pareto front: `dnncast compare --json` (docs/COMPARE.md).

    provider, gpus: filters, a list or comma-separated text ("aws,gcp", "a100-80gb"); spot: spot prices.
    multi_gpu: also instances with several GPUs, batch per GPU, sharing the model by sharding ("ddp" by default,
    "zero1", "zero2", "zero3", "fsdp", "hsdp"): one GPU's memory and the collectives' time, a model.
    parallel (with multi_gpu, in place of sharding): "dp", "tp", "pp", degrees ("tp=2") or "auto", each instance's
    fastest plan that fits, timed as predict's parallel plans are (the CLI's --parallel).
    expert_balance: a mixture of experts' busiest expert's routed tokens over the mean (default 1, balanced), as
    the CLI's --expert-balance.
    """
    optimizer_name = _optimizer_name(optimizer)
    with _model_source(model, input_shape, opset) as (source, name, is_module):
        shape = [] if is_module else _shape(input_shape)
        text = _dnncast.compare(source, _int(batch, "batch"), shape, _given(seq, "seq"), _given(classes, "classes"),
                                bool(allow_unknown), lora, bool(checkpointing), attention, optimizer_name,
                                _text(precision, "precision", "fp32"), _text(framework, "framework", "pytorch"), _text(phase, "phase", "train"), _int(epochs, "epochs"),
                                _int(epoch_samples, "epoch_samples"), _names(provider, "provider"),
                                _names(gpus, "gpus"), bool(spot), bool(multi_gpu), _text(sharding, "sharding"),
                                quantize, _balance(expert_balance), _text(parallel, "parallel"))
    return _result(text, "Comparison", name)
