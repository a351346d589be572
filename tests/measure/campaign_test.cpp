// End-to-end tests of `dnncast campaign` and `dnncast dataset`, run as a user would: the built
// binary, real measurements (tiny networks, short budgets), SIGKILL in the middle of a measurement.
#include "measure/campaign.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "measure/plan.h"
#include "records/network_source.h"
#include "store/store.h"
#include "store/test_util.h"

namespace dnncast::measure {
namespace {

using store::testing::ScratchDir;

const std::string kDnncast = DNNCAST_BINARY_DIR "/dnncast";

// Four synthetic networks at 8x8 pixels, batch 1: each measurement is a fraction of a second of
// training plus the process start and the drift probes.
const char* kTinyPlan = R"({
  "name": "kill-test",
  "models": [{"synthetic": [0, 3]}],
  "inputs": [8],
  "batches": [1],
  "threads": [1],
  "measure": {"time_budget_s": 0.05, "warmup_budget_s": 0.05, "min_iterations": 2, "timeout_s": 60}
})";

// Starts `dnncast args...` with stdout and stderr going to `log`; returns its pid.
pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> argv;
    std::string program = kDnncast;
    argv.push_back(program.data());
    std::vector<std::string> copy = args;
    for (std::string& arg : copy) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs dnncast to completion; returns the exit code, output in `output`.
int run_dnncast(const std::vector<std::string>& args, std::string& output, const ScratchDir& dir) {
  std::string log = dir.file("run.log");
  std::remove(log.c_str());
  int code = wait_exit(spawn(args, log));
  std::ifstream file(log);
  std::stringstream text;
  text << file.rdbuf();
  output = text.str();
  return code;
}

// Whether process `pid` has a child: /proc/*/stat, whose fourth field is the parent's pid.
bool has_child(pid_t pid) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return false;
  bool found = false;
  while (dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream stat(std::string("/proc/") + entry->d_name + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t name_end = text.rfind(')');  // the command name may hold spaces and parentheses
    if (name_end == std::string::npos) continue;
    std::istringstream fields(text.substr(name_end + 1));
    std::string state;
    long parent = 0;
    fields >> state >> parent;
    if (parent == pid && state != "Z") {
      found = true;
      break;
    }
  }
  closedir(proc);
  return found;
}

int64_t committed_runs(const std::string& db) {
  if (access(db.c_str(), F_OK) != 0) return 0;
  try {
    store::Store store = store::Store::open(db, store::Database::Mode::ReadOnly);
    return store.run_count();
  } catch (const std::exception&) {
    return 0;  // not created yet, or the schema not committed yet
  }
}

std::string row_text(const records::RunRecord& run) {
  std::ostringstream text;
  text << run.id << '|' << run.network_hash << '|' << run.config.input_text() << '|' << run.config.batch << '|'
       << run.repeat_index << '|' << run.result.status << '|' << run.result.time_ms_median.value_or(-1) << '|'
       << run.result.peak_bytes.value_or(-1) << '|' << run.measured_at;
  return text.str();
}

TEST(Campaign, SurvivesSigkillAndResumesWithoutLossOrDuplicates) {
#ifndef DNNCAST_HAVE_TORCH
  GTEST_SKIP() << "built without libtorch: campaigns cannot measure";
#endif
  ASSERT_EQ(access(kDnncast.c_str(), X_OK), 0) << kDnncast << " not built";
  store::testing::ScratchDir dir;
  std::string plan_path = dir.file("plan.json");
  std::ofstream(plan_path) << kTinyPlan;
  Plan plan = load_plan(plan_path);
  ASSERT_EQ(plan.run_count(), 4);
  std::string db = dir.file("kill.db");

  pid_t pid = spawn({"campaign", plan_path, "--db", db, "--progress", "lines"}, dir.file("first.log"));
  // Killed in the middle of a measurement after at least two commits, seen, not timed: the campaign is
  // frozen (SIGSTOP), and killed if it has committed two runs or more and a measurement child is
  // running (so the last run is still to come); otherwise it goes on (SIGCONT) and we look again.
  // The deadline only bounds a hang.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  bool killed = false;
  while (!killed && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) FAIL() << "campaign ended before it was killed";
    ASSERT_EQ(kill(pid, SIGSTOP), 0);
    ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);  // stopped now, not later
    if (!WIFSTOPPED(status)) FAIL() << "campaign ended before it was killed";
    if (committed_runs(db) >= 2 && has_child(pid)) {
      ASSERT_EQ(kill(pid, SIGKILL), 0);
      killed = true;
    } else {
      ASSERT_EQ(kill(pid, SIGCONT), 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ASSERT_TRUE(killed) << "no measurement after two committed runs within 5 minutes";
  EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);

  std::vector<std::string> before;
  {
    store::Store store = store::Store::open(db, store::Database::Mode::ReadWrite);
    EXPECT_EQ(store.integrity_check(), "ok");
    for (const records::RunRecord& run : store.runs()) before.push_back(row_text(run));
  }
  ASSERT_GE(before.size(), 2u);
  ASSERT_LT(before.size(), 4u) << "the kill came too late to test anything";

  std::string output;
  ASSERT_EQ(run_dnncast({"campaign", plan_path, "--db", db, "--progress", "bar"}, output, dir), 0) << output;
  EXPECT_NE(output.find(std::to_string(before.size()) + " already in"), std::string::npos) << output;
  // The bar is redrawn in place and shows the count, rate, ETA and the last result.
  EXPECT_NE(output.find("\r["), std::string::npos) << output;
  EXPECT_NE(output.find("4/4"), std::string::npos) << output;
  EXPECT_NE(output.find("/min ETA"), std::string::npos) << output;
  EXPECT_NE(output.find("#0: "), std::string::npos) << output;

  store::Store store = store::Store::open(db, store::Database::Mode::ReadOnly);
  EXPECT_EQ(store.integrity_check(), "ok");
  std::vector<records::RunRecord> after = store.runs();
  ASSERT_EQ(after.size(), 4u);  // the plan, exactly
  // Nothing committed before the kill was lost or changed.
  for (size_t index = 0; index < before.size(); ++index) EXPECT_EQ(row_text(after[index]), before[index]);
  // Every planned run is there once.
  std::set<std::string> identities;
  for (const records::RunRecord& run : after) {
    EXPECT_TRUE(identities.insert(run.network_hash + "|" + std::to_string(run.repeat_index)).second);
    EXPECT_EQ(run.plan, "kill-test");
    if (run.result.status == "ok") {
      EXPECT_GT(run.result.time_ms_median.value_or(0), 0);
      EXPECT_GT(run.result.peak_bytes.value_or(0), 0);
      EXPECT_GE(run.result.iterations, 2);
      EXPECT_TRUE(run.result.load_other_cpus.has_value());
      ASSERT_TRUE(run.result.cpu_wait_share.has_value());  // recorded with every timed run
      EXPECT_GE(*run.result.cpu_wait_share, 0.0);
      EXPECT_LE(*run.result.cpu_wait_share, 1.0);
    }
  }
  std::set<std::string> planned;
  for (const PlanEntry& entry : plan.entries)
    planned.insert(plan.networks[static_cast<size_t>(entry.network)].hash + "|0");
  EXPECT_EQ(identities, planned);

  // A third run has nothing left to do and measures nothing.
  ASSERT_EQ(run_dnncast({"campaign", plan_path, "--db", db}, output, dir), 0) << output;
  EXPECT_NE(output.find("measured 0 runs"), std::string::npos) << output;

  // The dataset commands on the real file: stats, and a CSV round trip into a new database.
  ASSERT_EQ(run_dnncast({"dataset", "stats", "--json", db}, output, dir), 0) << output;
  nlohmann::json stats = nlohmann::json::parse(output);
  EXPECT_EQ(stats["runs"], 4);
  EXPECT_EQ(stats["by_plan"][0]["plan"], "kill-test");
  std::string csv = dir.file("runs.csv");
  ASSERT_EQ(run_dnncast({"dataset", "export", "--csv", db, "-o", csv}, output, dir), 0) << output;
  ASSERT_EQ(run_dnncast({"dataset", "import", "--csv", csv, "--db", dir.file("copy.db")}, output, dir), 0) << output;
  EXPECT_NE(output.find("4 new runs"), std::string::npos) << output;
}

TEST(Campaign, BadPlansFailBeforeMeasuringAnything) {
  ASSERT_EQ(access(kDnncast.c_str(), X_OK), 0) << kDnncast << " not built";
  store::testing::ScratchDir dir;
  std::string plan_path = dir.file("bad.json");
  std::ofstream(plan_path) << R"({"name": "bad", "models": [{"synthetic": [0, 2]}, "resnet5"], "inputs": [8],
                                  "batches": [1]})";
  std::string db = dir.file("bad.db");
  std::string output;
  EXPECT_EQ(run_dnncast({"campaign", plan_path, "--db", db}, output, dir), 2);
  EXPECT_NE(output.find("models[1]"), std::string::npos) << output;
  EXPECT_NE(output.find("unknown model 'resnet5'"), std::string::npos) << output;
  EXPECT_NE(access(db.c_str(), F_OK), 0) << "a database was created for a bad plan";
#ifdef DNNCAST_HAVE_TORCH
  // A configuration the profiler refuses (fp16 on CPU) is a plan error too.
  std::ofstream(plan_path) << R"({"name": "bad", "models": [{"synthetic": [0, 2]}], "inputs": [8],
                                  "batches": [1], "precisions": ["fp16"]})";
  EXPECT_EQ(run_dnncast({"campaign", plan_path, "--db", db}, output, dir), 2);
  EXPECT_NE(output.find("fp16"), std::string::npos) << output;
  EXPECT_NE(access(db.c_str(), F_OK), 0);
#endif
  EXPECT_EQ(run_dnncast({"campaign", plan_path, "--db", db, "--shard", "3/3"}, output, dir), 2);
  EXPECT_NE(output.find("--shard"), std::string::npos) << output;
  // A dry run validates and lists, and writes nothing.
  std::ofstream(plan_path) << kTinyPlan;
  EXPECT_EQ(run_dnncast({"campaign", plan_path, "--db", db, "--dry-run", "--shard", "1/2"}, output, dir), 0) << output;
  EXPECT_NE(output.find("shard 1/2: 2 runs"), std::string::npos) << output;
  EXPECT_NE(access(db.c_str(), F_OK), 0);
}

// --threads keeps only the configurations with those thread counts; 0 threads is refused.
TEST(Campaign, ThreadsOptionFiltersTheDryRun) {
  // The plan's 2-thread runs need 2 CPUs even in a dry run (tests/skip_allowlist.txt).
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "fewer than 2 CPUs in this process's affinity mask";
  ASSERT_EQ(access(kDnncast.c_str(), X_OK), 0) << kDnncast << " not built";
  store::testing::ScratchDir dir;
  std::string plan_path = dir.file("threads.json");
  std::string db = dir.file("threads.db");
  std::string output;
  std::ofstream(plan_path) << R"({"name": "threads", "models": [{"synthetic": [0, 2]}], "inputs": [8],
                                  "batches": [1, 2], "threads": [1, 2]})";
  EXPECT_EQ(run_dnncast({"campaign", plan_path, "--db", db, "--dry-run"}, output, dir), 0) << output;
  EXPECT_NE(output.find("shard 0/1: 12 runs"), std::string::npos) << output;
  EXPECT_EQ(run_dnncast({"campaign", plan_path, "--db", db, "--dry-run", "--threads", "2"}, output, dir), 0) << output;
  EXPECT_NE(output.find("shard 0/1: 6 runs"), std::string::npos) << output;
  EXPECT_EQ(output.find(" t1 "), std::string::npos) << output;
  EXPECT_EQ(run_dnncast({"campaign", plan_path, "--db", db, "--dry-run", "--threads", "0"}, output, dir), 2);
  EXPECT_NE(output.find("--threads"), std::string::npos) << output;
}

#ifdef DNNCAST_HAVE_TORCH
// "per_layer": true stores, with each run, one layer_times row per node the profiler timed (alone,
// and inside real iterations), in the graph's order and by the graph's node names (every node but
// the Input), then the optimizer's step, zero_grad and the loss: what the layer-wise model matches
// to the graph it rebuilds. Inside iterations the rows add up to about the measured iteration.
TEST(Campaign, PerLayerPlansStoreEveryNodeInGraphOrder) {
  ASSERT_EQ(access(kDnncast.c_str(), X_OK), 0) << kDnncast << " not built";
  store::testing::ScratchDir dir;
  std::string plan_path = dir.file("layers.json");
  std::ofstream(plan_path) << R"({"name": "layers-test", "models": [{"synthetic": [0, 1]}], "inputs": [8],
      "batches": [2], "threads": [1], "optimizers": ["adam"],
      "measure": {"time_budget_s": 0.05, "warmup_budget_s": 0.05, "min_iterations": 2, "timeout_s": 60,
                  "per_layer": true}})";
  std::string db = dir.file("layers.db");
  std::string output;
  ASSERT_EQ(
      run_dnncast({"campaign", plan_path, "--db", db, "--cpus", std::to_string(allowed_cpus().front())}, output, dir),
      0)
      << output;
  store::Store store = store::Store::open(db, store::Database::Mode::ReadOnly);
  std::map<int64_t, std::vector<records::LayerTiming>> layers = store.layer_times();
  std::vector<records::RunRecord> runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  for (const records::RunRecord& run : runs) {
    ASSERT_EQ(run.result.status, "ok") << run.result.message;
    ASSERT_TRUE(layers.count(run.id)) << "run " << run.id << " has no layer timings";
    const std::vector<records::LayerTiming>& timed = layers.at(run.id);
    Graph graph = records::build_network(records::parse_model_source(store.network_by_hash(run.network_hash)->source),
                                         run.config);
    std::vector<std::string> expected;
    for (const Node& node : graph.nodes())
      if (node.op != "Input") expected.push_back(node.name);
    ASSERT_EQ(timed.size(), expected.size() + 3);
    double alone = 0, inside = 0;
    for (size_t index = 0; index < timed.size(); ++index) {
      if (index < expected.size()) {
        EXPECT_EQ(timed[index].node, expected[index]);
      }
      EXPECT_GE(timed[index].forward_ms, 0);
      ASSERT_TRUE(timed[index].iteration_forward_ms.has_value() && timed[index].iteration_backward_ms.has_value());
      EXPECT_GE(*timed[index].iteration_backward_ms, 0);
      alone += timed[index].forward_ms + timed[index].backward_ms;
      inside += *timed[index].iteration_forward_ms + *timed[index].iteration_backward_ms;
    }
    EXPECT_EQ(timed[expected.size()].op, records::kOptimizerStepOp);
    EXPECT_EQ(timed[expected.size() + 1].op, records::kZeroGradOp);
    EXPECT_EQ(timed[expected.size() + 2].op, records::kLossOp);
    EXPECT_GT(timed[expected.size()].forward_ms, 0);
    // Both sums are of the order of an iteration. (Loose: the phases run one after the other on a
    // shared machine, and these networks take milliseconds; scripts/layer-sums.sql gives the
    // figures over a real campaign: docs/MEASUREMENT.md.)
    const double iteration = *run.result.time_ms_median;
    EXPECT_GT(alone, 0.05 * iteration);
    EXPECT_LT(alone, 20 * iteration);
    EXPECT_GT(inside, 0.1 * iteration);
    EXPECT_LT(inside, 10 * iteration);
  }
}
#endif

}  // namespace
}  // namespace dnncast::measure
