#include "forecast/layer_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "core/json_limits.h"
#include "import/graph_json.h"

namespace dnncast::forecast {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Timings below a microsecond are clock resolution; the log target is floored there.
constexpr double kFloorMs = 1e-3;

}  // namespace

bool match_layer_timings(const features::LayerSites& sites, const std::vector<records::LayerTiming>& timings,
                         std::vector<double>& ms) {
  const size_t nodes = sites.nodes.size();
  if (timings.size() < nodes + 1) return false;
  // Inside real iterations where every row has it (campaigns since schema 2's in-iteration
  // columns); else each node alone.
  bool in_iteration = true;
  for (const records::LayerTiming& timing : timings)
    in_iteration = in_iteration && timing.iteration_forward_ms.has_value() && timing.iteration_backward_ms.has_value();
  ms.assign(nodes + 1, 0.0);
  for (size_t position = 0; position < nodes; ++position) {
    const records::LayerTiming& timing = timings[position];
    if (timing.node != sites.nodes[position].node) return false;
    ms[position] = in_iteration ? *timing.iteration_forward_ms + *timing.iteration_backward_ms
                                : timing.forward_ms + timing.backward_ms;
  }
  bool optimizer = false;
  for (size_t position = nodes; position < timings.size(); ++position) {
    const records::LayerTiming& timing = timings[position];
    if (timing.op != records::kOptimizerStepOp && timing.op != records::kZeroGradOp && timing.op != records::kLossOp)
      return false;
    ms[nodes] += in_iteration ? *timing.iteration_forward_ms + *timing.iteration_backward_ms
                              : timing.forward_ms + timing.backward_ms;
    optimizer = optimizer || timing.op == records::kOptimizerStepOp;
  }
  return optimizer;
}

std::vector<LayerExample> bench_examples(const std::vector<records::LayerBenchRecord>& records,
                                         const std::string& target, std::vector<features::LayerSites>& sites) {
  if (target != "warm" && target != "cold")
    throw InputError("unknown benchmark target " + quote(target) + " (known: warm, cold)");
  sites.clear();
  sites.reserve(records.size());  // no reallocation: the examples point into it
  std::vector<LayerExample> examples;
  for (const records::LayerBenchRecord& record : records) {
    bool cold = target == "cold";
    const std::optional<double>& forward = cold ? record.cold_forward_ms : record.forward_ms;
    const std::optional<double>& backward = cold ? record.cold_backward_ms : record.backward_ms;
    if (record.status != "ok" || !forward || !backward) continue;
    Graph graph;
    try {
      check_json_nesting(record.graph_json, "layer benchmark " + record.key);
      graph = import::graph_from_json(nlohmann::json::parse(record.graph_json), "layer benchmark " + record.key);
    } catch (const nlohmann::json::exception& error) {
      throw InputError("layer benchmark " + record.key + ": graph_json is not JSON: " + error.what());
    }
    sites.push_back(features::layer_sites(graph));
    LayerExample example;
    example.sites = &sites.back();
    example.config.batch = record.batch;
    example.config.threads = record.threads;
    example.ms = {*forward + *backward};
    example.origin = record.origin;
    examples.push_back(std::move(example));
  }
  return examples;
}

LayerModel LayerModel::fit(const std::vector<LayerExample>& examples, const std::string& learner,
                           const nlohmann::json& hyperparameters) {
  const size_t columns = features::layer_feature_count();
  size_t rows = 0, runs = 0;
  for (const LayerExample& example : examples) {
    rows += example.ms.size();
    runs += example.origin.empty() ? 1 : 0;
  }
  if (rows == 0) throw InputError("no per-layer timings to fit the layer-wise model on");
  learn::Matrix x(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(columns));
  learn::Vector y(static_cast<Eigen::Index>(rows));
  std::vector<float> block;
  Eigen::Index row = 0;
  for (const LayerExample& example : examples) {
    features::layer_rows(*example.sites, example.config, example.gpu, block);
    DNNCAST_ASSERT(block.size() >= example.ms.size() * columns);
    for (size_t index = 0; index < example.ms.size(); ++index, ++row) {
      for (size_t column = 0; column < columns; ++column)
        x(row, static_cast<Eigen::Index>(column)) = block[index * columns + column];
      y(row) = std::log(std::max(example.ms[index], kFloorMs));
    }
  }
  LayerModel model;
  model.learner_ = learn::make_learner(learner, hyperparameters);
  model.set_row_cache_rows(kLayerRowCacheRows);
  model.learner_->fit(x, y);
  model.training_runs_ = static_cast<int64_t>(runs);
  model.training_rows_ = static_cast<int64_t>(rows);
  return model;
}

// Forecast rows (their features' bytes) to the learner's output (log ms). Read under a shared lock; a forecast that
// found rows missing adds them under the exclusive one.
struct LayerModel::RowCache {
  std::shared_mutex mutex;
  std::unordered_map<std::string, double> predicted;
  size_t capacity = kLayerRowCacheRows;
};

void LayerModel::set_row_cache_rows(size_t rows) {
  if (rows == 0) {
    cache_.reset();
    return;
  }
  cache_ = std::make_shared<RowCache>();
  cache_->capacity = rows;
}

size_t LayerModel::cached_rows() const {
  if (!cache_) return 0;
  std::shared_lock<std::shared_mutex> lock(cache_->mutex);
  return cache_->predicted.size();
}

std::vector<double> LayerModel::row_ms(const features::LayerSites& sites, const features::TrainingConfig& config,
                                       bool gpu) const {
  DNNCAST_ASSERT(learner_ != nullptr);
  std::vector<float> block;
  features::layer_rows(sites, config, gpu, block);
  const size_t count = sites.nodes.size() + 1;
  const size_t width = features::layer_feature_count();
  const size_t row_bytes = width * sizeof(float);
  auto key_of = [&](size_t row) {
    return std::string_view(reinterpret_cast<const char*>(block.data() + row * width), row_bytes);
  };
  // A network repeats its layers (resnet50 its bottleneck blocks): each distinct row is looked up, and predicted,
  // once, which took the corrected layer-wise forecast of resnet50 from 2.5 ms to 0.9 ms
  // (build/bench/predict_bench --benchmark_filter=Corrected, AVX-512 EPYC).
  std::unordered_map<std::string_view, size_t> distinct;
  std::vector<size_t> which(count), first_row;
  for (size_t row = 0; row < count; ++row) {
    auto [at, added] = distinct.emplace(key_of(row), first_row.size());
    if (added) first_row.push_back(row);
    which[row] = at->second;
  }
  std::vector<double> predicted(first_row.size());
  std::vector<size_t> missing;  // indices into first_row
  if (cache_) {
    std::string key;  // one buffer for every lookup (C++17's unordered_map finds by its own key type only)
    key.reserve(row_bytes);
    std::shared_lock<std::shared_mutex> lock(cache_->mutex);
    for (size_t index = 0; index < first_row.size(); ++index) {
      key.assign(key_of(first_row[index]));
      auto found = cache_->predicted.find(key);
      if (found != cache_->predicted.end())
        predicted[index] = found->second;
      else
        missing.push_back(index);
    }
  } else {
    for (size_t index = 0; index < first_row.size(); ++index) missing.push_back(index);
  }
  if (!missing.empty()) {
    std::vector<float> rows(missing.size() * width);
    for (size_t index = 0; index < missing.size(); ++index)
      std::copy_n(block.data() + first_row[missing[index]] * width, width, rows.data() + index * width);
    std::vector<double> walked(missing.size());
    learner_->predict_rows(rows.data(), static_cast<int64_t>(missing.size()), static_cast<int64_t>(width),
                           walked.data());
    for (size_t index = 0; index < missing.size(); ++index) predicted[missing[index]] = walked[index];
    if (cache_) {
      std::unique_lock<std::shared_mutex> lock(cache_->mutex);
      if (cache_->predicted.size() + missing.size() > cache_->capacity) cache_->predicted.clear();
      for (size_t index = 0; index < missing.size() && cache_->predicted.size() < cache_->capacity; ++index)
        cache_->predicted.emplace(std::string(key_of(first_row[missing[index]])), walked[index]);
    }
  }
  std::vector<double> out(count);
  for (size_t row = 0; row < count; ++row) out[row] = std::exp(predicted[which[row]]);
  return out;
}

double LayerModel::iteration_ms(const features::LayerSites& sites, const features::TrainingConfig& config,
                                bool gpu) const {
  double total = 0;
  for (double value : row_ms(sites, config, gpu)) total += value;
  return total;
}

void LayerModel::save(const std::string& dir) const {
  DNNCAST_ASSERT(learner_ != nullptr);
  fs::create_directories(dir);
  learner_->save(dir);
  json manifest{{"format", kLayerModelFormat},
                {"feature_version", features::kFeatureVersion},
                {"layer_features", features::layer_feature_names()},
                {"learner", learner_->name()},
                {"hyperparameters", learner_->hyperparameters()},
                {"target", "log(forward + backward ms) per node; log(step + zero_grad ms) for the optimizer row"},
                {"training", {{"runs", training_runs_}, {"rows", training_rows_}}}};
  std::ofstream out(dir + "/layers.json");
  out << manifest.dump(2) << "\n";
  if (!out) throw InputError("cannot write " + dir + "/layers.json");
}

LayerModel LayerModel::load(const std::string& dir) {
  std::string path = dir + "/layers.json";
  std::ifstream in(path);
  if (!in) throw InputError("no layer-wise model at " + dir + " (" + path + " is missing)");
  LayerModel model;
  const std::string text = read_all(in);
  check_json_nesting(text, path);
  try {
    json manifest = json::parse(text);
    if (manifest.at("format").get<std::string>() != kLayerModelFormat)
      throw InputError(path + ": format " + manifest.at("format").dump() + ", this build reads " +
                       quote(kLayerModelFormat));
    if (manifest.at("feature_version").get<int>() != features::kFeatureVersion ||
        manifest.at("layer_features").get<std::vector<std::string>>() != features::layer_feature_names())
      throw InputError(path + ": trained with another layer feature list (feature version " +
                       manifest.at("feature_version").dump() + ", this build computes " +
                       std::to_string(features::kFeatureVersion) + "): retrain it with `dnncast train`");
    model.learner_ =
        learn::load_learner(manifest.at("learner").get<std::string>(), manifest.at("hyperparameters"), dir);
    model.set_row_cache_rows(kLayerRowCacheRows);
    model.training_runs_ = manifest.at("training").at("runs").get<int64_t>();
    model.training_rows_ = manifest.at("training").at("rows").get<int64_t>();
  } catch (const json::exception& error) {
    throw InputError(path + ": malformed: " + error.what());
  }
  return model;
}

}  // namespace dnncast::forecast
