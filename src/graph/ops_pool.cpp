// Pooling. MaxPool2d/AvgPool2d attrs: kernel, stride (default = kernel), padding, dilation (max only),
// ceil_mode (0/1). AdaptiveAvgPool2d attrs: output_size [h, w].
// FLOPs: max fwd = one comparison per window element, bwd = one scatter per output;
// avg fwd and bwd = one add per window element; adaptive avg = one add per input element each way.
// Saved: MaxPool2d keeps input and int64 indices; the average pools keep their input (for its size).
#include "graph/op_helpers.h"

namespace dnncast {

namespace {

struct PoolGeometry {
  std::array<int64_t, 2> kernel, stride, padding, dilation;
  bool ceil_mode;
};

PoolGeometry pool_geometry(const OpView& view) {
  ops::require_rank(view, 0, 4);
  PoolGeometry g;
  g.kernel = ops::pair_attr(view, "kernel", 1);
  std::vector<int64_t> stride = view.node.attr_ints("stride", {g.kernel[0], g.kernel[1]});
  if (stride.size() == 1) stride.push_back(stride[0]);
  view.check(stride.size() == 2, "attribute 'stride' needs 1 or 2 values");
  g.stride = {stride[0], stride[1]};
  g.padding = ops::pair_attr(view, "padding", 0);
  g.dilation = ops::pair_attr(view, "dilation", 1);
  g.ceil_mode = view.node.attr_int("ceil_mode", 0) != 0;
  for (int axis = 0; axis < 2; ++axis) {
    view.check(g.kernel[axis] > 0 && g.stride[axis] > 0 && g.dilation[axis] > 0,
               "kernel, stride, dilation must be positive");
    view.check(g.padding[axis] >= 0 && 2 * g.padding[axis] <= g.kernel[axis],
               "padding must be at most half the kernel size");
  }
  return g;
}

TensorShape pool_shape(const OpView& view) {
  PoolGeometry g = pool_geometry(view);
  const TensorShape& in = view.in(0);
  int64_t height = ops::window_out(in[2], g.kernel[0], g.stride[0], g.padding[0], g.dilation[0], g.ceil_mode);
  int64_t width = ops::window_out(in[3], g.kernel[1], g.stride[1], g.padding[1], g.dilation[1], g.ceil_mode);
  if (!(height > 0 && width > 0))
    view.fail("pooling window " + std::to_string(g.dilation[0] * (g.kernel[0] - 1) + 1) + "x" +
              std::to_string(g.dilation[1] * (g.kernel[1] - 1) + 1) + " larger than the padded input " +
              std::to_string(in[2] + 2 * g.padding[0]) + "x" + std::to_string(in[3] + 2 * g.padding[1]) + " of " +
              in.to_string());
  return TensorShape{in[0], in[1], height, width};
}

}  // namespace

void register_pool_ops(OpRegistry& registry) {
  OpDef maxpool;
  maxpool.name = "MaxPool2d";
  maxpool.memory_recipe = "max_pool";
  maxpool.category = "pool";
  maxpool.required_attrs = {"kernel"};
  maxpool.shape = pool_shape;
  maxpool.cost = [](const OpView& view) {
    PoolGeometry g = pool_geometry(view);
    OpCost cost;
    int64_t outputs = view.node.shape.numel();
    cost.flops_fwd = checked_product({outputs, g.kernel[0], g.kernel[1]});
    cost.flops_bwd = outputs;
    cost.bytes_read = ops::in_bytes(view, 0);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0), ops::saved_extra(outputs * 8, "indices")};
    return cost;
  };
  registry.add(maxpool);

  OpDef avgpool;
  avgpool.name = "AvgPool2d";
  avgpool.memory_recipe = "avg_pool";
  avgpool.category = "pool";
  avgpool.required_attrs = {"kernel"};
  avgpool.shape = pool_shape;
  avgpool.cost = [](const OpView& view) {
    PoolGeometry g = pool_geometry(view);
    OpCost cost;
    int64_t outputs = view.node.shape.numel();
    cost.flops_fwd = checked_product({outputs, g.kernel[0], g.kernel[1]});
    cost.flops_bwd = cost.flops_fwd;
    cost.bytes_read = ops::in_bytes(view, 0);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0)};
    return cost;
  };
  registry.add(avgpool);

  OpDef adaptive;
  adaptive.name = "AdaptiveAvgPool2d";
  adaptive.memory_recipe = "avg_pool";
  adaptive.category = "pool";
  adaptive.required_attrs = {"output_size"};
  adaptive.shape = [](const OpView& view) {
    ops::require_rank(view, 0, 4);
    std::array<int64_t, 2> size = ops::pair_attr(view, "output_size", 1);
    view.check(size[0] > 0 && size[1] > 0, "output_size must be positive");
    const TensorShape& in = view.in(0);
    return TensorShape{in[0], in[1], size[0], size[1]};
  };
  adaptive.cost = [](const OpView& view) {
    OpCost cost;
    cost.flops_fwd = view.in(0).numel();
    cost.flops_bwd = view.in(0).numel();
    cost.bytes_read = ops::in_bytes(view, 0);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0)};
    return cost;
  };
  registry.add(adaptive);
}

}  // namespace dnncast
