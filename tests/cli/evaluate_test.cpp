// `dnncast evaluate`'s options as a user types them: what it refuses, with one line and exit 2,
// before it reads the dataset (an unwritable output file too, before minutes of fitting).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli_run.h"

namespace dnncast {
namespace {

struct BadInput {
  std::vector<std::string> args;
  std::string message;
};

TEST(EvaluateCli, RefusesBadLearnerOptionsInOneLine) {
  cli_test::ScratchDir dir("evaluate_cli_test");
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.path() + "/none.db";  // never opened: the options fail first
  const std::vector<BadInput> cases{
      {{"--db", db, "--learners", "xgboost,nope"}, "unknown learner 'nope'"},
      {{"--db", db, "--learner", "ridge", "--learners", "xgboost"}, "--learners goes with --learner auto"},
      {{"--db", db, "--hyperparameters", "{\"lambda\": 2}"}, "--hyperparameters goes with a learner name"},
      {{"--db", db, "--learner", "xgboost", "--hyperparameters", "[3]"}, "not a JSON object"},
      {{"--db", db, "--learner", "xgboost", "--hyperparameters", "{\"max_depth\": 3"}, "not a JSON object"},
      {{"--db", db, "--learner", "xgboost", "--hyperparameters", "{\"max_dept\": 3}"},
       "unknown hyperparameter 'max_dept'"},
      {{"--db", db, "--json-out", dir.path() + "/no/such/dir/report.json"}, "cannot write"},
      {{"--db", db, "--predictions", dir.path() + "/no/such/dir/p.csv"}, "cannot write"},
      {{"--db", db, "--model", "whole,hybird"},
       "unknown --model 'hybird' (known: whole, layerwise, hybrid, scaled, corrected)"},
      {{"--db", db, "--model", "hybrid", "--layer-feature"}, "--layer-feature is --model hybrid alone"},
      {{"--db", db, "--model", "corrected", "--layer-feature"}, "--layer-feature is --model hybrid alone"},
      {{"--db", db, "--split", "pixels"}, "unknown split 'pixels' (known: random, family, batch, input, env)"},
      {{"--db", db, "--bench-target", "hot"}, "unknown --bench-target 'hot' (known: warm, cold)"},
  };
  for (const BadInput& bad : cases) {
    cli_test::Result result = cli_test::run("evaluate", bad.args, dir.path());
    EXPECT_EQ(result.exit_code, 2) << bad.message << ": " << result.err;
    EXPECT_NE(result.err.find(bad.message), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
}

}  // namespace
}  // namespace dnncast
