// The allocation program of dnncast's training iterations (src/profile/executor.cpp) as libtorch
// 1.13 runs them: every tensor the executor, ATen, oneDNN and the autograd engine allocate and
// release, in order, for setup (the profiler's baseline) and `iterations` training iterations.
//
// Replayed here, not measured: the executor's choices (parameters per op, in-place activations,
// tensors released after their last consumer, zero_grad in place), autograd's (one node per op,
// saved tensors released after the node's backward, gradients accumulated out of place, nodes run
// in reverse creation order, AccumulateGrad stealing the first gradient), and each op's kernels'
// own allocations (kernels/cpu_conv.h for convolutions). Each op has a recipe in one table keyed by op name
// (Trace::recipes() in training_trace.cpp); the few replayed only from their OpDef's saved tensors
// say so there ("approximate"; docs/MEMORY.md lists which are exact).
#pragma once

#include <cstdint>
#include <string>

#include "core/training_setup.h"
#include "graph/graph.h"
#include "hardware/isa.h"
#include "memory/program.h"

namespace dnncast::memory {

// Optimizer as the executor builds it; precision fp32, bf16 / fp16 autocast or bf16-pure; device cpu: libtorch's
// CPU kernels, cuda: the same autograd program without oneDNN's reorders and scratch (unverified).
struct TraceOptions : TrainingSetup {
  int64_t threads = 1;                                  // intra-op threads (backend choice, per-thread scratch)
  hardware::CpuIsa isa = hardware::CpuIsa::Avx512Core;  // what oneDNN dispatches to (cpu)
  int iterations = 2;                                   // iteration 2 and later repeat each other
  // The step as PyTorch 2's Python API runs it on CUDA by default, instead of libtorch 1.13's C++ API:
  // zero_grad() frees the gradients (set_to_none=True), and the optimizer is the foreach one (one
  // multi-tensor kernel per operation over all parameters): Adam's square roots of the second moments are
  // one temporary per parameter, all alive at once, where libtorch's loop holds two of one parameter.
  bool python_defaults = false;
  // Gradient accumulation (profile::TrainConfig::grad_accum): grad_accum micro-batches of forward + loss +
  // backward per iteration, the gradients accumulating in place, one optimizer step.
  int64_t grad_accum = 1;
};

// Graph must be shape-inferred. Throws InputError for an op the executor cannot run.
Program trace_training(const Graph& graph, const TraceOptions& options);

// How the trace replays op `op`, by the recipe its OpDef names (memory_recipe): one replayed kernel
// by kernel (Exact), the generic one from the OpDef's saved tensors (Approximate), or none (an
// unknown op, or a registered op whose memory_recipe names no recipe: a bug that
// tests/memory/op_completeness_test.cpp reports).
enum class RecipeKind { None, Exact, Approximate };
RecipeKind recipe_kind(const std::string& op);

}  // namespace dnncast::memory
