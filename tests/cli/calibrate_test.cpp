// `dnncast calibrate` end to end, as a user runs it on a new host: real profiled runs of a small
// plan on this machine, the map chosen on the budget, a bundle `dnncast predict` loads, and a rerun
// that measures nothing again. The offline mode (--from-db) on the shipped pilot dataset, checked
// against the dataset read with SQLite directly and against `dnncast predict`.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "cli_run.h"

namespace dnncast {
namespace {

using nlohmann::json;

// `calibrate MODEL --minutes M` (issue 36): the model's own layers and a real run timed here within the budget, and
// `predict` through the calibration forecasts, at the measured configuration, the median that run measured.
TEST(CalibrateModel, TimesTheModelHereAndPredictForecastsWhatItMeasured) {
#ifndef DNNCAST_CLI_PROFILES
  GTEST_SKIP() << "built without libtorch: calibrate cannot profile";
#else
  cli_test::ScratchDir dir("calibrate_model_test");
  ASSERT_TRUE(dir.ok());
  const std::string out = dir.path() + "/host";
  cli_test::Result run = cli_test::run("calibrate",
                                       {"squeezenet1_1", "--batch", "2", "--input", "3x32x32", "--minutes", "0.5",
                                        "--out", out, "--cpus", "0", "--json"},
                                       dir.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json report = json::parse(run.out);
  EXPECT_LE(report["wall_s"].get<double>(), 0.5 * 60 + 20) << "the budget, and one slice of layers past it at most";
  EXPECT_GT(report["model_layers"]["measured"].get<int64_t>(), 0);
  ASSERT_EQ(report["whole_runs"].size(), 1u) << report.dump();
  EXPECT_EQ(report["whole_runs"][0]["batch"], 2);
  EXPECT_EQ(report["shift"]["map"], "ratio");
  const double measured = report["whole_runs"][0]["measured_ms"].get<double>();

  cli_test::Result forecast = cli_test::run(
      "predict", {"squeezenet1_1", "--batch", "2", "--input", "3x32x32", "--predictor", out, "--json"}, dir.path());
  ASSERT_EQ(forecast.exit_code, 0) << forecast.err;
  json document = json::parse(forecast.out);
  EXPECT_NEAR(document["time_ms"].get<double>(), measured, 1e-6 * measured);
  EXPECT_LE(document["time_ms_low"].get<double>(), measured);
  EXPECT_GE(document["time_ms_high"].get<double>(), measured);
  EXPECT_EQ(document["host_match"]["match"], "exact");
  EXPECT_EQ(document["calibration"], out);
  // Another batch of the same model: carried by the layers' scale and the same shift, not the measurement.
  forecast = cli_test::run(
      "predict", {"squeezenet1_1", "--batch", "4", "--input", "3x32x32", "--predictor", out, "--json"}, dir.path());
  ASSERT_EQ(forecast.exit_code, 0) << forecast.err;
  const double batch4_ms = json::parse(forecast.out)["time_ms"].get<double>();
  EXPECT_GT(batch4_ms, measured);

  // --refit: the same fit again from the folder's measurements, nothing measured; the forecasts stay.
  cli_test::Result refit = cli_test::run("calibrate", {"--refit", out, "--json"}, dir.path());
  ASSERT_EQ(refit.exit_code, 0) << refit.err;
  const json refitted = json::parse(refit.out);
  EXPECT_EQ(refitted["kind_scale"], report["kind_scale"]);
  EXPECT_TRUE(refitted.contains("refitted"));
  forecast = cli_test::run(
      "predict", {"squeezenet1_1", "--batch", "4", "--input", "3x32x32", "--predictor", out, "--json"}, dir.path());
  ASSERT_EQ(forecast.exit_code, 0) << forecast.err;
  EXPECT_NEAR(json::parse(forecast.out)["time_ms"].get<double>(), batch4_ms, 1e-9 * batch4_ms);

  // A real run that waited for its CPU (another process ran there; marked so in the folder's dataset, as a campaign
  // records it) is left out of the fit, and the report says so: no whole run then carries the forecast.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((out + "/calibration.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE runs SET cpu_wait_share = 0.5 WHERE plan = 'calibrate-whole'", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  refit = cli_test::run("calibrate", {"--refit", out, "--json"}, dir.path());
  ASSERT_EQ(refit.exit_code, 0) << refit.err;
  const json shared = json::parse(refit.out);
  EXPECT_TRUE(shared["whole_runs"].empty()) << shared.dump();
  ASSERT_EQ(shared["whole_runs_left_out"].size(), 1u) << shared.dump();
  EXPECT_EQ(shared["whole_runs_left_out"][0]["cpu_wait_share"], 0.5);
  EXPECT_NE(shared["note"].get<std::string>().find("shared its CPU"), std::string::npos) << shared.dump();
  refit = cli_test::run("calibrate", {"--refit", out}, dir.path());
  ASSERT_EQ(refit.exit_code, 0) << refit.err;
  EXPECT_NE(refit.out.find("left out: real iterations at batch 2, 3x32x32"), std::string::npos) << refit.out;

  cli_test::Result missing = cli_test::run("calibrate", {"--refit", dir.path() + "/nothing"}, dir.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no host calibration at"), std::string::npos) << missing.err;
#endif
}

TEST(Calibrate, ProfilesOnlyTheBudgetAndWritesABundlePredictLoads) {
#ifndef DNNCAST_CLI_PROFILES
  GTEST_SKIP() << "built without libtorch: calibrate cannot profile";
#else
  cli_test::ScratchDir dir("calibrate_test");
  ASSERT_TRUE(dir.ok());
  const std::string plan = dir.path() + "/plan.json";
  std::ofstream(plan) << R"({"format": "dnncast-plan/1", "name": "calibrate-test",
    "measure": {"time_budget_s": 0.2, "warmup_budget_s": 0.2, "min_iterations": 3, "timeout_s": 120},
    "models": ["squeezenet1_1", "shufflenet_v2_x0_5", {"synthetic": [0, 3]}],
    "inputs": [32], "batches": [1, 2, 4], "optimizers": ["sgd"], "threads": [1], "sampling": "grid"})";
  const std::string predictor = cli_test::epyc_predictor();
  const std::vector<std::string> args{"--predictor", predictor,
                                      "--plan",      plan,
                                      "--budget",    "5",
                                      "--holdout",   "2",
                                      "--db",        dir.path() + "/calib.db",
                                      "--out",       dir.path() + "/adapted",
                                      "--cpus",      "0",
                                      "--json"};
  cli_test::Result first = cli_test::run("calibrate", args, dir.path());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  json report = json::parse(first.out);
  EXPECT_EQ(report["candidates"], 18);
  EXPECT_EQ(report["profiled"], 7) << "the budget and the holdout, nothing else";
  EXPECT_EQ(report["holdout"], 2);
  const std::string chosen = report["chosen"];
  EXPECT_TRUE((std::set<std::string>{"source", "ratio", "lms", "gs"}.count(chosen))) << chosen;
  EXPECT_TRUE(report["sample_loo_log_error_pct"].contains("source"));
  const json& holdout = report["holdout_mape_pct"];
  for (const char* key : {"source", "ratio", "chosen", "bundle"}) EXPECT_TRUE(holdout.contains(key)) << key;
  // "chosen" is one of the maps, fitted on the same sample, and the saved bundle forecasts as it does.
  EXPECT_NEAR(holdout["chosen"].get<double>(), holdout[chosen].get<double>(), 1e-9);
  if (chosen != "gs") {
    EXPECT_NEAR(holdout["bundle"].get<double>(), holdout["chosen"].get<double>(), 1e-3);
  }

  cli_test::Result forecast = cli_test::run(
      "predict",
      {"squeezenet1_1", "--batch", "2", "--input", "3x32x32", "--predictor", dir.path() + "/adapted", "--json"},
      dir.path());
  ASSERT_EQ(forecast.exit_code, 0) << forecast.err;
  json document = json::parse(forecast.out);
  EXPECT_GT(document["time_ms"].get<double>(), 0);
  json manifest = json::parse(std::ifstream(dir.path() + "/adapted/manifest.json"));
  EXPECT_EQ(manifest["training"]["calibration"]["chosen"], chosen);

  // Resumable: the same command measures nothing again and decides the same way.
  cli_test::Result again = cli_test::run("calibrate", args, dir.path());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  json second = json::parse(again.out);
  EXPECT_EQ(second["profiled"], 0);
  EXPECT_EQ(second["chosen"], chosen);
#endif
}

const std::string kShippedPilotDb = std::string(DNNCAST_SOURCE_DIR) + "/data/predictors/pilot-data/pilot.db";
const std::string kShippedPredictor = cli_test::epyc_predictor();

// The shipped pilot dataset (schema 1) copied into `dir` and migrated by a merge into itself: a
// dataset of 42 ok configurations, 2 repeats each.
std::string pilot_copy(const cli_test::ScratchDir& dir) {
  const std::string copy = dir.path() + "/pilot.db";
  std::filesystem::copy_file(kShippedPilotDb, copy);
  cli_test::Result merged = cli_test::run("dataset", {"merge", "-o", copy, copy}, dir.path());
  EXPECT_EQ(merged.exit_code, 0) << merged.err;
  return copy;
}

// (network, batch, input, optimizer, threads) -> mean time of the ok repeats, read with SQLite alone.
using ConfigKey = std::tuple<std::string, int64_t, std::string, std::string, int64_t>;
std::map<ConfigKey, double> mean_times_of(const std::string& db_path) {
  std::map<ConfigKey, double> times;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  const char* query =
      "SELECT n.name, r.batch, r.input, r.optimizer, r.threads, AVG(r.time_ms_median) FROM runs r "
      "JOIN networks n ON n.id = r.network_id WHERE r.status = 'ok' GROUP BY 1, 2, 3, 4, 5";
  EXPECT_EQ(sqlite3_prepare_v2(db, query, -1, &statement, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (statement != nullptr && sqlite3_step(statement) == SQLITE_ROW) {
    ConfigKey key{reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)), sqlite3_column_int64(statement, 1),
                  reinterpret_cast<const char*>(sqlite3_column_text(statement, 2)),
                  reinterpret_cast<const char*>(sqlite3_column_text(statement, 3)), sqlite3_column_int64(statement, 4)};
    times[key] = sqlite3_column_double(statement, 5);
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return times;
}

double mape_on(const json& configurations, const std::vector<int64_t>& rows, const std::vector<double>& forecast_ms) {
  double sum = 0;
  for (int64_t k : rows) {
    const double time_ms = configurations[static_cast<size_t>(k)]["time_ms"].get<double>();
    sum += std::abs(forecast_ms[static_cast<size_t>(k)] - time_ms) / time_ms;
  }
  return 100 * sum / static_cast<double>(rows.size());
}

TEST(CalibrateOffline, ScoresTheShippedPredictorOnlyOnConfigurationsNotSampled) {
  cli_test::ScratchDir dir("calibrate_offline_test");
  ASSERT_TRUE(dir.ok());
  const std::string pilot_db = pilot_copy(dir);
  cli_test::Result result = cli_test::run("calibrate",
                                          {"--predictor", kShippedPredictor, "--from-db", pilot_db, "--budget", "6",
                                           "--draws", "4", "--list-draws", "--json"},
                                          dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json report = json::parse(result.out);
  const json& configurations = report["configurations"];
  const std::map<ConfigKey, double> times = mean_times_of(pilot_db);
  // Every ok configuration is a candidate (vgg11 timed out: not one), with the mean of its repeats.
  ASSERT_EQ(report["candidates"], times.size());
  ASSERT_EQ(configurations.size(), times.size());
  EXPECT_EQ(report["budget"], 6);
  EXPECT_EQ(report["evaluated"], times.size() - 6);
  std::vector<double> forecast_ms;
  for (const json& row : configurations) {
    ConfigKey key{row["network"], row["batch"], row["input"], row["optimizer"], row["threads"]};
    ASSERT_TRUE(times.count(key)) << row.dump();
    EXPECT_NEAR(row["time_ms"].get<double>(), times.at(key), 1e-9 * times.at(key)) << row.dump();
    forecast_ms.push_back(row["forecast_ms"].get<double>());
  }
  // The forecasts are `dnncast predict`'s for the run's own configuration (a zoo and a synthetic network).
  for (const std::string& network : {std::string("resnet18"), std::string("synthetic:2")}) {
    auto found = std::find_if(configurations.begin(), configurations.end(),
                              [&](const json& row) { return row["network"] == network && row["batch"] == 4; });
    ASSERT_NE(found, configurations.end()) << network;
    const json& row = *found;
    std::string input = row["input"];
    cli_test::Result forecast = cli_test::run(
        "predict",
        {network, "--batch", "4", "--input", input, "--optimizer", row["optimizer"].get<std::string>(), "--threads",
         std::to_string(row["threads"].get<int64_t>()), "--predictor", kShippedPredictor, "--json"},
        dir.path());
    ASSERT_EQ(forecast.exit_code, 0) << forecast.err;
    EXPECT_NEAR(json::parse(forecast.out)["time_ms"].get<double>(), row["forecast_ms"].get<double>(),
                1e-6 * row["forecast_ms"].get<double>())
        << network;
  }
  std::vector<int64_t> every_row;
  for (int64_t k = 0; k < static_cast<int64_t>(configurations.size()); ++k) every_row.push_back(k);
  EXPECT_NEAR(report["dm_all_mape_pct"].get<double>(), mape_on(configurations, every_row, forecast_ms), 1e-6);

  for (const char* sampler : {"guided", "random"}) {
    const json& draws = report[sampler]["draws"];
    ASSERT_EQ(draws.size(), 4u) << sampler;
    double dm_sum = 0;
    for (const json& draw : draws) {
      std::set<int64_t> sample(draw["sample"].begin(), draw["sample"].end());
      ASSERT_EQ(sample.size(), 6u) << sampler;
      std::vector<int64_t> rest;
      for (int64_t k : every_row)
        if (sample.count(k) == 0) rest.push_back(k);
      // DM and the ratio map (one factor: the mean log ratio over the sample) recomputed by hand,
      // on the rows not sampled only: a sampled row in the score, or a held-out one in the fit, shows.
      const double dm = mape_on(configurations, rest, forecast_ms);
      EXPECT_NEAR(draw["mape_pct"]["dm"].get<double>(), dm, 1e-6) << sampler;
      EXPECT_NEAR(draw["mape_pct"]["source"].get<double>(), dm, 1e-6) << sampler;
      double log_ratio = 0;
      for (int64_t k : sample)
        log_ratio += std::log(configurations[static_cast<size_t>(k)]["time_ms"].get<double>() /
                              forecast_ms[static_cast<size_t>(k)]);
      log_ratio /= static_cast<double>(sample.size());
      std::vector<double> ratio_ms;
      for (double value : forecast_ms) ratio_ms.push_back(value * std::exp(log_ratio));
      EXPECT_NEAR(draw["mape_pct"]["ratio"].get<double>(), mape_on(configurations, rest, ratio_ms), 1e-6) << sampler;
      const std::string chosen = draw["chosen"];
      EXPECT_NEAR(draw["mape_pct"]["chosen"].get<double>(), draw["mape_pct"][chosen].get<double>(), 1e-9);
      dm_sum += dm;
    }
    EXPECT_NEAR(report[sampler]["mape_pct"]["dm"]["mean"].get<double>(), dm_sum / 4, 1e-6) << sampler;
  }
}

TEST(CalibrateOffline, BadInputIsOneLineAndExitCode2) {
  cli_test::ScratchDir dir("calibrate_offline_errors");
  ASSERT_TRUE(dir.ok());
  const std::string pilot_db = pilot_copy(dir);
  const std::string text_file = dir.path() + "/notes.db";
  std::ofstream(text_file) << "not a dataset\n";
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases{
      {{"--predictor", kShippedPredictor, "--from-db", dir.path() + "/missing.db", "--budget", "5"}, "does not exist"},
      {{"--predictor", kShippedPredictor, "--from-db", text_file, "--budget", "5"}, "file is not a database"},
      {{"--predictor", kShippedPredictor, "--from-db", pilot_db, "--budget", "500"}, "is not below the"},
      {{"--predictor", dir.path() + "/no-predictor", "--from-db", pilot_db, "--budget", "5"}, "no-predictor"},
      {{"--predictor", kShippedPredictor, "--from-db", pilot_db, "--budget", "5", "--holdout", "2"}, "--holdout"},
      {{"--predictor", kShippedPredictor, "--budget", "5"}, "--plan and --db are required"},
  };
  for (const Case& one : cases) {
    cli_test::Result result = cli_test::run("calibrate", one.args, dir.path());
    EXPECT_EQ(result.exit_code, 2) << one.expected << ": " << result.err;
    EXPECT_NE(result.err.find(one.expected), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
}

}  // namespace
}  // namespace dnncast
