// Predictor bundles (DESIGN.md "Formats"): a folder with manifest.json (target, feature list and
// version, learner, hyperparameters, target transform, training environment and size, CV metrics,
// prediction interval) and the learner's own file. Also the training table: a dataset's runs
// grouped into configurations, featurized.
//
// Layout of a predictor set (what `dnncast train --target all` writes and data/predictors/ ships):
//   SET/time/manifest.json + model file      time per iteration, ms
//   SET/memory/manifest.json + model file    peak bytes (when the dataset has them)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/store.h"
#include "apps/layer_model.h"
#include "features/featurizer.h"
#include "features/layer_features.h"
#include "hardware/hardware.h"
#include "learn/automl.h"
#include "learn/learner.h"

namespace dnncast::apps {

inline constexpr const char* kPredictorFormat = "dnncast-predictor/1";

// Hardware descriptors of a stored environment (GPU peaks from the catalogue; CPU peaks unknown).
features::HardwareFeatures hardware_of(const data::EnvironmentRecord& environment);
// "AMD EPYC 7B13 (2 CPUs)" or the GPU name.
std::string environment_label(const data::EnvironmentRecord& environment);
// Lower-case slug of the label for folder names: "amd-epyc-7b13-2cpu".
std::string environment_slug(const data::EnvironmentRecord& environment);
nlohmann::json environment_to_json(const data::EnvironmentRecord& environment);
data::EnvironmentRecord environment_from_json(const nlohmann::json& document);

// One measured configuration: all ok repeats of (environment, network, configuration).
struct Sample {
  std::string environment_hash;
  std::string network_hash, network_name, family;
  data::RunConfig config;
  std::vector<double> times_ms;    // one per repeat (median of its iterations)
  std::vector<double> peak_bytes;  // one per repeat that recorded it
  std::vector<std::string> time_plans, peak_plans;  // the campaign plan of each entry of times_ms, peak_bytes
  double simulated_peak_bytes = 0; // the memory simulator's peak for this configuration (src/memory);
                                   // 0 when the simulator does not model it (bf16, an unknown op)
  int layer_sites = -1;            // index into TrainingTable::layer_sites (TableOptions::layer_sites)
  int graph = -1;                  // index into TrainingTable::graphs
  double time_ms() const;          // mean of the repeats
  double peak() const;             // mean of the repeats; 0 when none
};

// The per-layer timings of one run (dataset table layer_times), matched to its sample's layer sites.
struct LayerRun {
  size_t sample = 0;
  std::vector<double> ms;  // per node (forward + backward), then the optimizer (step + zero_grad)
};

struct TrainingTable {
  std::string dataset;  // path
  std::vector<Sample> samples;
  learn::Matrix x;  // samples x features::feature_count()
  std::map<std::string, data::EnvironmentRecord> environments;  // by hash
  int64_t runs_used = 0;       // ok runs behind the samples
  int64_t runs_skipped = 0;    // failed runs, and runs whose network could not be rebuilt
  std::vector<std::string> notes;  // why runs were skipped, one line per cause
  // With TableOptions::layer_sites: the layer sites of every (network, input), and the runs with
  // per-layer timings.
  std::vector<features::LayerSites> layer_sites;
  // The graph part of the samples' features (Sample::graph) and the hardware part of each sample's
  // (by sample): a sample featurized again at another batch (the forecast past the trained batches).
  std::vector<features::GraphFeatures> graphs;
  std::vector<features::HardwareFeatures> hardware;
  std::vector<LayerRun> layer_runs;
  bool has_memory() const;     // every sample has peak bytes
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
  std::map<std::string, data::EnvironmentRecord> featurize_as;
};

// The featurizer's view of a run's configuration.
features::TrainingConfig training_config_of(const data::RunConfig& run);

// Reads a dataset and featurizes every configuration. Throws InputError when the file is not a
// dataset, the environment is unknown (listing the known ones) or no successful run is left.
TrainingTable load_training_table(const std::string& db_path, const TableOptions& options = {});

// The featurized table as CSV, one row per configuration: environment, network, family, batch,
// input, seq_len, optimizer, precision, threads, repeats, time_ms (mean of the repeats), peak_bytes
// (mean; empty when not recorded), then every feature by its name (features::feature_names(),
// version features::kFeatureVersion). For users who bring their own learner.
void write_features_csv(const TrainingTable& table, std::ostream& out);

struct Manifest {
  std::string target;  // "time" | "memory"
  std::string unit;    // "ms" | "bytes"
  int feature_version = 0;
  std::vector<std::string> features;
  std::vector<int> columns;  // feature columns the learner reads, in order
  std::string learner;
  nlohmann::json hyperparameters;
  learn::TargetTransform transform;
  double interval_low = 0, interval_high = 0;  // quantiles of log(truth / prediction) from CV: 5%, 95%
  // A calibration shift applied to every forecast (and its interval): log y' = intercept + slope log y.
  // Identity unless `dnncast calibrate` wrote it ("shift" in manifest.json).
  double shift_log_intercept = 0, shift_log_slope = 1;
  std::vector<data::EnvironmentRecord> environments;
  nlohmann::json training;    // rows, runs, networks, families, batches, dataset, trained_at
  nlohmann::json cv;          // folds, mre, median_re, p90_re, within_10pct
  nlohmann::json leaderboard;  // the AutoML table, best first
  nlohmann::json to_json() const;
};

// A learned value with its 90% prediction interval.
struct Estimate {
  double value = 0, low = 0, high = 0;
};

class Predictor {
 public:
  // Throws InputError naming the folder: missing or malformed manifest, another format, another
  // feature version ("trained with feature version 0, this build computes version 1: retrain it").
  static Predictor load(const std::string& dir);
  void save(const std::string& dir) const;  // creates dir

  const Manifest& manifest() const { return manifest_; }
  void set_manifest(Manifest manifest) { manifest_ = std::move(manifest); }  // same learner and columns
  const std::string& dir() const { return dir_; }
  // rows: full feature rows (features::feature_count() columns each).
  std::vector<Estimate> predict(const learn::Matrix& rows) const;
  Estimate predict_one(const std::vector<double>& row) const;
  // `count` full feature rows stored one after the other (row-major); forecasts into `out`.
  void predict_rows(const double* rows, int64_t count, Estimate* out) const;

  Predictor(Manifest manifest, std::unique_ptr<learn::Learner> learner, std::string dir = "");
  Predictor(Predictor&&) = default;
  Predictor& operator=(Predictor&&) = default;

 private:
  Manifest manifest_;
  std::shared_ptr<learn::Learner> learner_;
  std::string dir_;
};

struct TrainOptions {
  std::string target = "time";  // "time" | "memory"
  double budget_s = 60;               // AutoML time budget; 0 = none (then max_candidates > 0)
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
std::vector<LayerExample> layer_examples(const TrainingTable& table, const std::vector<int64_t>* samples = nullptr);
// The layer-wise model of a predictor set (`dnncast train --layer-bench`): fitted on the table's
// per-layer runs (TableOptions::layer_sites) and the single-layer benchmarks' `target` timings
// (warm | cold). InputError when neither has a row.
LayerModel train_layer_model(const TrainingTable& table, const std::vector<data::LayerBenchRecord>& bench,
                             const std::string& target, std::ostream* log = nullptr);
// The layer-wise model's forecast of every sample, ms (0 for a sample without layer sites).
std::vector<double> layer_estimates_of(const TrainingTable& table, const LayerModel& model);

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
Predictor train_predictor(const TrainingTable& table, const TrainOptions& options);

// A time and (optional) memory predictor of one environment.
struct PredictorSet {
  std::string dir;
  std::optional<Predictor> time, memory;
  // DIR/time/layers when present (`dnncast train --layer-bench`): carries time forecasts past the
  // trained batches (apps/extrapolation.h).
  std::optional<LayerModel> layers;
  // DIR/time/corrected when present (with layers): the layer-wise sum times a learned correction
  // (a time predictor on log(time / est.layers_ms)); `predict` uses it at the largest inputs.
  std::optional<Predictor> corrected;
  const data::EnvironmentRecord& environment() const;
};
// DIR with manifest.json (one bundle), or DIR/time (with DIR/time/layers when there) and DIR/memory.
PredictorSet load_predictor_set(const std::string& dir);
// The same, loaded once per process and shared read-only (serve's worker threads, Python, compare, schedule): a
// set is read again only when one of its files changed (size or modification time of its manifests and models).
// Thread-safe; InputError as load_predictor_set.
std::shared_ptr<const PredictorSet> cached_predictor_set(const std::string& dir);
// The folders under `root` (data/predictors) that hold predictor sets, sorted.
std::vector<std::string> shipped_predictor_sets(const std::string& root);
// The set to use for a device: `device` matches a set's folder name, environment slug, label, hash
// or GPU (a catalogue name such as "t4" matches a driver name "Tesla T4"); "" or "cpu" takes the
// CPU set of this host's CPU model and core count, else the first CPU set with a note saying so.
// Throws InputError listing the known sets when nothing matches.
struct SetChoice {
  std::string dir;
  std::string note;  // non-empty when the choice is a fallback
};
SetChoice choose_predictor_set(const std::vector<std::string>& sets, const std::string& device,
                               const hardware::HostInfo& host);
// data/predictors of this source tree: $DNNCAST_PREDICTORS, else the compiled-in source dir, else
// found upward from the executable's folder.
std::string default_predictor_root();

}  // namespace dnncast::apps
