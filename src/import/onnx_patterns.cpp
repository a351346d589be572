// Fusions: chains of ONNX nodes that PyTorch exports for one module, found before translation and
// emitted as one IR op at the chain's last node. Each chain's inner values must have no other
// consumer (otherwise the chain stays as single nodes).
//   Sigmoid(x) -> Mul(x, .)                      SiLU
//   HardSigmoid(x) -> Mul(x, .)                  Hardswish (opset < 14)
//   Div(x, sqrt 2) -> Erf -> Add(1) -> Mul(x, .) [-> Mul(0.5)]   GELU
//   MatMul(x, W) -> Add(bias)                    Linear (W an initializer)
//   ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div [-> Mul(w) -> Add(b)]  LayerNorm
//   Reshape(x, N g C/g H W) -> Transpose(0 2 1 3 4) -> Reshape(N C H W)  ChannelShuffle
//   Pad(x, zeros around H x W) -> AveragePool   AvgPool2d with that padding, counting it (count_include_pad)
//   MatMul(q, Transpose(k)) [-> Div/Mul(scale)] [-> Add(causal mask)] -> Softmax [-> Dropout] -> MatMul(., v)
//                                                ScaledDotProductAttention (causal with the mask)
//   nn.MultiheadAttention's export: the zoo's in_proj, SDPA, out_proj sequence (onnx_mha.cpp)
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "import/onnx_internal.h"

namespace dnncast::import::detail {

namespace {

// A fusion of `op` over the chain `members`; the fields only some fusions set (permute_inputs,
// groups_from, at_first, shape_only) keep their defaults.
Fusion fused(const std::string& op, std::vector<std::string> inputs, std::map<std::string, AttrValue> attrs,
             const std::string& output, std::vector<int> members) {
  Fusion fusion;
  fusion.op = op;
  fusion.inputs = std::move(inputs);
  fusion.attrs = std::move(attrs);
  fusion.output = output;
  fusion.members = std::move(members);
  return fusion;
}

struct Matcher {
  Context& context;

  const onnx::NodeProto& node(int index) const { return context.node(index); }
  bool is(int index, const char* op) const { return index >= 0 && node(index).op_type() == op; }
  // The sole consumer of `index`'s first output, when it is of type `op`.
  int next(int index, const char* op) const {
    if (index < 0 || node(index).output_size() < 1) return -1;
    int consumer = context.sole_consumer(node(index).output(0));
    return is(consumer, op) ? consumer : -1;
  }
  const std::string& out(int index) const {
    static const std::string kNone;
    return node(index).output_size() > 0 ? node(index).output(0) : kNone;
  }
  // The input of binary node `index` that is not `name` ("" when both or neither are).
  std::string other(int index, const std::string& name) const {
    const onnx::NodeProto& n = node(index);
    if (n.input_size() != 2) return "";
    if (n.input(0) == name && n.input(1) != name) return n.input(1);
    if (n.input(1) == name && n.input(0) != name) return n.input(0);
    return "";
  }
  bool scalar_near(const std::string& name, double value) const {
    const Constant* c = context.constant(name);
    return c != nullptr && c->is_scalar() && c->has_values &&
           std::fabs(c->values[0] - value) < 1e-3 * std::fabs(value) + 1e-6;
  }
  const Constant* parameter(const std::string& name) const {
    const Constant* c = context.constant(name);
    return c != nullptr && !c->parameter.empty() ? c : nullptr;
  }

  bool silu(int index, Fusion& fusion) const {
    bool hard = is(index, "HardSigmoid");
    if (!is(index, "Sigmoid") && !hard) return false;
    const std::string& x = node(index).input(0);
    int mul = next(index, "Mul");
    if (mul < 0 || other(mul, out(index)) != x) return false;
    fusion = fused(hard ? "Hardswish" : "SiLU", {x}, {}, out(mul), {index, mul});
    return true;
  }

  bool gelu(int index, Fusion& fusion) const {
    if (!is(index, "Div") && !is(index, "Mul")) return false;
    const onnx::NodeProto& scale = node(index);
    if (scale.input_size() != 2) return false;
    const std::string& x = scale.input(0);
    if (!(is(index, "Div") ? scalar_near(scale.input(1), std::sqrt(2.0)) : scalar_near(scale.input(1), std::sqrt(0.5))))
      return false;
    int erf = next(index, "Erf");
    int plus = next(erf, "Add");
    if (plus < 0 || !scalar_near(other(plus, out(erf)), 1.0)) return false;
    int times = next(plus, "Mul");
    if (times < 0 || other(times, out(plus)) != x) return false;
    fusion = fused("GELU", {x}, {}, out(times), {index, erf, plus, times});
    int half = next(times, "Mul");
    if (half >= 0 && scalar_near(other(half, out(times)), 0.5)) {
      fusion.output = out(half);
      fusion.members.push_back(half);
    }
    return true;
  }

  bool linear(int index, Fusion& fusion) const {
    if (!is(index, "MatMul") || node(index).input_size() != 2) return false;
    const Constant* weight = parameter(node(index).input(1));  // folded already when a Transpose of one
    if (weight == nullptr || weight->dims.size() != 2 || context.has_constant(node(index).input(0))) return false;
    int add = next(index, "Add");
    const Constant* bias = add >= 0 ? parameter(other(add, out(index))) : nullptr;
    if (bias == nullptr || bias->dims.size() != 1 || bias->dims[0] != weight->dims[1]) return false;
    fusion = fused("Linear", {node(index).input(0)}, {{"out_features", weight->dims[1]}, {"bias", int64_t{1}}},
                   out(add), {index, add});
    context.used_parameters.insert(weight->parameter);
    return true;
  }

  bool layer_norm(int index, Fusion& fusion) const {
    if (!is(index, "ReduceMean")) return false;
    const std::string& x = node(index).input(0);
    int sub = next(index, "Sub");
    if (sub < 0 || node(sub).input(0) != x) return false;
    auto users = context.consumers.find(out(sub));
    if (users == context.consumers.end() || users->second.size() != 2) return false;
    int pow = is(users->second[0], "Pow") ? users->second[0] : users->second[1];
    int div = is(users->second[0], "Div") ? users->second[0] : users->second[1];
    if (!is(pow, "Pow") || !is(div, "Div") || node(pow).input_size() != 2 || !scalar_near(node(pow).input(1), 2.0))
      return false;
    int mean = next(pow, "ReduceMean");
    int add = next(mean, "Add");
    int sqrt = next(add, "Sqrt");
    if (sqrt < 0 || context.sole_consumer(out(sqrt)) != div || node(div).input(0) != out(sub)) return false;
    const Constant* eps = context.constant(other(add, out(mean)));
    if (eps == nullptr || !eps->is_scalar() || !eps->has_values) return false;
    fusion = fused("LayerNorm", {x}, {{"eps", float_as_written(static_cast<float>(eps->values[0]))}}, out(div),
                   {index, sub, pow, mean, add, sqrt, div});
    int mul = next(div, "Mul");
    int bias = next(mul, "Add");
    if (mul >= 0 && parameter(other(mul, out(div))) && bias >= 0 && parameter(other(bias, out(mul)))) {
      fusion.output = out(bias);
      fusion.members.insert(fusion.members.end(), {mul, bias});
    } else {
      fusion.attrs["elementwise_affine"] = int64_t{0};
    }
    return true;
  }

  bool padded_pool(int index, Fusion& fusion) const {
    if (!is(index, "Pad") || node(index).input_size() < 2) return false;
    const Constant* pads = context.constant(node(index).input(1));
    if (pads == nullptr || !pads->has_values || pads->values.size() != 8) return false;
    const std::vector<double>& p = pads->values;
    if (p[0] != 0 || p[1] != 0 || p[4] != 0 || p[5] != 0 || p[2] != p[6] || p[3] != p[7]) return false;
    if (!(p[2] >= 0 && p[3] >= 0 && p[2] <= 1024 && p[3] <= 1024)) return false;
    const onnx::AttributeProto* mode = find_attr(node(index), "mode");
    if (mode != nullptr && mode->s() != "constant") return false;
    if (node(index).input_size() > 2 && !node(index).input(2).empty() && !scalar_near(node(index).input(2), 0.0))
      return false;
    int pool = next(index, "AveragePool");
    if (pool < 0 || attr_ints(node(pool), "pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0}) return false;
    std::vector<int64_t> kernel = attr_ints(node(pool), "kernel_shape", {});
    if (kernel.size() != 2) return false;
    fusion = fused("AvgPool2d", {node(index).input(0)},
                   {{"kernel", kernel},
                    {"stride", attr_ints(node(pool), "strides", {1, 1})},
                    {"padding", std::vector<int64_t>{static_cast<int64_t>(p[2]), static_cast<int64_t>(p[3])}},
                    {"ceil_mode", attr_int(node(pool), "ceil_mode", 0)},
                    {"count_include_pad", int64_t{1}}},
                   out(pool), {index, pool});
    return true;
  }

  bool channel_shuffle(int index, Fusion& fusion) const {
    if (!is(index, "Reshape") || node(index).input_size() != 2) return false;
    int transpose = next(index, "Transpose");
    if (transpose < 0 || attr_ints(node(transpose), "perm", {}) != std::vector<int64_t>{0, 2, 1, 3, 4}) return false;
    int back = next(transpose, "Reshape");
    if (back < 0) return false;
    fusion = fused("ChannelShuffle", {node(index).input(0)}, {}, out(back), {index, transpose, back});
    fusion.groups_from = node(index).input(1);
    return true;
  }

  // A constant L x L (or 1 x 1 x L x L) whose values are 0 on and below the diagonal and <= -1e4 above.
  bool causal_mask(const std::string& name) const {
    const Constant* c = context.constant(name);
    if (c == nullptr || !c->has_values || c->dims.size() < 2) return false;
    int64_t rows = c->dims[c->dims.size() - 2], cols = c->dims.back();
    if (rows != cols || c->numel() != rows * cols) return false;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t col = 0; col < cols; ++col) {
        double value = c->values[static_cast<size_t>(row * cols + col)];
        if (col <= row ? value != 0.0 : !(value <= -1e4)) return false;
      }
    return true;
  }

  bool attention(int index, Fusion& fusion) const {
    if (!is(index, "MatMul") || node(index).input_size() != 2) return false;
    int transpose = context.producer.count(node(index).input(1)) ? context.producer.at(node(index).input(1)) : -1;
    if (!is(transpose, "Transpose") || node(transpose).input_size() != 1 ||
        context.sole_consumer(out(transpose)) != index)
      return false;
    std::vector<int64_t> perm = attr_ints(node(transpose), "perm", {});
    // k.transpose(-1, -2) of N x h x S x d, or the export's merge of the heads' permute with it
    bool merged = perm == std::vector<int64_t>{0, 2, 3, 1};
    if (perm != std::vector<int64_t>{0, 1, 3, 2} && !merged) return false;
    std::vector<int> members{transpose, index};
    int at = index;
    int scale = next(at, "Div") >= 0 ? next(at, "Div") : next(at, "Mul");
    if (scale >= 0) {
      const Constant* factor = context.constant(other(scale, out(at)));
      if (factor == nullptr || !factor->is_scalar()) return false;
      members.push_back(at = scale);
    }
    int64_t causal = 0;
    int mask = next(at, "Add");
    if (mask >= 0) {  // an additive L x L mask: causal when it is the upper triangle of large negatives
      if (!causal_mask(other(mask, out(at)))) return false;
      causal = 1;
      members.push_back(at = mask);
    }
    int softmax = next(at, "Softmax");
    if (softmax < 0 || (attr_int(node(softmax), "axis", -1) != -1 && attr_int(node(softmax), "axis", -1) != 3))
      return false;
    members.push_back(at = softmax);
    double dropout_p = 0.0;
    int dropout = next(at, "Dropout");
    if (dropout >= 0) {
      const Constant* ratio = node(dropout).input_size() > 1 ? context.constant(node(dropout).input(1)) : nullptr;
      dropout_p = ratio != nullptr && ratio->has_values && ratio->is_scalar() ? ratio->values[0] : 0.5;
      members.push_back(at = dropout);
    }
    int product = next(at, "MatMul");
    if (product < 0 || node(product).input_size() != 2 || node(product).input(0) != out(at)) return false;
    members.push_back(product);
    fusion = fused(
        "ScaledDotProductAttention", {node(index).input(0), node(transpose).input(0), node(product).input(1)},
        {{"causal", causal}, {"dropout_p", float_as_written(static_cast<float>(dropout_p))}}, out(product), members);
    if (merged) fusion.permute_inputs[1] = {0, 2, 1, 3};
    return true;
  }
};

}  // namespace

std::map<int, Fusion> find_fusions(Context& context) {
  Matcher matcher{context};
  std::map<int, Fusion> fusions;
  std::vector<bool> taken(static_cast<size_t>(context.graph.node_size()), false);
  for (int index = 0; index < context.graph.node_size(); ++index) {
    if (taken[static_cast<size_t>(index)]) continue;
    if (context.node(index).input_size() == 0 || context.node(index).output_size() == 0) continue;
    Fusion fusion;
    if (match_multihead_attention(context, index, fusion) || matcher.attention(index, fusion) ||
        matcher.channel_shuffle(index, fusion) || matcher.padded_pool(index, fusion) || matcher.silu(index, fusion) ||
        matcher.gelu(index, fusion) || matcher.layer_norm(index, fusion) || matcher.linear(index, fusion)) {
      bool free = !fusion.output.empty();
      for (int member : fusion.members) free = free && !taken[static_cast<size_t>(member)];
      if (!free) continue;
      int anchor = fusion.at_first ? context.graph.node_size() : 0;
      for (int member : fusion.members) {
        taken[static_cast<size_t>(member)] = true;
        anchor = fusion.at_first ? std::min(anchor, member) : std::max(anchor, member);
      }
      fusions[anchor] = std::move(fusion);
    }
  }
  return fusions;
}

}  // namespace dnncast::import::detail
