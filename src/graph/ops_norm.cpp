// Normalisation layers in training mode.
// BatchNorm2d (attrs eps, momentum): params 2C (weight, bias), buffers 2C+1 (running mean/var,
//   num_batches_tracked). FLOPs fwd = 7 per element (mean, variance: 3; normalise, scale, shift: 4),
//   bwd = 9 per element. Saved: input, plus per-channel mean and inverse std (2C floats).
#include "graph/op_helpers.h"

namespace dnncast {

void register_norm_ops(OpRegistry& registry) {
  OpDef batchnorm;
  batchnorm.name = "BatchNorm2d";
  batchnorm.category = "norm";
  batchnorm.shape = [](const OpView& view) {
    ops::require_rank(view, 0, 4);
    return view.in(0);
  };
  batchnorm.cost = [](const OpView& view) {
    OpCost cost;
    int64_t channels = view.in(0)[1];
    int64_t elements = view.in(0).numel();
    cost.params = 2 * channels;
    cost.buffers = 2 * channels + 1;
    cost.flops_fwd = 7 * elements;
    cost.flops_bwd = 9 * elements;
    cost.bytes_read = ops::in_bytes(view, 0) + 4 * channels * 4;
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0), ops::saved_extra(2 * channels * 4, "mean+invstd")};
    return cost;
  };
  registry.add(batchnorm);
}

}  // namespace dnncast
