// torch 1.13's export of nn.MultiheadAttention(batch_first=True) in training (torchvision's ViT):
//   Transpose(x, 1 0 2) -> MatMul(W_in^T) -> Add(b_in) -> 3 x [Slice -> Reshape(L, N*h, d) -> Transpose]
//   q: Transpose(1 0 2) -> Div/Mul(scale); k: Transpose(1 2 0); v: Transpose(1 0 2)
//   MatMul(q, k) -> Softmax [-> Dropout] -> MatMul(., v) -> Transpose(1 0 2) -> Reshape(L*N, D)
//   -> Gemm(out_proj) -> Reshape(L, N, D) -> Transpose(1 0 2)
// becomes what the zoo builds for it (models/attention.h, packed_self_attention): the packed in_proj
// Linear, a contiguous copy into 3 x N x h x L x d, q/k/v as slices of it, ScaledDotProductAttention,
// a contiguous copy merging the heads, out_proj. The head count comes from the scale (1/sqrt(d)).
// Shape nodes read several of the inner values (the export computes the reshapes from them), so the op
// is emitted at the first node and the inner values are bound to shape-only constants of their layout.
#include <cmath>

#include "core/error.h"
#include "import/onnx_internal.h"
#include "models/attention.h"

namespace dnncast::import::detail {

namespace {

struct MhaMatcher {
  explicit MhaMatcher(Context& c) : context(c) {}
  Context& context;
  std::vector<int> members;
  std::vector<std::pair<std::string, std::string>> layouts;

  const onnx::NodeProto& node(int index) const { return context.node(index); }
  const std::string& out(int index) const { return node(index).output(0); }
  bool is(int index, const char* op) const { return index >= 0 && node(index).op_type() == op; }
  bool perm_is(int index, const std::vector<int64_t>& perm) const {
    return is(index, "Transpose") && attr_ints(node(index), "perm", {}) == perm;
  }
  const Constant* parameter(const std::string& name) const {
    const Constant* c = context.constant(name);
    return c != nullptr && !c->parameter.empty() ? c : nullptr;
  }
  // The consumers of `index`'s first output other than Shape nodes (none for a graph output).
  std::vector<int> users(int index) const {
    std::vector<int> found;
    if (index < 0 || node(index).output_size() < 1 || context.graph_outputs.count(out(index))) return found;
    auto consumers = context.consumers.find(out(index));
    if (consumers == context.consumers.end()) return found;
    for (int user : consumers->second)
      if (node(user).op_type() != "Shape") found.push_back(user);
    return found;
  }
  // The only non-Shape consumer of `index`, of type `op` and reading it as input `slot` (-1: either of two).
  int next(int index, const char* op, int slot = 0) const {
    std::vector<int> found = users(index);
    if (found.size() != 1 || !is(found[0], op)) return -1;
    const onnx::NodeProto& user = node(found[0]);
    bool reads = slot < 0 ? user.input_size() == 2 && (user.input(0) == out(index)) != (user.input(1) == out(index))
                          : user.input_size() > slot && user.input(slot) == out(index);
    if (!reads) return -1;
    return found[0];
  }
  // An inner node: skipped, its output bound to a shape-only constant of `layout`.
  void keep(int index, const char* layout) {
    members.push_back(index);
    layouts.emplace_back(out(index), layout);
  }

  // Slice -> Reshape -> Transpose of one of q, k, v; the Transpose (and q's scale node) or -1.
  bool head(int slice, int& q, int& scale, int& k, int& v) {
    int reshape = next(slice, "Reshape");
    int transpose = next(reshape, "Transpose");
    if (transpose < 0) return false;
    keep(slice, "LND");
    keep(reshape, "LMd");
    if (perm_is(transpose, {1, 2, 0})) {
      if (k >= 0) return false;
      keep(k = transpose, "MdL");
      return true;
    }
    if (!perm_is(transpose, {1, 0, 2})) return false;
    int div = next(transpose, "Div"), mul = next(transpose, "Mul");
    int by = div >= 0 ? div : mul;
    const Constant* factor = by >= 0 && node(by).input_size() == 2 ? context.constant(node(by).input(1)) : nullptr;
    if (factor != nullptr && factor->is_scalar() && factor->has_values && factor->values[0] > 0) {
      if (q >= 0) return false;
      keep(q = transpose, "MLd");
      keep(scale = by, "MLd");
      double d = div >= 0 ? factor->values[0] * factor->values[0] : 1.0 / (factor->values[0] * factor->values[0]);
      if (!(d >= 1.0 && d <= static_cast<double>(embed))) return false;
      head_dim = static_cast<int64_t>(std::llround(d));
      return std::fabs(d - static_cast<double>(head_dim)) < 1e-3 * d && head_dim >= 1;
    }
    if (v >= 0) return false;
    keep(v = transpose, "MLd");
    return true;
  }

  int64_t embed = 0, head_dim = 0;
  double dropout_p = 0.0;
  std::string params[4];  // in_proj weight, bias; out_proj weight, bias

  // From the first Transpose to the packed projection's three heads; the q scale node and the k, v Transposes.
  bool in_projection(int index, int& scale, int& k, int& v) {
    if (!perm_is(index, {1, 0, 2}) || node(index).input_size() != 1 || context.has_constant(node(index).input(0)))
      return false;
    keep(index, "LND");
    int matmul = next(index, "MatMul");
    const Constant* weight = matmul >= 0 && node(matmul).input_size() == 2 ? parameter(node(matmul).input(1)) : nullptr;
    if (weight == nullptr || weight->dims.size() != 2 || weight->dims[1] != 3 * weight->dims[0]) return false;
    embed = weight->dims[0];
    if (embed < 1) return false;
    keep(matmul, "LNT");
    int add = next(matmul, "Add", -1);
    if (add < 0) return false;
    const Constant* bias = parameter(node(add).input(node(add).input(0) == out(matmul) ? 1 : 0));
    if (bias == nullptr || bias->dims != std::vector<int64_t>{3 * embed}) return false;
    keep(add, "LNT");
    params[0] = weight->parameter;
    params[1] = bias->parameter;
    std::vector<int> slices = users(add);
    if (slices.size() != 3) return false;
    int q = -1;
    for (int slice : slices)
      if (!is(slice, "Slice") || node(slice).input(0) != out(add) || !head(slice, q, scale, k, v)) return false;
    return q >= 0 && k >= 0 && v >= 0 && embed % head_dim == 0;
  }

  // The attention products, the head merge and out_proj, up to the last Transpose.
  int attention_and_out_projection(int scale, int k, int v) {
    int scores = next(scale, "MatMul");
    if (scores < 0 || next(k, "MatMul", 1) != scores) return -1;
    keep(scores, "MLL");
    int softmax = next(scores, "Softmax");
    int64_t axis = softmax >= 0 ? attr_int(node(softmax), "axis", -1) : 0;
    if (softmax < 0 || (axis != -1 && axis != 2)) return -1;
    keep(softmax, "MLL");
    int at = softmax;
    int dropout = next(at, "Dropout");
    if (dropout >= 0) {
      const Constant* ratio = node(dropout).input_size() > 1 ? context.constant(node(dropout).input(1)) : nullptr;
      dropout_p = ratio != nullptr && ratio->has_values && ratio->is_scalar() ? ratio->values[0] : 0.5;
      keep(at = dropout, "MLL");
    }
    int context_product = next(at, "MatMul");
    if (context_product < 0 || next(v, "MatMul", 1) != context_product) return -1;
    keep(context_product, "MLd");
    int merge = next(context_product, "Transpose");
    if (!perm_is(merge, {1, 0, 2})) return -1;
    keep(merge, "LMd");
    int flat = next(merge, "Reshape");
    int gemm = next(flat, "Gemm");
    if (gemm < 0 || node(gemm).input_size() != 3 || attr_int(node(gemm), "transB", 0) != 1 ||
        attr_int(node(gemm), "transA", 0) != 0 || attr_float(node(gemm), "alpha", 1.0) != 1.0 ||
        attr_float(node(gemm), "beta", 1.0) != 1.0)
      return -1;
    const Constant* weight = parameter(node(gemm).input(1));
    const Constant* bias = parameter(node(gemm).input(2));
    if (weight == nullptr || bias == nullptr || weight->dims != std::vector<int64_t>{embed, embed} ||
        bias->dims != std::vector<int64_t>{embed})
      return -1;
    params[2] = weight->parameter;
    params[3] = bias->parameter;
    keep(flat, "KD");
    keep(gemm, "KD");
    int unflat = next(gemm, "Reshape");
    int last = next(unflat, "Transpose");
    if (!perm_is(last, {1, 0, 2})) return -1;
    keep(unflat, "LND");
    members.push_back(last);
    return last;
  }
};

}  // namespace

bool match_multihead_attention(Context& context, int index, Fusion& fusion) {
  if (context.node(index).op_type() != "Transpose") return false;
  MhaMatcher matcher{context};
  int scale = -1, k = -1, v = -1;
  if (!matcher.in_projection(index, scale, k, v)) return false;
  int last = matcher.attention_and_out_projection(scale, k, v);
  if (last < 0) return false;
  // Every inner value feeds only members and Shape nodes.
  std::set<int> inside(matcher.members.begin(), matcher.members.end());
  for (int member : matcher.members) {
    if (member == last) continue;
    for (int user : matcher.users(member))
      if (!inside.count(user)) return false;
  }
  for (const std::string& parameter : matcher.params) context.used_parameters.insert(parameter);
  fusion = Fusion();
  fusion.op = "MultiheadAttention";
  fusion.inputs = {context.node(index).input(0)};
  fusion.attrs = {{"embed_dim", matcher.embed},
                  {"heads", matcher.embed / matcher.head_dim},
                  {"dropout_p", float_as_written(static_cast<float>(matcher.dropout_p))}};
  fusion.output = context.node(last).output(0);
  fusion.members = matcher.members;
  fusion.at_first = true;
  fusion.shape_only = matcher.layouts;
  return true;
}

void emit_multihead_attention(Context& context, const Fusion& fusion, int anchor) {
  const onnx::NodeProto& node = context.node(anchor);
  const int64_t embed = std::get<int64_t>(fusion.attrs.at("embed_dim"));
  const int64_t heads = std::get<int64_t>(fusion.attrs.at("heads"));
  const int64_t head_dim = embed / heads;
  int x = context.runtime(fusion.inputs.at(0), where(node));
  const TensorShape& shape = context.builder.shape(x);
  if (shape.rank() != 3 || shape.dims[2] != embed)
    throw InputError(where(node) + ": multi-head attention of embedding " + std::to_string(embed) + " takes N x L x " +
                     std::to_string(embed) + ", got " + shape.to_string());
  const int64_t batch = shape.dims[0], length = shape.dims[1];
  for (const auto& [name, layout] : fusion.shape_only) {
    Constant inner;
    for (char code : layout)
      inner.dims.push_back(code == 'L'   ? length
                           : code == 'N' ? batch
                           : code == 'D' ? embed
                           : code == 'T' ? 3 * embed
                           : code == 'M' ? batch * heads
                           : code == 'd' ? head_dim
                                         : length * batch);  // 'K'
    context.values[name] = Value{-1, inner};
  }
  const std::string prefix = context.unique_name(node, anchor) + "#";
  const int y = models::packed_self_attention(context.builder, prefix, x, embed, heads,
                                              std::get<double>(fusion.attrs.at("dropout_p")));
  context.values[fusion.output] = Value{y, {}};
}

}  // namespace dnncast::import::detail
