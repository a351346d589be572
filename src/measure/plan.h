// Campaign plans: which networks to measure under which training configurations (docs/DATASET.md).
// A plan is JSON ("format": "dnncast-plan/1") with one or more groups; each group lists models
// (zoo names, {"family": F}, {"synthetic": [FIRST, LAST]}, {"graph": "file.json"}), batches, image
// inputs or sequence lengths, optimizers, precisions, thread counts, and a sampling strategy
// (grid | random | latin_hypercube) with a seed, and optionally max_train_gflops: configurations
// whose training FLOPs per iteration (forward + backward, batch included) exceed it are left out
// of the grid before sampling, which bounds the time of a campaign on a small machine. Expansion is deterministic: the
// same plan gives the same configurations in the same order on every machine, which is what makes --shard i/N work.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "records/network_source.h"
#include "store/store.h"

namespace dnncast::measure {

// Per-measurement protocol settings (mapped onto the profiler's TrainConfig/Limits).
struct MeasureOptions {
  double time_budget_s = 5;        // timing stops when the median is tight or this runs out
  double warmup_budget_s = 0;      // 0 = time_budget_s
  double target_rel_ci = 0.02;     // relative half-width of the median's 95% confidence interval
  double timeout_s = 300;          // child killed after this: status timeout
  int64_t memory_limit_bytes = 0;  // above it: status oom; 0 = 90% of the memory available
  int64_t min_iterations = 5;      // timed iterations at least
  int64_t max_iterations = 100000;
  bool per_layer = false;  // also time every node's forward and backward alone, and the optimizer (layer_times)
};

// One configuration of a plan; it is measured `repeats` times (repeat index 0..repeats-1).
struct PlanEntry {
  int network = 0;  // index into Plan::networks
  records::RunConfig config;
};

// A network at one size (image input or sequence length), as validation built it at batch 1.
struct PlanNetwork {
  records::ModelRef model;
  std::vector<int64_t> input;  // C x H x W, or empty
  int64_t seq_len = 0;
  std::string hash, name, family;
  double train_flops_per_sample = 0;  // forward + backward FLOPs of one sample (OpCost)
};

struct Plan {
  std::string name;    // recorded on every run
  std::string source;  // the file it came from
  int64_t repeats = 1;
  MeasureOptions measure;
  std::vector<PlanNetwork> networks;
  std::vector<PlanEntry> entries;  // deterministic order; shards take entry index mod N
  int64_t run_count() const { return repeats * static_cast<int64_t>(entries.size()); }
};

// Optimizers, precisions and devices are the names of core/training_setup.h (aliases such as f32
// accepted); combinations the profiler lacks (fp16 on cpu) are checked by the campaign.

// How large a plan may be. Both bounds are checked on the group's full grid (models x sizes x
// batches x options, before max_train_gflops and sampling) before any network is built, so that a
// plan too large is refused at once instead of running for hours.
struct PlanLimits {
  int64_t max_networks = 100000;           // (model, size) pairs of one group: each is built once
  int64_t max_configurations = 100000000;  // a group's grid, as for a sampled count
};

// Parses, expands and validates a plan: every model resolves, every value is in range, every
// (network, input) pair builds. Throws InputError naming the file and the entry
// ("plan.json: groups[1].models[2]: unknown model 'resnet5' ..."). Relative graph paths are
// resolved against `base_dir`.
Plan parse_plan(const nlohmann::json& document, const std::string& source, const std::string& base_dir,
                const PlanLimits& limits = {});
Plan load_plan(const std::string& path);

// --shard i/N: 0 <= i < N.
struct Shard {
  int64_t index = 0;
  int64_t count = 1;
};
Shard parse_shard(const std::string& text);  // "3/10"; throws InputError
// Indices of the plan entries that belong to a shard (entry index mod N == i).
std::vector<size_t> shard_entries(const Plan& plan, const Shard& shard);

}  // namespace dnncast::measure
