// `dnncast host-check` and `predict`'s use of it, run as a user runs them: the probes measured here and forecast, the
// result cached and read back, predict's answer following it, and nothing measured when the check is off.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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
    // A probe kept had its CPU to itself for most of its time (else it is measured again, or the check refused).
    EXPECT_LE(probe["wait_share"].get<double>(), 0.2) << probe.dump();
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

// A process that keeps one CPU busy for as long as it lives (a fork of the test, pinned where the test is).
class BusyCpu {
 public:
  BusyCpu() {
    pid_ = fork();
    if (pid_ == 0) {
      volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    }
  }
  ~BusyCpu() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  BusyCpu(const BusyCpu&) = delete;
  BusyCpu& operator=(const BusyCpu&) = delete;
  bool ok() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

// Another process on the CPU the check measures on: each probe's thread waits for its CPU about half its time, the
// probes' times are that process's as much as this host's, and caching them would scale every forecast of the boot
// by them. The check says so in one line and caches nothing.
TEST(HostCheckCli, AProcessSharingTheCpuIsNotTakenForTheHostsSpeed) {
#ifndef DNNCAST_CLI_PROFILES
  GTEST_SKIP() << "built without libtorch: host-check cannot measure";
#endif
  ASSERT_TRUE(std::ifstream("/proc/self/schedstat").good()) << "this kernel keeps no scheduler statistics";
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // this test, the busy process and dnncast: one CPU
  ScratchDir dir("host_check_busy");
  ASSERT_TRUE(dir.ok());
  ScopedEnv cache("DNNCAST_CACHE_DIR", dir.path() + "/cache");
  ScopedEnv enabled("DNNCAST_HOST_CHECK", "on");
  Result result;
  {
    BusyCpu busy;
    ASSERT_TRUE(busy.ok());
    result = run("host-check", {"--json"}, dir.path());
  }
  sched_setaffinity(0, sizeof allowed, &allowed);
  EXPECT_NE(result.exit_code, 0) << result.out;
  EXPECT_NE(result.err.find("waited for its CPU"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("not checked"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/cache/host-check.json"));
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
