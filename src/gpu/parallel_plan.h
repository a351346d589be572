// How training is spread over several GPUs (issue 48, docs/GPU.md "Several GPUs"): data parallel (each GPU a whole
// replica, gradients all-reduced), tensor parallel (each block's matrices split Megatron's way over a group of GPUs)
// and pipeline parallel (the blocks cut into stages, micro-batches passed along); what one GPU of a plan runs.
//
// Tensor parallelism follows Megatron-LM: in every transformer block a Linear that reads an unsplit tensor is
// column-parallel (its output features split over the group), what follows it works on the split tensor (attention
// heads, an MLP's hidden units: 1/tp of the work each), and the Linear that reads a split tensor is row-parallel (its
// input features split; its output all-reduced in forward). The gradient reaching a column-parallel Linear's input is
// all-reduced in backward. Outside the blocks, a large Linear whose result is the graph's output (a language model's
// head) is vocabulary-parallel, as is the loss over its logits; embeddings, norms and residual adds run whole on every
// GPU of the group. Pipeline stages take equal runs of blocks (the first also what precedes the blocks, the last what
// follows them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/collectives.h"
#include "gpu/kernel_model.h"
#include "graph/graph.h"

namespace dnncast::gpu {

struct ParallelPlan {
  int64_t dp = 1, tp = 1, pp = 1;
  int64_t micro_batches = 1;  // per data-parallel replica and iteration: a pipeline's, or gradient accumulation
  int64_t gpus_per_node = 8;  // collectives among more GPUs than this cross nodes
  int64_t gpus() const { return dp * tp * pp; }
};

// How a front end names the plan's options in messages (the CLI's flags, or serve's and Python's keywords).
struct ParallelNames {
  std::string gpus = "--gpus", parallel = "--parallel", micro_batches = "--micro-batches",
              gpus_per_node = "--gpus-per-node";
};

// `text`: "dp", "tp" or "pp" (every one of `gpus` on that axis), or degrees "tp=2,pp=2" (dp=... too; data parallel
// takes the GPUs the others leave). InputError for an unknown axis, degrees that do not multiply to `gpus`, counts out
// of range, micro-batches other than 1 without a pipeline... naming the option.
ParallelPlan parse_parallel(const std::string& text, int64_t gpus, int64_t micro_batches, int64_t gpus_per_node,
                            const ParallelNames& names = {});
std::string describe(const ParallelPlan& plan);  // "dp=2 tp=2 pp=1, 2 micro-batches"

// Each node's part on one GPU of a tensor-parallel group of `tp` (all whole for tp 1). InputError for a graph whose
// split is not built: a mixture of experts, LoRA adapters, no transformer block, heads or hidden units that `tp` does
// not divide.
std::vector<NodePart> tensor_parallel_parts(const Graph& graph, int64_t tp);
// Each node's pipeline stage in [0, pp) (inputs 0). InputError when the graph has fewer blocks than stages.
std::vector<int> pipeline_stages(const Graph& graph, int64_t pp);

// The collectives of one iteration of a plan, on one GPU.
struct CollectiveCost {
  std::string what;  // "tensor parallel: forward all-reduce of a row-parallel Linear's output"
  CollectiveKind kind = CollectiveKind::AllReduce;
  double bytes = 0;   // each one's message (the buffer each GPU contributes)
  int64_t gpus = 0;   // in the group
  int64_t count = 0;  // per iteration
  double ms = 0;      // all of them, per iteration, as if none overlapped
};

// One GPU's memory under a plan (parallel.h): the one-device simulation of one micro-batch re-divided part by part,
// on the stage that needs the most.
struct ParallelMemory {
  int stage = 0;
  int64_t in_flight = 1;  // micro-batches whose activations the stage holds at once (1F1B: up to the stages after it)
  int64_t parameter_bytes = 0, gradient_bytes = 0, optimizer_state_bytes = 0;
  int64_t activation_bytes = 0;  // activations, temporaries and inputs of the micro-batches in flight
  int64_t bucket_bytes = 0;      // DistributedDataParallel's gradient buckets (a second copy of the gradients)
  int64_t tensor_bytes = 0;      // the sum
  int64_t required_bytes = 0;    // what must fit (CUDA: with the allocator's reserve, workspaces, context, margin)
};

// One iteration of a plan on its busiest GPU.
struct ParallelTiming {
  ParallelPlan plan;
  int64_t micro_batch = 0, global_batch = 0;  // samples per micro-batch of one replica; per iteration in all
  double time_ms = 0;                         // the iteration
  double compute_ms = 0;                      // the busiest stage's kernels for every micro-batch (forward, backward)
  double optimizer_ms = 0;                    // the busiest stage's optimizer step
  double bubble_ms = 0;        // pipeline: the time the busiest stage waits while the pipeline fills and drains
  double exposed_comm_ms = 0;  // collectives on the critical path (tensor-parallel, pipeline sends, what the
                               // gradients' all-reduce leaves after backward)
  std::vector<CollectiveCost> collectives;
  bool links_known = true;  // false: the catalogue has no link for the GPU; collectives not timed (a lower bound)
  std::optional<ParallelMemory> memory;
  std::vector<std::string> notes;
};

}  // namespace dnncast::gpu
