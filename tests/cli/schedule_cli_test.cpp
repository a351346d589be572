// `dnncast schedule` as a user runs it: the JSON against the forecasts `predict --device` gives for each
// job and GPU type (time x iterations, memory), a job that fits nowhere reported and never placed,
// placements only where the job fits, no GPU running two jobs at once, the same plan for the same seed;
// the terminal table and Gantt chart; bad input as one line and exit 2; and the HTML report rendered by
// headless Chromium (Debian's chromium).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "chromium_run.h"
#include "cli_run.h"

namespace dnncast {
namespace {

using cli_test::Result;
using nlohmann::json;

const char* kJobs = R"({"jobs": [
  {"name": "r50", "model": "resnet50", "batch": 64, "input": "3x224x224", "precision": "amp", "iterations": 3000},
  {"name": "r18", "model": "resnet18", "batch": 128, "input": "3x224x224", "iterations": 2000, "arrival_s": 600},
  {"name": "vgg", "model": "vgg16", "batch": 128, "input": "3x224x224", "epochs": 1, "samples": 128000,
   "priority": 2, "deadline_s": 3600},
  {"name": "mnv2", "model": "mobilenet_v2", "batch": 64, "input": "3x224x224", "iterations": 4000},
  {"name": "bert", "model": "bert_base", "batch": 16, "precision": "amp", "iterations": 5000},
  {"name": "r50b", "model": "resnet50", "batch": 64, "input": "3x224x224", "precision": "amp", "iterations": 1000},
  {"name": "huge", "model": "vgg16", "batch": 2048, "input": "3x224x224", "iterations": 10}
]})";

const char* kCluster = R"({"nodes": [
  {"name": "big", "gpu": "a100-80gb", "count": 2, "price_per_hour": 4.0},
  {"name": "small", "gpu": "t4", "count": 3}
]})";

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

class ScheduleCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new cli_test::ScratchDir("schedule_cli");
    write(dir_->path() + "/jobs.json", kJobs);
    write(dir_->path() + "/cluster.json", kCluster);
    const Result result = cli_test::run(
        "schedule", {jobs(), "--cluster", cluster(), "--json", "--seed", "7", "--html", dir_->path() + "/report.html"},
        dir_->path());
    exit_code_ = result.exit_code;
    out_ = result.out;
    err_ = result.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  static void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  static std::string jobs() { return dir_->path() + "/jobs.json"; }
  static std::string cluster() { return dir_->path() + "/cluster.json"; }
  static json parsed() {
    EXPECT_EQ(exit_code_, 0) << err_;
    return json::parse(out_);
  }
  // `predict MODEL --device GPU --json` for a job of kJobs.
  static json predict(const json& job, const std::string& gpu) {
    cli_test::ScratchDir dir("schedule_predict");
    std::vector<std::string> args{
        job["model"].get<std::string>(), "--batch", std::to_string(job["batch"].get<int>()), "--device", gpu, "--json"};
    if (job.contains("input")) args.insert(args.end(), {"--input", job["input"].get<std::string>()});
    if (job.contains("precision")) args.insert(args.end(), {"--precision", job["precision"].get<std::string>()});
    const Result result = cli_test::run("predict", args, dir.path());
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return json::parse(result.out);
  }

  static cli_test::ScratchDir* dir_;
  static int exit_code_;
  static std::string out_, err_;
};

cli_test::ScratchDir* ScheduleCli::dir_ = nullptr;
int ScheduleCli::exit_code_ = -1;
std::string ScheduleCli::out_, ScheduleCli::err_;

TEST_F(ScheduleCli, EveryJobThatFitsIsPlacedWhereItFitsAndTheOtherIsReported) {
  const json result = parsed();
  EXPECT_EQ(result["jobs"], 7);
  EXPECT_EQ(result["gpus"], 5);
  ASSERT_EQ(result["assignments"].size(), 6u);
  ASSERT_EQ(result["unplaceable"].size(), 1u);
  EXPECT_EQ(result["unplaceable"][0]["job"], "huge");
  EXPECT_NE(err_.find("note: job 'huge' is not scheduled: it fits no GPU of the cluster"), std::string::npos) << err_;
  for (const json& row : result["assignments"]) {
    EXPECT_LE(row["peak_bytes"].get<int64_t>(), row["gpu_memory_bytes"].get<int64_t>()) << row.dump();
    EXPECT_GE(row["start_s"].get<double>(), row["arrival_s"].get<double>()) << row.dump();
  }
  // No GPU runs two jobs at once.
  std::map<std::string, std::vector<std::pair<double, double>>> by_gpu;
  for (const json& row : result["assignments"]) by_gpu[row["gpu"]].emplace_back(row["start_s"], row["end_s"]);
  for (auto& [gpu, spans] : by_gpu) {
    std::sort(spans.begin(), spans.end());
    for (size_t index = 1; index < spans.size(); ++index)
      EXPECT_LE(spans[index - 1].second, spans[index].first + 1e-6) << gpu;
  }
}

TEST_F(ScheduleCli, TimesAndMemoryAreThoseOfPredictOnEachGpu) {
  const json result = parsed();
  const json jobs = json::parse(kJobs)["jobs"];
  for (const json& row : result["assignments"]) {
    const auto job = std::find_if(jobs.begin(), jobs.end(), [&](const json& j) { return j["name"] == row["job"]; });
    ASSERT_NE(job, jobs.end());
    const json forecast = predict(*job, row["gpu_type"]);
    EXPECT_DOUBLE_EQ(row["time_ms"].get<double>(), forecast["time_ms"].get<double>()) << row.dump();
    EXPECT_NEAR(row["duration_s"].get<double>(),
                forecast["time_ms"].get<double>() / 1e3 * row["iterations"].get<double>(), 1e-6)
        << row.dump();
    EXPECT_EQ(row["peak_bytes"], forecast["required_bytes"]) << row.dump();
    EXPECT_NEAR(row["end_s"].get<double>() - row["start_s"].get<double>(), row["duration_s"].get<double>(), 1e-6);
  }
  // epochs x ceil(samples / batch) iterations.
  for (const json& row : result["assignments"]) {
    if (row["job"] == "vgg") {
      EXPECT_EQ(row["iterations"], 1000);
    }
  }
}

TEST_F(ScheduleCli, TheGeneticAlgorithmIsNoWorseThanTheBaselinesAndReproducible) {
  const json result = parsed();
  const json& solvers = result["solvers"];
  ASSERT_EQ(solvers[0]["solver"], "genetic");
  for (const json& row : solvers)
    EXPECT_LE(solvers[0]["makespan_s"].get<double>(), row["makespan_s"].get<double>() * (1 + 1e-12)) << row.dump();
  EXPECT_EQ(result["makespan_s"], solvers[0]["makespan_s"]);
  cli_test::ScratchDir dir("schedule_again");
  const Result again = cli_test::run("schedule", {jobs(), "--cluster", cluster(), "--json", "--seed", "7"}, dir.path());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["assignments"], result["assignments"]);
  // Two identical jobs (r50, r50b) and the GPUs share forecasts.
  EXPECT_GT(result["forecast_cache"]["hits"].get<int>(), 0);
}

TEST_F(ScheduleCli, TheExactSolverMatchesOnThisSmallInstance) {
  cli_test::ScratchDir dir("schedule_exact");
  const Result result = cli_test::run("schedule", {jobs(), "--cluster", cluster(), "--json", "--exact"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json solvers = json::parse(result.out)["solvers"];
  ASSERT_EQ(solvers[1]["solver"], "exact");
  EXPECT_LE(solvers[0]["makespan_s"].get<double>(), 1.05 * solvers[1]["makespan_s"].get<double>());
  EXPECT_GE(solvers[0]["makespan_s"].get<double>(), solvers[1]["makespan_s"].get<double>() * (1 - 1e-9));
}

TEST_F(ScheduleCli, TheTableHasARowPerJobAndAGanttRowPerGpu) {
  cli_test::ScratchDir dir("schedule_table");
  const Result table = cli_test::run("schedule", {jobs(), "--cluster", cluster(), "--seed", "7"}, dir.path());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(count_of(table.out, " |"), 5u) << table.out;  // one Gantt row per GPU
  for (const char* job : {"r50 ", "r18 ", "vgg ", "mnv2 ", "bert ", "r50b "})
    EXPECT_NE(table.out.find(job), std::string::npos) << job;
  EXPECT_EQ(table.out.find("huge"), std::string::npos);
  for (const char* solver : {"genetic", "lpt", "fifo", "agnostic", "random"})
    EXPECT_NE(table.out.find(solver), std::string::npos) << solver;
}

TEST_F(ScheduleCli, BadInputIsOneLineAndExitCode2) {
  cli_test::ScratchDir dir("schedule_bad");
  struct Case {
    std::string jobs, cluster, expected;
    std::vector<std::string> extra;
  };
  const std::string ok_jobs = R"({"jobs": [{"model": "resnet18", "batch": 8, "iterations": 10}]})";
  const std::string ok_cluster = R"({"nodes": [{"gpu": "t4"}]})";
  const std::vector<Case> cases{
      {ok_jobs, R"({"nodes": [{"gpu": "a1000"}]})", "unknown GPU 'a1000'", {}},
      {R"({"jobs": [{"model": "resnet18", "iterations": 10}]})", ok_cluster, "job 1: missing field 'batch'", {}},
      {ok_jobs, R"({"nodes": []})", "'nodes' is empty", {}},
      {ok_jobs, R"({"nodes": [{"gpu": "t4", "count": 0}]})", "field 'count' must be an integer from 1", {}},
      {R"({"jobs": [{"model": "resnet18", "batch": 8}]})", ok_cluster, "give either 'iterations' or 'epochs'", {}},
      {R"({"jobs": [{"model": "resnet18", "batch": 8, "iterations": 10, "bach": 3}]})",
       ok_cluster,
       "unknown field 'bach'",
       {}},
      {R"({"jobs": [{"model": "resnet5", "batch": 8, "iterations": 10}]})", ok_cluster, "unknown model 'resnet5'", {}},
      {R"({"jobs": [{"model": "resnet18", "batch": 8, "iterations": 10, "precision": "fp8"}]})",
       ok_cluster,
       "field 'precision'",
       {}},
      {"{not json", ok_cluster, "not JSON", {}},
      {R"({"jobs": [{"model": "vgg16", "batch": 4096, "input": "3x224x224", "iterations": 10}]})",
       ok_cluster,
       "no job fits any GPU of the cluster",
       {}},
      {ok_jobs, ok_cluster, "--objective 'fastest' is not an objective", {"--objective", "fastest"}},
      {ok_jobs, ok_cluster, "--exact takes at most 10", {"--exact"}},
  };
  for (size_t index = 0; index < cases.size(); ++index) {
    const Case& c = cases[index];
    std::string jobs_text = c.jobs;
    if (c.extra.size() == 1 && c.extra[0] == "--exact") {  // eleven jobs
      jobs_text = R"({"jobs": [)";
      for (int job = 0; job < 11; ++job)
        jobs_text += std::string(job ? "," : "") + R"({"model": "resnet18", "batch": 8, "iterations": 10})";
      jobs_text += "]}";
    }
    write(dir.path() + "/j.json", jobs_text);
    write(dir.path() + "/c.json", c.cluster);
    std::vector<std::string> args{dir.path() + "/j.json", "--cluster", dir.path() + "/c.json"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const Result result = cli_test::run("schedule", args, dir.path());
    EXPECT_EQ(result.exit_code, 2) << index << ": " << result.err;
    EXPECT_NE(result.err.find(c.expected), std::string::npos) << index << ": " << result.err;
    EXPECT_EQ(count_of(result.err, "\n"), 1u) << index << ": " << result.err;
    EXPECT_TRUE(result.out.empty()) << index << ": " << result.out;
  }
}

TEST_F(ScheduleCli, TheHtmlReportRendersInHeadlessChromium) {
  if (!chromium_test::have_chromium())
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it; under CI=true this skip fails)";
  const size_t placed = parsed()["assignments"].size();
  const chromium_test::Rendered page = chromium_test::render(dir_->path() + "/report.html", dir_->path(), 1200, 900);
  ASSERT_TRUE(page.ok);
  EXPECT_EQ(count_of(page.dom, "<tr class=\"assignment\""), placed) << "rows of the rendered table";
  EXPECT_EQ(count_of(page.dom, "<rect class=\"job\""), placed) << "bars of the Gantt chart";
  EXPECT_EQ(count_of(page.dom, "<li class=\"unplaceable\""), 1u);
  EXPECT_EQ(count_of(page.dom, "<script"), 0u);
  EXPECT_EQ(count_of(page.dom, "http"), 0u) << "nothing fetched";
  EXPECT_GT(page.colours, 20) << "a blank or flat screenshot";
  EXPECT_GT(page.not_white, page.width * page.height / 50) << "under 2% of the screenshot is drawn";
}

}  // namespace
}  // namespace dnncast
