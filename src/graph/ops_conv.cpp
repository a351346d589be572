// Convolutions. Attributes: out_channels, kernel [kh,kw], stride, padding, dilation (1 or 2 values),
// groups (default 1), bias (0/1, default 1); ConvTranspose2d also output_padding.
// MACs = N * C_out * H_out * W_out * (C_in / groups) * kh * kw.
// FLOPs fwd = 2 MACs (+ N*C_out*H_out*W_out for the bias); bwd = 4 MACs (input and weight
// gradients, each as large as the forward) (+ the bias gradient, one add per output element).
// Saved for backward: the input (the weight is a parameter, always alive).
#include "graph/op_helpers.h"

namespace dnncast {

namespace {

struct ConvGeometry {
  int64_t in_channels, out_channels, groups;
  std::array<int64_t, 2> kernel, stride, padding, dilation;
  bool bias;
};

ConvGeometry geometry(const OpView& view) {
  ops::require_rank(view, 0, 4);
  ConvGeometry g;
  g.in_channels = view.in(0)[1];
  g.out_channels = view.node.attr_int("out_channels");
  g.groups = view.node.attr_int("groups", 1);
  g.kernel = ops::pair_attr(view, "kernel", 1);
  g.stride = ops::pair_attr(view, "stride", 1);
  g.padding = ops::pair_attr(view, "padding", 0);
  g.dilation = ops::pair_attr(view, "dilation", 1);
  g.bias = view.node.attr_int("bias", 1) != 0;
  view.check(g.out_channels > 0, "out_channels must be positive");
  view.check(g.groups > 0, "groups must be positive");
  if (g.in_channels % g.groups != 0)  // messages built only on failure (every node of every forecast runs this)
    view.fail("input channels " + std::to_string(g.in_channels) + " not divisible by groups " +
              std::to_string(g.groups));
  if (g.out_channels % g.groups != 0)
    view.fail("out_channels " + std::to_string(g.out_channels) + " not divisible by groups " +
              std::to_string(g.groups));
  for (int axis = 0; axis < 2; ++axis) {
    view.check(g.kernel[axis] > 0 && g.stride[axis] > 0 && g.dilation[axis] > 0 && g.padding[axis] >= 0,
               "kernel, stride and dilation must be positive and padding non-negative");
  }
  return g;
}

OpCost conv_cost(const OpView& view, const ConvGeometry& g, int64_t macs) {
  OpCost cost;
  int64_t out_elems = view.node.shape.numel();
  cost.macs = macs;
  cost.params = checked_add(checked_product({g.out_channels, g.in_channels / g.groups, g.kernel[0], g.kernel[1]}),
                            g.bias ? g.out_channels : 0);
  cost.flops_fwd = checked_add(checked_mul(2, macs), g.bias ? out_elems : 0);
  cost.flops_bwd = checked_add(checked_mul(4, macs), g.bias ? out_elems : 0);
  cost.bytes_read = checked_add(ops::in_bytes(view, 0), checked_mul(cost.params, dtype_bytes(view.node.dtype)));
  cost.bytes_written = ops::out_bytes(view);
  cost.saved = {ops::saved_input(view, 0)};
  return cost;
}

}  // namespace

void register_conv_ops(OpRegistry& registry) {
  OpDef conv;
  conv.name = "Conv2d";
  conv.memory_recipe = "conv";
  conv.fresh_output = true;
  conv.category = "conv";
  conv.required_attrs = {"out_channels", "kernel"};
  conv.shape = [](const OpView& view) {
    ConvGeometry g = geometry(view);
    const TensorShape& in = view.in(0);
    int64_t height = ops::window_out(in[2], g.kernel[0], g.stride[0], g.padding[0], g.dilation[0], false);
    int64_t width = ops::window_out(in[3], g.kernel[1], g.stride[1], g.padding[1], g.dilation[1], false);
    if (!(height > 0 && width > 0))
      view.fail("kernel " + std::to_string(g.dilation[0] * (g.kernel[0] - 1) + 1) + "x" +
                std::to_string(g.dilation[1] * (g.kernel[1] - 1) + 1) + " larger than the padded input " +
                std::to_string(in[2] + 2 * g.padding[0]) + "x" + std::to_string(in[3] + 2 * g.padding[1]) + " of " +
                in.to_string());
    return TensorShape{in[0], g.out_channels, height, width};
  };
  conv.cost = [](const OpView& view) {
    ConvGeometry g = geometry(view);
    const TensorShape& out = view.node.shape;
    int64_t macs = checked_product({out.numel(), g.in_channels / g.groups, g.kernel[0], g.kernel[1]});
    return conv_cost(view, g, macs);
  };
  conv.kind = [](const OpView& view) -> std::string {
    int64_t groups = view.node.attr_int("groups", 1);
    if (groups > 1 && groups == view.in(0)[1]) return "DepthwiseConv2d";
    if (groups > 1) return "GroupedConv2d";
    return "Conv2d";
  };
  registry.add(conv);

  // Transposed convolution: out = (in-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1.
  // Weight C_in x (C_out/groups) x kh x kw; every input element scatters into C_out/groups x kh x kw.
  OpDef deconv;
  deconv.name = "ConvTranspose2d";
  deconv.memory_recipe = "generic";
  deconv.fresh_output = true;
  deconv.category = "conv";
  deconv.required_attrs = {"out_channels", "kernel"};
  deconv.shape = [](const OpView& view) {
    ConvGeometry g = geometry(view);
    std::array<int64_t, 2> extra = ops::pair_attr(view, "output_padding", 0);
    const TensorShape& in = view.in(0);
    int64_t dims[2];
    for (int axis = 0; axis < 2; ++axis) {
      view.check(extra[axis] >= 0 && extra[axis] < std::max(g.stride[axis], g.dilation[axis]),
                 "output_padding must be smaller than stride or dilation");
      dims[axis] = checked_sum({checked_mul(in[2 + axis] - 1, g.stride[axis]), checked_mul(-2, g.padding[axis]),
                                checked_mul(g.dilation[axis], g.kernel[axis] - 1), extra[axis], 1});
    }
    if (!(dims[0] > 0 && dims[1] > 0)) view.fail("padding too large for the input " + in.to_string());
    return TensorShape{in[0], g.out_channels, dims[0], dims[1]};
  };
  deconv.cost = [](const OpView& view) {
    ConvGeometry g = geometry(view);
    int64_t macs = checked_product({view.in(0).numel(), g.out_channels / g.groups, g.kernel[0], g.kernel[1]});
    return conv_cost(view, g, macs);
  };
  registry.add(deconv);
}

}  // namespace dnncast
