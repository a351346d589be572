// `dnncast calibrate` end to end, as a user runs it on a new host: real profiled runs of a small
// plan on this machine, the map chosen on the budget, a bundle `dnncast predict` loads, and a rerun
// that measures nothing again.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace dnncast {
namespace {

using nlohmann::json;

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
  const std::string predictor = std::string(DNNCAST_SOURCE_DIR) + "/data/predictors/amd-epyc-2cpu";
  const std::vector<std::string> args{"--predictor", predictor, "--plan", plan, "--budget", "5", "--holdout", "2",
                                      "--db", dir.path() + "/calib.db", "--out", dir.path() + "/adapted",
                                      "--cpus", "0", "--json"};
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
      "predict", {"squeezenet1_1", "--batch", "2", "--input", "3x32x32", "--predictor", dir.path() + "/adapted", "--json"},
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

}  // namespace
}  // namespace dnncast
