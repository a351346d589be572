#!/usr/bin/python3
"""Parameter counts and conv + linear MACs of torchvision classification models.

The independent reference the model zoo is checked against (tests/models/zoo_test.cpp).
Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision):

    /usr/bin/python3 scripts/torchvision_reference.py [--batch N] [--layers] [NAME ...]
    /usr/bin/python3 scripts/torchvision_reference.py --smallest-input MAX NAME ...

With no NAME, every classification model torchvision has. Prints one JSON object
{name: {"params": P, "macs": M}} on stdout; names torchvision lacks are left out (and listed
on stderr); --layers adds each parameterised module's type, parameters and MACs under its
module path (a MultiheadAttention's input projection as the Linear layer "<path>.in_proj").
Models are built without weights, auxiliary classifiers off, default number of classes, and
run once at batch N (default 1) on the default input (3x224x224, 3x299x299 for inception_v3)
on the meta device (shapes only, no arithmetic). --smallest-input MAX instead prints
{name: S}: the smallest square input S (1..MAX, null if none) at which the model's forward pass
runs at batch 1 on the CPU (eval mode, real tensors, so PyTorch's own size checks decide). MACs are counted with forward hooks:
  Conv2d:             output elements * in_channels / groups * kh * kw
  ConvTranspose2d:    input elements * out_channels / groups * kh * kw
  Linear:             rows * in_features * out_features
  MultiheadAttention: its input projection (query, key, value tokens * embed * embed) + output
                      projection, from the input shapes (neither is called as a module, so
                      Linear hooks miss them)
"""
import argparse
import json
import sys

try:
    import torch
    import torchvision
    from torch import nn
except ImportError as error:
    sys.exit(f"{sys.executable} cannot import torch/torchvision ({error}); scripts/setup.sh installs "
             "Debian's python3-torch and python3-torchvision for /usr/bin/python3")

DEFAULT_SIZE = {"inception_v3": 299}
# Builder arguments that turn auxiliary heads and weight initialisation off where torchvision has them.
EXTRA_KWARGS = {
    "googlenet": {"aux_logits": False, "init_weights": False},
    "inception_v3": {"aux_logits": False, "init_weights": False},
}


def classification_models():
    return sorted(torchvision.models.list_models(module=torchvision.models))


def skip_weight_init():
    """Initialisers are the slowest part of building a model and change no count: make them no-ops."""
    def keep(tensor, *args, **kwargs):
        return tensor

    for name in ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "xavier_uniform_",
                 "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_"):
        setattr(nn.init, name, keep)


# Modules that own parameters, by the type name the IR uses (subclasses such as ConvNeXt's
# LayerNorm2d or MultiheadAttention's out_proj count as their base type).
LAYER_TYPES = (nn.Conv2d, nn.ConvTranspose2d, nn.Linear, nn.BatchNorm2d, nn.LayerNorm)


def layer_type(module):
    for kind in LAYER_TYPES:
        if isinstance(module, kind):
            return kind.__name__
    return None


def count(name, batch, with_layers=False):
    model = torchvision.models.get_model(name, weights=None, **EXTRA_KWARGS.get(name, {}))
    # On the meta device every op computes shapes only: the hooks see the same shapes as a real
    # forward pass, and the whole torchvision zoo takes seconds instead of minutes.
    model.eval().to("meta")
    params = sum(p.numel() for p in model.parameters())
    macs_by_module = {}  # module path -> MACs of its calls

    def counter(path, macs_of):
        def hook(module, inputs, output):
            macs_by_module[path] = macs_by_module.get(path, 0) + macs_of(module, inputs, output)
        return hook

    def conv_macs(module, inputs, output):
        kh, kw = module.kernel_size
        return output.numel() * (module.in_channels // module.groups) * kh * kw

    def deconv_macs(module, inputs, output):
        kh, kw = module.kernel_size
        return inputs[0].numel() * (module.out_channels // module.groups) * kh * kw

    def linear_macs(module, inputs, output):
        return inputs[0].numel() // module.in_features * module.in_features * module.out_features

    def count_attention(path, module):
        # The projections run inside F.multi_head_attention_forward, not as Linear modules, and
        # ViT passes query/key/value by keyword (which 1.13's forward hooks do not see): wrap forward.
        # The input projection is booked as the layer "<path>.in_proj", the output one as "<path>.out_proj".
        forward = module.forward

        def counted(query, key, value, *args, **kwargs):
            embed = module.embed_dim
            # Tokens of each operand = elements / feature size, whatever the batch_first layout.
            in_proj = sum(operand.numel() * embed for operand in (query, key, value))
            out_proj = query.numel() // query.shape[-1] * embed * embed
            for layer, macs in ((path + ".in_proj", in_proj), (path + ".out_proj", out_proj)):
                macs_by_module[layer] = macs_by_module.get(layer, 0) + macs
            return forward(query, key, value, *args, **kwargs)

        module.forward = counted

    for path, module in model.named_modules():
        if isinstance(module, nn.Conv2d):
            module.register_forward_hook(counter(path, conv_macs))
        elif isinstance(module, nn.ConvTranspose2d):
            module.register_forward_hook(counter(path, deconv_macs))
        elif isinstance(module, nn.Linear):
            module.register_forward_hook(counter(path, linear_macs))
        elif isinstance(module, nn.MultiheadAttention):
            count_attention(path, module)
    size = DEFAULT_SIZE.get(name, 224)
    with torch.no_grad():
        model(torch.zeros(batch, 3, size, size, device="meta"))
    result = {"params": params, "macs": sum(macs_by_module.values())}
    if with_layers:
        layers = {}
        for path, module in model.named_modules():
            if layer_type(module) is not None:
                own = sum(p.numel() for p in module.parameters(recurse=False))
                layers[path] = {"type": layer_type(module), "params": own, "macs": macs_by_module.get(path, 0)}
            elif isinstance(module, nn.MultiheadAttention):
                # Its own parameters are the input projection's (in_proj_weight/bias or q/k/v_proj_weight).
                own = sum(p.numel() for p in module.parameters(recurse=False))
                layers[path + ".in_proj"] = {"type": "Linear", "params": own,
                                             "macs": macs_by_module.get(path + ".in_proj", 0)}
        result["layers"] = layers
    return result


def smallest_input(name, largest):
    model = torchvision.models.get_model(name, weights=None, **EXTRA_KWARGS.get(name, {})).eval()
    with torch.no_grad():
        for size in range(1, largest + 1):
            try:
                model(torch.zeros(1, 3, size, size))
                return size
            except RuntimeError:  # "Kernel size can't be greater than actual input size", empty outputs
                continue
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="model names (default: all torchvision classification models)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--layers", action="store_true",
                        help='add "layers": {module path: {"type", "params", "macs"}} for every '
                             + ", ".join(kind.__name__ for kind in LAYER_TYPES))
    parser.add_argument("--smallest-input", type=int, metavar="MAX",
                        help="print {name: smallest square input (1..MAX) the forward pass accepts}")
    args = parser.parse_args()
    skip_weight_init()
    known = set(classification_models())
    names = args.names or sorted(known)
    missing = [name for name in names if name not in known]
    if missing:
        print("torchvision " + torchvision.__version__ + " lacks: " + ", ".join(missing), file=sys.stderr)
    if args.smallest_input:
        torch.set_num_threads(1)
        result = {name: smallest_input(name, args.smallest_input) for name in names if name in known}
    else:
        result = {name: count(name, args.batch, args.layers) for name in names if name in known}
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
