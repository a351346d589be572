// `dnncast train` refuses a search without a budget, or with a bad one, in one line and exit 2,
// before it opens the dataset.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"

namespace dnncast {
namespace {

TEST(TrainCli, RefusesABadBudgetInOneLine) {
  cli_test::ScratchDir dir("train_cli_test");
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.path() + "/none.db";  // never opened: the options fail first
  const std::string out = dir.path() + "/bundle";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--db", db, "--out", out, "--budget-s", "0"}, "0 only with --candidates N"},
      {{"--db", db, "--out", out, "--budget-s", "-3", "--candidates", "4"}, "--budget-s must be positive"},
      {{"--db", db, "--out", out, "--candidates", "-1"}, "--candidates must be positive"},
  };
  for (const auto& [args, message] : cases) {
    cli_test::Result result = cli_test::run("train", args, dir.path());
    EXPECT_EQ(result.exit_code, 2) << message << ": " << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
  // With a candidate budget and no time budget the options pass, and the missing dataset is what fails.
  cli_test::Result result =
      cli_test::run("train", {"--db", db, "--out", out, "--budget-s", "0", "--candidates", "3"}, dir.path());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err.find("--budget-s"), std::string::npos) << result.err;
}

// The layer-wise model of a set: its options refused in one line before any work, then fitted on
// single layers benchmarked here (bench-layers) into a copy of the shipped set, which `predict` then
// uses past the trained batches and nowhere else.
TEST(TrainCli, LayerBenchAddsALayerWiseModelThatPredictUsesPastTheTrainedBatches) {
  cli_test::ScratchDir dir("train_layers_test");
  ASSERT_TRUE(dir.ok());
  const std::string here = std::string(DNNCAST_SOURCE_DIR) + "/tests/cli/bad_input";
  const std::string db = dir.path() + "/one_run.db";
  const std::string bench = dir.path() + "/bench.db";
  const std::string set = dir.path() + "/set";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--db", db, "--out", set, "--layers-only"}, "--layers-only goes with --layer-bench FILE"},
      {{"--db", db, "--out", set, "--layer-bench", bench, "--target", "time"}, "--layer-bench goes with --target all"},
      {{"--db", db, "--out", set, "--layer-bench", bench, "--bench-target", "hot"}, "unknown --bench-target"},
      {{"--db", db, "--out", set, "--layer-bench", bench, "--layers-only"}, "--layers-only: no predictor set at"},
  };
  for (const auto& [args, message] : cases) {
    cli_test::Result result = cli_test::run("train", args, dir.path());
    EXPECT_EQ(result.exit_code, 2) << message << ": " << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
  }
  namespace fs = std::filesystem;
  fs::copy(cli_test::epyc_predictor(), set, fs::copy_options::recursive);
  fs::remove_all(set + "/time/layers");
  cli_test::Result missing =
      cli_test::run("train", {"--db", db, "--out", set, "--layer-bench", bench, "--layers-only"}, dir.path());
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("no such file"), std::string::npos) << missing.err;

  ASSERT_EQ(cli_test::run("dataset", {"import", "--csv", here + "/one_run.csv", "--db", db}, dir.path()).exit_code, 0);
  cli_test::Result measured = cli_test::run("bench-layers",
                                            {"--db", bench, "--ops", "conv,bn,act,linear", "--sample", "16",
                                             "--batches", "1,2", "--max-gflops", "0.005", "--budget", "0.01"},
                                            dir.path());
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  const std::string time_manifest = cli_test::read_text(set + "/time/manifest.json");
  cli_test::Result trained = cli_test::run(
      "train", {"--db", db, "--out", set, "--layer-bench", bench, "--layers-only", "--quiet"}, dir.path());
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  EXPECT_NE(trained.out.find("time/layers: layer-wise model"), std::string::npos) << trained.out;
  EXPECT_TRUE(fs::exists(set + "/time/layers/layers.json"));
  // One configuration is too few for the corrected model: said in a note, and the shipped set's one,
  // fitted over another layer-wise model, is gone.
  EXPECT_NE(trained.err.find("note: no corrected layer-wise model"), std::string::npos) << trained.err;
  EXPECT_FALSE(fs::exists(set + "/time/corrected"));
  EXPECT_EQ(cli_test::read_text(set + "/time/manifest.json"), time_manifest);  // the whole-network model untouched

  auto predict = [&](const std::string& batch) {
    cli_test::Result result = cli_test::run(
        "predict", {"resnet18", "--batch", batch, "--input", "3x64x64", "--threads", "1", "--predictor", set, "--json"},
        dir.path());
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out, nullptr, false);
  };
  nlohmann::json past = predict("256"), inside = predict("64");
  ASSERT_TRUE(past.is_object() && inside.is_object());
  // Carried by the layer-wise model, or (its ratio implausible for this network) not: either way said.
  const std::string past_model = past.value("time_model", "");
  EXPECT_TRUE(past_model == "whole, carried past the trained batches by the layer-wise model" || past_model == "whole")
      << past.dump();
  bool noted = false;
  for (const auto& note : past["notes"])
    noted = noted || note.get<std::string>().find("layer-wise model's ratio") != std::string::npos;
  EXPECT_TRUE(noted) << past.dump();
  EXPECT_EQ(inside.value("time_model", ""), "whole") << inside.dump();
  EXPECT_EQ(past.value("extrapolated_from_batch", 0), 128);
  // Without a corrected model the largest input is the whole-network learner's too.
  cli_test::Result large = cli_test::run(
      "predict", {"resnet18", "--batch", "8", "--input", "3x224x224", "--threads", "1", "--predictor", set, "--json"},
      dir.path());
  ASSERT_EQ(large.exit_code, 0) << large.err;
  EXPECT_EQ(nlohmann::json::parse(large.out, nullptr, false).value("time_model", ""), "whole") << large.out;
}

}  // namespace
}  // namespace dnncast
