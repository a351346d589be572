// Training predictors from a dataset: the training table (a dataset's runs grouped into
// configurations and featurized), AutoML over it and the layer-wise model's fit. What a forecast reads
// back (bundles, sets) is forecast/predictor.h; this side reads the SQLite dataset.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "forecast/predictor.h"
#include "records/records.h"

namespace dnncast::study {

// One measured configuration: all ok repeats of (environment, network, configuration).
struct Sample {
  std::string environment_hash;
  std::string network_hash, network_name, family;
  records::RunConfig config;
  std::vector<double> times_ms;                     // one per repeat (median of its iterations)
  std::vector<double> peak_bytes;                   // one per repeat that recorded it
  std::vector<std::string> time_plans, peak_plans;  // the campaign plan of each entry of times_ms, peak_bytes
  double simulated_peak_bytes = 0;                  // the memory simulator's peak for this configuration (src/memory);
                                                    // 0 when the simulator does not model it (bf16, an unknown op)
  int layer_sites = -1;                             // index into TrainingTable::layer_sites (TableOptions::layer_sites)
  int graph = -1;                                   // index into TrainingTable::graphs
  double time_ms() const;                           // mean of the repeats
  double peak() const;                              // mean of the repeats; 0 when none
};

// The per-layer timings of one run (dataset table layer_times), matched to its sample's layer sites.
struct LayerRun {
  size_t sample = 0;
  std::vector<double> ms;  // per node (forward + backward), then the optimizer (step + zero_grad)
};

struct TrainingTable {
  std::string dataset;  // path
  std::vector<Sample> samples;
  learn::Matrix x;                                                 // samples x features::feature_count()
  std::map<std::string, records::EnvironmentRecord> environments;  // by hash
  int64_t runs_used = 0;                                           // ok runs behind the samples
  int64_t runs_skipped = 0;        // failed runs, and runs whose network could not be rebuilt
  std::vector<std::string> notes;  // why runs were skipped, one line per cause
  // With TableOptions::layer_sites: the layer sites of every (network, input), and the runs with
  // per-layer timings.
  std::vector<features::LayerSites> layer_sites;
  // The graph part of the samples' features (Sample::graph) and the hardware part of each sample's
  // (by sample): a sample featurized again at another batch (the forecast past the trained batches).
  std::vector<features::GraphFeatures> graphs;
  std::vector<features::HardwareFeatures> hardware;
  std::vector<LayerRun> layer_runs;
  bool has_memory() const;  // every sample has peak bytes
};

// The frozen holdout (data/plans/holdout.json): configurations measured once per environment to
// score shipped predictors on, never trained on. load_training_table leaves out every run of this
// plan unless TableOptions::holdout asks for them.
inline constexpr const char* kHoldoutPlan = "holdout";
enum class HoldoutRuns {
  Exclude,  // train, evaluate, calibrate: the holdout never enters a training table
  Only,     // scoring a predictor on the holdout (`evaluate --predictor`)
  Include,  // scoring on a whole dataset
};

struct TableOptions {
  std::string time_column = "median";  // "median" (time_ms_median) or "normalised" (time_ms_normalised)
  std::string environment;             // keep only this environment (hash, label or slug); "" = all
  bool simulate_memory = false;        // fill Sample::simulated_peak_bytes (evaluate sets the simulator
                                       // beside the learned memory predictor; train does not need it)
  bool layer_sites = false;            // fill layer_sites and layer_runs (the layer-wise model) when
                                       // some run has per-layer timings
  bool all_layer_sites = false;        // fill layer_sites whatever the runs have (a layer-wise model
                                       // fitted on layer benchmarks forecasts every sample)
  // The CPU ISA the features and the simulator assume for every run: Unknown = each environment's
  // recorded one (features::kUnrecordedIsa where it recorded none).
  hardware::CpuIsa isa = hardware::CpuIsa::Unknown;
  HoldoutRuns holdout = HoldoutRuns::Exclude;  // the holdout plan's runs (kHoldoutPlan)
  // Runs of environment HASH get the hardware features of featurize_as[HASH] (scoring a predictor
  // trained elsewhere as `predict` would use it: with its nearest training environment's features).
  std::map<std::string, records::EnvironmentRecord> featurize_as;
};

// The featurizer's view of a run's configuration.
features::TrainingConfig training_config_of(const records::RunConfig& run);

// Reads a dataset and featurizes every configuration. Throws InputError when the file is not a
// dataset, the environment is unknown (listing the known ones) or no successful run is left.
TrainingTable load_training_table(const std::string& db_path, const TableOptions& options = {});

// The featurized table as CSV, one row per configuration: environment, network, family, batch,
// input, seq_len, optimizer, precision, threads, repeats, time_ms (mean of the repeats), peak_bytes
// (mean; empty when not recorded), then every feature by its name (features::feature_names(),
// version features::kFeatureVersion). For users who bring their own learner.
void write_features_csv(const TrainingTable& table, std::ostream& out);

struct TrainOptions {
  std::string target = "time";  // "time" | "memory"
  double budget_s = 60;         // AutoML time budget; 0 = none (then max_candidates > 0)
  int folds = 5;
  uint64_t seed = 1;
  std::vector<std::string> learners;  // empty = all
  int64_t max_candidates = 0;         // 0 = until the time budget is spent
  std::string transform;              // "" = every transform that applies; else only this kind
  // Non-empty: the one transform log(y / x[ratio_reference]) (the corrected layer-wise model:
  // "est.layers_ms"); InputError when that column does not vary.
  std::string ratio_reference;
  // Cross-validation folds keep each network whole ("network", default: the choice favours models
  // that generalize to unseen networks), each family whole ("family"), or are plain ("none").
  std::string cv_groups = "network";
  std::ostream* log = nullptr;
};

// Group ids of the table's samples for grouped folds ("network" | "family"; "none" = empty).
std::vector<int64_t> cv_groups_of(const TrainingTable& table, const std::vector<int64_t>& rows, const std::string& by);

// The layer-wise model's training examples: the layer runs of the given samples (all when null).
std::vector<forecast::LayerExample> layer_examples(const TrainingTable& table,
                                                   const std::vector<int64_t>* samples = nullptr);
// The layer-wise model of a predictor set (`dnncast train --layer-bench`): fitted on the table's
// per-layer runs (TableOptions::layer_sites) and the single-layer benchmarks' `target` timings
// (warm | cold). InputError when neither has a row.
forecast::LayerModel train_layer_model(const TrainingTable& table, const std::vector<records::LayerBenchRecord>& bench,
                                       const std::string& target, std::ostream* log = nullptr);
// The layer-wise model's forecast of every sample, ms (0 for a sample without layer sites).
std::vector<double> layer_estimates_of(const TrainingTable& table, const forecast::LayerModel& model);

// Target values of a table: mean time (ms) or peak bytes per sample. Throws InputError for memory
// when some sample has no peak bytes.
learn::Vector targets_of(const TrainingTable& table, const std::string& target);
// Columns that vary in the table (constant ones carry no information for any learner).
std::vector<int> varying_columns(const learn::Matrix& x);
// Where feature `name` sits among selected `columns` (feature indices); -1 when it is not there.
int column_position(const std::vector<int>& columns, const std::string& name);
// Transforms AutoML tries for a target: log relative to the analytic cost column (FLOPs per
// thread for time, scaled by the thread exponent measured on the training rows when threads vary;
// the training-memory estimate for memory), log relative to a linear reference
// fitted on the training rows (time: FLOPs by convolution implementation, FLOPs, bytes, batch,
// parameters, nodes; memory: the roofline's terms), for memory also the identity (peak bytes are
// close to a linear function of byte counts); plain log only when none of those columns varies.
std::vector<learn::TargetTransform> transforms_for(const std::string& target, const std::vector<int>& columns);
// log(y / x[reference]) over the feature `reference` among `columns` (TrainOptions::ratio_reference);
// InputError when it is not among them (it does not vary in the training rows).
learn::TargetTransform ratio_over(const std::vector<int>& columns, const std::string& reference);
// The transforms of one kind ("log_ratio"); InputError naming the applicable kinds when none is.
std::vector<learn::TargetTransform> keep_transform_kind(const std::vector<learn::TargetTransform>& transforms,
                                                        const std::string& kind, const std::string& target);
// Feature columns that identify a configuration apart from its thread count (the pairs that
// measure thread scaling).
const std::vector<std::string>& thread_pair_columns();

// AutoML on the table, refit of the best candidate on all of it; leaderboard in the manifest.
// Throws InputError on an unknown target or learner, or a table too small to train on.
forecast::Predictor train_predictor(const TrainingTable& table, const TrainOptions& options);

// The single-layer benchmarks of a dataset (`dnncast bench-layers`) for the layer-wise model; `option` names
// where the path came from. InputError when the file is missing or holds none.
std::vector<records::LayerBenchRecord> read_layer_benchmarks(const std::string& path, const std::string& option);
// InputError unless `name` is a benchmark timing the layer-wise model fits: warm | cold.
void check_bench_target(const std::string& name, const std::string& option);
// The corrected layer-wise model (`train --layer-bench`, OUT/time/corrected): a time predictor on
// log(time / the layer-wise sum), searched with `options` (target time). InputError when it cannot be fitted
// (too few configurations, a layer-wise sum that does not vary).
forecast::Predictor train_corrected_model(const TrainingTable& table, const forecast::LayerModel& layers,
                                          TrainOptions options);

}  // namespace dnncast::study
