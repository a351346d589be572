// The layer-wise time model (docs/RESULTS.md "Layer benchmarks and the hybrid"): a learner over layer rows
// (features/layer_features.h) fitted on per-layer timings (dataset table layer_times, measured by
// plans with "per_layer": true), in log space. Its forecast of an iteration is the sum of its
// forecasts for every node (forward + backward, inside real iterations where the data has it) and
// for the rest of the iteration (optimizer step + zero_grad + loss). `dnncast evaluate` scores that
// sum on its own, and with --layer-feature gives it to the whole-network time predictor as feature
// est.layers_ms: it carries each layer's shape (a 1x1 convolution on the slow path at batch 8
// costs 20x what it costs on oneDNN at batch 16) into networks the layer timings never saw.
//
// Bundle: a folder (the time predictor's layers/) with layers.json (format, feature version, the
// layer feature list, learner, hyperparameters, training size) and the learner's model file.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "features/layer_features.h"
#include "learn/learner.h"
#include "records/records.h"

namespace dnncast::forecast {

inline constexpr const char* kLayerModelFormat = "dnncast-layer-model/1";

// The per-layer timings of one run, matched to its graph's layer sites.
struct LayerExample {
  const features::LayerSites* sites = nullptr;
  features::TrainingConfig config;
  bool gpu = false;
  std::vector<double> ms;  // sites->nodes.size() + 1 values: each node's forward + backward, then the rest
                           // (optimizer step, zero_grad, loss); a layer benchmark: its one node's only
  std::string origin;      // a layer benchmark's LayerBenchRecord::origin; "" for a run
};

// The ok rows of single-layer benchmarks as examples of one node each (target "warm": forward +
// backward with warm caches; "cold": with caches flushed before each). `sites` holds their layer
// sites (resized here: the examples point into it). InputError for another target or a bad graph.
std::vector<LayerExample> bench_examples(const std::vector<records::LayerBenchRecord>& records,
                                         const std::string& target, std::vector<features::LayerSites>& sites);

// Matches a run's layer_times rows to the sites of its graph (by position, checked by node name;
// the rows after the nodes, optimizer step, zero_grad and loss, summed into one). The times inside
// real iterations when every row has them, else each node's alone. False when they do not match
// (another graph version).
bool match_layer_timings(const features::LayerSites& sites, const std::vector<records::LayerTiming>& timings,
                         std::vector<double>& ms);

class LayerModel {
 public:
  // Fits the learner (XGBoost unless named) on every row of the examples; InputError when there
  // are none.
  static LayerModel fit(const std::vector<LayerExample>& examples, const std::string& learner = "xgboost",
                        const nlohmann::json& hyperparameters = {});
  static LayerModel load(const std::string& dir);  // InputError naming the folder on any problem
  void save(const std::string& dir) const;         // creates dir

  // Forecast of one iteration, ms: the sum over the rows of one configuration.
  double iteration_ms(const features::LayerSites& sites, const features::TrainingConfig& config, bool gpu) const;
  // Per-row forecasts (nodes, then the optimizer), ms.
  std::vector<double> row_ms(const features::LayerSites& sites, const features::TrainingConfig& config, bool gpu) const;

  // Rows forecast before, keyed by their features (all of them: the same row, the same forecast, to the bit), are
  // answered from a cache that the copies of this model share across requests and threads (issue 37: past the
  // trained batches every forecast also sums the network at the largest trained batch). Bounded: at `rows` rows
  // it is emptied and refilled. 0: no cache (every row walked). A loaded or fitted model starts with
  // kLayerRowCacheRows.
  void set_row_cache_rows(size_t rows);
  size_t cached_rows() const;  // rows held now

  static constexpr size_t kLayerRowCacheRows = size_t{1} << 16;  // ~11 MB of keys and values at most

  int64_t training_runs() const { return training_runs_; }
  int64_t training_rows() const { return training_rows_; }

 private:
  struct RowCache;
  std::shared_ptr<learn::Learner> learner_;
  std::shared_ptr<RowCache> cache_;  // null: none
  int64_t training_runs_ = 0, training_rows_ = 0;
};

}  // namespace dnncast::forecast
