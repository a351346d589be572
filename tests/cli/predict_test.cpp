// `dnncast predict` run as a user runs it, with the predictors shipped in data/predictors: the
// built binary, its stdout, stderr and exit code.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace dnncast {
namespace {

using nlohmann::json;

using cli_test::Result;
using cli_test::run;
using cli_test::shell_quoted;

class Predict : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dnncast_predict_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + shell_quoted(dir_)).c_str()); }

  json run_json(const std::string& command_name, const std::vector<std::string>& args) {
    Result result = run(command_name, args, dir_);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.err, "");
    json document = json::parse(result.out, nullptr, false);
    EXPECT_FALSE(document.is_discarded()) << result.out.substr(0, 500);
    return document;
  }

  // A bad input: exit code 2, nothing on stdout, one line on stderr; returns that line.
  std::string expect_input_error(const std::vector<std::string>& args) {
    Result result = run("predict", args, dir_);
    std::string shown;
    for (const std::string& arg : args) shown += arg + " ";
    EXPECT_EQ(result.exit_code, 2) << shown << "\n" << result.err;
    EXPECT_EQ(result.out, "") << shown;
    std::string last = result.err;
    // Notes about the forecast may come first; the error is the last line.
    if (last.size() > 1) last = last.substr(last.rfind('\n', last.size() - 2) == std::string::npos ? 0 : last.rfind('\n', last.size() - 2) + 1);
    EXPECT_EQ(last.rfind("dnncast predict: error: ", 0), 0u) << result.err;
    return last;
  }

  std::string dir_;
};

TEST_F(Predict, JsonHasTheForecastKeysAndAConsistentEpoch) {
  json forecast = run_json("predict", {"resnet50", "--batch", "32", "--input", "3x224x224", "--epoch-samples", "50000", "--json"});
  for (const char* key : {"time_ms", "time_ms_low", "time_ms_high", "epoch_s", "peak_bytes", "predictor", "env"})
    EXPECT_TRUE(forecast.contains(key)) << key << " missing in " << forecast.dump();
  double time_ms = forecast["time_ms"].get<double>();
  EXPECT_GT(time_ms, 0);
  EXPECT_LE(forecast["time_ms_low"].get<double>(), time_ms);
  EXPECT_GE(forecast["time_ms_high"].get<double>(), time_ms);
  // 50,000 samples at batch 32 are 1,563 iterations (the last one partial).
  EXPECT_NEAR(forecast["epoch_s"].get<double>(), time_ms * 1563 / 1000.0, 1e-6 * time_ms);
  EXPECT_FALSE(forecast["env"].get<std::string>().empty());
  // Without --epoch-samples there is no epoch figure.
  EXPECT_TRUE(run_json("predict", {"resnet18", "--batch", "4", "--input", "3x64x64", "--json"})["epoch_s"].is_null());
}

TEST_F(Predict, PeakMemoryIsTheSimulatorsAndGrowsWithBatch) {
  // predict takes its peak from the allocator-exact simulator (`dnncast memory`, checked against
  // profiled runs in tests/memory), not from a learned guess.
  json small = run_json("predict", {"mobilenet_v2", "--batch", "4", "--input", "3x96x96", "--optimizer", "adam", "--json"});
  json simulated = run_json("memory", {"mobilenet_v2", "--batch", "4", "--input", "3x96x96", "--optimizer", "adam", "--json"});
  EXPECT_EQ(small["memory_source"], "simulator");
  EXPECT_EQ(small["peak_bytes"], simulated["peak_bytes"]);
  EXPECT_EQ(small["peak_total_bytes"], simulated["required_bytes"]);
  json large = run_json("predict", {"mobilenet_v2", "--batch", "16", "--input", "3x96x96", "--optimizer", "adam", "--json"});
  EXPECT_GT(large["peak_bytes"].get<int64_t>(), 2 * small["peak_bytes"].get<int64_t>());  // measured: 2.6x
  EXPECT_GT(large["time_ms"].get<double>(), small["time_ms"].get<double>());
}

TEST_F(Predict, BadInputsAreOneLineAndExitCode2) {
  std::string line = expect_input_error({"resnet50", "--batch", "32", "--device", "a100"});
  EXPECT_NE(line.find("a100"), std::string::npos) << line;
  EXPECT_NE(line.find("known"), std::string::npos) << line;  // lists the predictors it knows
  EXPECT_NE(expect_input_error({"resnet5", "--batch", "32"}).find("resnet5"), std::string::npos);
  EXPECT_NE(expect_input_error({"resnet50", "--batch", "0"}).find("--batch"), std::string::npos);
  EXPECT_NE(expect_input_error({"resnet50", "--batch", "8", "--input", "3x0x224"}).find("3x0x224"), std::string::npos);
  // The model options are inspect's, memory's and profile's (cli/model_options.h): the same checks.
  EXPECT_NE(expect_input_error({"resnet50", "--batch", "8", "--input", "3x224"}).find("expected CxHxW"), std::string::npos);
  EXPECT_NE(expect_input_error({"resnet50", "--batch", "8", "--classes", "0"}).find("--classes"), std::string::npos);
  EXPECT_NE(expect_input_error({"gpt2_small", "--batch", "8", "--seq", "-3"}).find("--seq"), std::string::npos);
  EXPECT_NE(expect_input_error({"resnet50", "--batch", "8", "--optimizer", "lion"}).find("lion"), std::string::npos);
  EXPECT_NE(expect_input_error({"resnet50"}).find("--batch"), std::string::npos);
}

}  // namespace
}  // namespace dnncast
