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
  const nlohmann::json inspected =
      answer({"inspect", "gpt2_small", "--batch", "2", "--seq", "128", "--device", "H100"});
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
  // The same time by kind (issue 45: the kinds NeuSight's per-node labels are compared by): every kind a
  // transformer has, summing to the totals.
  double by_kind = 0;
  for (const char* kind : {"gemm", "attention", "norm", "activation", "embedding", "elementwise"}) {
    ASSERT_TRUE(inspected["gpu_by_kind_ms"].contains(kind)) << kind;
    EXPECT_GT(inspected["gpu_by_kind_ms"][kind]["forward"].get<double>(), 0) << kind;
  }
  for (const auto& [kind, ms] : inspected["gpu_by_kind_ms"].items())
    by_kind += ms["forward"].get<double>() + ms["backward"].get<double>();
  EXPECT_NEAR(by_kind, forward + backward, 1e-9 * by_kind);
  // Without --device the layers carry no GPU time.
  const nlohmann::json plain = answer({"inspect", "gpt2_small", "--batch", "2", "--seq", "128"});
  EXPECT_FALSE(plain["layers"][1].contains("gpu_forward_ms"));
}

// With --checkpointing, predict times the checkpointed blocks' forward twice (gpu_work); inspect's rows carry that
// second forward in their backward time (gpu_recompute_ms), so what checkpointing adds is the same in both.
TEST(GpuKernelsCli, InspectWithCheckpointingCountsTheRecomputedForwardAsPredictDoes) {
  const std::vector<std::string> model = {"gpt2_small", "--batch", "2", "--seq", "128", "--device", "a100-40gb"};
  auto with = [&](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.begin() + 1, model.begin(), model.end());
    args.insert(args.end(), more.begin(), more.end());
    return answer(args);
  };
  const nlohmann::json plain = with({"inspect"}, {});
  const nlohmann::json checkpointed = with({"inspect"}, {"--checkpointing"});
  double recompute = 0, backward = 0, blocks_forward = 0;
  for (const nlohmann::json& layer : checkpointed["layers"]) {
    recompute += layer["gpu_recompute_ms"].get<double>();
    backward += layer["gpu_backward_ms"].get<double>();
    const double again = layer["gpu_recompute_ms"].get<double>();
    EXPECT_TRUE(again == 0 || again == layer["gpu_forward_ms"].get<double>()) << layer["name"];
    if (again > 0) blocks_forward += layer["gpu_forward_ms"].get<double>();
  }
  EXPECT_GT(recompute, 0.5 * checkpointed["gpu_forward_ms"].get<double>());  // most of GPT-2's forward is in blocks
  EXPECT_NEAR(recompute, checkpointed["gpu_recompute_ms"].get<double>(), 1e-9 * recompute);
  EXPECT_NEAR(backward, checkpointed["gpu_backward_ms"].get<double>(), 1e-9 * backward);
  EXPECT_NEAR(blocks_forward, recompute, 1e-9 * recompute);
  EXPECT_EQ(plain["gpu_recompute_ms"].get<double>(), 0);
  auto layers_ms = [](const nlohmann::json& inspected) {
    return inspected["gpu_forward_ms"].get<double>() + inspected["gpu_backward_ms"].get<double>();
  };
  auto predicted_ms = [&](const std::vector<std::string>& more) {
    std::vector<std::string> flags = {"--phase", "forward-backward"};
    flags.insert(flags.end(), more.begin(), more.end());
    const nlohmann::json forecast = with({"predict"}, flags);
    EXPECT_EQ(forecast["time_model"], "per-kernel");
    return forecast["time_ms"].get<double>();
  };
  const double predicted_added = predicted_ms({"--checkpointing"}) - predicted_ms({});
  EXPECT_NEAR(layers_ms(checkpointed) - layers_ms(plain), predicted_added, 1e-6 * predicted_added);
  EXPECT_NEAR(recompute, predicted_added, 1e-6 * predicted_added);
}

TEST(GpuKernelsCli, PhasesOrderAsWhatTheyTime) {
  auto time = [](const std::string& phase) {
    const nlohmann::json forecast = answer({"predict", "gpt2_small", "--batch", "4", "--seq", "256", "--device",
                                            "a100-40gb", "--phase", phase, "--optimizer", "adam"});
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
  const cli_test::Result bad =
      cli_test::run("predict", {"resnet18", "--batch", "8", "--device", "t4", "--phase", "backward"}, dir.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--phase"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << bad.err;
  const cli_test::Result cpu =
      cli_test::run("predict", {"resnet18", "--batch", "8", "--phase", "inference"}, dir.path());
  EXPECT_EQ(cpu.exit_code, 2);
  EXPECT_NE(cpu.err.find("--phase applies only to a GPU"), std::string::npos) << cpu.err;
  const cli_test::Result unknown = cli_test::run("inspect", {"resnet18", "--device", "h1000"}, dir.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("h1000"), std::string::npos) << unknown.err;
  const cli_test::Result inspect_bad =
      cli_test::run("inspect", {"resnet18", "--device", "t4", "--phase", "eval"}, dir.path());
  EXPECT_EQ(inspect_bad.exit_code, 2);
  EXPECT_NE(inspect_bad.err.find("--phase must be train or inference, got 'eval'"), std::string::npos)
      << inspect_bad.err;
  EXPECT_EQ(inspect_bad.err.find('\n'), inspect_bad.err.size() - 1) << inspect_bad.err;
}

// Inference runs the model in eval mode, as NeuSight's inference labels were timed: a dropout launches nothing and
// nothing runs backward; the training step's forward keeps its dropouts. inspect --phase inference lists it so, and
// its layers add up to what predict --phase inference times for the kernels.
TEST(GpuKernelsCli, InspectForInferenceListsTheModelInEvalMode) {
  const std::vector<std::string> model = {"gpt2_small", "--batch", "2", "--seq", "128", "--device", "a100-40gb"};
  std::vector<std::string> train_args = {"inspect"}, eval_args = {"inspect"};
  train_args.insert(train_args.end(), model.begin(), model.end());
  eval_args.insert(eval_args.end(), model.begin(), model.end());
  eval_args.insert(eval_args.end(), {"--phase", "inference"});
  const nlohmann::json train = answer(train_args), eval = answer(eval_args);
  ASSERT_EQ(train["layers"].size(), eval["layers"].size());
  int dropouts = 0;
  for (size_t at = 0; at < eval["layers"].size(); ++at) {
    const nlohmann::json &trained = train["layers"][at], &evaluated = eval["layers"][at];
    EXPECT_EQ(evaluated["gpu_backward_ms"].get<double>(), 0) << evaluated["name"];
    EXPECT_TRUE(evaluated["gpu_kernels"]["backward"].empty()) << evaluated["name"];
    if (evaluated["op"] == "Dropout" && trained["gpu_forward_ms"].get<double>() > 0) {
      ++dropouts;
      EXPECT_EQ(evaluated["gpu_forward_ms"].get<double>(), 0) << evaluated["name"];
    } else if (evaluated["op"] == "ScaledDotProductAttention") {  // its dropout over the scores goes too
      EXPECT_LT(evaluated["gpu_kernels"]["forward"].size(), trained["gpu_kernels"]["forward"].size());
    } else {
      EXPECT_EQ(evaluated["gpu_forward_ms"].get<double>(), trained["gpu_forward_ms"].get<double>())
          << evaluated["name"];
    }
  }
  EXPECT_GT(dropouts, 20);  // GPT-2's residual, MLP and embedding dropouts
  EXPECT_LT(eval["gpu_forward_ms"].get<double>(), train["gpu_forward_ms"].get<double>());
}

}  // namespace
}  // namespace dnncast
