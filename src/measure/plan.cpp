#include "measure/plan.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_set>

#include "core/checked.h"
#include "core/error.h"
#include "core/json_limits.h"
#include "core/rng.h"
#include "core/text.h"
#include "graph/op_registry.h"
#include "models/zoo.h"

namespace dnncast::measure {

namespace {

using nlohmann::json;

constexpr const char* kPlanFormat = "dnncast-plan/1";

[[noreturn]] void fail(const std::string& where, const std::string& message) {
  throw InputError(where + ": " + message);
}

std::string join(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

// Keys a group may set; the top level may set them too (defaults for every group).
const std::vector<std::string>& group_keys() {
  static const std::vector<std::string> keys{"name",     "models",     "batches",         "inputs",
                                             "seq_lens", "optimizers", "precisions",      "threads",
                                             "devices",  "sampling",   "max_train_gflops"};
  return keys;
}

const std::vector<std::string>& top_keys() {
  static const std::vector<std::string> keys{"format", "description", "repeats", "measure", "groups"};
  return keys;
}

void check_keys(const json& object, const std::vector<std::string>& allowed_a,
                const std::vector<std::string>& allowed_b, const std::string& where) {
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    if (std::find(allowed_a.begin(), allowed_a.end(), key) != allowed_a.end()) continue;
    if (std::find(allowed_b.begin(), allowed_b.end(), key) != allowed_b.end()) continue;
    std::vector<std::string> known = allowed_a;
    known.insert(known.end(), allowed_b.begin(), allowed_b.end());
    fail(where, "unknown key " + quote(key) + " (did you mean " + join(closest_names(key, known, 2), " or ") + "?)");
  }
}

int64_t get_int(const json& value, const std::string& where, int64_t low, int64_t high, const char* what) {
  if (!value.is_number_integer()) fail(where, std::string(what) + " must be an integer, got " + value.dump());
  int64_t number = value.get<int64_t>();
  if (number < low || number > high)
    fail(where, std::string(what) + " must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " +
                    std::to_string(number));
  return number;
}

double get_number(const json& value, const std::string& where, double low, double high, const char* what) {
  if (!value.is_number()) fail(where, std::string(what) + " must be a number, got " + value.dump());
  double number = value.get<double>();
  if (!(number >= low && number <= high))
    fail(where, std::string(what) + " must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " +
                    value.dump());
  return number;
}

const json& non_empty_list(const json& value, const std::string& where) {
  if (!value.is_array() || value.empty()) fail(where, "expected a non-empty list, got " + value.dump());
  return value;
}

std::vector<int64_t> int_list(const json& value, const std::string& where, int64_t low, int64_t high,
                              const char* what) {
  std::vector<int64_t> result;
  const json& list = non_empty_list(value, where);
  for (size_t index = 0; index < list.size(); ++index) {
    int64_t number = get_int(list[index], where + "[" + std::to_string(index) + "]", low, high, what);
    if (std::find(result.begin(), result.end(), number) != result.end())
      fail(where + "[" + std::to_string(index) + "]",
           std::string(what) + " " + std::to_string(number) + " listed twice");
    result.push_back(number);
  }
  return result;
}

// A list of names of one kind of the training setup (core/training_setup.h: aliases such as f32 become
// their value, stored as fp32).
template <typename Value>
std::vector<Value> choice_list(const json& value, const std::string& where,
                               Value (*parse)(const std::string&, const std::string&), const char* what) {
  std::vector<Value> result;
  const json& list = non_empty_list(value, where);
  for (size_t index = 0; index < list.size(); ++index) {
    std::string item_where = where + "[" + std::to_string(index) + "]";
    if (!list[index].is_string()) fail(item_where, std::string(what) + " must be a string, got " + list[index].dump());
    Value choice{};
    try {
      choice = parse(list[index].get<std::string>(), what);
    } catch (const InputError& error) {
      fail(item_where, error.what());
    }
    if (std::find(result.begin(), result.end(), choice) != result.end())
      fail(item_where, std::string(what) + " " + quote(name(choice)) + " listed twice");
    result.push_back(choice);
  }
  return result;
}

std::vector<int64_t> parse_input(const json& value, const std::string& where) {
  std::vector<int64_t> dims;
  if (value.is_number_integer()) {
    int64_t side = get_int(value, where, 1, 16384, "image size");
    dims = {3, side, side};
  } else if (value.is_array()) {
    if (value.size() != 3) fail(where, "an input is C x H x W: expected 3 integers, got " + value.dump());
    for (size_t dim = 0; dim < 3; ++dim) dims.push_back(get_int(value[dim], where, 1, 16384, "input dimension"));
  } else if (value.is_string()) {
    try {
      dims = records::parse_input_text(value.get<std::string>());
    } catch (const InputError& error) {
      fail(where, error.what());
    }
    if (dims.size() != 3) fail(where, "an input is C x H x W, got '" + value.get<std::string>() + "'");
  } else {
    fail(where, "an input is a side (64), [C, H, W] or \"CxHxW\", got " + value.dump());
  }
  return dims;
}

std::string resolve_path(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

bool is_graph_path(const std::string& text) {
  return text.size() > 5 && text.compare(text.size() - 5, 5, ".json") == 0;
}

records::ModelRef graph_file(const std::string& path, const std::string& where) {
  std::ifstream probe(path);
  if (!probe) fail(where, "cannot open graph file " + quote(path));
  records::ModelRef model;
  model.kind = records::ModelRef::Kind::File;
  model.path = path;
  try {
    records::file_graph_input(path);  // parses the file now: a broken file is a plan error
  } catch (const InputError& error) {
    fail(where, error.what());
  }
  return model;
}

// `seen` mirrors `models`, so that a long seed range is not quadratic.
void add_unique(std::vector<records::ModelRef>& models, std::set<records::ModelRef>& seen,
                const records::ModelRef& model) {
  if (seen.insert(model).second) models.push_back(model);
}

std::vector<records::ModelRef> parse_models(const json& value, const std::string& where, const std::string& base_dir) {
  std::vector<records::ModelRef> models;
  std::set<records::ModelRef> seen;
  const json& list = non_empty_list(value, where);
  for (size_t index = 0; index < list.size(); ++index) {
    std::string item_where = where + "[" + std::to_string(index) + "]";
    const json& item = list[index];
    try {
      if (item.is_string()) {
        std::string text = item.get<std::string>();
        if (is_graph_path(text)) {
          add_unique(models, seen, graph_file(resolve_path(text, base_dir), item_where));
        } else {
          records::ModelRef model;
          model.name = text;
          models::zoo_entry(text);
          add_unique(models, seen, model);
        }
        continue;
      }
      if (!item.is_object() || item.size() != 1)
        fail(item_where,
             "a model is a zoo name, \"file.json\", {\"zoo\": NAME}, {\"family\": F}, {\"zoo_kind\": \"cnn\"}, "
             "{\"synthetic\": [FIRST, LAST]} or {\"graph\": \"file.json\"}; got " +
                 item.dump());
      const std::string& key = item.begin().key();
      const json& argument = item.begin().value();
      if (key == "zoo") {
        if (!argument.is_string()) fail(item_where, "\"zoo\" takes a model name");
        records::ModelRef model;
        model.name = argument.get<std::string>();
        models::zoo_entry(model.name);
        add_unique(models, seen, model);
      } else if (key == "family" || key == "zoo_kind") {
        if (!argument.is_string()) fail(item_where, "\"" + key + "\" takes a string");
        std::string wanted = argument.get<std::string>();
        std::set<std::string> known;
        size_t before = models.size();
        for (const models::ZooEntry& entry : models::zoo()) {
          const std::string& field = key == "family" ? entry.family : entry.kind;
          known.insert(field);
          if (field != wanted) continue;
          records::ModelRef model;
          model.name = entry.name;
          add_unique(models, seen, model);
        }
        if (models.size() == before && known.count(wanted) == 0)
          fail(item_where, "unknown " + key + " '" + wanted +
                               "' (known: " + join(std::vector<std::string>(known.begin(), known.end())) + ")");
      } else if (key == "synthetic") {
        int64_t first = 0, last = 0;
        if (argument.is_number_integer()) {
          first = last = get_int(argument, item_where, 0, INT64_MAX, "synthetic seed");
        } else if (argument.is_array() && argument.size() == 2) {
          first = get_int(argument[0], item_where, 0, INT64_MAX, "synthetic seed");
          last = get_int(argument[1], item_where, 0, INT64_MAX, "synthetic seed");
          if (last < first)
            fail(item_where,
                 "synthetic seed range [" + std::to_string(first) + ", " + std::to_string(last) + "] is empty");
          if (last - first >= 10000000) fail(item_where, "synthetic seed range is larger than 10 million");
          if (static_cast<int64_t>(models.size()) + (last - first) >= PlanLimits{}.max_networks)
            fail(item_where, "more than " + std::to_string(PlanLimits{}.max_networks) + " models in one list");
        } else {
          fail(item_where, "\"synthetic\" takes a seed or an inclusive range [FIRST, LAST], got " + argument.dump());
        }
        for (int64_t seed = first; seed <= last; ++seed) {
          records::ModelRef model;
          model.kind = records::ModelRef::Kind::Synthetic;
          model.seed = seed;
          add_unique(models, seen, model);
        }
      } else if (key == "graph") {
        if (!argument.is_string()) fail(item_where, "\"graph\" takes a file path");
        add_unique(models, seen, graph_file(resolve_path(argument.get<std::string>(), base_dir), item_where));
      } else {
        fail(item_where, "unknown model kind " + quote(key) + " (known: zoo, family, zoo_kind, synthetic, graph)");
      }
    } catch (const InputError& error) {
      std::string text = error.what();
      if (text.rfind(item_where, 0) == 0) throw;
      fail(item_where, text);
    }
  }
  return models;
}

struct Sampling {
  std::string strategy = "grid";
  int64_t count = 0;
  uint64_t seed = 0;
};

Sampling parse_sampling(const json& value, const std::string& where) {
  Sampling sampling;
  if (value.is_string()) {
    sampling.strategy = value.get<std::string>();
    if (sampling.strategy != "grid")
      fail(where, "\"" + sampling.strategy + "\" needs {\"strategy\", \"count\", \"seed\"}");
    return sampling;
  }
  if (!value.is_object()) fail(where, "sampling is \"grid\" or {\"strategy\": ..., \"count\": N, \"seed\": S}");
  check_keys(value, {"strategy", "count", "seed"}, {}, where);
  if (!value.contains("strategy") || !value["strategy"].is_string()) fail(where, "missing \"strategy\"");
  sampling.strategy = value["strategy"].get<std::string>();
  static const std::vector<std::string> strategies{"grid", "random", "latin_hypercube"};
  if (std::find(strategies.begin(), strategies.end(), sampling.strategy) == strategies.end())
    fail(where + ".strategy", "unknown strategy " + quote(sampling.strategy) + " (known: " + join(strategies) + ")");
  if (sampling.strategy != "grid") {
    if (!value.contains("count")) fail(where, "strategy " + sampling.strategy + " needs \"count\"");
    sampling.count = get_int(value["count"], where + ".count", 1, 100000000, "count");
  } else if (value.contains("count")) {
    fail(where + ".count", "a grid takes every configuration; \"count\" is for random and latin_hypercube");
  }
  if (value.contains("seed"))
    sampling.seed = static_cast<uint64_t>(get_int(value["seed"], where + ".seed", 0, INT64_MAX, "seed"));
  return sampling;
}

// The option lists of one group, after inheriting the plan's top-level defaults.
struct Group {
  std::string where;
  std::vector<records::ModelRef> models;
  std::vector<int64_t> batches;
  std::vector<std::vector<int64_t>> inputs;
  std::vector<int64_t> seq_lens;
  std::vector<Optimizer> optimizers{Optimizer::Sgd};
  std::vector<Precision> precisions{Precision::Fp32};
  std::vector<Device> devices{Device::Cpu};
  std::vector<int64_t> threads{1};
  double max_train_gflops = 0;  // skip (model, size, batch) above this many training GFLOPs per iteration
  Sampling sampling;
};

Group parse_group(const json& group, const json& defaults, const std::string& where, const std::string& base_dir) {
  Group result;
  result.where = where.empty() ? "plan" : where;
  auto pick = [&](const char* key, std::string& at) -> const json* {
    if (group.contains(key)) {
      at = where.empty() ? std::string(key) : where + "." + key;
      return &group[key];
    }
    if (defaults.contains(key)) {
      at = std::string(key);
      return &defaults[key];
    }
    return nullptr;
  };
  std::string at;
  const json* value = pick("models", at);
  const std::string here = where.empty() ? "plan" : where;
  if (!value) fail(here, "missing \"models\"");
  result.models = parse_models(*value, at, base_dir);
  value = pick("batches", at);
  if (!value) fail(here, "missing \"batches\"");
  result.batches = int_list(*value, at, 1, 1 << 20, "batch");
  if ((value = pick("inputs", at))) {
    const json& list = non_empty_list(*value, at);
    for (size_t index = 0; index < list.size(); ++index) {
      std::vector<int64_t> dims = parse_input(list[index], at + "[" + std::to_string(index) + "]");
      if (std::find(result.inputs.begin(), result.inputs.end(), dims) != result.inputs.end())
        fail(at + "[" + std::to_string(index) + "]", "input listed twice");
      result.inputs.push_back(dims);
    }
  }
  if ((value = pick("seq_lens", at))) result.seq_lens = int_list(*value, at, 1, 1 << 20, "sequence length");
  if ((value = pick("optimizers", at))) result.optimizers = choice_list(*value, at, parse_optimizer, "optimizer");
  if ((value = pick("precisions", at))) result.precisions = choice_list(*value, at, parse_precision, "precision");
  if ((value = pick("devices", at))) result.devices = choice_list(*value, at, parse_device, "device");
  if ((value = pick("threads", at))) result.threads = int_list(*value, at, 1, 4096, "thread count");
  if ((value = pick("sampling", at))) result.sampling = parse_sampling(*value, at);
  if ((value = pick("max_train_gflops", at)))
    result.max_train_gflops = get_number(*value, at, 1e-9, 1e12, "max_train_gflops");
  for (size_t index = 0; index < result.models.size(); ++index) {
    const records::ModelRef& model = result.models[index];
    if (model.kind == records::ModelRef::Kind::File) continue;  // a file graph keeps its own input
    bool sequence = model.is_sequence();
    if (sequence && result.seq_lens.empty())
      fail(here, "model " + model.source() + " takes tokens: the group needs \"seq_lens\"");
    if (!sequence && result.inputs.empty())
      fail(here, "model " + model.source() + " takes images: the group needs \"inputs\"");
  }
  return result;
}

// The sizes (image input or sequence length) a model is measured at within a group.
std::vector<records::RunConfig> model_sizes(const Group& group, const records::ModelRef& model) {
  std::vector<records::RunConfig> sizes;
  if (model.kind == records::ModelRef::Kind::File) {
    records::RunConfig config;
    if (model.is_sequence()) {
      std::vector<int64_t> shape = records::file_graph_input(model.path);
      config.seq_len = shape.empty() ? 0 : shape[0];
    } else {
      config.input = records::file_graph_input(model.path);
    }
    sizes.push_back(config);
  } else if (model.is_sequence()) {
    for (int64_t seq_len : group.seq_lens) {
      records::RunConfig config;
      config.seq_len = seq_len;
      sizes.push_back(config);
    }
  } else {
    for (const std::vector<int64_t>& input : group.inputs) {
      records::RunConfig config;
      config.input = input;
      sizes.push_back(config);
    }
  }
  return sizes;
}

// The networks a plan measures, built once each at batch 1 (validation, hash, FLOPs).
class NetworkTable {
 public:
  // Index into `networks` of (model, size); builds it on first use. Throws InputError naming `where`.
  int get(const records::ModelRef& model, const records::RunConfig& size, const std::string& where,
          std::vector<PlanNetwork>& networks) {
    auto key = std::make_pair(model, size);
    auto found = index_.find(key);
    if (found != index_.end()) return found->second;
    PlanNetwork network;
    network.model = model;
    network.input = size.input;
    network.seq_len = size.seq_len;
    try {
      Graph graph = records::build_network(model, size);
      network.hash = graph.architecture_hash();
      network.family = graph.family.empty() ? "unknown" : graph.family;
      network.name = model.kind == records::ModelRef::Kind::Zoo         ? model.name
                     : model.kind == records::ModelRef::Kind::Synthetic ? "synthetic:" + std::to_string(model.seed)
                     : graph.name.empty()                               ? model.path
                                                                        : graph.name;
      for (int node = 0; node < graph.size(); ++node) {
        OpCost cost = node_cost(graph, node);
        network.train_flops_per_sample += static_cast<double>(cost.flops_fwd + cost.flops_bwd);
      }
    } catch (const InputError& error) {
      fail(where,
           "model " + model.source() + " cannot be built at " +
               (size.input.empty() ? "sequence length " + std::to_string(size.seq_len) : "input " + size.input_text()) +
               ": " + error.what());
    }
    int index = static_cast<int>(networks.size());
    networks.push_back(network);
    index_.emplace(key, index);
    return index;
  }

 private:
  std::map<std::pair<records::ModelRef, records::RunConfig>, int> index_;
};

// A point of a group's grid: an index into each option list (size and batch within the model's).
struct GridPoint {
  size_t model, size, batch, optimizer, precision, threads, device;
};

// The grid of one group: models x their sizes x the batches under the FLOPs cap x optimizers x
// precisions x threads x devices. Models whose every size is over the cap are left out.
class GroupGrid {
 public:
  GroupGrid(const Group& group, NetworkTable& table, std::vector<PlanNetwork>& networks) : group_(group) {
    per_batch_ = group.optimizers.size() * group.precisions.size() * group.threads.size() * group.devices.size();
    for (const records::ModelRef& model : group.models) {
      Model entry;
      entry.ref = model;
      for (const records::RunConfig& size : model_sizes(group, model)) {
        int network = table.get(model, size, group.where, networks);
        Size item{size, network, {}};
        for (int64_t batch : group.batches) {
          double flops = networks[static_cast<size_t>(network)].train_flops_per_sample * static_cast<double>(batch);
          if (group.max_train_gflops <= 0 || flops <= group.max_train_gflops * 1e9) item.batches.push_back(batch);
        }
        if (!item.batches.empty()) entry.sizes.push_back(item);
      }
      if (entry.sizes.empty()) continue;
      for (size_t size = 0; size < entry.sizes.size(); ++size) {
        block_start_.push_back(total_);
        blocks_.emplace_back(models_.size(), size);
        total_ += entry.sizes[size].batches.size() * per_batch_;
      }
      models_.push_back(entry);
    }
    if (total_ == 0)
      fail(group.where, "every configuration is above max_train_gflops " + std::to_string(group.max_train_gflops));
  }

  uint64_t total() const { return total_; }
  size_t model_count() const { return models_.size(); }
  size_t size_count(size_t model) const { return models_[model].sizes.size(); }
  size_t batch_count(size_t model, size_t size) const { return models_[model].sizes[size].batches.size(); }

  // Grid order: model, size, batch, optimizer, precision, threads, device (the last varies fastest).
  GridPoint at(uint64_t index) const {
    size_t block =
        static_cast<size_t>(std::upper_bound(block_start_.begin(), block_start_.end(), index) - block_start_.begin()) -
        1;
    uint64_t rest = index - block_start_[block];
    GridPoint point{};
    point.model = blocks_[block].first;
    point.size = blocks_[block].second;
    point.device = rest % group_.devices.size(), rest /= group_.devices.size();
    point.threads = rest % group_.threads.size(), rest /= group_.threads.size();
    point.precision = rest % group_.precisions.size(), rest /= group_.precisions.size();
    point.optimizer = rest % group_.optimizers.size(), rest /= group_.optimizers.size();
    point.batch = static_cast<size_t>(rest);
    return point;
  }

  int network(const GridPoint& point) const { return models_[point.model].sizes[point.size].network; }

  records::RunConfig config(const GridPoint& point) const {
    const Size& size = models_[point.model].sizes[point.size];
    records::RunConfig config = size.config;
    config.batch = size.batches[point.batch];
    config.optimizer = group_.optimizers[point.optimizer];
    config.precision = group_.precisions[point.precision];
    config.threads = group_.threads[point.threads];
    config.device = group_.devices[point.device];
    return config;
  }

 private:
  struct Size {
    records::RunConfig config;  // input or seq_len
    int network;
    std::vector<int64_t> batches;  // those under the FLOPs cap
  };
  struct Model {
    records::ModelRef ref;
    std::vector<Size> sizes;
  };
  const Group& group_;
  std::vector<Model> models_;
  std::vector<std::pair<size_t, size_t>> blocks_;  // (model, size) of each block of the grid
  std::vector<uint64_t> block_start_;
  uint64_t per_batch_ = 0;
  uint64_t total_ = 0;
};

void shuffle(std::vector<size_t>& items, SplitMix64& random) {
  for (size_t index = items.size(); index > 1; --index) std::swap(items[index - 1], items[random.below(index)]);
}

// Latin hypercube: each option dimension is cut into `count` strata, each stratum used once,
// strata of different dimensions paired by independent random permutations. A model's sizes and
// batches are those of its grid (under the FLOPs cap). Duplicate points (when a dimension has
// fewer values than samples) are dropped, so a plan may get fewer than `count`.
std::vector<GridPoint> latin_hypercube(const Group& group, const GroupGrid& grid, int64_t count, SplitMix64& random) {
  const size_t dims = 7;
  size_t samples = static_cast<size_t>(count);
  std::vector<std::vector<size_t>> strata(dims);
  for (auto& permutation : strata) {
    permutation.resize(samples);
    for (size_t index = 0; index < samples; ++index) permutation[index] = index;
    shuffle(permutation, random);
  }
  auto pick = [&](size_t dim, size_t sample, size_t levels) {
    double u = (static_cast<double>(strata[dim][sample]) + random.unit()) / static_cast<double>(samples);
    return std::min(levels - 1, static_cast<size_t>(u * static_cast<double>(levels)));
  };
  std::vector<GridPoint> points;
  std::set<std::vector<size_t>> seen;
  for (size_t sample = 0; sample < samples; ++sample) {
    GridPoint point{};
    point.model = pick(0, sample, grid.model_count());
    point.size = pick(1, sample, grid.size_count(point.model));
    point.batch = pick(2, sample, grid.batch_count(point.model, point.size));
    point.optimizer = pick(3, sample, group.optimizers.size());
    point.precision = pick(4, sample, group.precisions.size());
    point.threads = pick(5, sample, group.threads.size());
    point.device = pick(6, sample, group.devices.size());
    std::vector<size_t> key{point.model,     point.size,    point.batch, point.optimizer,
                            point.precision, point.threads, point.device};
    if (seen.insert(key).second) points.push_back(point);
  }
  return points;
}

std::vector<GridPoint> sample_group(const Group& group, const GroupGrid& grid) {
  std::vector<GridPoint> points;
  const Sampling& sampling = group.sampling;
  SplitMix64 random(sampling.seed);
  if (sampling.strategy == "latin_hypercube") return latin_hypercube(group, grid, sampling.count, random);
  if (sampling.strategy == "random" && static_cast<uint64_t>(sampling.count) < grid.total()) {
    // Floyd's algorithm: `count` distinct indices without materialising the grid.
    uint64_t total = grid.total(), count = static_cast<uint64_t>(sampling.count);
    std::unordered_set<uint64_t> chosen;
    std::vector<uint64_t> order;
    for (uint64_t candidate = total - count; candidate < total; ++candidate) {
      uint64_t pick = random.below(candidate + 1);
      if (!chosen.insert(pick).second) {
        chosen.insert(candidate);
        order.push_back(candidate);
      } else {
        order.push_back(pick);
      }
    }
    for (uint64_t index : order) points.push_back(grid.at(index));
    return points;
  }
  if (grid.total() > 50000000)
    fail(group.where,
         "the grid has " + std::to_string(grid.total()) + " configurations; sample it (random or latin_hypercube)");
  for (uint64_t index = 0; index < grid.total(); ++index) points.push_back(grid.at(index));
  return points;
}

}  // namespace

// Refuses a group whose grid exceeds `limits` (overflow-safe: the product is checked as it grows).
void check_group_size(const Group& group, const PlanLimits& limits) {
  size_t sizes = std::max<size_t>({1, group.inputs.size(), group.seq_lens.size()});
  int64_t networks = 0, configurations = 0;
  try {
    networks = checked_mul(static_cast<int64_t>(group.models.size()), static_cast<int64_t>(sizes));
    configurations =
        checked_product({networks, static_cast<int64_t>(group.batches.size()),
                         static_cast<int64_t>(group.optimizers.size()), static_cast<int64_t>(group.precisions.size()),
                         static_cast<int64_t>(group.threads.size()), static_cast<int64_t>(group.devices.size())});
  } catch (const ArithmeticOverflow&) {
    fail(group.where,
         "the grid has more than 2^63 configurations; at most " + std::to_string(limits.max_configurations));
  }
  if (networks > limits.max_networks)
    fail(group.where, std::to_string(networks) + " networks (models x sizes) to build; at most " +
                          std::to_string(limits.max_networks) + " in a group");
  if (configurations > limits.max_configurations)
    fail(group.where, "the grid has " + std::to_string(configurations) + " configurations; at most " +
                          std::to_string(limits.max_configurations) + " (sampled or not)");
}

Plan parse_plan(const json& document, const std::string& source, const std::string& base_dir,
                const PlanLimits& limits) {
  Plan plan;
  plan.source = source;
  try {
    if (!document.is_object()) fail("plan", "expected a JSON object");
    check_keys(document, top_keys(), group_keys(), "plan");
    if (document.contains("format") && document["format"] != kPlanFormat)
      fail("format", "unsupported " + document["format"].dump() + " (this dnncast reads \"" + kPlanFormat + "\")");
    if (!document.contains("name") || !document["name"].is_string() || document["name"].get<std::string>().empty())
      fail("name", "a plan needs a \"name\" (recorded on every run)");
    plan.name = document["name"].get<std::string>();
    if (document.contains("repeats")) plan.repeats = get_int(document["repeats"], "repeats", 1, 1000, "repeats");
    if (document.contains("measure")) {
      const json& measure = document["measure"];
      if (!measure.is_object()) fail("measure", "expected an object");
      check_keys(measure,
                 {"time_budget_s", "warmup_budget_s", "target_rel_ci", "timeout_s", "memory_limit_bytes",
                  "min_iterations", "max_iterations", "per_layer"},
                 {}, "measure");
      MeasureOptions& options = plan.measure;
      if (measure.contains("time_budget_s"))
        options.time_budget_s =
            get_number(measure["time_budget_s"], "measure.time_budget_s", 0.001, 86400, "time budget");
      if (measure.contains("warmup_budget_s"))
        options.warmup_budget_s =
            get_number(measure["warmup_budget_s"], "measure.warmup_budget_s", 0, 86400, "warm-up budget");
      if (measure.contains("target_rel_ci"))
        options.target_rel_ci = get_number(measure["target_rel_ci"], "measure.target_rel_ci", 1e-6, 1, "target");
      if (measure.contains("timeout_s"))
        options.timeout_s = get_number(measure["timeout_s"], "measure.timeout_s", 0.1, 7 * 86400, "timeout");
      if (measure.contains("memory_limit_bytes"))
        options.memory_limit_bytes =
            get_int(measure["memory_limit_bytes"], "measure.memory_limit_bytes", 0, INT64_MAX, "memory limit");
      if (measure.contains("min_iterations"))
        options.min_iterations =
            get_int(measure["min_iterations"], "measure.min_iterations", 1, 1000000, "minimum iterations");
      if (measure.contains("max_iterations"))
        options.max_iterations =
            get_int(measure["max_iterations"], "measure.max_iterations", 1, 100000000, "maximum iterations");
      if (measure.contains("per_layer")) {
        if (!measure["per_layer"].is_boolean()) fail("measure.per_layer", "expected true or false");
        options.per_layer = measure["per_layer"].get<bool>();
      }
      if (options.max_iterations < options.min_iterations)
        fail("measure.max_iterations", "smaller than min_iterations");
    }

    std::vector<Group> groups;
    if (document.contains("groups")) {
      const json& list = non_empty_list(document["groups"], "groups");
      for (size_t index = 0; index < list.size(); ++index) {
        std::string where = "groups[" + std::to_string(index) + "]";
        if (!list[index].is_object()) fail(where, "expected an object");
        check_keys(list[index], group_keys(), {}, where);
        groups.push_back(parse_group(list[index], document, where, base_dir));
      }
    } else {
      groups.push_back(parse_group(document, json::object(), "", base_dir));
    }

    // Expand: every (model, size) is built once at batch 1 (validation, hash, FLOPs).
    NetworkTable table;
    std::set<std::tuple<std::string, records::RunConfig>> seen;
    for (const Group& group : groups) check_group_size(group, limits);
    for (const Group& group : groups) {
      GroupGrid grid(group, table, plan.networks);
      for (const GridPoint& point : sample_group(group, grid)) {
        int network = grid.network(point);
        records::RunConfig config = grid.config(point);
        // The same network and configuration listed twice (two groups, or a file equal to a zoo
        // model) is measured once.
        if (!seen.emplace(plan.networks[static_cast<size_t>(network)].hash, config).second) continue;
        plan.entries.push_back({network, config});
      }
    }
  } catch (const InputError& error) {
    throw InputError(source + ": " + error.what());
  }
  return plan;
}

Plan load_plan(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InputError("cannot open plan file " + quote(path));
  std::stringstream text;
  text << file.rdbuf();
  check_json_nesting(text.str(), "plan file " + quote(path));
  json document;
  try {
    document = json::parse(text.str());
  } catch (const json::exception& error) {
    throw InputError(path + ": not valid JSON (" + error.what() + ")");
  }
  size_t slash = path.find_last_of('/');
  std::string base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (slash == 0) base_dir = "/";
  return parse_plan(document, path, base_dir);
}

Shard parse_shard(const std::string& text) {
  size_t slash = text.find('/');
  Shard shard;
  bool ok = slash != std::string::npos;
  if (ok) {
    try {
      size_t used_index = 0, used_count = 0;
      std::string index_text = text.substr(0, slash), count_text = text.substr(slash + 1);
      shard.index = std::stoll(index_text, &used_index);
      shard.count = std::stoll(count_text, &used_count);
      ok = used_index == index_text.size() && used_count == count_text.size();
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || shard.count < 1 || shard.index < 0 || shard.index >= shard.count)
    throw InputError("--shard " + quote(text) + ": expected i/N with 0 <= i < N, like 0/8");
  return shard;
}

std::vector<size_t> shard_entries(const Plan& plan, const Shard& shard) {
  std::vector<size_t> indices;
  for (size_t index = static_cast<size_t>(shard.index); index < plan.entries.size();
       index += static_cast<size_t>(shard.count))
    indices.push_back(index);
  return indices;
}

}  // namespace dnncast::measure
