// `dnncast host-check` and `predict`'s use of it, run as a user runs them: the probes measured here and forecast, the
// result cached and read back, predict's answer following it, and nothing measured when the check is off.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace dnncast::cli_test {
namespace {

using nlohmann::json;

TEST(HostCheckCli, MeasuresTheProbesCachesThemAndPredictFollowsThem) {
#ifndef DNNCAST_CLI_PROFILES
  GTEST_SKIP() << "built without libtorch: host-check cannot measure";
#endif
  ScratchDir dir("host_check_cli");
  ASSERT_TRUE(dir.ok());
  ScopedEnv cache("DNNCAST_CACHE_DIR", dir.path() + "/cache");
  ScopedEnv enabled("DNNCAST_HOST_CHECK", "on");
  Result result = run("host-check", {"--json"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json check = json::parse(result.out);
  EXPECT_FALSE(check["cached"].get<bool>());
  ASSERT_EQ(check["probes"].size(), 4u);
  for (const json& probe : check["probes"]) {
    EXPECT_GT(probe["measured_ms"].get<double>(), 0) << probe.dump();
    // The forecast beside it is what `predict` says of it without the check.
    Result predicted = run("predict",
                           {probe["model"].get<std::string>(), "--batch", std::to_string(probe["batch"].get<int>()),
                            "--input", probe["input"].get<std::string>(), "--optimizer",
                            probe["optimizer"].get<std::string>(), "--no-host-check", "--json"},
                           dir.path());
    ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
    EXPECT_NEAR(json::parse(predicted.out)["time_ms"].get<double>(), probe["forecast_ms"].get<double>(),
                1e-9 * probe["forecast_ms"].get<double>());
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/cache/host-check.json"));
  result = run("host-check", {"--json"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(json::parse(result.out)["cached"].get<bool>());
  EXPECT_DOUBLE_EQ(json::parse(result.out)["ratio"].get<double>(), check["ratio"].get<double>());

  result = run("predict", {"resnet18", "--batch", "8", "--input", "3x64x64", "--json"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err.find("host check: timing"), std::string::npos) << result.err;  // cached: not measured again
  const json checked = json::parse(result.out);
  if (check["off"].get<bool>()) {
    EXPECT_DOUBLE_EQ(checked["host_match"]["speed"]["ratio"].get<double>(), check["ratio"].get<double>());
    EXPECT_NE(result.err.find("To adapt it: dnncast calibrate resnet18"), std::string::npos) << result.err;
  } else {
    EXPECT_FALSE(checked["host_match"].contains("speed"));
  }
  result = run("predict", {"resnet18", "--batch", "8", "--input", "3x64x64", "--no-host-check", "--json"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(json::parse(result.out)["host_match"].contains("speed"));
}

TEST(HostCheckCli, OffMeansNothingMeasuredNorRead) {
  ScratchDir dir("host_check_off");
  ASSERT_TRUE(dir.ok());
  ScopedEnv cache("DNNCAST_CACHE_DIR", dir.path() + "/cache");
  ScopedEnv off("DNNCAST_HOST_CHECK", "off");
  const Result result = run("predict", {"resnet18", "--batch", "8", "--input", "3x64x64"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err.find("host check"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/cache"));
}

}  // namespace
}  // namespace dnncast::cli_test
