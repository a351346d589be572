// What one Conv2d allocates on libtorch 1.13's CPU path, forward and backward, in order.
//
// libtorch picks a backend per call (aten/src/ATen/native/Convolution.cpp, use_mkldnn): the slow
// im2col path ("thnn", per-group loops when grouped) for batch-1 / single-thread 1x1 cases, oneDNN
// (mkldnn) otherwise. oneDNN 2.6 then picks, by the ISA it dispatches to (on AVX-512;
// AVX2 the same with 8-channel blocks and the differences of IsaConvRules), an implementation per primitive
// (forward, backward data, backward weights): jit with 16-channel blocked formats (padded), jit
// with 8/4-channel blocks for grouped convs, jit_dw for depthwise, jit_1x1, or gemm with plain
// formats. ideep reorders the plain ATen tensors into the chosen formats (allocations through the
// CPU allocator), allocates the primitive's scratchpad, its output in the chosen format, and a
// dense copy for ATen. The rules here were read off allocation logs of real runs (docs/MEMORY.md:
// 4672 distinct convolutions of the zoo and the synthetic networks, 4669 reproduced exactly).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "hardware/isa.h"

namespace dnncast::hardware {

// Geometry of one 2-D convolution, f32, NCHW (contiguous input).
struct ConvShape {
  int64_t batch = 1, in_channels = 1, in_h = 1, in_w = 1;
  int64_t out_channels = 1, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  int64_t out_h = 1, out_w = 1;
  bool bias = false;
  bool input_grad = true;      // false for a convolution on a graph input (no backward-data pass)
  bool channels_last = false;  // the input is channels-last (NHWC memory): oneDNN runs on NHWC directly
  bool grad_copy = false;      // backward: the incoming gradient is not in the layout the conv needs
};

// One allocation or release of a recipe. Slots 0-3 are the results that outlive the call:
// the forward output and the three gradients; slots from 4 on are temporaries.
struct Step {
  enum Kind : uint8_t { Alloc, Free };
  Kind kind;
  int32_t slot;
  int64_t bytes;
};

enum ConvSlot : int32_t { kSlotOutput = 0, kSlotGradInput = 1, kSlotGradWeight = 2, kSlotGradBias = 3, kFirstTemp = 4 };

// Which implementation runs a pass of a convolution: the slow im2col path, oneDNN's gemm
// fallback, or a oneDNN jit kernel (blocked, 1x1, depthwise, brgemm). Their speeds per FLOP differ
// several-fold, so the time predictor counts FLOPs per implementation (src/features).
enum class ConvImpl : uint8_t { Slow, Gemm, Jit };

struct ConvRecipe {
  std::string backend;  // "slow", "slow-grouped", "mkldnn:<fwd>/<bwd_data>/<bwd_weights>"
  // The same, as classes: forward, backward data, backward weights.
  std::array<ConvImpl, 3> impls{ConvImpl::Slow, ConvImpl::Slow, ConvImpl::Slow};
  std::vector<Step> forward;           // allocates kSlotOutput (kept)
  std::vector<Step> backward;          // allocates the gradients asked for (kept), in libtorch's order
  bool weight_grad_contiguous = true;  // false: the weight gradient has channels-last strides
};

// threads: intra-op threads of the run (the backend choice and per-thread scratch depend on it;
// validated for 1 thread). isa: what oneDNN dispatches to (not Unknown): the kernels, their blocked
// formats and so the allocations differ between AVX2 and AVX-512 (IsaConvRules in cpu_conv.cpp).
ConvRecipe cpu_conv_recipe(const ConvShape& shape, int64_t threads, hardware::CpuIsa isa);

// The geometry of a Conv2d node of a shape-inferred graph at the graph's batch (contiguous input,
// input_grad true, channels_last and grad_copy false: the trace sets those from the layouts).
ConvShape conv_shape(const Graph& graph, const Node& node);

// Forward, backward-data, backward-weights, as cpu_conv_recipe() decides them (its `impls`).
std::array<ConvImpl, 3> cpu_conv_impls(const ConvShape& shape, int64_t threads, hardware::CpuIsa isa);
// Where the convolution rules of `isa` were checked against measured runs (docs/MEMORY.md "By ISA"),
// "" where they were not: every AVX-512 level uses the avx512_core row of IsaConvRules (oneDNN 2.6's
// f32 kernels are the avx512_core ones), SSE4.1 and AVX use the AVX2 row, unverified.
std::string conv_rules_evidence(hardware::CpuIsa isa);
// ATen's use_mkldnn() for an f32 CPU convolution: false means the slow path for every pass.
bool cpu_conv_uses_mkldnn(const ConvShape& shape, int64_t threads);

}  // namespace dnncast::hardware
