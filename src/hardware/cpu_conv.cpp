#include "hardware/cpu_conv.h"

#include <algorithm>
#include <array>
#include <variant>

#include "core/error.h"

namespace dnncast::hardware {

namespace {

constexpr int64_t kF32 = 4;
// oneDNN's scratchpad registry adds this much per booked buffer (alignment slack).
constexpr int64_t kScratchSlack = 128;

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Scratchpad of a primitive: the booked buffers, each with its slack; 0 when nothing is booked.
int64_t scratchpad(std::initializer_list<int64_t> entries) {
  int64_t total = 0;
  for (int64_t entry : entries)
    if (entry > 0) total += entry + kScratchSlack;
  return total;
}

// One oneDNN primitive as ideep runs it: the sizes of the reordered (non-plain) tensors; 0 means
// the tensor is used in ATen's plain layout as it is.
struct Primitive {
  int64_t src = 0, weights = 0, dst = 0;  // bytes in the primitive's format, 0 = plain
  int64_t scratch = 0;
};

class RecipeWriter {
 public:
  explicit RecipeWriter(std::vector<Step>& steps) : steps_(steps) {}
  int32_t alloc(int64_t bytes, int32_t slot = -1) {
    if (slot < 0) slot = next_temp_++;
    steps_.push_back({Step::Alloc, slot, bytes});
    return slot;
  }
  void free(int32_t slot) { steps_.push_back({Step::Free, slot, 0}); }

 private:
  std::vector<Step>& steps_;
  int32_t next_temp_ = kFirstTemp;
};

// Largest divisor of `blocks` up to 8, or `blocks` itself when that divisor is 1 (oneDNN's
// bcast blocking of the 1x1 backward-weights kernel, as observed).
int64_t bcast_blocks(int64_t blocks) {
  for (int64_t divisor = std::min<int64_t>(blocks, 8); divisor > 1; --divisor)
    if (blocks % divisor == 0) return divisor;
  return blocks;
}

// What differs between the ISAs oneDNN 2.6 dispatches to, for f32 convolutions (one row per
// family; cpu_conv_recipe reads nothing else that depends on the ISA). Read off allocation logs and
// oneDNN's verbose log on an AVX-512 host and on an AVX2-only host (docs/MEMORY.md "By ISA"); the
// kernels are oneDNN's src/cpu/x64/jit_avx512_common_conv_kernel.cpp (16-channel blocks: nChw16c,
// OIhw16i16o) and jit_avx2_conv_kernel_f32.cpp (8-channel blocks: nChw8c, OIhw8i8o), with the
// jit_uni_dw and jit_*_1x1 kernels of each, tried in cpu_convolution_list.cpp's order before gemm.
struct IsaConvRules {
  const char* family;
  int64_t block;                // channel block of the jit kernels' formats
  int64_t first_conv_channels;  // fewer input channels: the forward reads the plain input
  // Grouped (not depthwise): the blocks a group's channels may take, largest first; none -> gemm.
  std::array<int64_t, 3> group_blocks;
  // Backward weights of a grouped conv with 8-channel blocks, and of a dense conv whose input channels
  // are a multiple of 8 but not of the block, runs the AVX2 kernel ("jit:avx2"), which rejects a
  // kernel larger than the input.
  bool bwd_weights_kernel_within_input;  // every jit backward-weights pass needs kernel <= input
};

constexpr IsaConvRules kAvx512Rules{"avx512_core", 16, 16, {16, 8, 4}, false};
constexpr IsaConvRules kAvx2Rules{"avx2", 8, 8, {8, 0, 0}, true};

// The evidence behind each row, for conv_rules_evidence().
constexpr const char* kAvx512Evidence =
    "4,422 of 4,468 configurations of data/dnncast-cpu2.db byte-exact (an AVX-512 EPYC, 1 and 2 threads)";
constexpr const char* kAvx2Evidence =
    "197 of 197 configurations of the AVX2 reference data byte-exact (AMD EPYC Zen 3, 1 thread)";

const IsaConvRules& rules_for(hardware::CpuIsa isa) {
  DNNCAST_ASSERT(isa != hardware::CpuIsa::Unknown);  // callers resolve "not recorded" first
  // SSE4.1 and AVX use 8-channel blocks too (jit_sse41_conv, jit_avx2_conv at AVX); unverified.
  return hardware::is_avx512(isa) ? kAvx512Rules : kAvx2Rules;
}

void slow_recipe(const ConvShape& s, ConvRecipe& recipe) {
  const int64_t x = s.batch * s.in_channels * s.in_h * s.in_w * kF32;
  const int64_t y = s.batch * s.out_channels * s.out_h * s.out_w * kF32;
  const int64_t w = s.out_channels * (s.in_channels / s.groups) * s.kernel_h * s.kernel_w * kF32;
  const int64_t b = s.out_channels * kF32;
  const bool columns =
      s.kernel_h != 1 || s.kernel_w != 1 || s.stride_h != 1 || s.stride_w != 1 || s.pad_h != 0 || s.pad_w != 0;
  RecipeWriter fwd(recipe.forward), bwd(recipe.backward);
  // A channels-last input: ATen's _convolution makes the weight channels-last too (a copy unless
  // 1x1 or one input channel per group) before it picks the backend, forward and backward, and the
  // weight gradient comes back with channels-last strides.
  const bool weight_copy = s.channels_last && s.in_channels / s.groups > 1 && s.kernel_h * s.kernel_w > 1;
  recipe.weight_grad_contiguous = !weight_copy;
  if (s.groups == 1) {
    recipe.backend = "slow";
    const int64_t col = s.batch * s.in_channels * s.kernel_h * s.kernel_w * s.out_h * s.out_w * kF32;
    int32_t wcl = weight_copy ? fwd.alloc(w) : -1;
    int32_t finput = columns ? fwd.alloc(col) : -1;
    fwd.alloc(y, kSlotOutput);
    if (columns) fwd.free(finput);
    if (wcl >= 0) fwd.free(wcl);
    int32_t wcl_b = weight_copy ? bwd.alloc(w) : -1;
    int32_t grad_copy = s.grad_copy ? bwd.alloc(y) : -1;
    if (s.input_grad) bwd.alloc(x, kSlotGradInput);
    if (s.bias) bwd.alloc(b, kSlotGradBias);
    bwd.alloc(w, kSlotGradWeight);
    if (columns) bwd.free(bwd.alloc(col));
    if (wcl_b >= 0) bwd.free(wcl_b);
    if (grad_copy >= 0) bwd.free(grad_copy);
    return;
  }
  // Grouped: libtorch runs each group on narrowed (copied when batch > 1) tensors and concatenates.
  recipe.backend = "slow-grouped";
  const int64_t g = s.groups, xg = x / g, yg = y / g, wg = w / g, bg = b / g;
  const bool copies = s.batch > 1;
  std::vector<int32_t> outs;
  for (int64_t group = 0; group < g; ++group) {
    int32_t in_copy = copies ? fwd.alloc(xg) : -1;
    outs.push_back(fwd.alloc(yg));
    if (copies) fwd.free(in_copy);
  }
  fwd.alloc(y, kSlotOutput);
  for (int32_t slot : outs) fwd.free(slot);
  std::vector<int32_t> gis, gws, gbs;
  for (int64_t group = 0; group < g; ++group) {
    int32_t grad_copy = copies ? bwd.alloc(yg) : -1;
    int32_t in_copy = copies ? bwd.alloc(xg) : -1;
    if (s.input_grad) gis.push_back(bwd.alloc(xg));
    if (s.bias) gbs.push_back(bwd.alloc(bg));
    gws.push_back(bwd.alloc(wg));
    if (copies) {
      bwd.free(in_copy);
      bwd.free(grad_copy);
    }
  }
  if (s.input_grad) bwd.alloc(x, kSlotGradInput);
  bwd.alloc(w, kSlotGradWeight);
  if (s.bias) bwd.alloc(b, kSlotGradBias);
  for (int32_t slot : gbs) bwd.free(slot);
  for (int32_t slot : gws) bwd.free(slot);
  for (int32_t slot : gis) bwd.free(slot);
}

// A dense (not depthwise) convolution on a channels-last input: mkldnn_convolution allocates the
// NHWC output up front and oneDNN reads and writes NHWC directly; only the weights are reordered,
// to `fwd_weights_bytes` forward (after a scratchpad of `fwd_scratch_bytes`, 0 for none) and to
// `blocked_bytes` backward. weight.contiguous(channels_last) is a copy unless the kernel is 1x1 or
// the input has one channel per group, and the weight gradient then keeps channels-last strides.
void channels_last_dense(const ConvShape& s, const char* backend, int64_t fwd_scratch_bytes, int64_t fwd_weights_bytes,
                         int64_t blocked_bytes, ConvRecipe& recipe) {
  const int64_t c = s.in_channels, o = s.out_channels, g = s.groups, ks = s.kernel_h * s.kernel_w;
  const int64_t x = s.batch * c * s.in_h * s.in_w * kF32;
  const int64_t y = s.batch * o * s.out_h * s.out_w * kF32;
  const int64_t w = o * (c / g) * ks * kF32;
  const int64_t b = o * kF32;
  recipe.backend = backend;
  recipe.impls = {ConvImpl::Jit, ConvImpl::Jit, ConvImpl::Jit};
  const bool weight_copy = c / g > 1 && ks > 1;
  recipe.weight_grad_contiguous = !weight_copy;
  RecipeWriter f(recipe.forward), bw(recipe.backward);
  int32_t wcl = weight_copy ? f.alloc(w) : -1;
  f.alloc(y, kSlotOutput);
  int32_t scratch = fwd_scratch_bytes > 0 ? f.alloc(fwd_scratch_bytes) : -1;
  f.free(f.alloc(fwd_weights_bytes));
  if (scratch >= 0) f.free(scratch);
  if (wcl >= 0) f.free(wcl);
  int32_t wcl_b = weight_copy ? bw.alloc(w) : -1;
  int32_t grad_copy = s.grad_copy ? bw.alloc(y) : -1;
  if (s.input_grad) {
    bw.alloc(x, kSlotGradInput);
    bw.free(bw.alloc(blocked_bytes));
  }
  int32_t diff_w = bw.alloc(blocked_bytes);
  int32_t diff_b = s.bias ? bw.alloc(b) : -1;
  if (s.bias) bw.alloc(b, kSlotGradBias);
  int32_t dense = bw.alloc(w);
  bw.alloc(w, kSlotGradWeight);
  bw.free(dense);
  bw.free(diff_w);
  if (diff_b >= 0) bw.free(diff_b);
  if (grad_copy >= 0) bw.free(grad_copy);
  if (wcl_b >= 0) bw.free(wcl_b);
}

// Channels-last input (ConvNeXt after its permutes): mkldnn_convolution allocates the NHWC output
// up front and oneDNN (brgemm kernels) reads and writes NHWC directly; only weights are reordered.
// Depthwise backward-weights runs a grouped jit kernel whose 16x16-per-group blocked weights are
// 256 times the weight. Read off ConvNeXt's allocation log; other channels-last shapes reuse it.
void channels_last_recipe(const ConvShape& s, ConvRecipe& recipe) {
  const int64_t c = s.in_channels, o = s.out_channels, g = s.groups, ks = s.kernel_h * s.kernel_w;
  const int64_t x = s.batch * c * s.in_h * s.in_w * kF32;
  const int64_t y = s.batch * o * s.out_h * s.out_w * kF32;
  const int64_t w = o * (c / g) * ks * kF32;
  const int64_t b = o * kF32;
  const bool depthwise = g > 1 && g == c && g == o;
  RecipeWriter f(recipe.forward), bw(recipe.backward);
  if (depthwise) {
    recipe.backend = "mkldnn-nhwc:brdgmm_dw/jit_dw/jit";
    recipe.impls = {ConvImpl::Jit, ConvImpl::Jit, ConvImpl::Jit};
    f.alloc(y, kSlotOutput);
    int32_t scratch = f.alloc(4096 + kScratchSlack);
    f.free(f.alloc(round_up(g, 16) * ks * kF32));
    f.free(scratch);
    int32_t grad_copy = s.grad_copy ? bw.alloc(y) : -1;
    if (s.input_grad) {
      bw.alloc(x, kSlotGradInput);
      bw.free(bw.alloc(round_up(g, 16) * ks * kF32));
    }
    int32_t diff_w = bw.alloc(g * 16 * 16 * ks * kF32);
    int32_t scratch_w = bw.alloc(c * 16 * kF32 + kScratchSlack);
    int32_t diff_b = s.bias ? bw.alloc(b) : -1;
    bw.free(scratch_w);
    if (s.bias) bw.alloc(b, kSlotGradBias);
    int32_t dense = bw.alloc(w);
    bw.alloc(w, kSlotGradWeight);  // .to(): the weight's layout
    bw.free(dense);
    bw.free(diff_w);
    if (diff_b >= 0) bw.free(diff_b);
    if (grad_copy >= 0) bw.free(grad_copy);
    return;
  }
  // brgconv forward: a scratchpad and 32-output-channel blocks of the weights.
  channels_last_dense(s, "mkldnn-nhwc:brgconv/jit/jit", 8064 + kScratchSlack, round_up(o, 32) * c * ks * kF32,
                      round_up(o, 16) * round_up(c, 16) * ks * kF32, recipe);
}

// Channels-last input under AVX2 (no brgemm kernels below AVX-512): oneDNN runs the NHWC jit
// kernels where they accept the shape and its NHWC gemm otherwise. The gemm books the im2col
// columns of one group per thread and a row of output positions; for backward weights also the
// per-thread weight accumulators (4 x the weight, as the AVX-512 gemm rule). Read off ConvNeXt's
// allocation log on the AVX2 host (docs/MEMORY.md "By ISA"): its depthwise 7x7 convolutions on maps
// from 1x1 to 22x22 and its 2x2 stride-2 downsampling convolutions (dense: OIhw8i8o, no scratchpad).
void channels_last_recipe_avx2(const ConvShape& s, int64_t threads, ConvRecipe& recipe) {
  const int64_t c = s.in_channels, o = s.out_channels, g = s.groups, ks = s.kernel_h * s.kernel_w;
  if (!(g > 1 && g == c && g == o)) {
    const int64_t blocked = g * round_up(o / g, 8) * round_up(c / g, 8) * ks * kF32;  // OIhw8i8o
    channels_last_dense(s, "mkldnn-nhwc:jit/jit/jit", 0, blocked, blocked, recipe);
    return;
  }
  const int64_t x = s.batch * c * s.in_h * s.in_w * kF32;
  const int64_t y = s.batch * o * s.out_h * s.out_w * kF32;
  const int64_t w = o * (c / g) * ks * kF32;
  const int64_t b = o * kF32;
  const int64_t nthr = std::max<int64_t>(threads, 1);
  const int64_t positions = s.out_h * s.out_w * kF32;
  const int64_t col = nthr * (c / g) * ks * s.out_h * s.out_w * kF32;
  const bool pad_reject = s.pad_w > s.out_w || s.pad_h > s.out_h;
  const bool kernel_within_input = s.kernel_h <= s.in_h && s.kernel_w <= s.in_w;
  const int64_t w_blocked = round_up(g, 8) * ks * kF32;  // Goihw8g
  RecipeWriter f(recipe.forward), bw(recipe.backward);
  recipe.backend = std::string("mkldnn-nhwc:") + (pad_reject ? "gemm" : "jit_dw") + "/jit_dw/" +
                   (kernel_within_input ? "jit" : "gemm");
  recipe.impls = {pad_reject ? ConvImpl::Gemm : ConvImpl::Jit, ConvImpl::Jit,
                  kernel_within_input ? ConvImpl::Jit : ConvImpl::Gemm};
  f.alloc(y, kSlotOutput);
  int32_t scratch = pad_reject ? f.alloc(scratchpad({col, positions})) : -1;
  f.free(f.alloc(pad_reject ? w : w_blocked));
  if (scratch >= 0) f.free(scratch);
  int32_t grad_copy = s.grad_copy ? bw.alloc(y) : -1;
  if (s.input_grad) {
    bw.alloc(x, kSlotGradInput);
    bw.free(bw.alloc(w_blocked));
  }
  int32_t diff_w = bw.alloc(kernel_within_input ? g * 8 * 8 * ks * kF32 : w);
  int32_t scratch_w = bw.alloc(kernel_within_input ? scratchpad({c * 8 * kF32}) : scratchpad({4 * w, col, positions}));
  int32_t diff_b = s.bias ? bw.alloc(b) : -1;
  bw.free(scratch_w);
  if (s.bias) bw.alloc(b, kSlotGradBias);
  int32_t dense = bw.alloc(w);
  bw.alloc(w, kSlotGradWeight);
  bw.free(dense);
  if (!kernel_within_input) bw.free(bw.alloc(w));  // the gemm's weight gradient, transposed back
  bw.free(diff_w);
  if (diff_b >= 0) bw.free(diff_b);
  if (grad_copy >= 0) bw.free(grad_copy);
}

}  // namespace

std::string conv_rules_evidence(hardware::CpuIsa isa) {
  if (hardware::is_avx512(isa)) return kAvx512Evidence;
  if (isa == hardware::CpuIsa::Avx2 || isa == hardware::CpuIsa::Avx2Vnni) return kAvx2Evidence;
  return "";
}

bool cpu_conv_uses_mkldnn(const ConvShape& s, int64_t threads) {
  const bool strided = s.stride_h > 1 || s.stride_w > 1;
  const bool dilated = s.dilation_h > 1 || s.dilation_w > 1;
  const bool one_by_one = s.kernel_h == 1 && s.kernel_w == 1;
  return (strided || dilated || s.batch >= 16 || !one_by_one || threads > 1) &&
         (s.groups > 1 || (s.kernel_w > 3 && s.kernel_h > 3) || s.batch > 1 ||
          s.batch * s.in_channels * s.in_h * s.in_w > 20480);
}

std::array<ConvImpl, 3> cpu_conv_impls(const ConvShape& shape, int64_t threads, hardware::CpuIsa isa) {
  return cpu_conv_recipe(shape, threads, isa).impls;
}

ConvShape conv_shape(const Graph& graph, const Node& node) {
  DNNCAST_ASSERT(!node.inputs.empty());
  const TensorShape& in = graph.node(node.inputs[0]).shape;
  DNNCAST_ASSERT(in.rank() == 4 && node.shape.rank() == 4);
  auto pair = [&](const char* key, int64_t fallback) -> std::array<int64_t, 2> {
    // One lookup and no copy for the usual list of two (every convolution of every forecast reads six of these).
    auto found = node.attrs.find(key);
    if (found == node.attrs.end()) return {fallback, fallback};
    if (const auto* list = std::get_if<std::vector<int64_t>>(&found->second); list != nullptr && list->size() >= 2)
      return {(*list)[0], (*list)[1]};
    std::vector<int64_t> values = node.attr_ints(key);
    return {values.at(0), values.size() > 1 ? values[1] : values[0]};
  };
  ConvShape s;
  s.batch = in[0];
  s.in_channels = in[1];
  s.in_h = in[2];
  s.in_w = in[3];
  s.out_channels = node.attr_int("out_channels");
  const std::array<int64_t, 2> kernel = pair("kernel", 1), stride = pair("stride", 1), padding = pair("padding", 0),
                               dilation = pair("dilation", 1);
  s.kernel_h = kernel[0];
  s.kernel_w = kernel[1];
  s.stride_h = stride[0];
  s.stride_w = stride[1];
  s.pad_h = padding[0];
  s.pad_w = padding[1];
  s.dilation_h = dilation[0];
  s.dilation_w = dilation[1];
  s.groups = node.attr_int("groups", 1);
  s.out_h = node.shape[2];
  s.out_w = node.shape[3];
  s.bias = node.attr_int("bias", 1) != 0;
  return s;
}

namespace {

// A blocked (not channels-last) mkldnn convolution: what its primitive choice reads.
struct BlockedConv {
  BlockedConv(const ConvShape& shape, const IsaConvRules& isa_rules, int64_t threads)
      : s(shape), rules(isa_rules), n(shape.batch), c(shape.in_channels), o(shape.out_channels), g(shape.groups) {
    icg = c / g;
    ocg = o / g;
    ks = s.kernel_h * s.kernel_w;
    w = o * icg * ks * kF32;
    nthr = std::max<int64_t>(threads, 1);
    blk = rules.block;
    strided = s.stride_h > 1 || s.stride_w > 1;
    one_by_one = s.kernel_h == 1 && s.kernel_w == 1;
    // The jit kernels reject a left padding wider than the output row (small maps, big kernels).
    pad_reject = s.pad_w > s.out_w || s.pad_h > s.out_h;
    kernel_within_input = s.kernel_h <= s.in_h && s.kernel_w <= s.in_w;
  }
  int64_t act_in(int64_t block) const { return n * round_up(c, block) * s.in_h * s.in_w * kF32; }
  int64_t act_out(int64_t block) const { return n * round_up(o, block) * s.out_h * s.out_w * kF32; }
  int64_t bias_pad(int64_t block) const { return s.bias && o % block != 0 ? round_up(o, block) * kF32 : 0; }
  Primitive gemm(bool weights_pass) const {
    const int64_t col = nthr * icg * ks * s.out_h * s.out_w * kF32;
    return Primitive{0, 0, 0, weights_pass ? scratchpad({col, 4 * w}) : scratchpad({col})};
  }

  const ConvShape& s;
  const IsaConvRules& rules;
  int64_t n, c, o, g, icg = 0, ocg = 0, ks = 0, w = 0, nthr = 1, blk = 0;
  bool strided = false, one_by_one = false, pad_reject = false, kernel_within_input = false;
};

// The primitives of the three passes (forward, backward data, backward weights) and their kernels.
struct BlockedChoice {
  Primitive fwd, bwd_data, bwd_weights;
  std::string names[3];
};

BlockedChoice depthwise_choice(const BlockedConv& k) {
  BlockedChoice choice;
  const int64_t wsz = round_up(k.g, k.blk) * k.ks * kF32;
  Primitive jit{k.act_in(k.blk), wsz, k.act_out(k.blk), 0};
  choice.fwd = jit;
  choice.fwd.scratch = scratchpad({k.bias_pad(k.blk)});
  choice.names[0] = "jit_dw";
  if (k.pad_reject) {
    choice.fwd = k.gemm(false);
    choice.names[0] = "gemm";
  }
  choice.bwd_data = jit;
  choice.names[1] = "jit_dw";
  if (k.s.kernel_h == 3 && k.s.kernel_w == 3 && k.s.in_h >= 3 && k.s.in_w >= 3) {
    choice.bwd_weights = jit;
    choice.names[2] = "jit_dw";
  } else {
    choice.bwd_weights = k.gemm(true);
    choice.names[2] = "gemm";
  }
  return choice;
}

BlockedChoice grouped_choice(const BlockedConv& k) {
  BlockedChoice choice;
  int64_t block = 0;
  for (int64_t candidate : k.rules.group_blocks)
    if (candidate > 0 && k.icg % candidate == 0 && k.ocg % candidate == 0) {
      block = candidate;
      break;
    }
  if (block == 0) {
    choice.fwd = k.gemm(false);
    choice.bwd_data = k.gemm(false);
    choice.bwd_weights = k.gemm(true);
    choice.names[0] = choice.names[1] = choice.names[2] = "gemm";
    return choice;
  }
  const int64_t wsz = k.g * round_up(k.ocg, block) * round_up(k.icg, block) * k.ks * kF32;
  Primitive jit{k.act_in(block), wsz, k.act_out(block), scratchpad({k.bias_pad(block)})};
  choice.fwd = k.pad_reject ? k.gemm(false) : jit;
  choice.bwd_data = k.pad_reject ? k.gemm(false) : Primitive{jit.src, jit.weights, jit.dst, 0};
  choice.names[0] = choice.names[1] = k.pad_reject ? "gemm" : "jit";
  if (block == 16) {
    choice.bwd_weights = jit;
    choice.names[2] = "jit";
  } else if (block == 8 && k.kernel_within_input) {
    choice.bwd_weights = Primitive{k.act_in(8), wsz, k.act_out(8), scratchpad({k.bias_pad(8)})};
    choice.names[2] = "jit:avx2";
  } else {
    choice.bwd_weights = k.gemm(true);
    choice.names[2] = "gemm";
  }
  return choice;
}

BlockedChoice one_by_one_choice(const BlockedConv& k) {
  BlockedChoice choice;
  const int64_t blk = k.blk;
  const int64_t wsz = round_up(k.o, blk) * round_up(k.c, blk) * kF32;
  const int64_t rtus = k.strided ? k.nthr * round_up(k.c, blk) * k.s.out_h * k.s.out_w * kF32 : 0;
  const int64_t rtus_weights =
      k.strided ? k.nthr * bcast_blocks(round_up(k.c, blk) / blk) * blk * k.s.out_h * k.s.out_w * kF32 : 0;
  choice.fwd = {k.act_in(blk), wsz, k.act_out(blk), scratchpad({rtus, k.bias_pad(blk)})};
  choice.bwd_data = {k.act_in(blk), wsz, k.act_out(blk), scratchpad({rtus})};
  choice.bwd_weights = {k.act_in(blk), wsz, k.act_out(blk), scratchpad({rtus_weights, k.bias_pad(blk)})};
  choice.names[0] = choice.names[1] = choice.names[2] = "jit_1x1";
  return choice;
}

BlockedChoice dense_choice(const BlockedConv& k) {
  BlockedChoice choice;
  const int64_t blk = k.blk, c = k.c, o = k.o, ks = k.ks;
  const int64_t wsz = round_up(o, blk) * round_up(c, blk) * ks * kF32;
  if (k.pad_reject) {
    choice.fwd = k.gemm(false);
    choice.bwd_data = k.gemm(false);
    choice.names[0] = choice.names[1] = "gemm";
  } else {
    // Fewer input channels than a block: the "first convolution" kernel reads the plain input.
    choice.fwd = c < k.rules.first_conv_channels
                     ? Primitive{0, round_up(o, blk) * c * ks * kF32, k.act_out(blk), scratchpad({k.bias_pad(blk)})}
                     : Primitive{k.act_in(blk), wsz, k.act_out(blk), scratchpad({k.bias_pad(blk)})};
    choice.bwd_data = {k.act_in(blk), wsz, k.act_out(blk), 0};
    choice.names[0] = choice.names[1] = "jit";
  }
  if (k.s.kernel_h > 14 || k.s.kernel_w > 14 || (k.rules.bwd_weights_kernel_within_input && !k.kernel_within_input)) {
    choice.bwd_weights = k.gemm(true);
    choice.names[2] = "gemm";
  } else if (c <= 3) {
    choice.bwd_weights = {0, round_up(o, blk) * c * ks * kF32, k.act_out(blk), scratchpad({k.bias_pad(blk)})};
    choice.names[2] = "jit";
  } else if (c % blk == 0 || c > blk) {
    choice.bwd_weights = {k.act_in(blk), wsz, k.act_out(blk), scratchpad({k.bias_pad(blk)})};
    choice.names[2] = "jit";
  } else if (c % 8 == 0 && k.kernel_within_input) {
    choice.bwd_weights = {k.act_in(8), round_up(o, 8) * round_up(c, 8) * ks * kF32, k.act_out(8),
                          scratchpad({k.bias_pad(8)})};
    choice.names[2] = "jit:avx2";
  } else {
    choice.bwd_weights = k.gemm(true);
    choice.names[2] = "gemm";
  }
  return choice;
}

// The steps of a blocked convolution's passes: each primitive's reorders, scratchpad and dst
// around it, then the dense tensors ATen hands back.
void write_blocked_recipe(const ConvShape& s, const BlockedChoice& choice, ConvRecipe& recipe) {
  const Primitive &fwd = choice.fwd, &bwd_data = choice.bwd_data, &bwd_weights = choice.bwd_weights;
  const int64_t icg = s.in_channels / s.groups, ks = s.kernel_h * s.kernel_w;
  const int64_t x = s.batch * s.in_channels * s.in_h * s.in_w * kF32;
  const int64_t y = s.batch * s.out_channels * s.out_h * s.out_w * kF32;
  const int64_t w = s.out_channels * icg * ks * kF32;
  const int64_t b = s.out_channels * kF32;
  recipe.backend = "mkldnn:" + choice.names[0] + "/" + (s.input_grad ? choice.names[1] : "-") + "/" + choice.names[2];
  for (size_t pass = 0; pass < 3; ++pass)
    recipe.impls[pass] = choice.names[pass] == "gemm" ? ConvImpl::Gemm : ConvImpl::Jit;

  RecipeWriter bw(recipe.backward);
  // convolution_backward makes a non-contiguous gradient (a view from a Concat's backward)
  // contiguous first and frees the copy at the end.
  const int32_t grad_copy = s.grad_copy ? bw.alloc(y) : -1;

  // Forward: scratchpad, reordered src and weights, the primitive's dst; then the dense output.
  RecipeWriter f(recipe.forward);
  int32_t scratch = fwd.scratch ? f.alloc(fwd.scratch) : -1;
  int32_t src = fwd.src ? f.alloc(fwd.src) : -1;
  int32_t weights = fwd.weights ? f.alloc(fwd.weights) : -1;
  int32_t dst = f.alloc(fwd.dst ? fwd.dst : y);
  if (weights >= 0) f.free(weights);
  if (src >= 0) f.free(src);
  if (scratch >= 0) f.free(scratch);
  f.alloc(y, kSlotOutput);
  f.free(dst);

  if (s.input_grad) {
    int32_t diff_dst = bwd_data.dst ? bw.alloc(bwd_data.dst) : -1;
    int32_t wei = bwd_data.weights ? bw.alloc(bwd_data.weights) : -1;
    int32_t diff_src = bw.alloc(bwd_data.src ? bwd_data.src : x);
    if (bwd_data.scratch) bw.free(bw.alloc(bwd_data.scratch));
    if (wei >= 0) bw.free(wei);
    if (diff_dst >= 0) bw.free(diff_dst);
    bw.alloc(x, kSlotGradInput);
    bw.free(diff_src);
  }
  int32_t diff_dst = bwd_weights.dst ? bw.alloc(bwd_weights.dst) : -1;
  int32_t src_w = bwd_weights.src ? bw.alloc(bwd_weights.src) : -1;
  int32_t diff_w = bw.alloc(bwd_weights.weights ? bwd_weights.weights : w);
  int32_t scratch_w = bwd_weights.scratch ? bw.alloc(bwd_weights.scratch) : -1;
  int32_t diff_b = s.bias ? bw.alloc(b) : -1;
  if (scratch_w >= 0) bw.free(scratch_w);
  if (src_w >= 0) bw.free(src_w);
  if (diff_dst >= 0) bw.free(diff_dst);
  if (s.bias) bw.alloc(b, kSlotGradBias);
  bw.alloc(w, kSlotGradWeight);
  bw.free(diff_w);
  if (diff_b >= 0) bw.free(diff_b);
  if (grad_copy >= 0) bw.free(grad_copy);
}

}  // namespace

ConvRecipe cpu_conv_recipe(const ConvShape& s, int64_t threads, hardware::CpuIsa isa) {
  ConvRecipe recipe;
  const IsaConvRules& rules = rules_for(isa);
  // ATen decides the backend before the layout: a channels-last input takes the slow path too.
  if (!cpu_conv_uses_mkldnn(s, threads)) {
    slow_recipe(s, recipe);
    return recipe;
  }
  if (s.channels_last) {
    if (rules.block == 16)
      channels_last_recipe(s, recipe);
    else
      channels_last_recipe_avx2(s, threads, recipe);
    return recipe;
  }
  const BlockedConv k(s, rules, threads);
  const bool depthwise = k.g > 1 && k.g == k.c && k.g == k.o;
  BlockedChoice choice = depthwise                       ? depthwise_choice(k)
                         : k.g > 1                       ? grouped_choice(k)
                         : k.one_by_one && !k.pad_reject ? one_by_one_choice(k)
                                                         : dense_choice(k);
  write_blocked_recipe(s, choice, recipe);
  return recipe;
}

}  // namespace dnncast::hardware
