// Memory per GPU when training is spread over several (issue 35): data parallel (DDP), DeepSpeed's ZeRO stages
// 1-3 and PyTorch's FSDP (full sharding, and hybrid: sharded within a node, replicated across nodes).
//
// A model, not a measurement: the one-device step is simulated (simulator.h) and its peak is then re-divided
// part by part, each part by the rule its framework documents, with the framework's default buffer sizes:
//
//   ddp    every GPU holds everything, plus the reducer's gradient buckets: a second copy of the trainable
//          gradients (DistributedDataParallel's gradient_as_bucket_view=False, the default)
//   zero1  optimizer states divided by the data-parallel degree N, plus the reduction bucket
//          (reduce_bucket_size, 5e8 elements by default, at most the trainable parameters)
//   zero2  also the gradients divided by N
//   zero3  also the parameters divided by N; the parameters of two transformer blocks gathered at a time
//          (the one running and the one prefetched)
//   fsdp   FullyShardedDataParallel(FULL_SHARD) wrapped per transformer block: parameters, gradients and
//          optimizer states divided by N; two blocks' parameters gathered (backward prefetch, the default),
//          one block's unsharded gradients before their reduce-scatter, and the root unit (embeddings, head,
//          final norm: what no block holds) gathered for the whole step
//   hsdp   fsdp's HYBRID_SHARD: divided by the GPUs of one node, replicated across nodes
//
// Activations, inputs and temporaries stay as the one-device simulation has them: the batch is per GPU.
// The communication of one step is the bytes each GPU sends in ring collectives (all-reduce 2(N-1)/N of the
// data, all-gather and reduce-scatter (N-1)/N), timed at the link's peak bandwidth per direction
// (data/hardware/gpu_links.csv): a lower bound on the time, not a measurement.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "graph/graph.h"
#include "memory/simulator.h"

namespace dnncast::memory {

enum class Sharding { None, Ddp, Zero1, Zero2, Zero3, Fsdp, Hsdp };

// "ddp", "zero1" ... as users type them (also "zero-2", "fsdp-hybrid"); InputError naming `what` otherwise.
Sharding parse_sharding(const std::string& text, const std::string& what = "sharding");
const char* sharding_name(Sharding sharding);
std::string sharding_names();  // "ddp, zero1, zero2, zero3, fsdp, hsdp"

struct ShardingPlan {
  Sharding strategy = Sharding::None;
  int64_t gpus = 1;           // data-parallel GPUs in all
  int64_t gpus_per_node = 8;  // hsdp shards within a node of this many; collectives beyond it cross nodes
};

// How a front end names the plan's options in messages (the CLI's flags, or serve's and Python's keywords).
struct PlanNames {
  std::string sharding = "--sharding", gpus = "--gpus", gpus_per_node = "--gpus-per-node";
};
// InputError for a plan that cannot run: sharding on one GPU ("zero3 ... needs --gpus 2 or more"), a GPU count
// that is not a multiple of the node size for hsdp, several GPUs without a strategy, counts out of range.
void check_sharding_plan(const ShardingPlan& plan, const PlanNames& names = {});

// The whole model's parameter bytes as the sharding rules divide them.
struct ParameterSizes {
  int64_t parameter_bytes = 0;  // every parameter (frozen ones included), at the parameter element size
  int64_t trainable_bytes = 0;  // parameters that train (gradients have this size)
  int64_t largest_block_bytes = 0, largest_block_trainable_bytes = 0;  // one transformer block's
  int64_t root_bytes = 0;                                              // parameters outside every block
  int64_t blocks = 0;
};
// A node's block: its attribute `block`, else the layer index in its name ("model.layers.3.", "h.3.",
// "encoder.layer.3."); -1 for none. `element_bytes`: 4 for fp32 parameters (also autocast's fp32 masters).
int64_t block_of(const Node& node);
ParameterSizes parameter_sizes(const Graph& graph, int64_t element_bytes);

struct Collective {
  std::string what;   // "all-reduce of the gradients"
  int64_t bytes = 0;  // sent by each GPU per step
  bool crosses_nodes = false;
  int64_t buffer_bytes = 0;  // the whole buffer (all-gather's output, reduce-scatter's input, what is all-reduced)
  int64_t gpus = 0;          // in the ring
  bool all_reduce = false;   // else an all-gather or a reduce-scatter (the same ring traffic)
  // Its time by the collective model on the GPU's link (gpu::time_collectives, gpu/parallel.h); none: not timed (no
  // GPU, or no link catalogued for it).
  std::optional<double> seconds;
};

struct ShardedMemory {
  ShardingPlan plan;
  int64_t shard_degree = 1;  // what parameters / states are divided by
  // The one-device peak's parts, per GPU after sharding (requested bytes, baseline included).
  int64_t parameter_bytes = 0, gradient_bytes = 0, optimizer_state_bytes = 0;
  int64_t other_bytes = 0;     // activations, inputs, temporaries: unchanged
  int64_t gathered_bytes = 0;  // parameters (and their gradients) gathered from the other GPUs
  int64_t bucket_bytes = 0;    // communication buckets
  int64_t tensor_bytes = 0;    // the sum of the above
  int64_t required_bytes = 0;  // what must fit on one GPU (cuda: with reserve, workspaces, context)
  std::string peak_phase;      // where one GPU's peak is: "optimizer step" or "forward or backward"
  std::vector<Collective> collectives;
  std::vector<std::string> notes;  // what each number rests on
};

// `single`: the simulation of one GPU's step at its batch. `precision` fixes the parameter element size.
ShardedMemory shard_memory(const MemoryReport& single, const Graph& graph, const ShardingPlan& plan,
                           const TrainingSetup& setup);

// What must fit on one GPU whose tensors at the peak come to `tensor_bytes`, from the one-device simulation `single`:
// on CUDA the allocator's rounding and reserve scaled with the tensors, its workspaces and contexts as they are, and
// the measured margin's share; elsewhere the tensors.
int64_t required_bytes_for(const MemoryReport& single, int64_t tensor_bytes);

// Seconds of `bytes` over a link of `gbs` GB/s per direction (1e9 bytes).
double link_seconds(int64_t bytes, double gbs);

}  // namespace dnncast::memory
