// `dnncast evaluate`: error of the learned predictor on held-out configurations, beside the noise
// floor of the same data and an analytic baseline (docs/RESULTS.md).
//
// Splits (over configurations; all repeats of one configuration stay on one side):
//   random  one shuffled 80/20 split
//   family  grouped k-fold over architecture families: every family is predicted by a model that
//           never saw it (zero-shot); synthetic networks stay in every training part and are not
//           a test family (they exist to be trained on) when 2 or more designed families exist
//   batch   train on the smaller batch sizes, test on the largest ones (about 20% of configurations)
//   env     train on all environments but one, test on it, for each environment
// Errors are computed against every repeat (one measurement each), which is what the noise floor
// measures too: the error of predicting one repeat by the mean of the other repeats of its
// configuration; it is taken over every configuration of the dataset with 2 or more repeats (a
// property of the data, not of the split). The baseline is a roofline fitted by weighted least squares (relative error)
// on the training part, per (environment, threads): time = a*FLOPs + b*bytes + c*batch + d; memory =
// a*(parameter+optimizer+saved bytes) + b*activation bytes + c*batch + d.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "learn/metrics.h"
#include "store/store.h"
#include "study/training.h"

namespace dnncast::study {

struct EvaluateOptions {
  std::string split = "random";       // random | family | batch | input | env
  std::string learner = "auto";       // "auto" = AutoML on the first training part; or a learner name (defaults)
  std::vector<std::string> learners;  // learner "auto": the learners AutoML searches (empty = all)
  // A named learner: these hyperparameters over its defaults (unknown names are an InputError).
  nlohmann::json hyperparameters = nlohmann::json::object();
  double budget_s = 60;           // AutoML budget per target
  std::string transform;          // "" = every transform that applies; else only this kind ("log_ratio")
  bool keep_predictions = false;  // fill TargetEvaluation::predictions
  int folds = 5;                  // AutoML cross-validation folds; also family-split folds
  uint64_t seed = 1;
  std::vector<std::string> targets;  // empty: time, and memory when every configuration has peak bytes
  // AutoML folds keep networks ("network") or families ("family") whole, or are plain ("none");
  // "" = family for the family split (choose what generalizes to unseen families), else network.
  std::string cv_groups;
  // Where the data has per-layer timings: also give the time predictor the layer-wise model's
  // forecast as a feature (est.layers_ms; else only the layer-wise row is evaluated).
  bool layer_feature = false;
  // Also score the hybrid (the whole-network learner with est.layers_ms, AutoML run for it on its
  // own) beside the whole-network learner: TargetEvaluation::hybrid (`evaluate --model whole,layerwise,hybrid`).
  bool hybrid = false;
  // Also score the whole-network learner carried past the training part's largest batch B by the
  // layer-wise model's batch scaling: its forecast at B times L(b) / L(B), L the layer-wise sum, held
  // within [t(B), t(B) b / B] like the plain bound: TargetEvaluation::scaled (`--model scaled`). Inside
  // the trained batches it is the whole-network learner's own forecast.
  bool scaled = false;
  // Also score the corrected layer-wise model: the learner fitted on log(measured / est.layers_ms)
  // with the whole-network features and est.layers_ms (target transform log_ratio over the layer-wise
  // sum): the layer-wise model's forecast times a learned correction, so that the layer-wise model
  // carries it where the learner's trees are flat (larger batches and inputs than trained):
  // TargetEvaluation::corrected (`--model corrected`).
  bool corrected = false;
  // Single-layer benchmarks (`dnncast bench-layers`, table layer_benchmarks) the layer-wise model is
  // also fitted on (alone: those of the dataset's environment where the dataset has no per-layer
  // runs). Rows timed as a layer of a zoo model that a test part holds are left out of that part's fit.
  std::vector<records::LayerBenchRecord> layer_bench;
  std::string bench_target = "warm";  // warm | cold: which of a benchmark's timings is the target
  std::ostream* log = nullptr;
};

// The time predictors `models` names (whole, layerwise, hybrid, scaled, corrected) set in `options`; InputError
// naming `option` and the known ones for any other name.
void set_time_models(EvaluateOptions& options, const std::vector<std::string>& models, const std::string& option);
// InputError unless `split` is one evaluate() knows: random, family, batch, input, env.
void check_split(const std::string& split);

// The learned model's and the roofline's errors on one family's test runs.
struct FamilyErrors {
  std::string family;
  int64_t runs = 0;
  double model_mre = 0, model_median_signed = 0;  // signed: (forecast - measured) / measured; < 0 = too fast/small
  double baseline_mre = 0;
};

// The learned model's error and the noise floor on one kind of network: "designed" (every family
// but the generator's) or "synthetic". The floor is over that kind's configurations measured 2+
// times (in any part of the split), so the two read side by side.
struct KindErrors {
  std::string kind;
  learn::ErrorStats model, noise_floor;
  int64_t noise_configurations = 0;
};

// One held-out run: what was measured, what the model and the roofline forecast.
struct TestPrediction {
  int64_t sample = 0;  // index into the table's samples
  int64_t repeat = 0;  // which of the sample's repeats (times_ms or peak_bytes) was measured
  double measured = 0, predicted = 0, baseline = 0;
  double layerwise = 0;              // the layer-wise sum alone (scaled); 0 when the data has no per-layer timings
  double scaled = 0, corrected = 0;  // EvaluateOptions::scaled, ::corrected; 0 when not scored
};

struct TargetEvaluation {
  std::string target;  // "time" | "memory"
  std::string learner, transform;
  nlohmann::json hyperparameters;
  learn::ErrorStats model, baseline, noise_floor;
  int64_t noise_configurations = 0;  // configurations with 2+ repeats behind noise_floor
  learn::ErrorStats simulator;       // memory only: the allocator simulator (src/memory), nothing learned
  // time, where the data has per-layer timings: the layer-wise model's sum alone, times one factor
  // (median of measured / sum over the training part: what isolated layers leave out), nothing else.
  learn::ErrorStats layerwise;
  learn::ErrorStats hybrid;  // EvaluateOptions::hybrid: the whole-network learner with est.layers_ms
  std::string hybrid_learner, hybrid_transform;
  learn::ErrorStats scaled;     // EvaluateOptions::scaled
  learn::ErrorStats corrected;  // EvaluateOptions::corrected
  std::string corrected_learner;
  int64_t scaled_past_range = 0;            // test runs past the training part's batches, where scaled differs
  std::vector<FamilyErrors> by_family;      // every family with test runs, by name
  std::vector<KindErrors> by_kind;          // designed, synthetic: those with test runs
  std::vector<TestPrediction> predictions;  // every held-out run (EvaluateOptions::keep_predictions)
  int64_t test_configurations = 0;
  int folds = 0;
};

struct EvaluationReport {
  std::string dataset, split, split_description;
  int64_t configurations = 0, runs = 0, networks = 0, families = 0, environments = 0;
  std::vector<TargetEvaluation> targets;
  std::vector<std::string> notes;
  nlohmann::json to_json() const;
  std::string markdown() const;  // docs/RESULTS.md-ready
  std::string text() const;
};

// (train, test) index lists over the table's samples. Throws InputError when the split cannot be
// made (one family, one batch size, one environment, an unknown split name).
std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> make_split(const TrainingTable& table,
                                                                              const std::string& split, int folds,
                                                                              uint64_t seed, std::string* description);

// The noise floor of a set of samples: the error a forecast that knew each configuration's true
// mean would make against single measurements, estimated from the spread between repeats
// (data::noise_floor_errors, shared with `dataset stats`).
learn::ErrorStats noise_floor(const std::vector<std::vector<double>>& repeats);

// Roofline baseline predictions for `test` rows, fitted on `train` rows.
std::vector<double> baseline_predictions(const TrainingTable& table, const std::string& target,
                                         const std::vector<int64_t>& train, const std::vector<int64_t>& test);

EvaluationReport evaluate(const TrainingTable& table, const EvaluateOptions& options);

// The held-out runs of a report as CSV, one line per run and target: target, network, family,
// environment, configuration, measured, forecast, roofline, signed relative error.
void write_predictions_csv(const TrainingTable& table, const EvaluationReport& report, std::ostream& out);

}  // namespace dnncast::study
