// The per-kernel GPU model through the CLI (issue 34): `inspect --device GPU` gives each layer's forward and
// backward time and they add up to its totals; `predict --phase` orders as what it times and names the model it
// used; a bad phase, or a phase without a catalogued GPU, is one line and exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace dnncast {
namespace {

nlohmann::json answer(const std::vector<std::string>& args) {
  cli_test::ScratchDir dir("gpu_kernels_cli");
  std::vector<std::string> rest(args.begin() + 1, args.end());
  rest.push_back("--json");
  const cli_test::Result result = cli_test::run(args.front(), rest, dir.path());
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return nlohmann::json::parse(result.out, nullptr, false);
}

TEST(GpuKernelsCli, InspectOnAGpuTimesEveryLayerAndTheySumToTheTotals) {
  const nlohmann::json inspected = answer({"inspect", "gpt2_small", "--batch", "2", "--seq", "128", "--device", "H100"});
  ASSERT_TRUE(inspected.is_object());
  EXPECT_EQ(inspected["gpu"], "h100-sxm");
  double forward = 0, backward = 0, attention = 0;
  for (const nlohmann::json& layer : inspected["layers"]) {
    forward += layer["gpu_forward_ms"].get<double>();
    backward += layer["gpu_backward_ms"].get<double>();
    if (layer["op"] == "ScaledDotProductAttention") attention += layer["gpu_forward_ms"].get<double>();
  }
  EXPECT_NEAR(forward, inspected["gpu_forward_ms"].get<double>(), 1e-9 * forward);
  EXPECT_NEAR(backward, inspected["gpu_backward_ms"].get<double>(), 1e-9 * backward);
  EXPECT_GT(attention, 0);
  EXPECT_GT(backward, forward);  // two gradients per GEMM
  // Without --device the layers carry no GPU time.
  const nlohmann::json plain = answer({"inspect", "gpt2_small", "--batch", "2", "--seq", "128"});
  EXPECT_FALSE(plain["layers"][1].contains("gpu_forward_ms"));
}

TEST(GpuKernelsCli, PhasesOrderAsWhatTheyTime) {
  auto time = [](const std::string& phase) {
    const nlohmann::json forecast =
        answer({"predict", "gpt2_small", "--batch", "4", "--seq", "256", "--device", "a100-40gb", "--phase", phase,
                "--optimizer", "adam"});
    EXPECT_EQ(forecast["phase"], phase);
    EXPECT_EQ(forecast["time_model"], "per-kernel");
    return forecast["time_ms"].get<double>();
  };
  const double train = time("train"), step = time("forward-backward"), inference = time("inference");
  EXPECT_GT(train, step);
  EXPECT_GT(step, 2 * inference);
}

TEST(GpuKernelsCli, ABadPhaseIsOneLineAndExit2) {
  cli_test::ScratchDir dir("gpu_kernels_cli");
  const cli_test::Result bad = cli_test::run("predict", {"resnet18", "--batch", "8", "--device", "t4", "--phase", "backward"}, dir.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--phase"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << bad.err;
  const cli_test::Result cpu = cli_test::run("predict", {"resnet18", "--batch", "8", "--phase", "inference"}, dir.path());
  EXPECT_EQ(cpu.exit_code, 2);
  EXPECT_NE(cpu.err.find("--phase applies only to a GPU"), std::string::npos) << cpu.err;
  const cli_test::Result unknown = cli_test::run("inspect", {"resnet18", "--device", "h1000"}, dir.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("h1000"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace dnncast
