// `dnncast train` refuses a search without a budget, or with a bad one, in one line and exit 2,
// before it opens the dataset.
#include <gtest/gtest.h>

#include <algorithm>
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

}  // namespace
}  // namespace dnncast
