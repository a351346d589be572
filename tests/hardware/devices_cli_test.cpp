// `dnncast devices` as a user runs it: JSON with one row per row of data/hardware/gpus.csv (counted
// here with a plain line reader), the instances joined to catalogued GPUs, --catalogue, bad files.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_run.h"

namespace dnncast::cli_test {
namespace {

const std::string kShipped = std::string(DNNCAST_SOURCE_DIR) + "/data/hardware/";

// Data rows of a CSV whose records hold no newline: lines minus comments and the header.
size_t data_lines(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  size_t count = 0;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') ++count;
  return count == 0 ? 0 : count - 1;
}

TEST(DevicesCli, JsonHasOneRowPerCatalogueGpu) {
  ScratchDir dir("devices");
  Result result = run("devices", {"--json"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json out = nlohmann::json::parse(result.out);
  ASSERT_EQ(out["gpus"].size(), data_lines(kShipped + "gpus.csv"));
  std::set<std::string> names;
  for (const auto& gpu : out["gpus"]) {
    EXPECT_TRUE(names.insert(gpu["name"].get<std::string>()).second) << gpu["name"];
    EXPECT_FALSE(gpu["source_url"].get<std::string>().empty()) << gpu["name"];
    EXPECT_TRUE(gpu["fp32_tflops"].is_null() || gpu["fp32_tflops"].get<double>() > 0) << gpu["name"];
  }
  EXPECT_TRUE(names.count("a100-40gb") && names.count("h100-sxm") && names.count("rtx2080ti") && names.count("mi300x"));
}

// NeuSight's protocol, read off the catalogue's own columns rather than off the names: every Hopper GPU (the H100 in
// each form, GH200, H200), the L4 and the 80 GB A100s are test GPUs, flagged in --json and listed under the table.
TEST(DevicesCli, FlagsNeuSightsTestGpusByChipNotByName) {
  ScratchDir dir("devices");
  Result result = run("devices", {"--json"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Result table = run("devices", {}, dir.path());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  // "NeuSight's test GPUs (...), in no fit ...: a100-80gb a100-80gb-pcie ..." -- the names after the last colon.
  const size_t line = table.out.find("NeuSight's test GPUs");
  ASSERT_NE(line, std::string::npos) << table.out;
  std::string names = table.out.substr(line, table.out.find('\n', line) - line);
  std::istringstream words(names.substr(names.rfind(':') + 1));
  std::set<std::string> listed;
  for (std::string word; words >> word;) listed.insert(word);
  int flagged = 0;
  const nlohmann::json out = nlohmann::json::parse(result.out);
  for (const auto& gpu : out["gpus"]) {
    const std::string name = gpu["name"].get<std::string>();
    const bool a100_80 = name.rfind("a100", 0) == 0 && !gpu["memory_gib"].is_null() && gpu["memory_gib"] == 80.0;
    const bool expected = gpu["architecture"] == "Hopper" || name == "l4" || a100_80;
    EXPECT_EQ(gpu["neusight_test_gpu"].get<bool>(), expected) << name;
    EXPECT_EQ(listed.count(name), expected ? 1u : 0u) << name;
    flagged += expected;
  }
  EXPECT_EQ(flagged, 8);  // a100-80gb(-pcie), gh200, h100-nvl/-pcie/-sxm, h200, l4
}

TEST(DevicesCli, InstancesJoinCatalogueGpus) {
  ScratchDir dir("devices");
  Result gpus = run("devices", {"--json"}, dir.path());
  Result result = run("devices", {"--instances", "--json"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::set<std::string> names;
  nlohmann::json catalogue = nlohmann::json::parse(gpus.out);
  for (const auto& gpu : catalogue["gpus"]) names.insert(gpu["name"].get<std::string>());
  nlohmann::json instances = nlohmann::json::parse(result.out)["instances"];
  ASSERT_EQ(instances.size(), data_lines(kShipped + "instances.csv"));
  std::set<std::string> providers;
  for (const auto& instance : instances) {
    EXPECT_EQ(names.count(instance["gpu"].get<std::string>()), 1u) << instance["gpu_listed"];
    EXPECT_GT(instance["gpu_count"].get<int64_t>(), 0);
    providers.insert(instance["provider"].get<std::string>());
  }
  EXPECT_EQ(providers, (std::set<std::string>{"aws", "azure", "gcp", "lambda", "runpod"}));
}

TEST(DevicesCli, TablesNameSourcesAndPrices) {
  ScratchDir dir("devices");
  Result gpus = run("devices", {}, dir.path());
  ASSERT_EQ(gpus.exit_code, 0) << gpus.err;
  EXPECT_NE(gpus.out.find("https://www.nvidia.com/en-us/data-center/h200/"), std::string::npos);
  EXPECT_NE(gpus.out.find("19.492*"), std::string::npos);  // a100-40gb's FP32, copied from gpu_specs.csv
  Result instances = run("devices", {"--instances"}, dir.path());
  ASSERT_EQ(instances.exit_code, 0) << instances.err;
  EXPECT_NE(instances.out.find("p4d.24xlarge"), std::string::npos);
  EXPECT_NE(instances.out.find("not a quote"), std::string::npos);
}

TEST(DevicesCli, CatalogueFileOverridesAndBadFilesExit2) {
  ScratchDir dir("devices");
  std::ifstream shipped(kShipped + "gpus.csv");
  std::string line, header;
  while (std::getline(shipped, line))
    if (!line.empty() && line[0] != '#') {
      header = line;
      break;
    }
  std::string mine = dir.path() + "/mine.csv";
  std::ofstream(mine) << header
                      << "\nl4,L4;NVIDIA L4,nvidia,NVIDIA L4,Ada,30.3,,,,24,300,58,48,72,,https://example.com/l4,"
                      << "2026-03-03,own\n";
  Result result = run("devices", {"--json", "--catalogue", mine}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json out = nlohmann::json::parse(result.out);
  EXPECT_EQ(out["gpus"].size(), data_lines(kShipped + "gpus.csv"));
  for (const auto& gpu : out["gpus"])
    if (gpu["name"] == "l4") {
      EXPECT_EQ(gpu["fp32_tflops"].get<double>(), 30.3);
      EXPECT_EQ(gpu["sm_count"].get<int64_t>(), 58);
      EXPECT_EQ(gpu["file"], mine);
    }
  std::string bad = dir.path() + "/bad.csv";
  std::ofstream(bad) << header << "\nl4,,nvidia,NVIDIA L4,Ada,30.3,,,,24,300,5.5,48,72,,https://e.x,2026-03-03,\n";
  Result failed = run("devices", {"--catalogue", bad}, dir.path());
  EXPECT_EQ(failed.exit_code, 2);
  EXPECT_EQ(failed.err,
            "dnncast devices: error: " + bad + " line 2 column 12 (sm_count): '5.5' is not a whole number\n");
  EXPECT_TRUE(failed.out.empty());
}

}  // namespace
}  // namespace dnncast::cli_test
