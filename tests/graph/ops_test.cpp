// Every op of the registry, as a table of cases: output shape and cost (MACs, FLOPs forward and
// backward, parameters, bytes read and written, bytes saved for backward) against hand formulas
// written here from each op's header comment; then the bad-attribute and bad-shape cases with the
// error text they must give. One test (TorchAgrees) runs the same cases through PyTorch with
// Debian's /usr/bin/python3 — shapes, parameter counts, MACs from the profiler's FLOP counter for
// conv/linear/matmul/attention, and the bytes autograd really saves — in a single Python process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/op_registry.h"
#include "python_run.h"

namespace dnncast {
namespace {

using I = int64_t;
using Ints = std::vector<int64_t>;
using Attrs = std::map<std::string, AttrValue>;
constexpr int64_t F = 4;  // bytes of an f32
constexpr int64_t L = 8;  // bytes of an i64

struct Operand {
  TensorShape shape;
  DType dtype = DType::F32;
};
Operand f32(std::initializer_list<int64_t> dims) { return {TensorShape(dims), DType::F32}; }
Operand i64(std::initializer_list<int64_t> dims) { return {TensorShape(dims), DType::I64}; }

struct Expected {
  int64_t macs, flops_fwd, flops_bwd, params, bytes_read, bytes_written, saved_bytes;
};

struct OpCase {
  std::string label;
  std::string op;
  std::vector<Operand> inputs;
  Attrs attrs;
  TensorShape out;
  Expected cost;
  std::string kind;         // expected node_kind; "" = the op name
  std::string torch;        // a Python callable computing the same in PyTorch; "" = none
  bool torch_saved = true;  // false: PyTorch on CPU saves differently (see the case)
};

// Activations: per element {forward FLOPs, backward FLOPs}, all on a 2x3x4x4 tensor (96 elements)
// and each saving one tensor of its size (the output for ReLU/Sigmoid/Tanh, the input otherwise).
OpCase activation(const std::string& op, int64_t fwd, int64_t bwd, const std::string& torch) {
  const int64_t n = 2 * 3 * 4 * 4;
  return {op, op, {f32({2, 3, 4, 4})}, {}, {2, 3, 4, 4}, {0, fwd * n, bwd * n, 0, n * F, n * F, n * F}, "", torch};
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> list = {
        // label, op, inputs, attrs, output shape,
        //   {macs, flops_fwd, flops_bwd, params, bytes_read, bytes_written, saved_bytes}, kind, torch
        {"input", "Input", {}, {{"shape", Ints{2, 3, 8, 8}}}, {2, 3, 8, 8}, {0, 0, 0, 0, 0, 384 * F, 0}, "", ""},
        {"input_tokens",
         "Input",
         {},
         {{"shape", Ints{2, 16}}, {"dtype", std::string("i64")}},
         {2, 16},
         {0, 0, 0, 0, 0, 32 * L, 0},
         "",
         ""},

        // Conv2d: out = floor((H + 2p - d(k-1) - 1) / s) + 1; MACs = out elements * C_in/groups * kh * kw;
        // fwd 2 MACs + bias per output, bwd 4 MACs + bias per output; saves the input.
        {"conv_3x3_same",
         "Conv2d",
         {f32({2, 3, 8, 8})},
         {{"out_channels", I{4}}, {"kernel", Ints{3, 3}}, {"padding", Ints{1, 1}}},
         {2, 4, 8, 8},
         {512 * 3 * 9, 2 * 512 * 27 + 512, 4 * 512 * 27 + 512, 4 * 3 * 9 + 4, 384 * F + 112 * F, 512 * F, 384 * F},
         "Conv2d",
         "nn.Conv2d(3, 4, 3, padding=1)"},
        {"conv_strided_nobias",
         "Conv2d",
         {f32({1, 8, 9, 9})},
         {{"out_channels", I{16}}, {"kernel", I{3}}, {"stride", I{2}}, {"bias", I{0}}},
         {1, 16, 4, 4},
         {256 * 8 * 9, 2 * 256 * 72, 4 * 256 * 72, 16 * 8 * 9, 648 * F + 1152 * F, 256 * F, 648 * F},
         "Conv2d",
         "nn.Conv2d(8, 16, 3, stride=2, bias=False)"},
        {"conv_dilated",
         "Conv2d",
         {f32({1, 4, 10, 10})},
         {{"out_channels", I{6}}, {"kernel", I{3}}, {"padding", I{2}}, {"dilation", I{2}}},
         {1, 6, 10, 10},
         {600 * 4 * 9, 2 * 600 * 36 + 600, 4 * 600 * 36 + 600, 6 * 4 * 9 + 6, 400 * F + 222 * F, 600 * F, 400 * F},
         "Conv2d",
         "nn.Conv2d(4, 6, 3, padding=2, dilation=2)"},
        {"conv_grouped",
         "Conv2d",
         {f32({1, 8, 6, 6})},
         {{"out_channels", I{4}}, {"kernel", I{3}}, {"padding", I{1}}, {"groups", I{2}}},
         {1, 4, 6, 6},
         {144 * 4 * 9, 2 * 144 * 36 + 144, 4 * 144 * 36 + 144, 4 * 4 * 9 + 4, 288 * F + 148 * F, 144 * F, 288 * F},
         "GroupedConv2d",
         "nn.Conv2d(8, 4, 3, padding=1, groups=2)"},
        {"conv_depthwise",
         "Conv2d",
         {f32({2, 8, 7, 7})},
         {{"out_channels", I{8}}, {"kernel", I{3}}, {"stride", I{2}}, {"padding", I{1}}, {"groups", I{8}}},
         {2, 8, 4, 4},
         {256 * 9, 2 * 256 * 9 + 256, 4 * 256 * 9 + 256, 8 * 9 + 8, 784 * F + 80 * F, 256 * F, 784 * F},
         "DepthwiseConv2d",
         "nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)"},
        {"conv_1x7",
         "Conv2d",
         {f32({1, 4, 9, 9})},
         {{"out_channels", I{2}}, {"kernel", Ints{1, 7}}, {"padding", Ints{0, 3}}},
         {1, 2, 9, 9},
         {162 * 4 * 7, 2 * 162 * 28 + 162, 4 * 162 * 28 + 162, 2 * 4 * 7 + 2, 324 * F + 58 * F, 162 * F, 324 * F},
         "Conv2d",
         "nn.Conv2d(4, 2, (1, 7), padding=(0, 3))"},
        // ConvTranspose2d: out = (H-1)s - 2p + d(k-1) + output_padding + 1; MACs = input elements *
        // C_out/groups * kh * kw; weight C_in x C_out/groups x kh x kw.
        {"deconv",
         "ConvTranspose2d",
         {f32({1, 4, 5, 5})},
         {{"out_channels", I{2}}, {"kernel", I{3}}, {"stride", I{2}}, {"padding", I{1}}, {"output_padding", I{1}}},
         {1, 2, 10, 10},
         {100 * 2 * 9, 2 * 1800 + 200, 4 * 1800 + 200, 4 * 2 * 9 + 2, 100 * F + 74 * F, 200 * F, 100 * F},
         "",
         "nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)"},
        {"deconv_grouped",
         "ConvTranspose2d",
         {f32({1, 4, 3, 3})},
         {{"out_channels", I{6}}, {"kernel", I{2}}, {"stride", I{2}}, {"groups", I{2}}},
         {1, 6, 6, 6},
         {36 * 3 * 4, 2 * 432 + 216, 4 * 432 + 216, 4 * 3 * 4 + 6, 36 * F + 54 * F, 216 * F, 36 * F},
         "",
         "nn.ConvTranspose2d(4, 6, 2, stride=2, groups=2)"},

        // Linear: rows = numel / in; MACs = rows * in * out.
        {"linear_3d",
         "Linear",
         {f32({2, 5, 16})},
         {{"out_features", I{8}}},
         {2, 5, 8},
         {10 * 16 * 8, 2 * 1280 + 80, 4 * 1280 + 80, 16 * 8 + 8, 160 * F + 136 * F, 80 * F, 160 * F},
         "",
         "nn.Linear(16, 8)"},
        {"linear_nobias",
         "Linear",
         {f32({4, 16})},
         {{"out_features", I{32}}, {"bias", I{0}}},
         {4, 32},
         {4 * 16 * 32, 2 * 2048, 4 * 2048, 16 * 32, 64 * F + 512 * F, 128 * F, 64 * F},
         "",
         "nn.Linear(16, 32, bias=False)"},

        // BatchNorm2d: 7 / 9 FLOPs per element; params 2C; saves input + 2C floats.
        {"batchnorm",
         "BatchNorm2d",
         {f32({2, 4, 3, 3})},
         {},
         {2, 4, 3, 3},
         {0, 7 * 72, 9 * 72, 8, 72 * F + 16 * F, 72 * F, 72 * F + 8 * F},
         "",
         "nn.BatchNorm2d(4)"},

        activation("ReLU", 1, 1, "nn.ReLU()"),
        activation("ReLU6", 2, 2, "nn.ReLU6()"),
        activation("GELU", 8, 12, "nn.GELU()"),
        activation("SiLU", 5, 8, "nn.SiLU()"),
        activation("Sigmoid", 4, 3, "nn.Sigmoid()"),
        activation("Tanh", 5, 3, "nn.Tanh()"),
        activation("Hardswish", 4, 4, "nn.Hardswish()"),
        activation("Hardsigmoid", 3, 2, "nn.Hardsigmoid()"),

        // Pools: max fwd = window per output, bwd = 1 per output, saves input + i64 indices;
        // avg = window per output both ways, saves input; adaptive = 1 per input element both ways.
        {"maxpool_3s2p1",
         "MaxPool2d",
         {f32({1, 2, 7, 7})},
         {{"kernel", I{3}}, {"stride", I{2}}, {"padding", I{1}}},
         {1, 2, 4, 4},
         {0, 32 * 9, 32, 0, 98 * F, 32 * F, 98 * F + 32 * L},
         "",
         "nn.MaxPool2d(3, 2, 1)"},
        // ceil_mode keeps a last, partial window: floor((6-3)/2)+1 = 2, ceil gives 3.
        {"maxpool_ceil",
         "MaxPool2d",
         {f32({1, 1, 6, 6})},
         {{"kernel", I{3}}, {"stride", I{2}}, {"ceil_mode", I{1}}},
         {1, 1, 3, 3},
         {0, 9 * 9, 9, 0, 36 * F, 9 * F, 36 * F + 9 * L},
         "",
         "nn.MaxPool2d(3, 2, ceil_mode=True)"},
        // ... even when the window is wider than the input (squeezenet's last pool at 17 px):
        // floor((2-3+1)/2)+1 = 1, where without ceil_mode there is no window at all.
        {"maxpool_ceil_window_wider_than_input",
         "MaxPool2d",
         {f32({1, 1, 2, 2})},
         {{"kernel", I{3}}, {"stride", I{2}}, {"ceil_mode", I{1}}},
         {1, 1, 1, 1},
         {0, 9, 1, 0, 4 * F, 1 * F, 4 * F + 1 * L},
         "",
         "nn.MaxPool2d(3, 2, ceil_mode=True)"},
        // ... unless that window would start in the right padding: ceil((5+2-2)/2)+1 = 4 drops to 3.
        {"maxpool_ceil_dropped",
         "MaxPool2d",
         {f32({1, 1, 5, 5})},
         {{"kernel", I{2}}, {"stride", I{2}}, {"padding", I{1}}, {"ceil_mode", I{1}}},
         {1, 1, 3, 3},
         {0, 9 * 4, 9, 0, 25 * F, 9 * F, 25 * F + 9 * L},
         "",
         "nn.MaxPool2d(2, 2, padding=1, ceil_mode=True)"},
        {"maxpool_default_stride",
         "MaxPool2d",
         {f32({1, 3, 5, 5})},
         {{"kernel", I{2}}},
         {1, 3, 2, 2},
         {0, 12 * 4, 12, 0, 75 * F, 12 * F, 75 * F + 12 * L},
         "",
         "nn.MaxPool2d(2)"},
        {"avgpool",
         "AvgPool2d",
         {f32({1, 3, 8, 8})},
         {{"kernel", I{2}}, {"stride", I{2}}},
         {1, 3, 4, 4},
         {0, 48 * 4, 48 * 4, 0, 192 * F, 48 * F, 192 * F},
         "",
         "nn.AvgPool2d(2, 2)"},
        {"avgpool_ceil_padded",
         "AvgPool2d",
         {f32({1, 1, 8, 8})},
         {{"kernel", I{3}}, {"stride", I{2}}, {"padding", I{1}}, {"ceil_mode", I{1}}},
         {1, 1, 5, 5},
         {0, 25 * 9, 25 * 9, 0, 64 * F, 25 * F, 64 * F},
         "",
         "nn.AvgPool2d(3, 2, 1, ceil_mode=True)"},
        {"adaptive_avgpool",
         "AdaptiveAvgPool2d",
         {f32({2, 8, 7, 7})},
         {{"output_size", I{1}}},
         {2, 8, 1, 1},
         {0, 784, 784, 0, 784 * F, 16 * F, 784 * F},
         "",
         "nn.AdaptiveAvgPool2d(1)"},
        {"adaptive_avgpool_2x3",
         "AdaptiveAvgPool2d",
         {f32({1, 2, 6, 6})},
         {{"output_size", Ints{2, 3}}},
         {1, 2, 2, 3},
         {0, 72, 72, 0, 72 * F, 12 * F, 72 * F},
         "",
         "nn.AdaptiveAvgPool2d((2, 3))"},

        // Element-wise with broadcasting: Add 1 per output each way, saves nothing; Mul fwd 1, bwd 2,
        // saves both operands.
        {"add_broadcast",
         "Add",
         {f32({2, 4, 3, 3}), f32({4, 1, 1})},
         {},
         {2, 4, 3, 3},
         {0, 72, 72, 0, 72 * F + 4 * F, 72 * F, 0},
         "",
         "lambda a, b: a + b"},
        {"mul_broadcast",
         "Mul",
         {f32({2, 4, 3, 3}), f32({2, 4, 1, 1})},
         {},
         {2, 4, 3, 3},
         {0, 72, 144, 0, 72 * F + 8 * F, 72 * F, 72 * F + 8 * F},
         "",
         "lambda a, b: a * b"},
        {"concat",
         "Concat",
         {f32({2, 3, 4, 4}), f32({2, 5, 4, 4})},
         {},
         {2, 8, 4, 4},
         {0, 0, 0, 0, 96 * F + 160 * F, 256 * F, 0},
         "",
         "lambda a, b: torch.cat([a, b], 1)"},
        {"concat_last_axis",
         "Concat",
         {f32({2, 3}), f32({2, 1}), f32({2, 4})},
         {{"axis", I{-1}}},
         {2, 8},
         {0, 0, 0, 0, 16 * F, 16 * F, 0},
         "",
         "lambda a, b, c: torch.cat([a, b, c], -1)"},
        {"flatten", "Flatten", {f32({2, 3, 4, 4})}, {}, {2, 48}, {0, 0, 0, 0, 0, 0, 0}, "", "nn.Flatten()"},
        {"flatten_0_1",
         "Flatten",
         {f32({2, 3, 4})},
         {{"start_dim", I{0}}, {"end_dim", I{1}}},
         {6, 4},
         {0, 0, 0, 0, 0, 0, 0},
         "",
         "nn.Flatten(0, 1)"},
        // Dropout: fwd 2, bwd 1 per element, a 1-byte mask (CUDA's native_dropout; on CPU PyTorch keeps
        // a float noise tensor instead, so the saved bytes are not compared with the CPU run).
        {"dropout",
         "Dropout",
         {f32({2, 10})},
         {{"p", 0.5}},
         {2, 10},
         {0, 40, 20, 0, 20 * F, 20 * F + 20, 20},
         "",
         "nn.Dropout(0.5)",
         false},
        {"dropout_p0", "Dropout", {f32({2, 10})}, {{"p", 0.0}}, {2, 10}, {0, 0, 0, 0, 0, 0, 0}, "", "nn.Dropout(0.0)"},

        // Shape ops: views cost nothing; copies (ChannelShuffle, contiguous Permute) read and write the tensor.
        {"channel_shuffle",
         "ChannelShuffle",
         {f32({1, 4, 3, 3})},
         {{"groups", I{2}}},
         {1, 4, 3, 3},
         {0, 0, 0, 0, 36 * F, 36 * F, 0},
         "",
         "nn.ChannelShuffle(2)"},
        {"permute",
         "Permute",
         {f32({2, 3, 4, 5})},
         {{"dims", Ints{0, 2, 3, 1}}},
         {2, 4, 5, 3},
         {0, 0, 0, 0, 0, 0, 0},
         "",
         "lambda x: x.permute(0, 2, 3, 1)"},
        {"permute_contiguous",
         "Permute",
         {f32({2, 3, 4, 5})},
         {{"dims", Ints{0, -2, -1, 1}}, {"contiguous", I{1}}},
         {2, 4, 5, 3},
         {0, 0, 0, 0, 120 * F, 120 * F, 0},
         "",
         "lambda x: x.permute(0, 2, 3, 1).contiguous()"},
        {"transpose",
         "Transpose",
         {f32({2, 3, 4})},
         {{"dim0", I{1}}, {"dim1", I{-1}}},
         {2, 4, 3},
         {0, 0, 0, 0, 0, 0, 0},
         "",
         "lambda x: x.transpose(1, -1)"},
        {"reshape",
         "Reshape",
         {f32({2, 3, 4})},
         {{"shape", Ints{0, -1}}},
         {2, 12},
         {0, 0, 0, 0, 0, 0, 0},
         "",
         "lambda x: x.reshape(2, -1)"},
        {"reshape_split_heads",
         "Reshape",
         {f32({2, 6, 4})},
         {{"shape", Ints{0, 0, 2, -1}}},
         {2, 6, 2, 2},
         {0, 0, 0, 0, 0, 0, 0},
         "",
         "lambda x: x.reshape(2, 6, 2, -1)"},
        {"slice",
         "Slice",
         {f32({2, 3, 10})},
         {{"axis", I{-1}}, {"start", I{2}}, {"end", I{100}}},
         {2, 3, 8},
         {0, 0, 0, 0, 0, 0, 0},
         "",
         "lambda x: x[..., 2:100]"},
        // RepeatInterleave: a copy (read the input, write the output), backward sums the repeats; nothing saved
        // (Hugging Face's repeat_kv: expand and reshape).
        {"repeat_interleave_heads",
         "RepeatInterleave",
         {f32({2, 2, 5, 4})},
         {{"axis", I{1}}, {"repeats", I{3}}},
         {2, 6, 5, 4},
         {0, 0, 2 * 80, 0, 80 * F, 240 * F, 0},
         "",
         "lambda x: x[:, :, None].expand(2, 2, 3, 5, 4).reshape(2, 6, 5, 4)"},
        // TopKRouting: softmax in fp32 over 4 experts, the top 2, normalized: fwd 5 per logit, bwd 3; reads the logits,
        // writes the fp32 probabilities and the weights; saves the probabilities, the int64 indices and, normalized,
        // the top-k values and their row sums (DivBackward0). The hidden states give only the type.
        {"topk_routing",
         "TopKRouting",
         {f32({2, 5, 4}), f32({2, 5, 8})},
         {{"top_k", I{2}}, {"normalize", I{1}}},
         {2, 5, 2},
         {0, 5 * 40, 3 * 40, 0, 40 * F, 40 * F + 20 * F, 40 * F + 20 * L + 20 * F + 10 * F},
         "",
         "TopKRouting(2)"},
        // ExpertGather: 3 of the 10 tokens' rows (positions 8-10 of 10 x 2 slots: tokens 8, 9, 0); a copy each way,
        // nothing saved but the index (the node's buffer).
        {"expert_gather",
         "ExpertGather",
         {f32({2, 5, 8})},
         {{"start", I{8}}, {"count", I{3}}, {"top_k", I{2}}},
         {3, 8},
         {0, 0, 24, 0, 24 * F, 24 * F, 0},
         "",
         ""},
        // ExpertCombine: the expert's 3 rows weighted and added into the 10 x 8 sum: fwd 2 per row element, bwd 3;
        // saves the expert's output, its 3 weights and the weighted output (IndexAddBackward0's source).
        {"expert_combine",
         "ExpertCombine",
         {f32({3, 8}), f32({2, 5, 2}), f32({10, 8})},
         {{"start", I{8}}, {"count", I{3}}},
         {10, 8},
         {0, 2 * 24, 3 * 24, 0, 2 * 24 * F, 24 * F, 24 * F + 3 * F + 24 * F},
         "",
         ""},
        // RotaryEmbedding: 3 FLOPs per rotated element each way; reads x and the L x r cos and sin tables;
        // saves cos and sin.
        {"rotary_full",
         "RotaryEmbedding",
         {f32({2, 3, 5, 8})},
         {},
         {2, 3, 5, 8},
         {0, 3 * 240, 3 * 240, 0, 240 * F + 2 * 5 * 8 * F, 240 * F, 2 * 5 * 8 * F},
         "",
         "Rotary(8)"},
        {"rotary_partial",
         "RotaryEmbedding",
         {f32({2, 2, 6, 8})},
         {{"rotary_dim", I{4}}, {"theta", 500.0}},
         {2, 2, 6, 8},
         {0, 3 * 96, 3 * 96, 0, 192 * F + 2 * 6 * 4 * F, 192 * F, 2 * 6 * 4 * F},
         "",
         "Rotary(4, 500.0)"},
        {"slice_negative_start",
         "Slice",
         {f32({2, 5, 4})},
         {{"axis", I{1}}, {"start", I{-2}}, {"end", I{5}}},
         {2, 2, 4},
         {0, 0, 0, 0, 0, 0, 0},
         "",
         "lambda x: x[:, -2:5]"},

        // Norms: fwd 5 (+2 affine), bwd 7 (+2 affine) per element; saves input + mean and rstd per row.
        {"layernorm",
         "LayerNorm",
         {f32({2, 5, 8})},
         {{"normalized_shape", Ints{8}}},
         {2, 5, 8},
         {0, 7 * 80, 9 * 80, 2 * 8, 80 * F + 16 * F, 80 * F, 80 * F + 2 * 10 * F},
         "",
         "nn.LayerNorm(8)"},
        {"layernorm_2d_no_affine",
         "LayerNorm",
         {f32({2, 4, 8})},
         {{"normalized_shape", Ints{4, 8}}, {"elementwise_affine", I{0}}},
         {2, 4, 8},
         {0, 5 * 64, 7 * 64, 0, 64 * F, 64 * F, 64 * F + 2 * 2 * F},
         "",
         "nn.LayerNorm([4, 8], elementwise_affine=False)"},
        // RMSNorm: fwd 4, bwd 8 per element; a weight of the last dimension; saves the input, its squares,
        // x / rms and the per-row inverse rms (what torch 1.13's autograd keeps of the composite module).
        {"rmsnorm",
         "RMSNorm",
         {f32({2, 5, 8})},
         {{"eps", 1e-5}},
         {2, 5, 8},
         {0, 4 * 80, 8 * 80, 8, 80 * F + 8 * F, 80 * F, 3 * 80 * F + 10 * F},
         "",
         "RMSNorm(8)"},
        {"groupnorm",
         "GroupNorm",
         {f32({2, 4, 3, 3})},
         {{"groups", I{2}}},
         {2, 4, 3, 3},
         {0, 7 * 72, 9 * 72, 2 * 4, 72 * F + 8 * F, 72 * F, 72 * F + 2 * 4 * F},
         "",
         "nn.GroupNorm(2, 4)"},
        // LayerScale: fwd 1, bwd 2 per element; params = the scaled axis; saves the input.
        {"layer_scale_channels",
         "LayerScale",
         {f32({2, 4, 3, 3})},
         {},
         {2, 4, 3, 3},
         {0, 72, 144, 4, 72 * F + 4 * F, 72 * F, 72 * F},
         "",
         "LayerScale((4, 1, 1))"},
        {"layer_scale_last_axis",
         "LayerScale",
         {f32({2, 5, 8})},
         {{"axis", I{-1}}},
         {2, 5, 8},
         {0, 80, 160, 8, 80 * F + 8 * F, 80 * F, 80 * F},
         "",
         "LayerScale((8,))"},

        // MatMul: MACs = batch * m * k * n, fwd 2 MACs, bwd 4 MACs; saves both operands.
        {"matmul",
         "MatMul",
         {f32({2, 3, 4, 5}), f32({5, 6})},
         {},
         {2, 3, 4, 6},
         {2 * 3 * 4 * 5 * 6, 2 * 720, 4 * 720, 0, 150 * F, 144 * F, 150 * F},
         "",
         "torch.matmul"},
        // Broadcast batch dims: torch.matmul expands both operands to the 2x3 batch and saves those copies;
        // with one plain matrix it folds the batch into rows instead and saves the operands as given.
        {"matmul_broadcast",
         "MatMul",
         {f32({2, 1, 4, 5}), f32({3, 5, 2})},
         {},
         {2, 3, 4, 2},
         {2 * 3 * 4 * 5 * 2, 2 * 240, 4 * 240, 0, 70 * F, 48 * F, (6 * 4 * 5 + 6 * 5 * 2) * F},
         "",
         "torch.matmul"},
        {"matmul_batched",
         "MatMul",
         {f32({2, 3, 4, 5}), f32({2, 3, 5, 2})},
         {},
         {2, 3, 4, 2},
         {2 * 3 * 4 * 5 * 2, 2 * 240, 4 * 240, 0, 180 * F, 48 * F, 180 * F},
         "",
         "torch.matmul"},
        {"matmul_matrix_by_batch",
         "MatMul",
         {f32({4, 5}), f32({3, 5, 2})},
         {},
         {3, 4, 2},
         {3 * 4 * 5 * 2, 2 * 120, 4 * 120, 0, 50 * F, 24 * F, 50 * F},
         "",
         "torch.matmul"},
        {"softmax",
         "Softmax",
         {f32({2, 3, 5})},
         {},
         {2, 3, 5},
         {0, 5 * 30, 4 * 30, 0, 30 * F, 30 * F, 30 * F},
         "",
         "nn.Softmax(-1)"},
        {"softmax_axis1",
         "Softmax",
         {f32({2, 3, 5})},
         {{"axis", I{1}}},
         {2, 3, 5},
         {0, 5 * 30, 4 * 30, 0, 30 * F, 30 * F, 30 * F},
         "",
         "nn.Softmax(1)"},
        // Embedding: a gather; bwd 1 per output element; saves the indices.
        {"embedding",
         "Embedding",
         {i64({2, 7})},
         {{"num_embeddings", I{100}}, {"embedding_dim", I{16}}},
         {2, 7, 16},
         {0, 0, 224, 100 * 16, 14 * L + 224 * F, 224 * F, 14 * L},
         "",
         "nn.Embedding(100, 16)"},
        // Attention, scores = N*h*L*S = 2*3*5*6 = 180: MACs = scores * (d + dv); fwd 2 MACs + N*h*L*d
        // (scaling q) + 5 per score; bwd 4 MACs + N*h*L*d + 4 per score; saves scaled q, k, v, probabilities.
        {"sdpa",
         "ScaledDotProductAttention",
         {f32({2, 3, 5, 4}), f32({2, 3, 6, 4}), f32({2, 3, 6, 8})},
         {},
         {2, 3, 5, 8},
         {180 * (4 + 8), 2 * 2160 + 120 + 5 * 180, 4 * 2160 + 120 + 4 * 180, 0, (120 + 144 + 288) * F + 2 * 180 * F,
          240 * F + 2 * 180 * F, (120 + 144 + 288 + 180) * F},
         "",
         "lambda q, k, v: F._scaled_dot_product_attention(q, k, v, None, 0.0, False, False)[0]"},
        // Self-attention, causal, dropout: MACs = 2*N*h*L*L*d = 2*1*2*4*4*8; +1 per score (mask),
        // +2 fwd / +1 bwd per score (dropout), saves also the 1-byte mask and the dropped probabilities
        // (CPU PyTorch keeps float noise instead of the mask: saved bytes not compared).
        {"sdpa_causal_dropout",
         "ScaledDotProductAttention",
         {f32({1, 2, 4, 8}), f32({1, 2, 4, 8}), f32({1, 2, 4, 8})},
         {{"causal", I{1}}, {"dropout_p", 0.1}},
         {1, 2, 4, 8},
         {2 * 1 * 2 * 4 * 4 * 8, 2 * 512 + 64 + 5 * 32 + 32 + 2 * 32, 4 * 512 + 64 + 4 * 32 + 32, 0,
          3 * 64 * F + 3 * 32 * F, 64 * F + 3 * 32 * F + 32, 3 * 64 * F + 32 * F + 32 + 32 * F},
         "",
         "lambda q, k, v: F._scaled_dot_product_attention(q, k, v, None, 0.1, False, True)[0]",
         false},
        // Learnable tables: position (length x D, reads the first L rows), class token (D).
        {"position_embedding",
         "PositionEmbedding",
         {f32({2, 6, 4})},
         {{"length", I{10}}},
         {2, 6, 4},
         {0, 48, 48, 10 * 4, 48 * F + 6 * 4 * F, 48 * F, 0},
         "",
         "PositionEmbedding(10, 4)"},
        {"class_token",
         "ClassToken",
         {f32({2, 6, 4})},
         {},
         {2, 7, 4},
         {0, 0, 2 * 4, 4, 48 * F + 4 * F, 56 * F, 0},
         "",
         "ClassToken(4)"},

        // Losses (scalar output): cross-entropy fwd 5 per logit + 1 per row, bwd 4 per logit + 1 per row,
        // saves the log-softmax and a total weight; MSE 3 per element each way, saves its inputs.
        {"cross_entropy",
         "CrossEntropyLoss",
         {f32({4, 10})},
         {},
         {},
         {0, 5 * 40 + 4, 4 * 40 + 4, 0, 40 * F, 40 * F + F, 40 * F + F},
         "",
         "lambda x: F.cross_entropy(x, ignore(torch.zeros(4, dtype=torch.long)))"},
        {"cross_entropy_spatial",
         "CrossEntropyLoss",
         {f32({2, 5, 3})},
         {},
         {},
         {0, 5 * 30 + 6, 4 * 30 + 6, 0, 30 * F, 30 * F + F, 30 * F + F},
         "",
         "lambda x: F.cross_entropy(x, ignore(torch.zeros(2, 3, dtype=torch.long)))"},
        {"mse",
         "MSELoss",
         {f32({2, 8})},
         {},
         {},
         {0, 48, 48, 0, 2 * 16 * F, F, 16 * F},
         "",
         "lambda x: F.mse_loss(x, ignore(torch.zeros_like(x)))"},
        {"mse_with_target",
         "MSELoss",
         {f32({2, 8}), f32({2, 8})},
         {},
         {},
         {0, 48, 48, 0, 2 * 16 * F, F, 32 * F},
         "",
         "nn.MSELoss()"},
    };
    return list;
  }();
  return cases;
}

// One graph: an Input per operand, then the node under test named "x".
Graph build_case(const std::string& op, const std::vector<Operand>& inputs, const Attrs& attrs) {
  GraphBuilder b("case", "test");
  std::vector<int> producers;
  for (size_t index = 0; index < inputs.size(); ++index)
    producers.push_back(b.input(inputs[index].shape, inputs[index].dtype, "in" + std::to_string(index)));
  if (op == "Input") {
    b.op("x", op, {}, attrs);
  } else {
    b.op("x", op, producers, attrs);
  }
  return b.finish();
}

TEST(Ops, ShapeAndCostFollowHandFormulas) {
  for (const OpCase& c : op_cases()) {
    SCOPED_TRACE(c.label);
    Graph graph = build_case(c.op, c.inputs, c.attrs);
    int node = graph.find("x");
    ASSERT_GE(node, 0);
    EXPECT_EQ(graph.node(node).shape, c.out) << graph.node(node).shape.to_string();
    OpCost cost = node_cost(graph, node);
    EXPECT_EQ(cost.macs, c.cost.macs);
    EXPECT_EQ(cost.flops_fwd, c.cost.flops_fwd);
    EXPECT_EQ(cost.flops_bwd, c.cost.flops_bwd);
    EXPECT_EQ(cost.params, c.cost.params);
    EXPECT_EQ(cost.bytes_read, c.cost.bytes_read);
    EXPECT_EQ(cost.bytes_written, c.cost.bytes_written);
    EXPECT_EQ(cost.saved_bytes(), c.cost.saved_bytes);
    EXPECT_EQ(node_kind(graph, node), c.kind.empty() ? c.op : c.kind);
  }
}

TEST(Ops, EveryRegisteredOpHasACase) {
  std::set<std::string> covered;
  for (const OpCase& c : op_cases()) covered.insert(c.op);
  for (const std::string& name : OpRegistry::instance().names())
    EXPECT_TRUE(covered.count(name)) << "op " << name << " has no case in op_cases()";
}

TEST(Ops, OutputTypesAndSavedKinds) {
  Graph tokens = build_case("Embedding", {i64({2, 3})}, {{"num_embeddings", I{10}}, {"embedding_dim", I{4}}});
  EXPECT_EQ(tokens.node(tokens.find("x")).dtype, DType::F32);
  EXPECT_EQ(tokens.node(tokens.find("in0")).dtype, DType::I64);
  Graph loss = build_case("CrossEntropyLoss", {f32({4, 10})}, {});
  EXPECT_EQ(loss.node(loss.find("x")).shape.rank(), 0);
  // ReLU keeps its output, GELU its input (what autograd saves).
  Graph relu = build_case("ReLU", {f32({2, 4})}, {});
  EXPECT_EQ(node_cost(relu, relu.find("x")).saved.at(0).kind, SavedTensor::Kind::Output);
  Graph gelu = build_case("GELU", {f32({2, 4})}, {});
  EXPECT_EQ(node_cost(gelu, gelu.find("x")).saved.at(0).kind, SavedTensor::Kind::Input);
  // BatchNorm's running statistics are buffers, not parameters: 2C + num_batches_tracked.
  Graph bn = build_case("BatchNorm2d", {f32({2, 4, 3, 3})}, {});
  EXPECT_EQ(node_cost(bn, bn.find("x")).buffers, 2 * 4 + 1);
}

// ---- errors: bad attributes and shapes, each naming the node ----------------------------------

struct ErrorCase {
  std::string label;
  std::string op;
  std::vector<Operand> inputs;
  Attrs attrs;
  std::string message;  // must appear after "node 'x' (<op>): "
};

const std::vector<ErrorCase>& error_cases() {
  static const std::vector<ErrorCase> cases = {
      {"conv_groups",
       "Conv2d",
       {f32({1, 6, 4, 4})},
       {{"out_channels", I{4}}, {"kernel", I{1}}, {"groups", I{4}}},
       "input channels 6 not divisible by groups 4"},
      {"conv_rank",
       "Conv2d",
       {f32({2, 3})},
       {{"out_channels", I{4}}, {"kernel", I{1}}},
       "expected rank 4 input, got 2"},
      {"conv_kernel_too_big",
       "Conv2d",
       {f32({1, 3, 3, 3})},
       {{"out_channels", I{4}}, {"kernel", I{5}}},
       "kernel 5x5 larger than the padded input 3x3 of 1x3x3x3"},
      // With a stride, C++ truncation made (2 - 3) / 2 + 1 one output; PyTorch refuses it (this is
      // inception_v3 at 64 px, whose 3x3 stride-2 layers meet a 2x2 map).
      {"conv_strided_kernel_too_big",
       "Conv2d",
       {f32({1, 3, 2, 2})},
       {{"out_channels", I{4}}, {"kernel", I{3}}, {"stride", I{2}}},
       "kernel 3x3 larger than the padded input 2x2"},
      {"pool_strided_kernel_too_big",
       "MaxPool2d",
       {f32({1, 3, 2, 2})},
       {{"kernel", I{3}}, {"stride", I{2}}},
       "pooling window 3x3 larger than the padded input 2x2"},
      {"dilated_window_too_big",
       "MaxPool2d",
       {f32({1, 3, 4, 4})},
       {{"kernel", I{3}}, {"dilation", I{2}}},
       "pooling window 5x5 larger than the padded input 4x4"},
      {"conv_kernel_three_values",
       "Conv2d",
       {f32({1, 3, 8, 8})},
       {{"out_channels", I{4}}, {"kernel", Ints{3, 3, 3}}},
       "attribute 'kernel' needs 1 or 2 values"},
      {"deconv_output_padding",
       "ConvTranspose2d",
       {f32({1, 3, 4, 4})},
       {{"out_channels", I{2}}, {"kernel", I{3}}, {"stride", I{2}}, {"output_padding", I{2}}},
       "output_padding must be smaller than stride or dilation"},
      {"pool_padding",
       "MaxPool2d",
       {f32({1, 3, 8, 8})},
       {{"kernel", I{2}}, {"padding", I{2}}},
       "padding must be at most half the kernel size"},
      {"linear_rank", "Linear", {f32({8})}, {{"out_features", I{4}}}, "expected an input of rank 2 or more"},
      {"linear_tied_not_text",
       "Linear",
       {f32({2, 8})},
       {{"out_features", I{4}}, {"tied_to", I{3}}},
       "attribute 'tied_to' must be a string"},
      {"add_channels", "Add", {f32({2, 8, 4, 4}), f32({2, 16, 4, 4})}, {}, "cannot broadcast 2x8x4x4 with 2x16x4x4"},
      {"concat_mismatch", "Concat", {f32({2, 3, 4, 4}), f32({2, 3, 5, 4})}, {}, "does not match"},
      {"dropout_p", "Dropout", {f32({2, 4})}, {{"p", 1.5}}, "dropout probability must be in [0, 1]"},
      {"reshape_two_unknowns", "Reshape", {f32({2, 3, 4})}, {{"shape", Ints{-1, -1}}}, "more than one -1"},
      {"reshape_count",
       "Reshape",
       {f32({2, 3, 4})},
       {{"shape", Ints{5, 5}}},
       "cannot reshape 2x3x4 (24 elements) into 5x5"},
      {"reshape_indivisible", "Reshape", {f32({2, 3, 4})}, {{"shape", Ints{5, -1}}}, "cannot reshape 2x3x4"},
      {"permute_repeat", "Permute", {f32({2, 3, 4})}, {{"dims", Ints{0, 0, 1}}}, "repeated in the permutation"},
      {"permute_length", "Permute", {f32({2, 3, 4})}, {{"dims", Ints{0, 1}}}, "has 2 axes, input 2x3x4 has 3"},
      {"transpose_range",
       "Transpose",
       {f32({2, 3, 4})},
       {{"dim0", I{0}}, {"dim1", I{5}}},
       "axis 5 out of range for rank 3"},
      {"slice_empty",
       "Slice",
       {f32({2, 3, 4})},
       {{"axis", I{1}}, {"start", I{3}}, {"end", I{3}}},
       "empty or out-of-range slice"},
      {"shuffle_groups",
       "ChannelShuffle",
       {f32({1, 6, 2, 2})},
       {{"groups", I{4}}},
       "channels 6 not divisible by groups 4"},
      {"layernorm_shape",
       "LayerNorm",
       {f32({2, 5, 8})},
       {{"normalized_shape", Ints{5}}},
       "does not match the last dimensions of the input 2x5x8"},
      {"groupnorm_groups",
       "GroupNorm",
       {f32({2, 6, 3, 3})},
       {{"groups", I{4}}},
       "channels 6 not divisible by groups 4"},
      {"rotary_odd", "RotaryEmbedding", {f32({2, 2, 5, 8})}, {{"rotary_dim", I{3}}}, "rotary_dim 3 must be even"},
      {"rotary_rank", "RotaryEmbedding", {f32({2, 5, 8})}, {}, "rank 4"},
      {"repeat_zero",
       "RepeatInterleave",
       {f32({2, 2, 5, 4})},
       {{"axis", I{1}}, {"repeats", I{0}}},
       "repeats must be positive"},
      {"layer_scale_axis", "LayerScale", {f32({2, 5, 8})}, {{"axis", I{3}}}, "axis 3 out of range for rank 3"},
      {"matmul_inner", "MatMul", {f32({2, 3}), f32({4, 5})}, {}, "inner dimensions differ: 2x3 @ 4x5"},
      {"matmul_batch", "MatMul", {f32({2, 3, 4}), f32({3, 4, 5})}, {}, "cannot broadcast"},
      {"softmax_axis", "Softmax", {f32({2, 3})}, {{"axis", I{2}}}, "axis 2 out of range for rank 2"},
      {"embedding_float_input",
       "Embedding",
       {f32({2, 7})},
       {{"num_embeddings", I{10}}, {"embedding_dim", I{4}}},
       "expected i64 indices, got f32 input"},
      {"sdpa_head_size",
       "ScaledDotProductAttention",
       {f32({1, 2, 4, 8}), f32({1, 2, 4, 16}), f32({1, 2, 4, 16})},
       {},
       "differ in head size"},
      {"sdpa_length",
       "ScaledDotProductAttention",
       {f32({1, 2, 4, 8}), f32({1, 2, 5, 8}), f32({1, 2, 4, 8})},
       {},
       "differ in length"},
      {"sdpa_heads",
       "ScaledDotProductAttention",
       {f32({1, 2, 4, 8}), f32({1, 3, 4, 8}), f32({1, 3, 4, 8})},
       {},
       "must agree in batch and heads"},
      {"position_too_long",
       "PositionEmbedding",
       {f32({1, 12, 4})},
       {{"length", I{10}}},
       "sequence of 12 positions exceeds the table's 10"},
      {"class_token_rank", "ClassToken", {f32({2, 4})}, {}, "expected rank 3 input, got 2"},
      {"cross_entropy_rank", "CrossEntropyLoss", {f32({4})}, {}, "expected logits N x C, got 4"},
      {"mse_shapes", "MSELoss", {f32({2, 8}), f32({2, 9})}, {}, "differ in shape"},
      {"input_shape", "Input", {}, {{"shape", Ints{2, 0}}}, "non-positive dimension"},
      {"input_dtype", "Input", {}, {{"shape", Ints{2}}, {"dtype", std::string("f8")}}, "unknown dtype 'f8'"},
      // Products past int64 or past the 2^40-element bound (core/checked.h), found by a bad-input campaign.
      {"reshape_product_wraps",
       "Reshape",
       {f32({1, 8})},
       {{"shape", Ints{-1, 65536, 65536, 65536, 65536}}},
       "cannot reshape 1x8 (8 elements) into -1x65536x65536x65536x65536"},
      {"broadcast_past_bound",
       "Add",
       {f32({1 << 30, 1}), f32({1, 1 << 30})},
       {},
       "output shape 1073741824x1073741824 has more than 1099511627776 elements"},
      {"embedding_params_past_bound",
       "Embedding",
       {i64({1, 4})},
       {{"num_embeddings", I{2147483647}}, {"embedding_dim", I{2147483647}}},
       "4611686014132420609 parameters, more than 1099511627776"},
      {"linear_output_past_bound",
       "Linear",
       {f32({1 << 20, 1 << 20})},
       {{"out_features", I{1 << 30}}},
       "output shape 1048576x1073741824 has more than"},
      {"pool_flops_overflow",
       "AvgPool2d",
       {f32({1, 1, 1 << 20, 1 << 20})},
       {{"kernel", I{1 << 19}}, {"stride", I{1}}},
       "overflows int64"},
      {"dtype_with_newline",
       "Input",
       {},
       {{"shape", Ints{2}}, {"dtype", std::string("f32\nx")}},
       "unknown dtype 'f32\\nx'"},
  };
  return cases;
}

TEST(Ops, BadAttributesAndShapesNameTheNode) {
  for (const ErrorCase& c : error_cases()) {
    SCOPED_TRACE(c.label);
    try {
      build_case(c.op, c.inputs, c.attrs);
      ADD_FAILURE() << "no error";
    } catch (const InputError& error) {
      std::string text = error.what();
      EXPECT_EQ(text.rfind("node 'x' (" + c.op + "): ", 0), 0u) << text;
      EXPECT_NE(text.find(c.message), std::string::npos) << text;
    }
  }
}

// ---- validation through Graph::from_named -------------------------------------------------------

Graph::NamedNode named(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                       Attrs attrs = {}) {
  Graph::NamedNode item;
  item.node.name = name;
  item.node.op = op;
  item.node.attrs = std::move(attrs);
  item.input_names = std::move(inputs);
  return item;
}

Graph::NamedNode image_input(const std::string& name = "image") {
  return named(name, "Input", {}, {{"shape", Ints{1, 3, 8, 8}}});
}

Attrs conv_attrs(int64_t channels) { return {{"out_channels", channels}, {"kernel", I{3}}, {"padding", I{1}}}; }

std::string from_named_error(std::vector<Graph::NamedNode> nodes) {
  try {
    Graph::from_named("g", "test", std::move(nodes));
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Validation, AcceptsNodesInAnyOrder) {
  Graph graph = Graph::from_named(
      "g", "test", {named("relu", "ReLU", {"conv"}), named("conv", "Conv2d", {"image"}, conv_attrs(4)), image_input()});
  ASSERT_EQ(graph.size(), 3);
  EXPECT_EQ(graph.node(0).name, "image");
  EXPECT_EQ(graph.node(2).name, "relu");
  EXPECT_EQ(graph.node(2).shape, (TensorShape{1, 4, 8, 8}));
}

TEST(Validation, CycleNamesANodeOnIt) {
  std::string text = from_named_error({image_input(), named("a", "Add", {"image", "b"}), named("b", "ReLU", {"a"})});
  EXPECT_NE(text.find("part of a cycle"), std::string::npos) << text;
  EXPECT_TRUE(text.find("node 'a' (Add)") != std::string::npos || text.find("node 'b' (ReLU)") != std::string::npos)
      << text;
}

TEST(Validation, DanglingInputNamesTheNodeAndTheMissingName) {
  std::string text = from_named_error({image_input(), named("relu", "ReLU", {"imgae"})});
  EXPECT_NE(text.find("node 'relu' (ReLU): input 'imgae' is not a node of the graph"), std::string::npos) << text;
}

TEST(Validation, ShapeMismatchNamesTheNode) {
  std::string text =
      from_named_error({image_input(), named("c8", "Conv2d", {"image"}, conv_attrs(8)),
                        named("c16", "Conv2d", {"image"}, conv_attrs(16)), named("sum", "Add", {"c8", "c16"})});
  EXPECT_NE(text.find("node 'sum' (Add): cannot broadcast 1x8x8x8 with 1x16x8x8"), std::string::npos) << text;
}

TEST(Validation, UnknownOpNamesTheNodeAndListsEveryKnownOp) {
  std::string text = from_named_error({image_input(), named("c", "Conv3d", {"image"}, conv_attrs(8))});
  EXPECT_NE(text.find("node 'c'"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown op 'Conv3d'"), std::string::npos) << text;
  for (const std::string& op : OpRegistry::instance().names()) EXPECT_NE(text.find(op), std::string::npos) << op;
}

TEST(Validation, MissingAttributeNamesTheNodeAndAttribute) {
  std::string text = from_named_error({image_input(), named("c", "Conv2d", {"image"}, {{"out_channels", I{8}}})});
  EXPECT_NE(text.find("node 'c' (Conv2d): missing attribute 'kernel'"), std::string::npos) << text;
  text = from_named_error({image_input(), named("ln", "LayerNorm", {"image"})});
  EXPECT_NE(text.find("node 'ln' (LayerNorm): missing attribute 'normalized_shape'"), std::string::npos) << text;
}

TEST(Validation, WrongInputCountNamesTheNode) {
  std::string text = from_named_error({image_input(), named("s", "Add", {"image"})});
  EXPECT_NE(text.find("node 's' (Add): expected 2 inputs, got 1"), std::string::npos) << text;
  text = from_named_error({image_input(), named("r", "ReLU", {"image", "image"})});
  EXPECT_NE(text.find("node 'r' (ReLU): expected 1 inputs, got 2"), std::string::npos) << text;
  text = from_named_error({image_input(), named("a", "ScaledDotProductAttention", {"image", "image"})});
  EXPECT_NE(text.find("node 'a' (ScaledDotProductAttention): expected 3 inputs, got 2"), std::string::npos) << text;
}

TEST(Validation, NodeKindSeparatesDepthwiseAndGroupedConvolutions) {
  Attrs depthwise = conv_attrs(3);
  depthwise["groups"] = I{3};
  Attrs grouped = conv_attrs(6);
  grouped["groups"] = I{3};  // on 6 channels: 3 groups of 2
  // groups == input channels is depthwise even with a channel multiplier (3 -> 6 channels).
  Attrs multiplier = conv_attrs(6);
  multiplier["groups"] = I{3};
  Graph graph =
      Graph::from_named("g", "test",
                        {image_input(), named("dw", "Conv2d", {"image"}, depthwise),
                         named("dw2", "Conv2d", {"image"}, multiplier), named("c6", "Conv2d", {"image"}, conv_attrs(6)),
                         named("gc", "Conv2d", {"c6"}, grouped), named("dense", "Conv2d", {"image"}, conv_attrs(4))});
  EXPECT_EQ(node_kind(graph, graph.find("dw2")), "DepthwiseConv2d");
  EXPECT_EQ(node_kind(graph, graph.find("dw")), "DepthwiseConv2d");
  EXPECT_EQ(node_kind(graph, graph.find("gc")), "GroupedConv2d");
  EXPECT_EQ(node_kind(graph, graph.find("dense")), "Conv2d");
  EXPECT_EQ(node_kind(graph, graph.find("image")), "Input");
}

// GPT-2's LM head shares the token table: its weight counts once, in the Embedding.
std::vector<Graph::NamedNode> tied_lm(const std::string& tied_to, int64_t vocab) {
  return {named("ids", "Input", {}, {{"shape", Ints{2, 5}}, {"dtype", std::string("i64")}}),
          named("wte", "Embedding", {"ids"}, {{"num_embeddings", I{50}}, {"embedding_dim", I{8}}}),
          named("ln", "LayerNorm", {"wte"}, {{"normalized_shape", Ints{8}}}),
          named("lm_head", "Linear", {"ln"}, {{"out_features", vocab}, {"bias", I{0}}, {"tied_to", tied_to}})};
}

TEST(Validation, TiedLinearSharesTheEmbeddingWeight) {
  Graph graph = Graph::from_named("lm", "test", tied_lm("wte", 50));
  OpCost head = node_cost(graph, graph.find("lm_head"));
  EXPECT_EQ(head.params, 0);
  EXPECT_EQ(head.macs, 10 * 8 * 50);
  EXPECT_EQ(head.bytes_read, 10 * 8 * F + 50 * 8 * F);  // the shared weight is still read
  EXPECT_EQ(node_cost(graph, graph.find("wte")).params, 50 * 8);

  std::string text = from_named_error(tied_lm("ln", 50));
  EXPECT_NE(text.find("node 'lm_head' (Linear): tied_to 'ln' is not an Embedding node"), std::string::npos) << text;
  text = from_named_error(tied_lm("nowhere", 50));
  EXPECT_NE(text.find("node 'lm_head' (Linear): tied_to 'nowhere' is not an Embedding node"), std::string::npos)
      << text;
  text = from_named_error(tied_lm("wte", 40));
  EXPECT_NE(text.find("node 'lm_head' (Linear): tied_to 'wte' has a 50 x 8 table, this layer's weight is 40 x 8"),
            std::string::npos)
      << text;
}

// ---- the same cases in PyTorch --------------------------------------------------------------------

// Python helpers: the tensors autograd saves (deduplicated by storage, parameters, buffers and
// targets left out), and MACs as half the profiler's FLOPs of the matrix-product kernels.
const char* kTorchPreamble = R"(
import sys, torch
from torch import nn
import torch.nn.functional as F
from torch.profiler import profile

IGNORED = set()
def ignore(tensor):
    IGNORED.add(tensor.data_ptr())
    return tensor

class LayerScale(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(shape))
    def forward(self, x):
        return self.gamma * x

class RMSNorm(nn.Module):
    def __init__(self, width, eps=1e-5):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(width)), eps
    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

class TopKRouting(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
    def forward(self, logits, hidden):
        weights = torch.topk(F.softmax(logits, dim=-1, dtype=torch.float), self.k, dim=-1).values
        return (weights / weights.sum(-1, keepdim=True)).to(hidden.dtype)

class Rotary(nn.Module):
    def __init__(self, rotary_dim, theta=10000.0):
        super().__init__()
        self.rotary_dim, self.theta = rotary_dim, theta
    def forward(self, x):
        r, half = self.rotary_dim, self.rotary_dim // 2
        angles = torch.outer(torch.arange(x.shape[-2]).float(), self.theta ** (-torch.arange(0, r, 2).float() / r))
        angles = torch.cat([angles, angles], dim=-1)
        part = x[..., :r]
        turned = torch.cat([-part[..., half:], part[..., :half]], dim=-1)
        return torch.cat([part * angles.cos() + turned * angles.sin(), x[..., r:]], dim=-1)

class PositionEmbedding(nn.Module):
    def __init__(self, length, dim):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(1, length, dim))
    def forward(self, x):
        return x + self.table[:, :x.shape[1]]

class ClassToken(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.token = nn.Parameter(torch.zeros(1, 1, dim))
    def forward(self, x):
        return torch.cat([self.token.expand(x.shape[0], -1, -1), x], dim=1)

def saved_bytes(output, exclude):
    sizes, seen, stack = {}, set(), [output.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        for name in dir(fn):
            if not name.startswith("_saved_"):
                continue
            try:
                value = getattr(fn, name)
            except Exception:
                continue
            for tensor in value if isinstance(value, (tuple, list)) else [value]:
                if isinstance(tensor, torch.Tensor) and tensor.data_ptr() not in exclude:
                    size = tensor.numel() * tensor.element_size()
                    sizes[tensor.data_ptr()] = max(sizes.get(tensor.data_ptr(), 0), size)
        stack.extend(next_fn for next_fn, _ in fn.next_functions)
    return sum(sizes.values())

MATRIX_KERNELS = {"aten::conv2d", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}

def case(label, fn, operands):
    IGNORED.clear()
    torch.manual_seed(0)
    inputs = [torch.randint(0, 2, shape) if dtype == "i64" else torch.randn(shape, requires_grad=True)
              for shape, dtype in operands]
    exclude, params = set(), 0
    if isinstance(fn, nn.Module):
        fn.train()
        params = sum(p.numel() for p in fn.parameters())
        exclude = {t.data_ptr() for t in list(fn.parameters()) + list(fn.buffers())}
    with profile(with_flops=True) as prof:
        output = fn(*inputs)
    macs = sum(event.flops for event in prof.key_averages() if event.key in MATRIX_KERNELS and event.flops) // 2
    shape = "x".join(str(dim) for dim in output.shape) or "scalar"
    print(label, shape, params, saved_bytes(output, exclude | IGNORED), macs)
)";

std::string python_tuple(const TensorShape& shape) {
  std::string text = "(";
  for (int64_t dim : shape.dims) text += std::to_string(dim) + ",";
  return text + ")";
}

using python_test::run_python;

TEST(Ops, TorchAgrees) {
  std::string script = kTorchPreamble;
  int expected_lines = 0;
  for (const OpCase& c : op_cases()) {
    if (c.torch.empty()) continue;
    script += "case(\"" + c.label + "\", " + c.torch + ", [";
    for (const Operand& operand : c.inputs)
      script += "(" + python_tuple(operand.shape) + ", \"" + dtype_name(operand.dtype) + "\"), ";
    script += "])\n";
    ++expected_lines;
  }
  std::string output = run_python(script);
  ASSERT_NE(output.rfind("FAILED", 0), 0u)
      << "PyTorch run failed (" DNNCAST_PYTHON " needs python3-torch; scripts/setup.sh installs it):\n"
      << output;
  std::map<std::string, std::vector<std::string>> torch_rows;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string label, shape, params, saved, macs;
    if (fields >> label >> shape >> params >> saved >> macs) torch_rows[label] = {shape, params, saved, macs};
  }
  ASSERT_EQ(static_cast<int>(torch_rows.size()), expected_lines) << output;
  const std::set<std::string> matrix_ops = {"Conv2d", "Linear", "MatMul", "ScaledDotProductAttention"};
  for (const OpCase& c : op_cases()) {
    if (c.torch.empty()) continue;
    SCOPED_TRACE(c.label + ": " + c.torch);
    const std::vector<std::string>& row = torch_rows[c.label];
    ASSERT_EQ(row.size(), 4u);
    Graph graph = build_case(c.op, c.inputs, c.attrs);
    int node = graph.find("x");
    OpCost cost = node_cost(graph, node);
    EXPECT_EQ(graph.node(node).shape.to_string(), row[0]);
    EXPECT_EQ(std::to_string(cost.params), row[1]);
    if (c.torch_saved) {
      EXPECT_EQ(std::to_string(cost.saved_bytes()), row[2]) << "bytes saved for backward";
    }
    // The profiler counts no FLOPs for transposed convolutions; elsewhere it must match.
    if (matrix_ops.count(c.op)) {
      EXPECT_EQ(std::to_string(cost.macs), row[3]) << "MACs";
    }
  }
}

}  // namespace
}  // namespace dnncast
