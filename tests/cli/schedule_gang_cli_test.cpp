// `dnncast schedule` with jobs of several GPUs (issue 48), as a user runs it on the shipped example
// (data/examples/jobs_multi_gpu.json on cluster_multi_gpu.json): each gang on a block of one node as wide as the
// job, no GPU running two jobs at once counting every GPU of a gang, and the gang named in the table, the Gantt
// chart, --json and the HTML report.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"

namespace dnncast {
namespace {

using cli_test::Result;
using nlohmann::json;

const std::string kExamples = std::string(DNNCAST_SOURCE_DIR) + "/data/examples/";

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

// The example's jobs with its model files' paths made absolute (the example names them from the checkout's root).
std::string example_jobs(const std::string& dir) {
  json jobs = json::parse(cli_test::read_text(kExamples + "jobs_multi_gpu.json"));
  for (json& job : jobs["jobs"]) {
    const std::string model = job["model"];
    if (model.find('/') != std::string::npos) job["model"] = std::string(DNNCAST_SOURCE_DIR) + "/" + model;
  }
  const std::string path = dir + "/jobs.json";
  std::ofstream(path) << jobs.dump();
  return path;
}

// The GPUs of a gang from its label: "dgx/4-7" -> dgx/4 .. dgx/7; "dgx/3" -> dgx/3.
std::vector<std::string> gang_gpus(const std::string& label) {
  const std::size_t slash = label.find('/'), dash = label.find('-', slash);
  const std::string node = label.substr(0, slash + 1);
  const int first = std::stoi(label.substr(slash + 1, dash - slash - 1));
  const int last = dash == std::string::npos ? first : std::stoi(label.substr(dash + 1));
  std::vector<std::string> gpus;
  for (int index = first; index <= last; ++index) gpus.push_back(node + std::to_string(index));
  return gpus;
}

TEST(ScheduleGangCli, GangsHoldABlockOfOneNodeAndNoGpuRunsTwoJobsAtOnce) {
  cli_test::ScratchDir dir("schedule_gang_cli");
  const std::string jobs = example_jobs(dir.path()), cluster = kExamples + "cluster_multi_gpu.json";
  const Result result = cli_test::run(
      "schedule", {jobs, "--cluster", cluster, "--json", "--html", dir.path() + "/report.html"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  const json example = json::parse(cli_test::read_text(kExamples + "jobs_multi_gpu.json"));
  ASSERT_EQ(out["assignments"].size(), example["jobs"].size());
  std::map<std::string, std::vector<std::pair<double, double>>> by_gpu;
  int64_t gang_gpu_count = 0, gangs = 0;
  for (const json& row : out["assignments"]) {
    const std::vector<std::string> gpus = gang_gpus(row["gpu"]);
    EXPECT_EQ(static_cast<int64_t>(gpus.size()), row["gpus"].get<int64_t>()) << row.dump();
    // Aligned: the block starts at a multiple of its size.
    EXPECT_EQ(std::stoi(gpus.front().substr(gpus.front().find('/') + 1)) % static_cast<int>(gpus.size()), 0);
    for (const std::string& gpu : gpus) by_gpu[gpu].emplace_back(row["start_s"], row["end_s"]);
    gang_gpu_count += static_cast<int64_t>(gpus.size());
    if (gpus.size() > 1) {
      ++gangs;
      EXPECT_TRUE(row["parallel"].is_string()) << row.dump();
    }
  }
  EXPECT_EQ(gangs, 3);
  for (auto& [gpu, spans] : by_gpu) {
    std::sort(spans.begin(), spans.end());
    for (size_t index = 1; index < spans.size(); ++index)
      EXPECT_LE(spans[index - 1].second, spans[index].first + 1e-6) << gpu;
  }
  // The report draws a gang on each of its GPUs' rows and names its plan.
  const std::string html = cli_test::read_text(dir.path() + "/report.html");
  EXPECT_EQ(static_cast<int64_t>(count_of(html, "<rect class=\"job\"")), gang_gpu_count);
  EXPECT_NE(html.find(", 4 GPUs tp4"), std::string::npos);
}

TEST(ScheduleGangCli, TheTableNamesEachGangAndItsPlanAndTheGanttMarksEveryGpu) {
  cli_test::ScratchDir dir("schedule_gang_table");
  const std::string jobs = example_jobs(dir.path()), cluster = kExamples + "cluster_multi_gpu.json";
  const Result result = cli_test::run("schedule", {jobs, "--cluster", cluster}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find(" gpus "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("4, tp4"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("2, pp2 mb4"), std::string::npos) << result.out;
  // The first job (mark A, the four-GPU Llama) on four rows of the Gantt chart.
  std::size_t rows = 0;
  for (std::size_t at = result.out.find("  Gantt"); (at = result.out.find('\n', at)) != std::string::npos;) {
    const std::size_t end = result.out.find('\n', ++at);
    const std::string line = result.out.substr(at, end - at);
    if (line.find('|') != std::string::npos && line.find('A', line.find('|')) != std::string::npos) ++rows;
  }
  EXPECT_EQ(rows, 4u) << result.out;
}

}  // namespace
}  // namespace dnncast
