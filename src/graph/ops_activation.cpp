// Element-wise activations, declared as one table: FLOPs per element forward and backward,
// which tensor autograd keeps (PyTorch: ReLU/Sigmoid/Tanh keep their output, the others
// their input; ReLU6 is hardtanh, which keeps its input), and whether the executor runs it in
// place (graph/inplace.h; torchvision's inplace=True modules). Their memory recipe is
// "activation", which reads the kept tensor from the cost.
#include "graph/op_helpers.h"

namespace dnncast {

namespace {

struct ActivationSpec {
  const char* name;
  int64_t flops_fwd_per_element;
  int64_t flops_bwd_per_element;
  bool saves_output;
  bool runs_inplace;
};

constexpr ActivationSpec kActivations[] = {
    {"ReLU", 1, 1, true, true},       {"ReLU6", 2, 2, false, true},        {"GELU", 8, 12, false, false},
    {"SiLU", 5, 8, false, true},      {"Sigmoid", 4, 3, true, false},      {"Tanh", 5, 3, true, false},
    {"Hardswish", 4, 4, false, true}, {"Hardsigmoid", 3, 2, false, false},
};

}  // namespace

void register_activation_ops(OpRegistry& registry) {
  for (const ActivationSpec& spec : kActivations) {
    OpDef def;
    def.name = spec.name;
    def.category = "activation";
    def.memory_recipe = "activation";
    def.runs_inplace = spec.runs_inplace;
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
