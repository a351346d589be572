// `dnncast memory` run as a user runs it: the built binary, its stdout, stderr and exit code.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_run.h"
#include "graph/lora.h"
#include "memory/simulator.h"
#include "models/hf_config.h"
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
    // test_memory depends on the dnncast target (tests/CMakeLists.txt): a missing binary is a broken build.
    ASSERT_EQ(std::system(("test -x " + shell_quoted(cli_test::binary())).c_str()), 0)
        << cli_test::binary() << " not built";
  }
  void TearDown() override { std::system(("rm -rf " + shell_quoted(dir_)).c_str()); }

  Result run(const std::vector<std::string>& args) { return cli_test::run("memory", args, dir_); }

  std::string dir_;
};

// Real runs of another host: ../shared/data/avx2-reference (an AVX2-only Zen 3 EPYC, measured with
// a dnncast that did not record the ISA). Peaks are deterministic, so the check is exact on any
// host, and the peaks themselves must say AVX2: more byte-exact under the AVX2 rules.
TEST_F(MemoryCli, CheckDbReadsTheIsaOffTheAvx2ReferencePeaks) {
  const std::string reference = std::string(DNNCAST_SOURCE_DIR) + "/../shared/data/avx2-reference/zen3-avx2.db.xz";
  ASSERT_EQ(std::system(("test -r " + shell_quoted(reference)).c_str()), 0) << reference << " missing";
  const std::string db = dir_ + "/zen3-avx2.db";
  ASSERT_EQ(std::system(("xz -dkc " + shell_quoted(reference) + " > " + shell_quoted(db)).c_str()), 0);
  Result checked = run({"--check-db", db, "--json", "--show", "1"});
  ASSERT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  json doc = json::parse(checked.out);
  EXPECT_EQ(doc["configurations"], 197);
  EXPECT_EQ(doc["within_1pct"], 197);
  ASSERT_EQ(doc["environments"].size(), 1u);
  const json& environment = doc["environments"][0];
  EXPECT_EQ(environment["recorded_isa"], "");
  EXPECT_TRUE(environment["inferred"].get<bool>());
  EXPECT_EQ(environment["simulated_isa"], "avx2");
  EXPECT_EQ(environment["exact_by_rules"]["avx2"], doc["exact"]);
  EXPECT_LT(environment["exact_by_rules"]["avx512_core"].get<int64_t>(), doc["exact"].get<int64_t>());
  // Under the AVX-512 rules the same peaks miss (--isa overrides the inference).
  Result forced = run({"--check-db", db, "--json", "--isa", "avx512_core", "--show", "0"});
  EXPECT_EQ(forced.exit_code, 1) << forced.err;
  json forced_doc = json::parse(forced.out);
  EXPECT_LT(forced_doc["within_1pct"].get<int64_t>(), 197);
  EXPECT_FALSE(forced_doc["environments"][0]["inferred"].get<bool>());
}

TEST_F(MemoryCli, JsonAgreesWithTheLibrary) {
  Result result =
      run({"resnet18", "--batch", "3", "--input", "3x32x32", "--optimizer", "adam", "--json", "--timeline"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json doc = json::parse(result.out);
  models::ModelSpec spec;
  spec.batch = 3;
  spec.input = {3, 32, 32};
  MemoryConfig config;
  config.optimizer = Optimizer::Adam;
  MemoryReport report = simulate_memory(models::build_zoo_model("resnet18", spec), config);
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

// --lora: the graph of graph/lora.h, simulated as the library simulates it; with --measure the profiler (the
// dnncast-measure handoff) trains the same LoRA graph.
TEST_F(MemoryCli, LoraFlagAgreesWithTheLibrary) {
  const std::string config = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-small-tied.json";
  Result result = run(
      {config, "--seq", "8", "--batch", "2", "--lora", "r=8,alpha=16,targets=q,v,o", "--optimizer", "adam", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json doc = json::parse(result.out);
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 8;
  const Graph base = models::build_hf_config(json::parse(std::ifstream(config)), spec, config);
  MemoryConfig memory;
  memory.optimizer = Optimizer::Adam;
  const MemoryReport lora = simulate_memory(apply_lora(base, {8, 16, {"q", "v", "o"}, false}), memory);
  EXPECT_EQ(doc["peak_bytes"].get<int64_t>(), lora.peak_bytes);
  EXPECT_LT(lora.peak_bytes, simulate_memory(base, memory).peak_bytes);
#ifdef DNNCAST_CLI_PROFILES
  Result measured = run({config, "--seq", "8", "--batch", "2", "--lora", "r=8,targets=q,v", "--measure", "--json"});
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  json measured_doc = json::parse(measured.out);
  ASSERT_EQ(measured_doc["measured"]["status"], "ok") << measured_doc["measured"]["message"];
  // The profiled run is the LoRA graph's, the simulation beside it the same as without --measure, and equal to
  // the measured peak (the Hugging Face llama's recipes are exact: docs/MEMORY.md).
  EXPECT_EQ(measured_doc["measured"]["simulated_peak_bytes"], measured_doc["peak_bytes"]);
  EXPECT_EQ(measured_doc["measured"]["peak_bytes"], measured_doc["peak_bytes"]);
#endif
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

#ifdef DNNCAST_CLI_PROFILES
// --check-db on a dataset profiled here by the campaign runner: every measured peak is simulated
// within 1% (exit 0); a peak altered by 5% in a copy of the dataset is found and named (exit 1).
TEST_F(MemoryCli, CheckDbFindsEveryMeasuredPeakAndAnAlteredOne) {
  const std::string plan = dir_ + "/plan.json";
  std::ofstream(plan) << R"({"format": "dnncast-plan/1", "name": "memory-check-test",
    "measure": {"time_budget_s": 0.05, "warmup_budget_s": 0.05, "min_iterations": 2, "timeout_s": 120},
    "models": ["squeezenet1_1", {"synthetic": [0, 1]}], "inputs": [32], "batches": [1, 2],
    "optimizers": ["sgd"], "threads": [1], "sampling": "grid"})";
  const std::string db = dir_ + "/data.db";
  Result campaign = cli_test::run("campaign", {plan, "--db", db, "--progress", "lines"}, dir_);
  ASSERT_EQ(campaign.exit_code, 0) << campaign.err;

  Result checked = run({"--check-db", db, "--json"});
  ASSERT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  json doc = json::parse(checked.out);
  EXPECT_EQ(doc["configurations"], 6);
  EXPECT_EQ(doc["within_1pct"], 6);
  EXPECT_EQ(doc["not_modelled"], 0);

  // The same runs with the first one's peak 5% higher, through export and import.
  Result exported = cli_test::run("dataset", {"export", "--csv", db}, dir_);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::istringstream lines(exported.out);
  std::string header, first, rest, line;
  std::getline(lines, header);
  std::getline(lines, first);
  while (std::getline(lines, line)) rest += line + "\n";
  ASSERT_EQ(first.find('"'), std::string::npos) << "a quoted field in " << first;
  auto split = [](const std::string& text) {
    std::vector<std::string> fields;
    std::stringstream in(text);
    std::string field;
    while (std::getline(in, field, ',')) fields.push_back(field);
    if (!text.empty() && text.back() == ',') fields.emplace_back();
    return fields;
  };
  std::vector<std::string> names = split(header), values = split(first);
  ASSERT_EQ(names.size(), values.size());
  size_t peak = 0, network = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    if (names[k] == "peak_bytes") peak = k;
    if (names[k] == "network_name") network = k;
  }
  ASSERT_GT(peak, 0u);
  const long long measured = std::stoll(values[peak]);
  values[peak] = std::to_string(measured + measured / 20);
  std::string altered = header + "\n";
  for (size_t k = 0; k < values.size(); ++k) altered += (k ? "," : "") + values[k];
  std::ofstream(dir_ + "/altered.csv") << altered << "\n" << rest;
  Result imported =
      cli_test::run("dataset", {"import", "--csv", dir_ + "/altered.csv", "--db", dir_ + "/altered.db"}, dir_);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;

  Result found = run({"--check-db", dir_ + "/altered.db", "--json", "--show", "1"});
  EXPECT_EQ(found.exit_code, 1) << found.err;
  json report = json::parse(found.out);
  EXPECT_EQ(report["within_1pct"], 5);
  ASSERT_EQ(report["worst"].size(), 1u);
  EXPECT_EQ(report["worst"][0]["network"], values[network]);
  EXPECT_EQ(report["worst"][0]["measured_bytes"], measured + measured / 20);
  EXPECT_NEAR(report["worst"][0]["relative_error"].get<double>(), -1.0 / 21, 0.01);
  Result text = run({"--check-db", dir_ + "/altered.db", "--show", "2"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("more than 1% off 1"), std::string::npos) << text.out;
}
#endif

TEST_F(MemoryCli, BadInputIsOneLineAndExitCode2) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"resnet18", "--batch", "0"},
                                             {"resnet5"},
                                             {"resnet18", "--max-batch", "12XB"},
                                             {"resnet18", "--optimizer", "lamb"},
                                             {"resnet18", "--precision", "bf16"},
                                             {"resnet18", "--measure", "--measure-timeout", "0"},
                                             {},
                                             {"resnet18", "--check-db", "/nonexistent/data.db"},
                                             {"--check-db", "/nonexistent/data.db"},
                                             {"--check-db", "/nonexistent/data.db", "--show", "-1"}}) {
    Result result = run(args);
    EXPECT_EQ(result.exit_code, 2) << (args.empty() ? "(no arguments)" : args[0]) << "\n" << result.err;
    EXPECT_EQ(result.out, "");
    ASSERT_FALSE(result.err.empty());
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
    EXPECT_EQ(result.err.rfind("dnncast memory: error: ", 0), 0u) << result.err;
  }
}

}  // namespace
}  // namespace dnncast::memory
