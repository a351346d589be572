#include "study/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/stats.h"
#include "forecast/extrapolation.h"
#include "store/dataset_csv.h"
#include "store/dataset_stats.h"

namespace dnncast::study {

using nlohmann::json;

namespace {

std::vector<double> repeats_of(const Sample& sample, const std::string& target) {
  return target == "time" ? sample.times_ms : sample.peak_bytes;
}

int column(const char* name) {
  int index = features::feature_index(name);
  DNNCAST_ASSERT(index >= 0);
  return index;
}

// The same transform with its reference columns found among `columns` (a fold's own selection);
// a reference constant in this fold is dropped (the intercept carries it), and with none left the
// transform is plain log.
learn::TargetTransform resolve_transform(learn::TargetTransform transform, const std::vector<int>& columns) {
  if (transform.kind != learn::TargetTransform::Kind::LogRatio &&
      transform.kind != learn::TargetTransform::Kind::LogResidual)
    return transform;
  // The names found among `columns`, and their positions there.
  auto resolve = [&](const std::vector<std::string>& wanted, std::vector<int>& positions,
                     std::vector<std::string>& found) {
    positions.clear();
    found.clear();
    for (const std::string& name : wanted) {
      int position = column_position(columns, name);
      if (position < 0) continue;
      positions.push_back(position);
      found.push_back(name);
    }
  };
  std::vector<int> resolved;
  std::vector<std::string> names;
  resolve(transform.reference_names, resolved, names);
  if (resolved.empty() || (transform.kind == learn::TargetTransform::Kind::LogRatio && resolved.size() != 1))
    return learn::TargetTransform::log();
  transform.reference_columns = resolved;
  transform.reference_names = names;
  if (transform.thread_column >= 0) {
    // Thread scaling needs the thread column in this fold; its pair columns are those present.
    transform.thread_column = column_position(columns, transform.thread_name);
    std::vector<int> pairs;
    std::vector<std::string> pair_names;
    resolve(transform.pair_names, pairs, pair_names);
    transform.pair_columns = pairs;
    transform.pair_names = pair_names;
  }
  return transform;
}

learn::Matrix select(const learn::Matrix& x, const std::vector<int64_t>& rows, const std::vector<int>& columns) {
  learn::Matrix result(static_cast<int64_t>(rows.size()), static_cast<int64_t>(columns.size()));
  for (size_t row = 0; row < rows.size(); ++row)
    for (size_t col = 0; col < columns.size(); ++col)
      result(static_cast<int64_t>(row), static_cast<int64_t>(col)) = x(rows[row], columns[col]);
  return result;
}

std::string percent(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * value);
  return text;
}

std::string kind_of(const std::string& family) { return family == "synthetic" ? "synthetic" : "designed"; }

std::string ratio_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", value);
  return text;
}

}  // namespace

namespace {
// Pixels per sample of a sample's image input; 0 for a sequence model.
int64_t image_pixels(const Sample& sample) {
  const std::vector<int64_t>& input = sample.config.input;
  return input.size() == 3 ? input[1] * input[2] : int64_t{0};
}
}  // namespace

std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> make_split(const TrainingTable& table,
                                                                              const std::string& split, int folds,
                                                                              uint64_t seed, std::string* description) {
  int64_t rows = static_cast<int64_t>(table.samples.size());
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> result;
  auto add = [&](std::vector<int64_t> test) {
    std::sort(test.begin(), test.end());
    result.emplace_back(learn::complement(rows, test), std::move(test));
  };
  if (split == "random") {
    // One 80/20 split: the first of five shuffled folds is the test part.
    add(learn::kfold_indices(rows, 5, seed).front());
    *description = "random 80/20 split of configurations";
  } else if (split == "family") {
    // The zero-shot case is a designed architecture family nobody measured (all ResNets unseen):
    // synthetic networks are the generator's, made to be trained on, so they stay in every training
    // part and are never a test family -- unless fewer than 2 designed families exist.
    std::set<std::string> designed;
    for (const Sample& sample : table.samples)
      if (sample.family != "synthetic") designed.insert(sample.family);
    const bool designed_only = designed.size() >= 2;
    std::map<std::string, int64_t> ids;
    std::vector<int64_t> groups, candidates;  // the rows that may be tested, and their family ids
    for (int64_t row = 0; row < rows; ++row) {
      const std::string& family = table.samples[static_cast<size_t>(row)].family;
      if (designed_only && family == "synthetic") continue;
      candidates.push_back(row);
      groups.push_back(ids.emplace(family, static_cast<int64_t>(ids.size())).first->second);
    }
    if (ids.size() < 2)
      throw InputError("split 'family' needs at least 2 architecture families; the dataset has " +
                       std::to_string(ids.size()));
    for (const std::vector<int64_t>& fold : learn::group_kfold_indices(groups, folds, seed)) {
      std::vector<int64_t> test;
      for (int64_t index : fold) test.push_back(candidates[static_cast<size_t>(index)]);
      add(std::move(test));
    }
    *description = "leave-family-out: " + std::to_string(result.size()) + " folds over " + std::to_string(ids.size()) +
                   (designed_only ? " designed families (synthetic networks always in training)" : " families") +
                   "; each family is predicted by a model that never saw it";
  } else if (split == "batch") {
    std::map<int64_t, int64_t> per_batch;
    for (const Sample& sample : table.samples) ++per_batch[sample.config.batch];
    if (per_batch.size() < 2)
      throw InputError("split 'batch' needs at least 2 batch sizes; the dataset has " +
                       std::to_string(per_batch.size()));
    // Largest batches first until about 20% of the configurations are held out.
    int64_t held = 0, threshold = per_batch.rbegin()->first;
    for (auto entry = per_batch.rbegin(); entry != per_batch.rend(); ++entry) {
      if (held > 0 && held + entry->second > rows / 5) break;
      held += entry->second;
      threshold = entry->first;
      if (std::next(entry) == std::prev(per_batch.rend())) break;  // keep at least one batch for training
    }
    std::vector<int64_t> test;
    for (int64_t row = 0; row < rows; ++row)
      if (table.samples[static_cast<size_t>(row)].config.batch >= threshold) test.push_back(row);
    add(std::move(test));
    *description = "leave-batch-out: train on batch < " + std::to_string(threshold) +
                   ", test on batch >= " + std::to_string(threshold) + " (extrapolation)";
  } else if (split == "input") {
    // Image inputs past the trained ones: the largest image size (pixels per sample) is held out, and
    // every other configuration trains. `make demo`'s case: resnet50 at 224 px is larger than most
    // of what the data measured.
    auto pixels = [](const Sample& sample) { return image_pixels(sample); };
    std::set<int64_t> sizes;
    for (const Sample& sample : table.samples)
      if (pixels(sample) > 0) sizes.insert(pixels(sample));
    if (sizes.size() < 2)
      throw InputError("split 'input' needs image inputs of at least 2 sizes; the dataset has " +
                       std::to_string(sizes.size()));
    const int64_t largest = *sizes.rbegin();
    std::vector<int64_t> test;
    for (int64_t row = 0; row < rows; ++row)
      if (pixels(table.samples[static_cast<size_t>(row)]) == largest) test.push_back(row);
    add(std::move(test));
    std::string size;
    for (const Sample& sample : table.samples)
      if (pixels(sample) == largest) {
        size = sample.config.input_text();
        break;
      }
    *description = "leave-input-out: train on image inputs smaller than " + size + " (and sequence models), test on " +
                   size + " (extrapolation)";
  } else if (split == "env") {
    std::map<std::string, std::vector<int64_t>> by_environment;
    for (int64_t row = 0; row < rows; ++row)
      by_environment[table.samples[static_cast<size_t>(row)].environment_hash].push_back(row);
    if (by_environment.size() < 2)
      throw InputError("split 'env' needs at least 2 environments; the dataset has " +
                       std::to_string(by_environment.size()));
    for (auto& [hash, test] : by_environment) add(test);
    *description = "cross-environment: each of " + std::to_string(by_environment.size()) +
                   " environments predicted by a model trained on the others";
  } else {
    check_split(split);
  }
  for (const auto& [train, test] : result)
    if (train.empty() || test.empty())
      throw InputError("split " + quote(split) + " leaves an empty training or test part");
  return result;
}

learn::ErrorStats noise_floor(const std::vector<std::vector<double>>& repeats) {
  return learn::error_stats(store::noise_floor_errors(repeats));
}

std::vector<double> baseline_predictions(const TrainingTable& table, const std::string& target,
                                         const std::vector<int64_t>& train, const std::vector<int64_t>& test) {
  std::vector<int> design_columns =
      target == "time"
          ? std::vector<int>{column("total.flops_train"), column("total.bytes_accessed"), column("config.batch")}
          : std::vector<int>{column("est.train_memory_bytes"), column("total.act_bytes"), column("config.batch")};
  auto group_of = [&](int64_t row) {
    const Sample& sample = table.samples[static_cast<size_t>(row)];
    return sample.environment_hash + "|" + std::to_string(target == "time" ? sample.config.threads : 0);
  };
  auto value_of = [&](int64_t row) {
    const Sample& sample = table.samples[static_cast<size_t>(row)];
    return target == "time" ? sample.time_ms() : sample.peak();
  };
  // Weighted least squares: each row divided by its target, so the fit minimizes relative error.
  auto fit = [&](const std::vector<int64_t>& rows) {
    int64_t parameters = static_cast<int64_t>(design_columns.size()) + 1;
    learn::Matrix a(static_cast<int64_t>(rows.size()), parameters);
    learn::Vector b(static_cast<int64_t>(rows.size()));
    for (size_t index = 0; index < rows.size(); ++index) {
      int64_t row = rows[index];
      double weight = 1.0 / value_of(row);
      for (size_t col = 0; col < design_columns.size(); ++col)
        a(static_cast<int64_t>(index), static_cast<int64_t>(col)) = table.x(row, design_columns[col]) * weight;
      a(static_cast<int64_t>(index), parameters - 1) = weight;
      b(static_cast<int64_t>(index)) = 1.0;
    }
    // Columns scaled to unit norm for conditioning (FLOPs ~1e9, batch ~10).
    learn::Vector scale = a.colwise().norm().transpose();
    for (int64_t col = 0; col < parameters; ++col) {
      if (scale(col) == 0) scale(col) = 1;
      a.col(col) /= scale(col);
    }
    learn::Vector coefficients = a.colPivHouseholderQr().solve(b);
    return learn::Vector(coefficients.array() / scale.array());
  };
  std::map<std::string, std::vector<int64_t>> train_groups;
  for (int64_t row : train) train_groups[group_of(row)].push_back(row);
  learn::Vector global = fit(train);
  std::map<std::string, learn::Vector> models;
  for (const auto& [group, rows] : train_groups)
    if (static_cast<int64_t>(rows.size()) >= 2 * static_cast<int64_t>(design_columns.size() + 1))
      models[group] = fit(rows);
  double smallest = HUGE_VAL;
  for (int64_t row : train) smallest = std::min(smallest, value_of(row));
  std::vector<double> predictions;
  for (int64_t row : test) {
    auto found = models.find(group_of(row));
    const learn::Vector& coefficients = found != models.end() ? found->second : global;
    double value = coefficients(static_cast<int64_t>(design_columns.size()));
    for (size_t col = 0; col < design_columns.size(); ++col)
      value += coefficients(static_cast<int64_t>(col)) * table.x(row, design_columns[col]);
    predictions.push_back(std::max(value, 0.1 * smallest));  // a line can go negative; a time cannot
  }
  return predictions;
}

namespace {

// The candidate (learner, hyperparameters, transform) chosen on the first training part only (the
// test parts stay unseen): AutoML, or the given learner with the transform chosen by CV.
learn::Candidate choose_candidate(const TrainingTable& table, const learn::Matrix& x_all, const learn::Vector& y,
                                  const std::string& target, const std::vector<int64_t>& train,
                                  const EvaluateOptions& options, const std::string& cv_groups,
                                  const std::string& only_reference = "") {
  learn::Candidate candidate;
  learn::Matrix full = learn::select_rows(x_all, train);
  std::vector<int> columns = varying_columns(full);
  if (columns.empty()) throw InputError("the training part has no varying feature");
  learn::Matrix x = select(x_all, train, columns);
  learn::Vector y_train = learn::select_rows(y, train);
  std::vector<learn::TargetTransform> transforms = transforms_for(target, columns);
  if (!options.transform.empty()) transforms = keep_transform_kind(transforms, options.transform, target);
  if (!only_reference.empty()) transforms = {ratio_over(columns, only_reference)};  // EvaluateOptions::corrected
  if (options.learner == "auto") {
    learn::AutoMLOptions automl;
    automl.budget_s = options.budget_s;
    automl.folds = options.folds;
    automl.seed = options.seed;
    automl.transforms = transforms;
    automl.learners = options.learners;
    automl.groups = cv_groups_of(table, train, cv_groups);
    automl.log = options.log;
    if (options.log)
      *options.log << "evaluate " << target << ": AutoML on the first training part (" << train.size()
                   << " configurations)\n";
    learn::AutoMLResult result = learn::run_automl(x, y_train, automl);
    candidate = result.best().candidate;
    if (options.log) *options.log << learn::format_leaderboard(result, 5);
  } else {
    // A fixed learner with its defaults (or the given hyperparameters over them); only the target
    // transform is chosen, by CV on this part.
    nlohmann::json hyperparameters = learn::make_learner(options.learner, options.hyperparameters)->hyperparameters();
    std::vector<int64_t> groups = cv_groups_of(table, train, cv_groups);
    auto folds = groups.empty() ? learn::kfold_indices(x.rows(), options.folds, options.seed)
                                : learn::group_kfold_indices(groups, options.folds, options.seed);
    double best_mre = HUGE_VAL;
    for (const learn::TargetTransform& transform : transforms) {
      learn::Candidate trial{options.learner, hyperparameters, transform};
      learn::CandidateResult scored = learn::cross_validate(x, y_train, trial, folds);
      if (scored.error.empty() && scored.cv.mre < best_mre) {
        best_mre = scored.cv.mre;
        candidate = trial;
      }
    }
    if (candidate.learner.empty()) throw InputError("learner " + options.learner + " failed on every target transform");
  }
  return candidate;
}

// Per family and per kind (designed, synthetic) errors, and the noise floor of the repeats.
void summarize_errors(const TrainingTable& table, const std::string& target,
                      const std::map<std::string, std::vector<double>>& family_signed,
                      std::map<std::string, std::vector<double>>& family_baseline, TargetEvaluation& evaluation) {
  for (const auto& [family, errors] : family_signed) {
    FamilyErrors row;
    row.family = family;
    row.runs = static_cast<int64_t>(errors.size());
    std::vector<double> absolute;
    for (double error : errors) absolute.push_back(std::abs(error));
    row.model_mre = learn::error_stats(absolute).mre;
    row.baseline_mre = learn::error_stats(family_baseline[family]).mre;
    row.model_median_signed = quantile(errors, 0.5);
    evaluation.by_family.push_back(row);
  }
  std::vector<std::vector<double>> all_repeats;
  std::map<std::string, std::vector<std::vector<double>>> kind_repeats;
  for (const Sample& sample : table.samples) {
    all_repeats.push_back(repeats_of(sample, target));
    kind_repeats[kind_of(sample.family)].push_back(all_repeats.back());
    if (all_repeats.back().size() >= 2) ++evaluation.noise_configurations;
  }
  evaluation.noise_floor = noise_floor(all_repeats);
  for (const char* kind : {"designed", "synthetic"}) {
    std::vector<double> absolute;
    for (const auto& [family, errors] : family_signed)
      if (kind_of(family) == kind)
        for (double error : errors) absolute.push_back(std::abs(error));
    if (absolute.empty()) continue;
    KindErrors row;
    row.kind = kind;
    row.model = learn::error_stats(absolute);
    row.noise_floor = noise_floor(kind_repeats[kind]);
    for (const std::vector<double>& repeats : kind_repeats[kind])
      if (repeats.size() >= 2) ++row.noise_configurations;
    evaluation.by_kind.push_back(row);
  }
}

// The candidate fitted on one training part (the columns that vary there) and its forecasts of the test part.
// The fitted model's forecasts of the test rows. With `bound_batches` (time, on the table's own
// features), as `predict` makes them: past the training part's largest batch, held within the
// forecast there and its time per sample (forecast/extrapolation.h), the sample featurized again there.
// With `at_high`, also the forecast at the largest trained batch of each bounded test row (0 for the
// others), and that batch in `batch_high`.
learn::Vector fold_predictions(const TrainingTable& table, const learn::Matrix& fold_x, const learn::Vector& y,
                               const std::vector<int64_t>& train, const std::vector<int64_t>& test,
                               const learn::Candidate& candidate, bool bound_batches,
                               std::vector<double>* at_high_out = nullptr, int64_t* batch_high = nullptr,
                               const forecast::LayerModel* layers = nullptr) {
  std::vector<int> columns = varying_columns(learn::select_rows(fold_x, train));
  learn::Candidate fold_candidate = candidate;
  fold_candidate.transform = resolve_transform(candidate.transform, columns);
  learn::Matrix x_train = select(fold_x, train, columns);
  learn::FittedModel model = learn::fit_candidate(x_train, learn::select_rows(y, train), fold_candidate);
  learn::Vector predicted = model.predict(select(fold_x, test, columns));
  if (at_high_out) at_high_out->assign(test.size(), 0.0);
  if (!bound_batches || train.empty()) return predicted;
  int64_t batch_min = INT64_MAX, batch_max = 0;
  for (int64_t row : train) {
    batch_min = std::min(batch_min, table.samples[static_cast<size_t>(row)].config.batch);
    batch_max = std::max(batch_max, table.samples[static_cast<size_t>(row)].config.batch);
  }
  std::vector<size_t> bounded;  // positions in test
  for (size_t index = 0; index < test.size(); ++index) {
    const Sample& sample = table.samples[static_cast<size_t>(test[index])];
    if (forecast::bound_from(sample.config.batch, batch_min, batch_max) && sample.graph >= 0) bounded.push_back(index);
  }
  if (batch_high) *batch_high = batch_max;
  if (bounded.empty()) return predicted;
  learn::Matrix high_x(static_cast<int64_t>(bounded.size()), static_cast<int64_t>(columns.size()));
  for (size_t k = 0; k < bounded.size(); ++k) {
    const size_t row = static_cast<size_t>(test[bounded[k]]);
    const Sample& sample = table.samples[row];
    features::TrainingConfig config = training_config_of(sample.config);
    config.batch = batch_max;
    std::vector<double> features =
        features::featurize(table.graphs[static_cast<size_t>(sample.graph)], config, table.hardware[row]);
    if (layers != nullptr && sample.layer_sites >= 0)  // the corrected model: its reference at that batch too
      features[static_cast<size_t>(features::feature_index("est.layers_ms"))] =
          layers->iteration_ms(table.layer_sites[static_cast<size_t>(sample.layer_sites)], config,
                               !table.environments.at(sample.environment_hash).gpu_name.empty());
    for (size_t c = 0; c < columns.size(); ++c)
      high_x(static_cast<int64_t>(k), static_cast<int64_t>(c)) = features[static_cast<size_t>(columns[c])];
  }
  learn::Vector at_high = model.predict(high_x);
  for (size_t k = 0; k < bounded.size(); ++k) {
    const int64_t position = static_cast<int64_t>(bounded[k]);
    if (at_high_out) (*at_high_out)[bounded[k]] = at_high(static_cast<int64_t>(k));
    predicted(position) =
        forecast::bounded_past_range(batch_max, at_high(static_cast<int64_t>(k)), predicted(position),
                                     table.samples[static_cast<size_t>(test[bounded[k]])].config.batch);
  }
  return predicted;
}

using Splits = std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>;

// The layer-wise model of each training part, where the data has per-layer timings or layer benchmarks:
// fitted on that part's runs (and the benchmarks of models it holds) when first asked; its forecast
// (est.layers_ms) of every configuration is scored on its own, and is a feature of the time predictor with
// EvaluateOptions::layer_feature (and of the hybrid and corrected models).
class LayerParts {
 public:
  LayerParts(const TrainingTable& table, const EvaluateOptions& options, const Splits& splits)
      : table_(table),
        options_(options),
        splits_(splits),
        estimates_(splits.size()),
        x_(splits.size()),
        models_(splits.size()),
        has_data_(!table.layer_runs.empty() || !options.layer_bench.empty()) {
    bench_all_ = forecast::bench_examples(options.layer_bench, options.bench_target, bench_sites_);
  }
  bool has_data() const { return has_data_; }
  // The layer-wise forecast of every configuration by part `fold`'s model; empty without layer data.
  const std::vector<double>& estimates(size_t fold) {
    std::vector<double>& estimates = estimates_[fold];
    if (!has_data_ || !estimates.empty()) return estimates;
    std::vector<forecast::LayerExample> examples = layer_examples(table_, &splits_[fold].first);
    const size_t from_runs = examples.size();
    // A zoo model only the test part holds has not been seen: nor have its layers' benchmarks.
    std::set<std::string> train_models, test_models;
    for (int64_t row : splits_[fold].first)
      train_models.insert("zoo:" + table_.samples[static_cast<size_t>(row)].network_name);
    for (int64_t row : splits_[fold].second)
      test_models.insert("zoo:" + table_.samples[static_cast<size_t>(row)].network_name);
    for (const forecast::LayerExample& example : bench_all_)
      if (!test_models.count(example.origin) || train_models.count(example.origin)) examples.push_back(example);
    if (examples.empty()) return estimates;
    forecast::LayerModel model = forecast::LayerModel::fit(examples);
    estimates = layer_estimates_of(table_, model);
    models_[fold] = model;
    if (options_.log)
      *options_.log << "evaluate: layer-wise model of part " << fold + 1 << " fitted on " << from_runs << " runs and "
                    << examples.size() - from_runs << " layer benchmarks (" << model.training_rows()
                    << " layer rows)\n";
    return estimates;
  }
  // Part `fold`'s features: the table's, with est.layers_ms filled in when `with_layer_feature`.
  const learn::Matrix& x(size_t fold, bool with_layer_feature) {
    if (!with_layer_feature) return table_.x;
    const std::vector<double>& layer_sums = estimates(fold);
    if (layer_sums.empty()) return table_.x;
    if (x_[fold].size() == 0) {
      x_[fold] = table_.x;
      const int column = features::feature_index("est.layers_ms");
      for (size_t row = 0; row < layer_sums.size(); ++row)
        x_[fold](static_cast<int64_t>(row), column) = layer_sums[row];
    }
    return x_[fold];
  }
  const forecast::LayerModel* model(size_t fold) const { return models_[fold] ? &*models_[fold] : nullptr; }

 private:
  const TrainingTable& table_;
  const EvaluateOptions& options_;
  const Splits& splits_;
  std::vector<std::vector<double>> estimates_;
  std::vector<learn::Matrix> x_;
  std::vector<std::optional<forecast::LayerModel>> models_;
  bool has_data_;
  std::vector<features::LayerSites> bench_sites_;  // one per benchmark row, built once
  std::vector<forecast::LayerExample> bench_all_;
};

// The hybrid: the whole-network learner with est.layers_ms as a feature, its candidate chosen on its own.
void score_hybrid(const TrainingTable& table, const EvaluateOptions& options, const Splits& splits,
                  const learn::Vector& y, LayerParts& layers, const std::string& cv_groups,
                  TargetEvaluation& evaluation) {
  const std::string target = "time";
  learn::Candidate hybrid =
      choose_candidate(table, layers.x(0, true), y, target, splits.front().first, options, cv_groups);
  evaluation.hybrid_learner = hybrid.learner;
  evaluation.hybrid_transform = hybrid.transform.name();
  std::vector<double> hybrid_errors;
  for (size_t fold = 0; fold < splits.size(); ++fold) {
    const auto& [train, test] = splits[fold];
    learn::Vector predicted = fold_predictions(table, layers.x(fold, true), y, train, test, hybrid, false);
    for (size_t index = 0; index < test.size(); ++index)
      for (double truth : repeats_of(table.samples[static_cast<size_t>(test[index])], target))
        hybrid_errors.push_back(std::abs(predicted(static_cast<int64_t>(index)) - truth) / truth);
  }
  evaluation.hybrid = learn::error_stats(hybrid_errors);
}

// The corrected layer-wise model: a learner on log(time / est.layers_ms), as `predict` uses it.
void score_corrected(const TrainingTable& table, const EvaluateOptions& options, const Splits& splits,
                     const learn::Vector& y, LayerParts& layers, const std::string& cv_groups,
                     const std::vector<std::vector<double>>& whole_at_high, TargetEvaluation& evaluation) {
  const std::string target = "time";
  learn::Candidate corrected =
      choose_candidate(table, layers.x(0, true), y, target, splits.front().first, options, cv_groups, "est.layers_ms");
  evaluation.corrected_learner = corrected.learner;
  std::vector<double> corrected_errors;
  size_t kept = 0;  // the runs in evaluation.predictions come in this order
  for (size_t fold = 0; fold < splits.size(); ++fold) {
    const auto& [train, test] = splits[fold];
    // As `predict` makes it (forecast/forecast.cpp): past the training part's largest batch B held within
    // [c(B), c(B) b / B] of its own forecast at B, and below the part's largest image input also within
    // [t(B), t(B) b / B] of the whole-network learner's t(B), the forecast there.
    std::vector<double> corrected_at_high;
    int64_t batch_high = 0;
    learn::Vector predicted = fold_predictions(table, layers.x(fold, true), y, train, test, corrected, true,
                                               &corrected_at_high, &batch_high, layers.model(fold));
    int64_t largest_pixels = 0;
    for (int64_t row : train)
      largest_pixels = std::max(largest_pixels, image_pixels(table.samples[static_cast<size_t>(row)]));
    for (size_t index = 0; index < test.size(); ++index) {
      const double anchor = index < whole_at_high[fold].size() ? whole_at_high[fold][index] : 0;
      const bool largest_input = image_pixels(table.samples[static_cast<size_t>(test[index])]) >= largest_pixels;
      if (anchor > 0 && corrected_at_high[index] > 0 && !largest_input)
        predicted(static_cast<int64_t>(index)) =
            forecast::bounded_past_range(batch_high, anchor, predicted(static_cast<int64_t>(index)),
                                         table.samples[static_cast<size_t>(test[index])].config.batch);
    }
    for (size_t index = 0; index < test.size(); ++index)
      for (double truth : repeats_of(table.samples[static_cast<size_t>(test[index])], target)) {
        corrected_errors.push_back(std::abs(predicted(static_cast<int64_t>(index)) - truth) / truth);
        if (kept < evaluation.predictions.size())
          evaluation.predictions[kept++].corrected = predicted(static_cast<int64_t>(index));
      }
  }
  evaluation.corrected = learn::error_stats(corrected_errors);
}

}  // namespace

EvaluationReport evaluate(const TrainingTable& table, const EvaluateOptions& options) {
  EvaluationReport report;
  report.dataset = table.dataset;
  report.split = options.split;
  report.configurations = static_cast<int64_t>(table.samples.size());
  report.runs = table.runs_used;
  report.environments = static_cast<int64_t>(table.environments.size());
  std::set<std::string> networks, families;
  for (const Sample& sample : table.samples) {
    networks.insert(sample.network_hash);
    families.insert(sample.family);
  }
  report.networks = static_cast<int64_t>(networks.size());
  report.families = static_cast<int64_t>(families.size());
  report.notes = table.notes;

  std::vector<std::string> targets = options.targets;
  if (targets.empty()) {
    targets.push_back("time");
    if (table.has_memory())
      targets.push_back("memory");
    else
      report.notes.push_back("memory not evaluated: some configurations have no peak bytes");
  }
  auto splits = make_split(table, options.split, options.folds, options.seed, &report.split_description);
  std::string cv_groups =
      options.cv_groups.empty() ? (options.split == "family" ? "family" : "network") : options.cv_groups;

  if ((options.layer_feature || options.hybrid) && table.layer_runs.empty() && options.layer_bench.empty())
    report.notes.push_back(
        "layer feature asked for, but the data has no per-layer timings (plans with \"per_layer\": "
        "true): evaluated without it");
  LayerParts layers(table, options, splits);

  for (const std::string& target : targets) {
    learn::Vector y = targets_of(table, target);
    auto x_of = [&](size_t fold) -> const learn::Matrix& {
      return target == "time" ? layers.x(fold, options.layer_feature) : table.x;
    };
    TargetEvaluation evaluation;
    evaluation.target = target;
    evaluation.folds = static_cast<int>(splits.size());

    // Choose the candidate on the first training part only (the test parts stay unseen).
    learn::Candidate candidate = choose_candidate(table, x_of(0), y, target, splits.front().first, options, cv_groups);
    evaluation.learner = candidate.learner;
    evaluation.transform = candidate.transform.name();
    evaluation.hyperparameters = candidate.hyperparameters;

    std::vector<double> model_errors, baseline_errors, simulator_errors, layerwise_errors, scaled_errors;
    std::map<std::string, std::vector<double>> family_signed, family_baseline;  // per test family
    std::vector<std::vector<double>> whole_at_high(splits.size());              // per fold: the learner's t(B), past B
    for (size_t fold = 0; fold < splits.size(); ++fold) {
      const auto& [train, test] = splits[fold];
      std::vector<double>& at_high = whole_at_high[fold];
      int64_t batch_high = 0;
      learn::Vector predicted = fold_predictions(table, x_of(fold), y, train, test, candidate,
                                                 target == "time" && !options.layer_feature, &at_high, &batch_high);
      std::vector<double> baseline = baseline_predictions(table, target, train, test);
      // The layer-wise sum alone, scaled by the training part's median measured / sum.
      double layer_scale = 0;
      const std::vector<double> no_estimates;
      const std::vector<double>& estimates = target == "time" ? layers.estimates(fold) : no_estimates;
      if (!estimates.empty()) {
        std::vector<double> ratios;
        for (int64_t row : train)
          if (estimates[static_cast<size_t>(row)] > 0)
            ratios.push_back(table.samples[static_cast<size_t>(row)].time_ms() / estimates[static_cast<size_t>(row)]);
        if (!ratios.empty()) layer_scale = quantile(ratios, 0.5);
      }
      // The whole-network learner carried past the trained batches by the layer-wise model's scaling.
      const forecast::LayerModel* layer_model = layers.model(fold);
      const bool score_scaled =
          options.scaled && target == "time" && !options.layer_feature && !estimates.empty() && layer_model != nullptr;
      const std::vector<int64_t>& test_rows = test;  // a lambda cannot capture a structured binding (C++17)
      auto scaled_forecast = [&](size_t index) {
        const double own = predicted(static_cast<int64_t>(index));
        if (at_high[index] <= 0) return own;
        const Sample& sample = table.samples[static_cast<size_t>(test_rows[index])];
        const double at_b = estimates[static_cast<size_t>(test_rows[index])];
        if (sample.layer_sites < 0 || !(at_b > 0)) return own;
        features::TrainingConfig config = training_config_of(sample.config);
        config.batch = batch_high;
        const bool gpu = !table.environments.at(sample.environment_hash).gpu_name.empty();
        const double at_high_layers =
            layer_model->iteration_ms(table.layer_sites[static_cast<size_t>(sample.layer_sites)], config, gpu);
        if (!(at_high_layers > 0)) return own;
        return forecast::carried_past_range(batch_high, at_high[index], own, at_b / at_high_layers,
                                            sample.config.batch);
      };
      for (size_t index = 0; index < test.size(); ++index) {
        const double layer_sum = layer_scale > 0 ? layer_scale * estimates[static_cast<size_t>(test[index])] : 0;
        const double scaled = score_scaled ? scaled_forecast(index) : 0;
        std::vector<double> repeats = repeats_of(table.samples[static_cast<size_t>(test[index])], target);
        const std::string& family = table.samples[static_cast<size_t>(test[index])].family;
        for (size_t repeat = 0; repeat < repeats.size(); ++repeat) {
          const double truth = repeats[repeat];
          const double signed_error = (predicted(static_cast<int64_t>(index)) - truth) / truth;
          if (options.keep_predictions)
            evaluation.predictions.push_back({test[index], static_cast<int64_t>(repeat), truth,
                                              predicted(static_cast<int64_t>(index)), baseline[index], layer_sum,
                                              scaled, 0});
          model_errors.push_back(std::abs(signed_error));
          if (layer_sum > 0) layerwise_errors.push_back(std::abs(layer_sum - truth) / truth);
          if (score_scaled) {
            scaled_errors.push_back(std::abs(scaled - truth) / truth);
            if (at_high[index] > 0) ++evaluation.scaled_past_range;
          }
          baseline_errors.push_back(std::abs(baseline[index] - truth) / truth);
          family_signed[family].push_back(signed_error);
          family_baseline[family].push_back(baseline_errors.back());
        }
        double simulated = table.samples[static_cast<size_t>(test[index])].simulated_peak_bytes;
        if (target == "memory" && simulated > 0)
          for (double truth : repeats) simulator_errors.push_back(std::abs(simulated - truth) / truth);
      }
      evaluation.test_configurations += static_cast<int64_t>(test.size());
    }
    summarize_errors(table, target, family_signed, family_baseline, evaluation);
    evaluation.model = learn::error_stats(model_errors);
    evaluation.baseline = learn::error_stats(baseline_errors);
    evaluation.simulator = learn::error_stats(simulator_errors);
    evaluation.layerwise = learn::error_stats(layerwise_errors);
    evaluation.scaled = learn::error_stats(scaled_errors);
    if (target == "time" && !options.layer_feature && layers.has_data()) {
      if (options.hybrid) score_hybrid(table, options, splits, y, layers, cv_groups, evaluation);
      if (options.corrected) score_corrected(table, options, splits, y, layers, cv_groups, whole_at_high, evaluation);
    }
    if (evaluation.noise_floor.count == 0)
      report.notes.push_back(target + ": no configuration has 2 or more repeats; the noise floor is unknown");
    report.targets.push_back(std::move(evaluation));
  }
  return report;
}

namespace {

json by_kind_json(const std::vector<KindErrors>& rows) {
  json result = json::array();
  for (const KindErrors& row : rows)
    result.push_back({{"kind", row.kind},
                      {"model", row.model.to_json()},
                      {"noise_floor", row.noise_floor.to_json()},
                      {"noise_configurations", row.noise_configurations}});
  return result;
}

json by_family_json(const std::vector<FamilyErrors>& rows) {
  json result = json::array();
  for (const FamilyErrors& row : rows)
    result.push_back({{"family", row.family},
                      {"runs", row.runs},
                      {"model_mre", row.model_mre},
                      {"model_median_signed", row.model_median_signed},
                      {"baseline_mre", row.baseline_mre}});
  return result;
}

}  // namespace

json EvaluationReport::to_json() const {
  json targets_json = json::array();
  for (const TargetEvaluation& target : targets)
    targets_json.push_back({{"target", target.target},
                            {"learner", target.learner},
                            {"transform", target.transform},
                            {"hyperparameters", target.hyperparameters},
                            {"folds", target.folds},
                            {"test_configurations", target.test_configurations},
                            {"model", target.model.to_json()},
                            {"baseline", target.baseline.to_json()},
                            {"simulator", target.simulator.count > 0 ? target.simulator.to_json() : json(nullptr)},
                            {"layerwise", target.layerwise.count > 0 ? target.layerwise.to_json() : json(nullptr)},
                            {"hybrid", target.hybrid.count > 0 ? json{{"learner", target.hybrid_learner},
                                                                      {"transform", target.hybrid_transform},
                                                                      {"errors", target.hybrid.to_json()}}
                                                               : json(nullptr)},
                            {"corrected", target.corrected.count > 0 ? json{{"learner", target.corrected_learner},
                                                                            {"transform", "log_ratio(est.layers_ms)"},
                                                                            {"errors", target.corrected.to_json()}}
                                                                     : json(nullptr)},
                            {"scaled", target.scaled.count > 0 ? json{{"errors", target.scaled.to_json()},
                                                                      {"past_range_runs", target.scaled_past_range}}
                                                               : json(nullptr)},
                            {"noise_floor", target.noise_floor.to_json()},
                            {"noise_configurations", target.noise_configurations},
                            {"by_family", by_family_json(target.by_family)},
                            {"by_kind", by_kind_json(target.by_kind)}});
  return {{"dataset", dataset},
          {"split", split},
          {"split_description", split_description},
          {"configurations", configurations},
          {"runs", runs},
          {"networks", networks},
          {"families", families},
          {"environments", environments},
          {"targets", targets_json},
          {"notes", notes}};
}

std::string EvaluationReport::markdown() const {
  std::ostringstream out;
  out << "Split `" << split << "`: " << split_description << ". Dataset `" << dataset << "`: " << configurations
      << " configurations (" << runs << " runs) of " << networks << " networks in " << families << " families, "
      << environments << " environment" << (environments == 1 ? "" : "s") << ".\n\n";
  for (const TargetEvaluation& target : targets) {
    out << "**" << (target.target == "time" ? "Time per iteration" : "Peak memory") << "** ("
        << target.test_configurations << " test configurations, " << target.model.count << " test runs)\n\n";
    out << "| predictor | MRE | median | p90 | within ±10% |\n|---|---:|---:|---:|---:|\n";
    auto line = [&](const std::string& name, const learn::ErrorStats& stats) {
      if (stats.count == 0) {
        out << "| " << name << " | n/a | n/a | n/a | n/a |\n";
        return;
      }
      out << "| " << name << " | " << percent(stats.mre) << " | " << percent(stats.median_re) << " | "
          << percent(stats.p90_re) << " | " << percent(stats.within_10pct) << " |\n";
    };
    line("learned: " + target.learner + ", " + target.transform, target.model);
    if (target.target == "memory") line("memory simulator (src/memory, nothing learned)", target.simulator);
    if (target.layerwise.count > 0)
      line("layer-wise sum alone (per-layer forecasts x the training part's median ratio)" +
               (target.layerwise.count < target.model.count ? ", over the " + std::to_string(target.layerwise.count) +
                                                                  " test runs whose training part had per-layer timings"
                                                            : std::string()),
           target.layerwise);
    if (target.hybrid.count > 0)
      line(
          "hybrid: " + target.hybrid_learner + ", " + target.hybrid_transform + " with the layer-wise sum as a feature",
          target.hybrid);
    if (target.corrected.count > 0)
      line("corrected: the layer-wise sum times " + target.corrected_learner +
               "'s correction (log_ratio(est.layers_ms), the whole-network features and the sum)",
           target.corrected);
    if (target.scaled.count > 0)
      line("scaled: the learned model, past the trained batches carried by the layer-wise sum's batch scaling (" +
               std::to_string(target.scaled_past_range) + " runs past them)",
           target.scaled);
    line("analytic roofline (least squares)", target.baseline);
    line("noise floor (a repeat vs. its configuration's mean, from the spread between repeats)", target.noise_floor);
    out << "\n";
    if (target.noise_floor.count > 0 && target.noise_floor.mre > 0)
      out << "Learned MRE = " << ratio_text(target.model.mre / target.noise_floor.mre) << " the noise floor ("
          << target.noise_floor.count << " runs of " << target.noise_configurations
          << " configurations measured 2 or more times).\n\n";
    bool kinds_have_floor = false;
    for (const KindErrors& row : target.by_kind)
      kinds_have_floor = kinds_have_floor || (row.noise_floor.count > 0 && row.noise_floor.mre > 0);
    if (kinds_have_floor) {
      out << "By kind of network (designed: every family but the generator's):\n\n"
          << "| networks | test runs | learned MRE | noise floor (runs) | ratio |\n|---|---:|---:|---:|---:|\n";
      for (const KindErrors& row : target.by_kind) {
        out << "| " << row.kind << " | " << row.model.count << " | " << percent(row.model.mre) << " | ";
        if (row.noise_floor.count > 0 && row.noise_floor.mre > 0)
          out << percent(row.noise_floor.mre) << " (" << row.noise_floor.count << ") | "
              << ratio_text(row.model.mre / row.noise_floor.mre) << " |\n";
        else
          out << "n/a | n/a |\n";
      }
      out << "\n";
    }
    if (split == "family" && !target.by_family.empty()) {
      out << "By held-out family (signed: forecast − measured, relative; negative = forecast too low):\n\n"
          << "| family | test runs | learned MRE | learned median signed | roofline MRE |\n|---|---:|---:|---:|---:|\n";
      for (const FamilyErrors& row : target.by_family)
        out << "| " << row.family << " | " << row.runs << " | " << percent(row.model_mre) << " | "
            << percent(row.model_median_signed) << " | " << percent(row.baseline_mre) << " |\n";
      out << "\n";
    }
  }
  for (const std::string& note : notes) out << "- " << note << "\n";
  return out.str();
}

std::string EvaluationReport::text() const {
  std::ostringstream out;
  out << "dataset " << dataset << ": " << configurations << " configurations, " << runs << " runs, " << networks
      << " networks, " << families << " families, " << environments << " environment(s)\n";
  out << "split " << split << ": " << split_description << "\n";
  char line[256];
  for (const TargetEvaluation& target : targets) {
    out << "\n"
        << target.target << " (" << target.test_configurations << " test configurations, " << target.model.count
        << " runs)\n";
    std::snprintf(line, sizeof line, "  %-44s %8s %8s %8s %8s\n", "predictor", "MRE", "median", "p90", "<=10%");
    out << line;
    auto row = [&](const std::string& name, const learn::ErrorStats& stats) {
      if (stats.count == 0) {
        std::snprintf(line, sizeof line, "  %-44s %8s\n", name.c_str(), "n/a");
      } else {
        std::snprintf(line, sizeof line, "  %-44s %8s %8s %8s %8s\n", name.c_str(), percent(stats.mre).c_str(),
                      percent(stats.median_re).c_str(), percent(stats.p90_re).c_str(),
                      percent(stats.within_10pct).c_str());
      }
      out << line;
    };
    row("learned (" + target.learner + ", " + target.transform + ")", target.model);
    if (target.target == "memory") row("memory simulator (nothing learned)", target.simulator);
    if (target.layerwise.count > 0)
      row(target.layerwise.count < target.model.count
              ? "layer-wise sum alone (" + std::to_string(target.layerwise.count) + " runs)"
              : std::string("layer-wise sum alone (scaled)"),
          target.layerwise);
    if (target.hybrid.count > 0) row("hybrid (" + target.hybrid_learner + " + est.layers_ms)", target.hybrid);
    if (target.corrected.count > 0) row("corrected layer-wise (" + target.corrected_learner + ")", target.corrected);
    if (target.scaled.count > 0)
      row("scaled past batch range (" + std::to_string(target.scaled_past_range) + " runs)", target.scaled);
    row("analytic roofline (least squares)", target.baseline);
    row("noise floor (repeat vs. configuration mean)", target.noise_floor);
    if (target.noise_floor.count > 0 && target.noise_floor.mre > 0)
      out << "  learned MRE = " << ratio_text(target.model.mre / target.noise_floor.mre) << " the noise floor ("
          << target.noise_floor.count << " runs of " << target.noise_configurations
          << " configurations measured 2+ times)\n";
    for (const KindErrors& row : target.by_kind) {
      if (row.noise_floor.count == 0 || !(row.noise_floor.mre > 0)) continue;
      out << "  " << row.kind << " networks: learned " << percent(row.model.mre) << " over " << row.model.count
          << " test runs, noise floor " << percent(row.noise_floor.mre) << " over " << row.noise_floor.count
          << " runs: " << ratio_text(row.model.mre / row.noise_floor.mre) << "\n";
    }
    if (split == "family" && !target.by_family.empty()) {
      std::snprintf(line, sizeof line, "  %-20s %8s %12s %16s %14s\n", "held-out family", "runs", "learned MRE",
                    "median signed", "roofline MRE");
      out << line;
      for (const FamilyErrors& row : target.by_family) {
        std::snprintf(line, sizeof line, "  %-20s %8lld %12s %16s %14s\n", row.family.c_str(),
                      static_cast<long long>(row.runs), percent(row.model_mre).c_str(),
                      percent(row.model_median_signed).c_str(), percent(row.baseline_mre).c_str());
        out << line;
      }
    }
  }
  for (const std::string& note : notes) out << "note: " << note << "\n";
  return out.str();
}

void write_predictions_csv(const TrainingTable& table, const EvaluationReport& report, std::ostream& out) {
  out << "target,network,family,environment,batch,input,seq_len,optimizer,precision,threads,measured,forecast,"
         "roofline,signed_error,plan,layerwise,scaled,corrected\n";
  char numbers[160];
  for (const TargetEvaluation& target : report.targets)
    for (const TestPrediction& run : target.predictions) {
      const Sample& sample = table.samples[static_cast<size_t>(run.sample)];
      auto environment = table.environments.find(sample.environment_hash);
      std::string where = sample.environment_hash;
      if (environment != table.environments.end())
        where = forecast::environment_label(environment->second) + " " + where;
      const std::vector<std::string>& plans = target.target == "time" ? sample.time_plans : sample.peak_plans;
      const std::string plan =
          static_cast<size_t>(run.repeat) < plans.size() ? plans[static_cast<size_t>(run.repeat)] : "";
      std::snprintf(numbers, sizeof numbers, "%.6g,%.6g,%.6g,%.4f", run.measured, run.predicted, run.baseline,
                    (run.predicted - run.measured) / run.measured);
      out << target.target << ',' << csv_quote(sample.network_name) << ',' << csv_quote(sample.family) << ",\"" << where
          << "\"," << sample.config.batch << ',' << sample.config.input_text() << ',' << sample.config.seq_len << ','
          << name(sample.config.optimizer) << ',' << name(sample.config.precision) << ',' << sample.config.threads
          << ',' << numbers << ',' << csv_quote(plan) << ',';
      if (run.layerwise > 0) out << run.layerwise;
      out << ',';
      if (run.scaled > 0) out << run.scaled;
      out << ',';
      if (run.corrected > 0) out << run.corrected;
      out << '\n';
    }
}

void set_time_models(EvaluateOptions& options, const std::vector<std::string>& models, const std::string& option) {
  static const std::vector<std::string> known{"whole", "layerwise", "hybrid", "scaled", "corrected"};
  for (const std::string& model : models)
    if (std::find(known.begin(), known.end(), model) == known.end())
      throw InputError("unknown " + option + " " + quote(model) +
                       " (known: whole, layerwise, hybrid, scaled, corrected)");
  auto has = [&](const char* model) { return std::find(models.begin(), models.end(), model) != models.end(); };
  options.hybrid = has("hybrid");
  options.scaled = has("scaled");
  options.corrected = has("corrected");
}

void check_split(const std::string& split) {
  for (const char* known : {"random", "family", "batch", "input", "env"})
    if (split == known) return;
  throw InputError("unknown split " + quote(split) + " (known: random, family, batch, input, env)");
}

}  // namespace dnncast::study
