// Predictor bundles: manifest.json and the learner's file, read, written and evaluated (predictor.h).
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json_limits.h"
#include "forecast/predictor.h"
#include "learn/json_int.h"

namespace dnncast::forecast {

namespace fs = std::filesystem;
using nlohmann::json;

json Manifest::to_json() const {
  json environments_json = json::array();
  for (const records::EnvironmentRecord& environment : environments)
    environments_json.push_back(environment_to_json(environment));
  json document{
      {"format", kPredictorFormat},
      {"target", target},
      {"unit", unit},
      {"feature_version", feature_version},
      {"features", features},
      {"columns", columns},
      {"learner", learner},
      {"hyperparameters", hyperparameters},
      {"transform", transform.to_json()},
      {"interval", {{"quantiles", {0.05, 0.95}}, {"log_ratio_low", interval_low}, {"log_ratio_high", interval_high}}},
      {"environments", environments_json},
      {"training", training},
      {"cv", cv},
      {"leaderboard", leaderboard}};
  if (shift_log_intercept != 0 || shift_log_slope != 1)
    document["shift"] = {{"log_intercept", shift_log_intercept}, {"log_slope", shift_log_slope}};
  return document;
}

Predictor::Predictor(Manifest manifest, std::unique_ptr<learn::Learner> learner, std::string dir)
    : manifest_(std::move(manifest)), learner_(std::move(learner)), dir_(std::move(dir)) {}

Predictor Predictor::load(const std::string& dir) {
  std::string path = dir + "/manifest.json";
  std::ifstream in(path);
  if (!in) throw InputError("no predictor bundle at " + dir + " (" + path + " is missing)");
  const std::string text = read_all(in);
  check_json_nesting(text, path);
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception& error) {
    throw InputError(path + ": not valid JSON: " + error.what());
  }
  Manifest manifest;
  try {
    std::string format = document.at("format").get<std::string>();
    if (format != kPredictorFormat)
      throw InputError(path + ": format " + quote(format) + ", this build reads " + quote(kPredictorFormat));
    manifest.feature_version = learn::json_int(document.at("feature_version"), path + ": feature_version");
    if (manifest.feature_version != features::kFeatureVersion)
      throw InputError("predictor " + dir + " was trained with feature version " +
                       std::to_string(manifest.feature_version) + ", this build computes version " +
                       std::to_string(features::kFeatureVersion) + ": retrain it with `dnncast train`");
    manifest.features = document.at("features").get<std::vector<std::string>>();
    if (manifest.features != features::feature_names())
      throw InputError("predictor " + dir + ": its feature list differs from this build's version " +
                       std::to_string(features::kFeatureVersion) + " list: retrain it with `dnncast train`");
    manifest.target = document.at("target").get<std::string>();
    if (manifest.target != "time" && manifest.target != "memory")
      throw InputError(path + ": unknown target " + quote(manifest.target));
    manifest.unit = document.at("unit").get<std::string>();
    manifest.columns = learn::json_ints(document.at("columns"), path + ": columns");
    for (int column : manifest.columns)
      if (column < 0 || column >= static_cast<int>(features::feature_count()))
        throw InputError(path + ": feature column " + std::to_string(column) + " out of range");
    manifest.learner = document.at("learner").get<std::string>();
    manifest.hyperparameters = document.at("hyperparameters");
    manifest.transform = learn::TargetTransform::from_json(document.at("transform"));
    std::vector<int> transform_columns = manifest.transform.reference_columns;
    transform_columns.insert(transform_columns.end(), manifest.transform.pair_columns.begin(),
                             manifest.transform.pair_columns.end());
    transform_columns.push_back(manifest.transform.thread_column);
    for (int column : transform_columns)
      if (column >= static_cast<int>(manifest.columns.size()))
        throw InputError(path + ": transform reference column out of range");
    manifest.interval_low = document.at("interval").at("log_ratio_low").get<double>();
    manifest.interval_high = document.at("interval").at("log_ratio_high").get<double>();
    if (document.contains("shift")) {
      manifest.shift_log_intercept = document.at("shift").at("log_intercept").get<double>();
      manifest.shift_log_slope = document.at("shift").at("log_slope").get<double>();
      if (!std::isfinite(manifest.shift_log_intercept) || !(manifest.shift_log_slope > 0))
        throw InputError(path + ": shift must have a finite log_intercept and a positive log_slope");
    }
    for (const json& environment : document.at("environments"))
      manifest.environments.push_back(records::environment_from_json(environment));
    if (manifest.environments.empty()) throw InputError(path + ": no training environment");
    manifest.training = document.value("training", json::object());
    manifest.cv = document.value("cv", json::object());
    manifest.leaderboard = document.value("leaderboard", json::array());
  } catch (const json::exception& error) {
    throw InputError(path + ": " + error.what());
  }
  std::unique_ptr<learn::Learner> learner = learn::load_learner(manifest.learner, manifest.hyperparameters, dir);
  return Predictor(std::move(manifest), std::move(learner), dir);
}

void Predictor::save(const std::string& dir) const {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw InputError("cannot create " + dir + ": " + error.message());
  learner_->save(dir);
  std::ofstream out(dir + "/manifest.json");
  out << manifest_.to_json().dump(1) << "\n";
  if (!out) throw InputError("cannot write " + dir + "/manifest.json");
}

void Predictor::predict_rows(const double* rows, int64_t count, Estimate* out) const {
  int64_t stride = static_cast<int64_t>(features::feature_count());
  int64_t width = static_cast<int64_t>(manifest_.columns.size());
  std::vector<float> selected(static_cast<size_t>(count * width));
  for (int64_t row = 0; row < count; ++row) {
    const double* source = rows + row * stride;
    float* target = selected.data() + row * width;
    for (int64_t col = 0; col < width; ++col)
      target[col] = static_cast<float>(source[manifest_.columns[static_cast<size_t>(col)]]);
  }
  std::vector<double> raw(static_cast<size_t>(count));
  learner_->predict_rows(selected.data(), count, width, raw.data());
  double low = std::exp(manifest_.interval_low), high = std::exp(manifest_.interval_high);
  const bool shifted = manifest_.shift_log_intercept != 0 || manifest_.shift_log_slope != 1;
  for (int64_t row = 0; row < count; ++row) {
    double reference = manifest_.transform.reference(selected.data() + row * width);
    double value = manifest_.transform.inverse_one(reference, raw[static_cast<size_t>(row)]);
    if (shifted) {
      auto shift = [&](double v) {
        return std::exp(manifest_.shift_log_intercept + manifest_.shift_log_slope * std::log(std::max(v, 1e-300)));
      };
      out[row] = {shift(value), shift(value * low), shift(value * high)};
    } else {
      out[row] = {value, value * low, value * high};
    }
  }
}

std::vector<Estimate> Predictor::predict(const learn::Matrix& rows) const {
  if (rows.cols() != static_cast<int64_t>(features::feature_count()))
    throw InputError("predictor: rows have " + std::to_string(rows.cols()) + " features, expected " +
                     std::to_string(features::feature_count()));
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = rows;
  std::vector<Estimate> result(static_cast<size_t>(rows.rows()));
  predict_rows(row_major.data(), rows.rows(), result.data());
  return result;
}

Estimate Predictor::predict_one(const std::vector<double>& row) const {
  if (row.size() != features::feature_count())
    throw InputError("predictor: a row of " + std::to_string(row.size()) + " features, expected " +
                     std::to_string(features::feature_count()));
  Estimate forecast;
  predict_rows(row.data(), 1, &forecast);
  return forecast;
}

}  // namespace dnncast::forecast
