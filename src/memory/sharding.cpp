#include "memory/sharding.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/units.h"
#include "graph/op_registry.h"

namespace dnncast::memory {

namespace {

struct ShardingName {
  Sharding value;
  const char* name;
  std::vector<const char*> aliases;
};

const std::vector<ShardingName>& sharding_table() {
  static const std::vector<ShardingName> table{
      {Sharding::None, "none", {"single"}},
      {Sharding::Ddp, "ddp", {"data-parallel", "dp"}},
      {Sharding::Zero1, "zero1", {"zero-1", "zero_1", "zero-stage-1"}},
      {Sharding::Zero2, "zero2", {"zero-2", "zero_2", "zero-stage-2"}},
      {Sharding::Zero3, "zero3", {"zero-3", "zero_3", "zero-stage-3"}},
      {Sharding::Fsdp, "fsdp", {"fsdp-full", "full-shard", "full_shard"}},
      {Sharding::Hsdp, "hsdp", {"fsdp-hybrid", "hybrid-shard", "hybrid_shard"}},
  };
  return table;
}

// DeepSpeed's defaults (its configuration documentation, "ZeRO optimizations"): reduce_bucket_size 5e8 elements.
constexpr int64_t kZeroReduceBucketElements = 500'000'000;

int64_t divide_up(int64_t bytes, int64_t parts) { return parts <= 1 ? bytes : (bytes + parts - 1) / parts; }

// Bytes each GPU sends in a ring over `n` GPUs: all-reduce 2(n-1)/n, all-gather or reduce-scatter (n-1)/n.
int64_t ring_bytes(int64_t bytes, int64_t n, bool all_reduce) {
  if (n <= 1) return 0;
  const double share = (all_reduce ? 2.0 : 1.0) * static_cast<double>(n - 1) / static_cast<double>(n);
  return static_cast<int64_t>(share * static_cast<double>(bytes));
}

// A ring collective of a `buffer` of bytes among `n` GPUs: the bytes each sends.
Collective ring(const std::string& what, int64_t buffer, int64_t n, bool all_reduce, bool crosses_nodes) {
  return {what, ring_bytes(buffer, n, all_reduce), crosses_nodes, buffer, n, all_reduce, std::nullopt};
}

int64_t shard_degree(const ShardingPlan& plan) {
  if (plan.strategy == Sharding::None || plan.strategy == Sharding::Ddp) return 1;
  return plan.strategy == Sharding::Hsdp ? std::min(plan.gpus, plan.gpus_per_node) : plan.gpus;
}

int64_t parameter_element_bytes(const TrainingSetup& setup) {
  // fp32, and autocast (bf16 / fp16): the parameters, their gradients and the optimizer's states stay fp32.
  (void)setup;
  return 4;
}

}  // namespace

Sharding parse_sharding(const std::string& text, const std::string& what) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const ShardingName& entry : sharding_table()) {
    if (lower == entry.name) return entry.value;
    for (const char* alias : entry.aliases)
      if (lower == alias) return entry.value;
  }
  throw InputError(what + " " + quote(text) + ": expected one of " + sharding_names());
}

const char* sharding_name(Sharding sharding) {
  for (const ShardingName& entry : sharding_table())
    if (entry.value == sharding) return entry.name;
  return "none";
}

std::string sharding_names() {
  std::string names;
  for (const ShardingName& entry : sharding_table()) {
    if (entry.value == Sharding::None) continue;
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  }
  return names;
}

void check_sharding_plan(const ShardingPlan& plan, const PlanNames& names) {
  if (plan.gpus < 1 || plan.gpus > 1'000'000)
    throw InputError(names.gpus + " must be between 1 and 1000000, got " + std::to_string(plan.gpus));
  if (plan.gpus_per_node < 1 || plan.gpus_per_node > 1024)
    throw InputError(names.gpus_per_node + " must be between 1 and 1024, got " + std::to_string(plan.gpus_per_node));
  if (plan.strategy == Sharding::None) {
    if (plan.gpus > 1)
      throw InputError(names.gpus + " " + std::to_string(plan.gpus) + " needs " + names.sharding + " (" +
                       sharding_names() + "): how the GPUs share the model");
    return;
  }
  const bool shards = plan.strategy != Sharding::Ddp;
  if (shards && plan.gpus < 2)
    throw InputError(std::string(sharding_name(plan.strategy)) + " divides the model among GPUs and needs " +
                     names.gpus + " 2 or more, got " + std::to_string(plan.gpus));
  if (plan.strategy == Sharding::Hsdp && plan.gpus % plan.gpus_per_node != 0)
    throw InputError("hsdp replicates a node's shards across nodes: " + names.gpus + " " + std::to_string(plan.gpus) +
                     " is not a multiple of " + names.gpus_per_node + " " + std::to_string(plan.gpus_per_node));
}

int64_t block_of(const Node& node) {
  if (node.has_attr("block")) return node.attr_int("block");
  // "<prefix>.<index>." with a prefix naming a stack of blocks, as Hugging Face and torchvision name them.
  static const char* const kStacks[] = {"layers.", "h.", "layer.", "blocks.", "block."};
  for (const char* stack : kStacks) {
    size_t at = 0;
    const std::string key = stack;
    while ((at = node.name.find(key, at)) != std::string::npos) {
      const bool starts = at == 0 || node.name[at - 1] == '.';
      size_t digits = at + key.size(), end = digits;
      while (end < node.name.size() && std::isdigit(static_cast<unsigned char>(node.name[end]))) ++end;
      if (starts && end > digits && end - digits < 9 && (end == node.name.size() || node.name[end] == '.'))
        return std::stoll(node.name.substr(digits, end - digits));
      at += key.size();
    }
  }
  return -1;
}

ParameterSizes parameter_sizes(const Graph& graph, int64_t element_bytes) {
  ParameterSizes sizes;
  std::map<int64_t, std::pair<int64_t, int64_t>> blocks;  // block -> (parameters, trainable)
  for (int index = 0; index < graph.size(); ++index) {
    OpCost computed;
    const OpCost& cost = node_cost(graph, index, computed);
    if (cost.params == 0) continue;
    const int64_t bytes = cost.params * element_bytes, trainable = (cost.params - cost.frozen_params) * element_bytes;
    sizes.parameter_bytes += bytes;
    sizes.trainable_bytes += trainable;
    const int64_t block = block_of(graph.node(index));
    if (block < 0) {
      sizes.root_bytes += bytes;
      continue;
    }
    blocks[block].first += bytes;
    blocks[block].second += trainable;
  }
  sizes.blocks = static_cast<int64_t>(blocks.size());
  for (const auto& [block, bytes] : blocks) {
    sizes.largest_block_bytes = std::max(sizes.largest_block_bytes, bytes.first);
    sizes.largest_block_trainable_bytes = std::max(sizes.largest_block_trainable_bytes, bytes.second);
  }
  return sizes;
}

ShardedMemory shard_memory(const MemoryReport& single, const Graph& graph, const ShardingPlan& plan,
                           const TrainingSetup& setup) {
  check_sharding_plan(plan);
  ShardedMemory out;
  out.plan = plan;
  const ParameterSizes sizes = parameter_sizes(graph, parameter_element_bytes(setup));
  // Each phase's own peak re-divided; the largest is the GPU's peak (sharding may move it: the optimizer step's
  // peak shrinks with the states it updates, a backward peak with the gradients).
  MemoryBreakdown peak = single.at_peak;
  bool step_phase = single.peak_phase == Phase::Optimizer;
  int64_t best = -1;
  for (size_t phase = 0; phase < single.phase_peaks.size(); ++phase) {
    if (single.phase_peak_bytes[phase] <= 0) continue;
    const MemoryBreakdown& b = single.phase_peaks[phase];
    const bool step = phase == static_cast<size_t>(Phase::Optimizer);
    const int64_t k = shard_degree(plan);
    const int64_t divided =
        (plan.strategy == Sharding::Zero3 || plan.strategy == Sharding::Fsdp || plan.strategy == Sharding::Hsdp
             ? divide_up(b.parameter_bytes, k)
             : b.parameter_bytes) +
        (plan.strategy == Sharding::Ddp || plan.strategy == Sharding::Zero1 ? b.gradient_bytes
                                                                            : divide_up(b.gradient_bytes, k)) +
        divide_up(b.optimizer_state_bytes, plan.strategy == Sharding::Ddp ? 1 : k) + b.state_bytes +
        b.activation_bytes +
        (step && plan.strategy != Sharding::Ddp ? divide_up(b.transient_bytes, k) : b.transient_bytes);
    if (divided > best) {
      best = divided;
      peak = b;
      step_phase = step;
    }
  }
  const int64_t at_peak_total = peak.parameter_bytes + peak.state_bytes + peak.gradient_bytes +
                                peak.optimizer_state_bytes + peak.activation_bytes + peak.transient_bytes;
  out.parameter_bytes = peak.parameter_bytes;
  out.gradient_bytes = peak.gradient_bytes;
  out.optimizer_state_bytes = peak.optimizer_state_bytes;
  out.other_bytes = at_peak_total - peak.parameter_bytes - peak.gradient_bytes - peak.optimizer_state_bytes;
  out.peak_phase = step_phase ? "optimizer step" : "forward or backward";

  const int64_t n = plan.gpus;
  const Sharding s = plan.strategy;
  out.shard_degree = shard_degree(plan);
  const int64_t k = out.shard_degree;
  const bool multi_node = n > plan.gpus_per_node;
  const int64_t bucket = std::min(kZeroReduceBucketElements * 4, sizes.trainable_bytes);
  const bool needs_blocks = s == Sharding::Zero3 || s == Sharding::Fsdp || s == Sharding::Hsdp;
  if (needs_blocks && sizes.blocks == 0)
    out.notes.push_back(
        "no transformer blocks found (node attribute `block` or names like layers.N.): the "
        "model is taken as one unit, all of it gathered at once");
  const int64_t unit_bytes = sizes.blocks > 0 ? sizes.largest_block_bytes : sizes.parameter_bytes;
  const int64_t unit_trainable = sizes.blocks > 0 ? sizes.largest_block_trainable_bytes : sizes.trainable_bytes;

  switch (s) {
    case Sharding::None:
      break;
    case Sharding::Ddp:
      out.bucket_bytes = sizes.trainable_bytes;
      out.notes.push_back("ddp: the reducer's buckets hold a second copy of the gradients (" +
                          format_bytes(sizes.trainable_bytes) + "; gradient_as_bucket_view=True would save it)");
      out.collectives.push_back(ring("all-reduce of the gradients", sizes.trainable_bytes, n, true, multi_node));
      break;
    case Sharding::Zero1:
    case Sharding::Zero2:
      out.optimizer_state_bytes = divide_up(peak.optimizer_state_bytes, k);
      if (s == Sharding::Zero2) out.gradient_bytes = divide_up(peak.gradient_bytes, k);
      out.bucket_bytes = bucket;
      out.notes.push_back(std::string(sharding_name(s)) + ": optimizer states" +
                          (s == Sharding::Zero2 ? " and gradients" : "") + " divided by " + std::to_string(k) +
                          "; a reduction bucket of " + format_bytes(bucket) +
                          " (DeepSpeed's reduce_bucket_size, 5e8 elements, at most the trainable parameters)");
      out.collectives.push_back(ring("reduce-scatter of the gradients", sizes.trainable_bytes, n, false, multi_node));
      out.collectives.push_back(
          ring("all-gather of the updated parameters", sizes.trainable_bytes, n, false, multi_node));
      break;
    case Sharding::Zero3:
      out.parameter_bytes = divide_up(peak.parameter_bytes, k);
      out.gradient_bytes = divide_up(peak.gradient_bytes, k);
      out.optimizer_state_bytes = divide_up(peak.optimizer_state_bytes, k);
      out.gathered_bytes = std::min(sizes.parameter_bytes, 2 * unit_bytes);
      out.bucket_bytes = bucket;
      out.notes.push_back("zero3: parameters, gradients and optimizer states divided by " + std::to_string(k) +
                          "; two blocks' parameters gathered (" + format_bytes(out.gathered_bytes) +
                          "); DeepSpeed may keep more gathered (stage3_max_live_parameters, 1e9 by default)");
      out.collectives.push_back(
          ring("all-gather of the parameters, forward", sizes.parameter_bytes, n, false, multi_node));
      out.collectives.push_back(
          ring("all-gather of the parameters, backward", sizes.parameter_bytes, n, false, multi_node));
      out.collectives.push_back(ring("reduce-scatter of the gradients", sizes.trainable_bytes, n, false, multi_node));
      break;
    case Sharding::Fsdp:
    case Sharding::Hsdp: {
      out.parameter_bytes = divide_up(peak.parameter_bytes, k);
      out.gradient_bytes = divide_up(peak.gradient_bytes, k);
      out.optimizer_state_bytes = divide_up(peak.optimizer_state_bytes, k);
      const int64_t root = sizes.blocks > 0 ? sizes.root_bytes : 0;
      out.gathered_bytes =
          std::min(sizes.parameter_bytes, 2 * unit_bytes) + unit_trainable + (root - divide_up(root, k));
      out.notes.push_back(std::string(sharding_name(s)) + ": parameters, gradients and optimizer states divided by " +
                          std::to_string(k) + (s == Sharding::Hsdp ? " (the GPUs of a node)" : "") +
                          "; gathered: two blocks' parameters, one block's gradients and the root unit (" +
                          format_bytes(out.gathered_bytes) + ")");
      const bool intra_crosses = s == Sharding::Fsdp && multi_node;
      out.collectives.push_back(
          ring("all-gather of the parameters, forward", sizes.parameter_bytes, k, false, intra_crosses));
      out.collectives.push_back(
          ring("all-gather of the parameters, backward", sizes.parameter_bytes, k, false, intra_crosses));
      out.collectives.push_back(
          ring("reduce-scatter of the gradients", sizes.trainable_bytes, k, false, intra_crosses));
      if (s == Sharding::Hsdp && n > k)
        out.collectives.push_back(ring("all-reduce of the gradient shards across nodes",
                                       divide_up(sizes.trainable_bytes, k), n / k, true, true));
      break;
    }
  }
  if (step_phase && s != Sharding::Ddp && s != Sharding::None) {
    // The step updates this GPU's shard only: its temporaries (foreach Adam's square roots) shrink with it.
    out.other_bytes = peak.state_bytes + peak.activation_bytes + divide_up(peak.transient_bytes, out.shard_degree);
  }
  out.tensor_bytes = out.parameter_bytes + out.gradient_bytes + out.optimizer_state_bytes + out.other_bytes +
                     out.gathered_bytes + out.bucket_bytes;
  out.required_bytes = required_bytes_for(single, out.tensor_bytes);
  return out;
}

int64_t required_bytes_for(const MemoryReport& single, int64_t tensor_bytes) {
  if (single.device != Device::Cuda) return tensor_bytes;
  // The allocator's rounding and reserve grow and shrink with the tensors; workspaces and context do not.
  const CudaMemoryParts& parts = single.cuda;
  const MemoryBreakdown& top = single.at_peak;
  const int64_t top_total = top.parameter_bytes + top.state_bytes + top.gradient_bytes + top.optimizer_state_bytes +
                            top.activation_bytes + top.transient_bytes;
  const double scale = top_total > 0 ? static_cast<double>(tensor_bytes) / static_cast<double>(top_total) : 1;
  const int64_t total = static_cast<int64_t>(scale * static_cast<double>(parts.tensor_bytes + parts.reserve_bytes)) +
                        parts.workspace_bytes + parts.cudnn_workspace_bytes + parts.context_bytes +
                        parts.cudnn_context_bytes;
  // The margin is a share of the total, measured on one GPU's runs: it scales with the share.
  const double margin =
      parts.total_bytes() > 0 ? static_cast<double>(parts.margin_bytes) / static_cast<double>(parts.total_bytes()) : 0;
  return total + static_cast<int64_t>(std::llround(margin * static_cast<double>(total)));
}

double link_seconds(int64_t bytes, double gbs) { return gbs > 0 ? static_cast<double>(bytes) / (gbs * 1e9) : 0; }

}  // namespace dnncast::memory
