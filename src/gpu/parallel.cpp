// Several GPUs: the plan's parts of a graph (parallel_plan.h) and one iteration's time (parallel.h).
#include "gpu/parallel.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "core/error.h"
#include "core/text.h"
#include "gpu/half_kernels.h"
#include "graph/op_registry.h"
#include "memory/sharding.h"

namespace dnncast::gpu {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

namespace {

constexpr int64_t kMaxGpus = 1 << 16, kMaxMicroBatches = 1 << 16;

int64_t parse_degree(const std::string& text, const std::string& what) {
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || value > kMaxGpus) throw InputError(what + ": expected a positive integer");
    value = value * 10 + (c - '0');
  }
  if (text.empty() || value < 1) throw InputError(what + ": expected a positive integer");
  return value;
}

// The share of a node's parameters one GPU of a tensor-parallel group holds: split nodes' 1/tp, and the vocabulary-
// parallel embedding's 1/tp too (it runs whole: each GPU looks its rows up and the output is all-reduced).
double parameter_share(const Node& node, NodePart part, double tp) {
  if (part != NodePart::Whole || (node.op == "Embedding"sv && memory::block_of(node) < 0)) return 1.0 / tp;
  return 1.0;
}

bool is_head(const Graph& graph, int index, const Consumers& consumers) {
  const Node& node = graph.node(index);
  if (node.op != "Linear"sv || memory::block_of(node) >= 0 || node.shape.rank() == 0) return false;
  // A language model's head: a large Linear outside the blocks whose result ends the graph.
  return consumers[static_cast<size_t>(index)].empty() && node.shape[node.shape.rank() - 1] >= 1024;
}

}  // namespace

ParallelPlan parse_parallel(const std::string& text, int64_t gpus, int64_t micro_batches, int64_t gpus_per_node,
                            const ParallelNames& names) {
  if (gpus < 1 || gpus > kMaxGpus)
    throw InputError(names.gpus + " " + std::to_string(gpus) + ": expected 1 to " + std::to_string(kMaxGpus));
  if (micro_batches < 1 || micro_batches > kMaxMicroBatches)
    throw InputError(names.micro_batches + " " + std::to_string(micro_batches) + ": expected 1 to " +
                     std::to_string(kMaxMicroBatches));
  if (gpus_per_node < 1 || gpus_per_node > kMaxGpus)
    throw InputError(names.gpus_per_node + " " + std::to_string(gpus_per_node) + ": expected 1 to " +
                     std::to_string(kMaxGpus));
  ParallelPlan plan;
  plan.micro_batches = micro_batches;
  plan.gpus_per_node = gpus_per_node;
  const std::string what = names.parallel + " " + quote(text);
  if (text == "dp" || text == "tp" || text == "pp") {
    (text == "dp" ? plan.dp : text == "tp" ? plan.tp : plan.pp) = gpus;
  } else {
    std::set<std::string> seen;
    int64_t named = 1;
    bool dp_named = false;
    std::istringstream items(text);
    for (std::string item; std::getline(items, item, ',');) {
      const size_t eq = item.find('=');
      const std::string axis = item.substr(0, eq);
      if (eq == std::string::npos || (axis != "dp" && axis != "tp" && axis != "pp"))
        throw InputError(what + ": expected dp, tp, pp or degrees such as tp=2,pp=2");
      if (!seen.insert(axis).second) throw InputError(what + ": " + axis + " given twice");
      const int64_t degree = parse_degree(item.substr(eq + 1), what + " (" + axis + ")");
      (axis == "dp" ? plan.dp : axis == "tp" ? plan.tp : plan.pp) = degree;
      dp_named = dp_named || axis == "dp";
      named *= degree;
      if (named > kMaxGpus) throw InputError(what + ": more than " + std::to_string(kMaxGpus) + " GPUs");
    }
    if (!dp_named) {
      if (gpus % named != 0)
        throw InputError(what + ": " + names.gpus + " " + std::to_string(gpus) + " is not a multiple of " +
                         std::to_string(named) + " (tp x pp)");
      plan.dp = gpus / named;
    }
  }
  if (plan.gpus() != gpus)
    throw InputError(what + ": dp x tp x pp = " + std::to_string(plan.gpus()) + ", not " + names.gpus + " " +
                     std::to_string(gpus));
  if (micro_batches > 1 && plan.pp == 1)
    throw InputError(names.micro_batches + " " + std::to_string(micro_batches) +
                     " needs a pipeline (pp of 2 or more); gradient accumulation is --grad-accum");
  if (plan.tp > gpus_per_node)
    throw InputError(what + ": tensor parallelism over " + std::to_string(plan.tp) + " GPUs spans nodes of " +
                     std::to_string(gpus_per_node) + " (" + names.gpus_per_node +
                     "); Megatron keeps a tensor-parallel group in one node");
  return plan;
}

std::string describe(const ParallelPlan& plan) {
  std::string text =
      "dp=" + std::to_string(plan.dp) + " tp=" + std::to_string(plan.tp) + " pp=" + std::to_string(plan.pp);
  if (plan.micro_batches > 1) text += ", " + std::to_string(plan.micro_batches) + " micro-batches";
  return text;
}

std::vector<NodePart> tensor_parallel_parts(const Graph& graph, int64_t tp) {
  std::vector<NodePart> parts(static_cast<size_t>(graph.size()), NodePart::Whole);
  if (tp == 1) return parts;
  const std::string what = "tensor parallelism (tp=" + std::to_string(tp) + ") of " + quote(graph.name);
  const Consumers consumers = graph.consumers();
  std::vector<bool> split(parts.size(), false);  // the node's output is split over the group
  bool blocks = false;
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    if (node.op == "TopKRouting"sv)
      throw InputError(what + ": a mixture of experts is not split (expert parallelism is not built); use dp or pp");
    if (ends_with(node.name, ".lora_A")) throw InputError(what + ": LoRA adapters are not split; use dp or pp");
    const bool in_block = memory::block_of(node) >= 0;
    blocks = blocks || in_block;
    const bool split_input = std::any_of(node.inputs.begin(), node.inputs.end(),
                                         [&](int input) { return split[static_cast<size_t>(input)]; });
    NodePart& part = parts[static_cast<size_t>(index)];
    if (node.op == "Linear"sv && split_input) {
      part = NodePart::Row;
    } else if (node.op == "Linear"sv && (in_block || is_head(graph, index, consumers))) {
      part = NodePart::Column;
      const int64_t outputs = node.shape[node.shape.rank() - 1];
      if (in_block && outputs % tp != 0)
        throw InputError(what + ": " + quote(node.name) + " has " + std::to_string(outputs) +
                         " outputs, not a multiple of " + std::to_string(tp));
      split[static_cast<size_t>(index)] = true;
    } else if (split_input) {
      part = NodePart::Split;
      split[static_cast<size_t>(index)] = in_block;
      // A projection viewed as heads (batch, sequence, heads, head size): the group splits whole heads, query and
      // key-value heads alike.
      if (node.op == "Reshape"sv && node.shape.rank() == 4 && node.shape[2] % tp != 0)
        throw InputError(what + ": " + quote(node.name) + " has " + std::to_string(node.shape[2]) +
                         " heads, not a multiple of " + std::to_string(tp));
    }
  }
  if (!blocks) throw InputError(what + ": no transformer block found to split; use dp");
  return parts;
}

std::vector<int> pipeline_stages(const Graph& graph, int64_t pp) {
  std::vector<int> stages(static_cast<size_t>(graph.size()), 0);
  if (pp == 1) return stages;
  std::map<int64_t, int> order;  // block -> its position
  int first = graph.size(), last = -1;
  for (int index = 0; index < graph.size(); ++index) {
    const int64_t block = memory::block_of(graph.node(index));
    if (block < 0) continue;
    order.emplace(block, 0);
    first = std::min(first, index), last = std::max(last, index);
  }
  const int64_t blocks = static_cast<int64_t>(order.size());
  if (blocks < pp)
    throw InputError("pipeline parallelism (pp=" + std::to_string(pp) + ") of " + quote(graph.name) + ": " +
                     std::to_string(blocks) + " transformer block" + (blocks == 1 ? "" : "s") + ", fewer than stages");
  int position = 0;
  for (auto& [block, at] : order) at = position++;
  for (int index = 0; index < graph.size(); ++index) {
    const int64_t block = memory::block_of(graph.node(index));
    int stage = index < first ? 0 : static_cast<int>(pp - 1);
    if (block >= 0) stage = static_cast<int>(static_cast<int64_t>(order[block]) * pp / blocks);
    if (block < 0 && index > first && index < last) stage = stages[static_cast<size_t>(index - 1)];
    stages[static_cast<size_t>(index)] = stage;
  }
  return stages;
}

// ---------------------------------------------------------------------------------------------
// Time

namespace {

constexpr double kBucketBytes = 25.0 * 1024 * 1024, kFirstBucketBytes = 1024.0 * 1024;  // DDP's defaults

struct Timer {
  const Graph& graph;
  const hardware::GpuSpec& gpu;
  GpuPrecision precision;
  Optimizer optimizer;
  const GpuCalibration& calibration;
  double overhead_ms = 0;

  // The kernels' time, without the per-iteration overhead.
  double ms(const GpuWork& work) const {
    const GpuTiming timing = time_on_gpu(work, gpu, precision, Framework::PyTorch, calibration, shipped_kernel_model(),
                                         shipped_half_kernel_model());
    return timing.time_ms - overhead_ms;
  }
  // Forward, backward and optimizer time of the nodes `keep` selects, each with its part.
  std::array<double, 3> phases(const std::vector<NodePart>& parts, double tp, const std::vector<bool>& keep) const {
    GraphShare share{parts, tp};
    for (size_t index = 0; index < keep.size(); ++index)
      if (!keep[index]) share.parts[index] = NodePart::Skip;
    const std::array<GpuWork, 3> work = gpu_work_parts(graph, precision, optimizer, share);
    return {ms(work[0]), ms(work[1]), ms(work[2])};
  }
};

double element_bytes(GpuPrecision precision) {
  return precision == GpuPrecision::Fp16 || precision == GpuPrecision::Bf16 ? 2.0 : 4.0;
}

// A collective's milliseconds; none when the link is not catalogued.
std::optional<double> collective_ms(CollectiveKind kind, double bytes, int64_t gpus, const hardware::GpuSpec& gpu,
                                    int64_t gpus_per_node) {
  if (gpus < 2 || bytes <= 0) return 0.0;
  const std::optional<double> seconds =
      collective_seconds(shipped_collective_model(), kind, bytes, gpus, gpu, gpus_per_node);
  if (!seconds) return std::nullopt;
  return 1e3 * *seconds;
}

}  // namespace

PlanLayout plan_layout(const Graph& micro, const ParallelPlan& plan) {
  PlanLayout layout;
  layout.parts = tensor_parallel_parts(micro, plan.tp);
  layout.stages = pipeline_stages(micro, plan.pp);
  return layout;
}

ParallelTiming time_parallel(const Graph& micro, const ParallelPlan& plan, const hardware::GpuSpec& gpu,
                             GpuPrecision precision, Optimizer optimizer, const GpuCalibration& calibration) {
  return time_parallel(micro, plan, plan_layout(micro, plan), gpu, precision, optimizer, calibration);
}

ParallelTiming time_parallel(const Graph& micro, const ParallelPlan& plan, const PlanLayout& layout,
                             const hardware::GpuSpec& gpu, GpuPrecision precision, Optimizer optimizer,
                             const GpuCalibration& calibration) {
  ParallelTiming out;
  out.plan = plan;
  const std::vector<NodePart>& parts = layout.parts;
  const std::vector<int>& stages = layout.stages;
  Timer timer{micro, gpu, precision, optimizer, calibration};
  timer.overhead_ms = timer.ms(GpuWork{});
  const double tp = static_cast<double>(plan.tp), elem = element_bytes(precision);
  const OpRegistry& registry = OpRegistry::instance();
  auto numel = [&](int index) { return static_cast<double>(micro.node(index).shape.numel()); };
  auto add = [&](const std::string& what, CollectiveKind kind, double bytes, int64_t gpus, int64_t count,
                 int64_t per_node) {
    const std::optional<double> ms = collective_ms(kind, bytes, gpus, gpu, per_node);
    if (!ms) out.links_known = false;
    out.collectives.push_back({what, kind, bytes, gpus, count, ms.value_or(0) * static_cast<double>(count)});
    return ms.value_or(0) * static_cast<double>(count);
  };
  const double micro_batches = static_cast<double>(plan.micro_batches);
  // Per stage: forward, backward, tensor-parallel collectives per micro-batch; the send to the next stage.
  struct Stage {
    std::array<double, 3> time{};
    double tp_ms = 0, send_bytes = 0, send_ms = 0;
    std::vector<bool> nodes;
  };
  std::vector<Stage> per_stage(static_cast<size_t>(plan.pp));
  for (Stage& stage : per_stage) stage.nodes.assign(parts.size(), false);
  const Consumers consumers = micro.consumers();
  std::set<std::vector<int>> column_inputs;  // what column-parallel Linears read: one all-reduce each
  std::map<std::string, std::pair<double, int64_t>> tp_collectives;  // what -> bytes, count per micro-batch
  for (int index = 0; index < micro.size(); ++index) {
    Stage& stage = per_stage[static_cast<size_t>(stages[static_cast<size_t>(index)])];
    stage.nodes[static_cast<size_t>(index)] = true;
    const Node& node = micro.node(index);
    if (registry.get(node.op).category == "input"sv) continue;
    const NodePart part = parts[static_cast<size_t>(index)];
    if (plan.tp == 1) continue;
    if (part == NodePart::Row) {
      auto& [bytes, count] = tp_collectives["forward all-reduce of a row-parallel Linear's output"];
      bytes = numel(index) * elem, ++count;
      stage.tp_ms += collective_ms(CollectiveKind::AllReduce, bytes, plan.tp, gpu, plan.gpus_per_node).value_or(0);
    } else if (part == NodePart::Column) {
      // One all-reduce per input that column-parallel Linears read (q, k and v read one).
      if (!column_inputs.insert(node.inputs).second) continue;
      auto& [bytes, count] = tp_collectives["backward all-reduce of a column-parallel Linear's input gradient"];
      bytes = numel(node.inputs[0]) * elem, ++count;
      stage.tp_ms += collective_ms(CollectiveKind::AllReduce, bytes, plan.tp, gpu, plan.gpus_per_node).value_or(0);
    } else if (node.op == "Embedding"sv && memory::block_of(node) < 0) {
      auto& [bytes, count] = tp_collectives["forward all-reduce of the vocabulary-parallel embedding"];
      bytes = numel(index) * elem, ++count;
      stage.tp_ms += collective_ms(CollectiveKind::AllReduce, bytes, plan.tp, gpu, plan.gpus_per_node).value_or(0);
    }
  }
  for (const auto& [what, sized] : tp_collectives)
    add("tensor parallel: " + what, CollectiveKind::AllReduce, sized.first, plan.tp, sized.second * plan.micro_batches,
        plan.gpus_per_node);
  // Activations crossing from a stage to the next (and their gradients back).
  for (int index = 0; index < micro.size(); ++index) {
    const int from = stages[static_cast<size_t>(index)];
    if (registry.get(micro.node(index).op).category == "input"sv) continue;
    int to = from;
    for (int consumer : consumers[static_cast<size_t>(index)]) to = std::max(to, stages[static_cast<size_t>(consumer)]);
    for (int stage = from; stage < to; ++stage) per_stage[static_cast<size_t>(stage)].send_bytes += numel(index) * elem;
  }
  double bottleneck = 0, fill = 0, forward_backward = 0, optimizer_ms = 0;
  // Pipeline neighbours sit tp x dp ranks apart: in one node while that fits.
  const int64_t send_per_node = plan.tp * plan.dp < plan.gpus_per_node ? 2 : 1;
  for (size_t s = 0; s < per_stage.size(); ++s) {
    Stage& stage = per_stage[s];
    stage.time = timer.phases(parts, tp, stage.nodes);
    // Per micro-batch: the activations sent on and their gradients sent back.
    if (s + 1 < per_stage.size())
      stage.send_ms = add("pipeline: activations to stage " + std::to_string(s + 1) + " and their gradients back",
                          CollectiveKind::SendRecv, stage.send_bytes, 2, 2 * plan.micro_batches, send_per_node) /
                      micro_batches;
    const double step = stage.time[0] + stage.time[1] + stage.tp_ms + stage.send_ms;
    fill += step;
    if (step > bottleneck) {
      bottleneck = step;
      forward_backward = stage.time[0] + stage.time[1];
    }
    optimizer_ms = std::max(optimizer_ms, stage.time[2]);
  }
  const double pipeline_ms = fill + (micro_batches - 1) * bottleneck;
  out.compute_ms = forward_backward * micro_batches;
  out.bubble_ms = fill - bottleneck;
  // Data parallel: each stage's gradients all-reduced in buckets during its last backward pass.
  double exposed_dp = 0;
  if (plan.dp > 1) {
    // Data-parallel peers sit tp ranks apart: a node holds gpus_per_node / tp of them.
    const int64_t dp_per_node = std::max<int64_t>(1, plan.gpus_per_node / plan.tp);
    for (size_t s = 0; s < per_stage.size(); ++s) {
      const Stage& stage = per_stage[s];
      // Backward runs the stage's blocks last to first; each block's gradients are ready when it is done.
      // What follows the blocks (a head) is first, what precedes them (embeddings) last.
      std::map<int64_t, std::vector<bool>, std::greater<>> groups;  // block -> nodes
      int64_t seen_block = -1;
      for (size_t index = 0; index < stage.nodes.size(); ++index) {
        if (!stage.nodes[index]) continue;
        const int64_t block = memory::block_of(micro.node(static_cast<int>(index)));
        seen_block = std::max(seen_block, block);
        std::vector<bool>& group = groups[block >= 0 ? block : seen_block >= 0 ? kMaxGpus * kMaxGpus : -1];
        group.resize(stage.nodes.size(), false);
        group[index] = true;
      }
      double clock = 0, comm_free = 0, pending = 0, bucket = kFirstBucketBytes, backward = 0;
      double all_bytes = 0;
      int64_t buckets = 0;
      auto launch = [&](double bytes) {
        const double ms = collective_ms(CollectiveKind::AllReduce, bytes, plan.dp, gpu, dp_per_node).value_or(0);
        comm_free = std::max(comm_free, clock) + ms;
        all_bytes += bytes, ++buckets;
      };
      for (const auto& [block, nodes] : groups) {
        const std::array<double, 3> time = timer.phases(parts, tp, nodes);
        clock += time[1];
        backward += time[1];
        for (size_t index = 0; index < nodes.size(); ++index) {
          if (!nodes[index]) continue;
          OpCost computed;
          const OpCost& cost = node_cost(micro, static_cast<int>(index), computed);
          pending += 4.0 * static_cast<double>(cost.params - cost.frozen_params) *
                     parameter_share(micro.node(static_cast<int>(index)), parts[index], tp);
        }
        while (pending >= bucket) launch(bucket), pending -= bucket, bucket = kBucketBytes;
      }
      if (pending > 0) launch(pending);
      exposed_dp = std::max(exposed_dp, std::max(0.0, comm_free - backward));
      if (s == 0 && buckets > 0)
        add("data parallel: gradients all-reduced in " + std::to_string(buckets) + " buckets during backward" +
                (plan.pp > 1 ? " (stage 0)" : ""),
            CollectiveKind::AllReduce, all_bytes / static_cast<double>(buckets), plan.dp, buckets, dp_per_node);
    }
  }
  out.optimizer_ms = optimizer_ms;
  out.exposed_comm_ms = pipeline_ms - out.compute_ms - out.bubble_ms + exposed_dp;
  out.time_ms = pipeline_ms + exposed_dp + optimizer_ms + timer.overhead_ms;
  if (!out.links_known)
    out.notes.push_back("data/hardware/gpu_links.csv has no link for " + gpu.name +
                        ": collectives not timed, the time is a lower bound");
  return out;
}

void time_collectives(std::vector<memory::Collective>& collectives, const hardware::GpuSpec& gpu,
                      int64_t gpus_per_node) {
  for (memory::Collective& collective : collectives) {
    // A ring of one GPU per node (hsdp's replicas) crosses nodes at every step.
    const int64_t per_node = collective.crosses_nodes && collective.gpus <= gpus_per_node ? 1 : gpus_per_node;
    collective.seconds = collective_seconds(
        shipped_collective_model(), collective.all_reduce ? CollectiveKind::AllReduce : CollectiveKind::AllGather,
        static_cast<double>(collective.buffer_bytes), collective.gpus, gpu, per_node);
  }
}

ParallelMemory parallel_memory(const memory::MemoryReport& single, const Graph& micro, const ParallelPlan& plan) {
  return parallel_memory(single, micro, plan, plan_layout(micro, plan));
}

ParallelMemory parallel_memory(const memory::MemoryReport& single, const Graph& micro, const ParallelPlan& plan,
                               const PlanLayout& layout) {
  const std::vector<NodePart>& parts = layout.parts;
  const std::vector<int>& stages = layout.stages;
  // Each stage's share of the parameters, of the trainable ones and of what the forward keeps for backward.
  struct Share {
    double parameters = 0, trainable = 0, saved = 0;
  };
  std::vector<Share> shares(static_cast<size_t>(plan.pp));
  Share total;
  for (int index = 0; index < micro.size(); ++index) {
    OpCost computed;
    const OpCost& cost = node_cost(micro, index, computed);
    const NodePart part = parts[static_cast<size_t>(index)];
    const double fraction = part == NodePart::Whole ? 1.0 : 1.0 / static_cast<double>(plan.tp);
    const double params = parameter_share(micro.node(index), part, static_cast<double>(plan.tp));
    double saved = 0;
    for (const SavedTensor& tensor : cost.saved) saved += static_cast<double>(tensor.bytes);
    const Share node{static_cast<double>(cost.params), static_cast<double>(cost.params - cost.frozen_params), saved};
    Share& stage = shares[static_cast<size_t>(stages[static_cast<size_t>(index)])];
    stage.parameters += params * node.parameters, total.parameters += node.parameters;
    stage.trainable += params * node.trainable, total.trainable += node.trainable;
    stage.saved += fraction * node.saved, total.saved += node.saved;
  }
  auto part = [](int64_t bytes, double share, double whole) {
    return whole > 0 ? static_cast<int64_t>(std::llround(static_cast<double>(bytes) * share / whole)) : 0;
  };
  int64_t gradients = 0;  // every gradient at once (DDP's buckets hold a copy)
  for (const memory::MemoryBreakdown& peak : single.phase_peaks) gradients = std::max(gradients, peak.gradient_bytes);
  ParallelMemory best;
  best.tensor_bytes = -1;
  for (size_t s = 0; s < shares.size(); ++s) {
    const Share& share = shares[s];
    const int64_t in_flight = std::min<int64_t>(plan.micro_batches, plan.pp - static_cast<int64_t>(s));
    // Each phase's peak re-divided (the optimizer step's has no activations); the largest is the stage's.
    for (size_t phase = 0; phase < single.phase_peaks.size(); ++phase) {
      if (single.phase_peak_bytes[phase] <= 0) continue;
      const memory::MemoryBreakdown& peak = single.phase_peaks[phase];
      ParallelMemory at;
      at.stage = static_cast<int>(s);
      at.in_flight = in_flight;
      at.parameter_bytes = part(peak.parameter_bytes, share.parameters, total.parameters);
      at.gradient_bytes = part(peak.gradient_bytes, share.trainable, total.trainable);
      at.optimizer_state_bytes = part(peak.optimizer_state_bytes, share.trainable, total.trainable);
      at.activation_bytes =
          in_flight * part(peak.state_bytes + peak.activation_bytes + peak.transient_bytes, share.saved, total.saved);
      at.bucket_bytes = plan.dp > 1 ? part(gradients, share.trainable, total.trainable) : 0;
      at.tensor_bytes =
          at.parameter_bytes + at.gradient_bytes + at.optimizer_state_bytes + at.activation_bytes + at.bucket_bytes;
      if (at.tensor_bytes > best.tensor_bytes) best = at;
    }
  }
  best.tensor_bytes = std::max<int64_t>(best.tensor_bytes, 0);
  best.required_bytes = memory::required_bytes_for(single, best.tensor_bytes);
  return best;
}

}  // namespace dnncast::gpu
