// Element-wise activations, declared as one table: FLOPs per element forward and backward,
// and which tensor autograd keeps (PyTorch: ReLU/Sigmoid/Tanh keep their output, the others
// their input; ReLU6 is hardtanh, which keeps its input).
#include "graph/op_helpers.h"

namespace dnncast {

namespace {

struct ActivationSpec {
  const char* name;
  int64_t flops_fwd_per_element;
  int64_t flops_bwd_per_element;
  bool saves_output;
};

constexpr ActivationSpec kActivations[] = {
    {"ReLU", 1, 1, true},        {"ReLU6", 2, 2, false},      {"GELU", 8, 12, false},
    {"SiLU", 5, 8, false},       {"Sigmoid", 4, 3, true},     {"Tanh", 5, 3, true},
    {"Hardswish", 4, 4, false},  {"Hardsigmoid", 3, 2, false},
};

}  // namespace

void register_activation_ops(OpRegistry& registry) {
  for (const ActivationSpec& spec : kActivations) {
    OpDef def;
    def.name = spec.name;
    def.category = "activation";
    def.shape = [](const OpView& view) { return view.in(0); };
    def.cost = [spec](const OpView& view) {
      OpCost cost;
      int64_t elements = view.node.shape.numel();
      cost.flops_fwd = checked_mul(spec.flops_fwd_per_element, elements);
      cost.flops_bwd = checked_mul(spec.flops_bwd_per_element, elements);
      cost.bytes_read = ops::in_bytes(view, 0);
      cost.bytes_written = ops::out_bytes(view);
      cost.saved = {spec.saves_output ? ops::saved_output(view) : ops::saved_input(view, 0)};
      return cost;
    };
    registry.add(def);
  }
}

}  // namespace dnncast
