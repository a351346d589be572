// `dnncast memory` run as a user runs it: the built binary, its stdout, stderr and exit code.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "memory/simulator.h"
#include "models/zoo.h"

namespace dnncast::memory {
namespace {

using nlohmann::json;

using cli_test::Result;
using cli_test::shell_quoted;

class MemoryCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dnncast_memory_cli_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    if (std::system(("test -x " + shell_quoted(cli_test::binary())).c_str()) != 0) GTEST_SKIP() << cli_test::binary() << " not built";
  }
  void TearDown() override { std::system(("rm -rf " + shell_quoted(dir_)).c_str()); }

  Result run(const std::vector<std::string>& args) { return cli_test::run("memory", args, dir_); }

  std::string dir_;
};

TEST_F(MemoryCli, JsonAgreesWithTheLibrary) {
  Result result = run({"resnet18", "--batch", "3", "--input", "3x32x32", "--optimizer", "adam", "--json", "--timeline"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json doc = json::parse(result.out);
  ModelSpec spec;
  spec.batch = 3;
  spec.input = {3, 32, 32};
  MemoryConfig config;
  config.optimizer = "adam";
  MemoryReport report = simulate_memory(build_zoo_model("resnet18", spec), config);
  EXPECT_EQ(doc["peak_bytes"].get<int64_t>(), report.peak_bytes);
  EXPECT_EQ(doc["baseline_bytes"].get<int64_t>(), report.baseline_bytes);
  EXPECT_EQ(doc["config"]["input"], "3x32x32");
  const json& b = doc["breakdown"];
  EXPECT_EQ(b["parameter_bytes"].get<int64_t>() + b["buffer_and_input_bytes"].get<int64_t>() +
                b["gradient_bytes"].get<int64_t>() + b["optimizer_state_bytes"].get<int64_t>() +
                b["activation_bytes"].get<int64_t>() + b["transient_bytes"].get<int64_t>(),
            doc["peak_total_bytes"].get<int64_t>());
  ASSERT_TRUE(doc["timeline"].is_array());
  int64_t highest = 0;
  for (const json& entry : doc["timeline"]) highest = std::max(highest, entry["max_bytes"].get<int64_t>());
  EXPECT_EQ(highest, report.peak_bytes);
}

TEST_F(MemoryCli, FitsAndMaxBatch) {
  Result yes = run({"mobilenet_v2", "--input", "3x32x32", "--fits", "1GiB", "--max-batch", "64MiB", "--json"});
  ASSERT_EQ(yes.exit_code, 0) << yes.err;
  json doc = json::parse(yes.out);
  EXPECT_TRUE(doc["fits"]["fits"].get<bool>());
  const int64_t batch = doc["max_batch"]["batch"].get<int64_t>();
  EXPECT_GT(batch, 0);
  EXPECT_LE(doc["max_batch"]["required_bytes"].get<int64_t>(), int64_t{64} << 20);
  EXPECT_GT(doc["max_batch"]["next_required_bytes"].get<int64_t>(), int64_t{64} << 20);

  Result no = run({"mobilenet_v2", "--input", "3x32x32", "--fits", "1MiB"});
  ASSERT_EQ(no.exit_code, 0) << no.err;
  EXPECT_NE(no.out.find("fits in 1.0 MiB: no"), std::string::npos) << no.out;
}

#ifdef DNNCAST_HAVE_TORCH
// --measure: a real training run (the profiler, in a child process) beside the simulation.
TEST_F(MemoryCli, MeasureRunsTheProfilerBesideTheSimulation) {
  Result result = run({"shufflenet_v2_x0_5", "--batch", "3", "--input", "3x32x32", "--measure", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json doc = json::parse(result.out);
  ASSERT_EQ(doc["measured"]["status"], "ok") << doc["measured"]["message"];
  EXPECT_EQ(doc["measured"]["baseline_bytes"], doc["baseline_bytes"]);
  EXPECT_EQ(doc["measured"]["simulated_peak_bytes"], doc["peak_bytes"]);
  EXPECT_EQ(doc["measured"]["peak_bytes"], doc["peak_bytes"]);  // exact (docs/MEMORY.md)
  EXPECT_EQ(doc["measured"]["relative_error"].get<double>(), 0.0);
}
#endif

TEST_F(MemoryCli, BadInputIsOneLineAndExitCode2) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"resnet18", "--batch", "0"},
                                             {"resnet5"},
                                             {"resnet18", "--max-batch", "12XB"},
                                             {"resnet18", "--optimizer", "lamb"},
                                             {"resnet18", "--precision", "bf16"},
                                             {"resnet18", "--measure", "--measure-timeout", "0"}}) {
    Result result = run(args);
    EXPECT_EQ(result.exit_code, 2) << args[0] << "\n" << result.err;
    EXPECT_EQ(result.out, "");
    ASSERT_FALSE(result.err.empty());
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
    EXPECT_EQ(result.err.rfind("dnncast memory: error: ", 0), 0u) << result.err;
  }
}

}  // namespace
}  // namespace dnncast::memory
