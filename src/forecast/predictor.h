// Predictor bundles (src/README.md "Formats"): a folder with manifest.json (target, feature list and
// version, learner, hyperparameters, target transform, training environment and size, CV metrics,
// prediction interval) and the learner's own file; predictor sets and the set for a device. Training them
// from a dataset is study/training.h.
//
// Layout of a predictor set (what `dnncast train --target all` writes and data/predictors/ ships):
//   SET/time/manifest.json + model file      time per iteration, ms
//   SET/memory/manifest.json + model file    peak bytes (when the dataset has them)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "features/featurizer.h"
#include "features/layer_features.h"
#include "forecast/device.h"
#include "forecast/layer_model.h"
#include "hardware/hardware.h"
#include "learn/automl.h"
#include "learn/learner.h"
#include "records/records.h"

namespace dnncast::forecast {

inline constexpr const char* kPredictorFormat = "dnncast-predictor/1";

// Hardware descriptors of a stored environment (GPU peaks from the catalogue; CPU peaks unknown).
features::HardwareFeatures hardware_of(const records::EnvironmentRecord& environment);
// "AMD EPYC 7B13 (2 CPUs)" or the GPU name.
std::string environment_label(const records::EnvironmentRecord& environment);
// Lower-case slug of the label for folder names: "amd-epyc-7b13-2cpu".
std::string environment_slug(const records::EnvironmentRecord& environment);
nlohmann::json environment_to_json(const records::EnvironmentRecord& environment);

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
  std::vector<records::EnvironmentRecord> environments;
  nlohmann::json training;     // rows, runs, networks, families, batches, dataset, trained_at
  nlohmann::json cv;           // folds, mre, median_re, p90_re, within_10pct
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

// A time and (optional) memory predictor of one environment.
struct PredictorSet {
  std::string dir;
  std::optional<Predictor> time, memory;
  // DIR/time/layers when present (`dnncast train --layer-bench`): carries time forecasts past the
  // trained batches (forecast/extrapolation.h).
  std::optional<LayerModel> layers;
  // DIR/time/corrected when present (with layers): the layer-wise sum times a learned correction
  // (a time predictor on log(time / est.layers_ms)); `predict` uses it at the largest inputs.
  std::optional<Predictor> corrected;
  const records::EnvironmentRecord& environment() const;
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
// choose_predictor_set's error when a named device matches no set (predict() adds the closest catalogued GPUs).
class UnknownDevice : public InputError {
 public:
  using InputError::InputError;
};
struct SetChoice {
  std::string dir;
  std::string note;  // non-empty when the choice is a fallback
};
// `device` as resolved (forecast/device.h): this host's CPU takes the set trained on it, else the first CPU set
// (with a note); a set's name (its folder, environment label, slug or hash, or its GPU's driver name) or a catalogued
// GPU (a set measured on it) takes that set. UnknownDevice otherwise, naming the known sets.
SetChoice choose_predictor_set(const std::vector<std::string>& sets, const ForecastDevice& device,
                               const hardware::HostInfo& host);
// data/predictors of this source tree: $DNNCAST_PREDICTORS, else the compiled-in source dir, else
// found upward from the executable's folder.
std::string default_predictor_root();

}  // namespace dnncast::forecast
