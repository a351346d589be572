// Sharded campaigns merged back together equal the whole plan (real measurements: slow).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "measure/plan.h"
#include "store/merge.h"
#include "store/store.h"
#include "store/test_util.h"

namespace dnncast::measure {
namespace {

const std::string kDnncast = DNNCAST_BINARY_DIR "/dnncast";

int run(const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    std::string program = kDnncast;
    argv.push_back(program.data());
    std::vector<std::string> copy = args;
    for (std::string& arg : copy) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::set<std::string> identities(store::Store& store) {
  std::set<std::string> keys;
  for (const records::RunRecord& run : store.runs())
    keys.insert(run.network_hash + "|" + std::to_string(run.config.batch) + "|" + name(run.config.optimizer) + "|" +
                std::to_string(run.repeat_index));
  return keys;
}

TEST(CampaignSlow, ShardsMergeIntoTheWholePlan) {
#ifndef DNNCAST_HAVE_TORCH
  GTEST_SKIP() << "built without libtorch";
#endif
  store::testing::ScratchDir dir;
  std::string plan_path = dir.file("plan.json");
  std::ofstream(plan_path) << R"({"name": "shards", "models": [{"synthetic": [10, 12]}], "inputs": [8],
    "batches": [1, 2], "optimizers": ["sgd", "adam"], "threads": [1],
    "sampling": {"strategy": "random", "count": 7, "seed": 5},
    "measure": {"time_budget_s": 0.05, "warmup_budget_s": 0.05, "min_iterations": 2, "timeout_s": 60}})";
  Plan plan = load_plan(plan_path);
  ASSERT_EQ(plan.entries.size(), 7u);
  std::set<std::string> planned;
  for (const PlanEntry& entry : plan.entries)
    planned.insert(plan.networks[static_cast<size_t>(entry.network)].hash + "|" + std::to_string(entry.config.batch) +
                   "|" + name(entry.config.optimizer) + "|0");

  const int shards = 3;
  std::vector<std::string> files;
  std::set<std::string> seen;
  size_t total = 0;
  for (int shard = 0; shard < shards; ++shard) {
    files.push_back(dir.file("shard" + std::to_string(shard) + ".db"));
    ASSERT_EQ(run({"campaign", plan_path, "--db", files.back(), "--shard",
                   std::to_string(shard) + "/" + std::to_string(shards), "--progress", "lines"}),
              0);
    store::Store store = store::Store::open(files.back(), store::Database::Mode::ReadOnly);
    std::set<std::string> mine = identities(store);
    total += mine.size();
    for (const std::string& key : mine) EXPECT_TRUE(seen.insert(key).second) << "measured by two shards: " << key;
  }
  EXPECT_EQ(total, plan.entries.size());
  ASSERT_EQ(run({"dataset", "merge", files[0], files[1], files[2], "-o", dir.file("all.db")}), 0);
  store::Store all = store::Store::open(dir.file("all.db"), store::Database::Mode::ReadOnly);
  EXPECT_EQ(identities(all), planned);
  EXPECT_EQ(all.run_count(), 7);
  // Resuming the whole plan against the merged file finds nothing to do.
  ASSERT_EQ(run({"campaign", plan_path, "--db", dir.file("all.db")}), 0);
  EXPECT_EQ(store::Store::open(dir.file("all.db"), store::Database::Mode::ReadOnly).run_count(), 7);
}

}  // namespace
}  // namespace dnncast::measure
