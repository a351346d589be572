// The frozen holdout (data/plans/holdout.json, issue 16): its runs never enter a training table,
// no shipped training dataset holds one of its configurations, and the shipped holdout dataset
// holds exactly the plan's configurations, so the disjointness check compares like with like.
#include "study/holdout.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "measure/plan.h"
#include "records/network_source.h"
#include "store/store.h"
#include "study/training.h"

namespace dnncast::study {
namespace {

namespace fs = std::filesystem;

const std::string kSource = DNNCAST_SOURCE_DIR;

std::string scratch(const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = std::string(DNNCAST_BINARY_DIR) + "/test_tmp/" + test->test_suite_name() + "." + test->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir + "/" + name;
}

// A configuration as the holdout defines it: the network (by name: "resnet18", "synthetic:900003";
// a hash would change with a fix to a zoo model's definition, a name does not) at its input,
// batch, optimizer and precision. Threads are left out: the same configuration at another thread
// count is still one the holdout must not have been trained on.
using Key = std::tuple<std::string, int64_t, std::string, int64_t, std::string, std::string>;
Key key_of(const std::string& network_name, const records::RunConfig& config) {
  return {network_name,   config.batch,           config.input_text(),
          config.seq_len, name(config.optimizer), name(config.precision)};
}

std::set<Key> holdout_plan_keys() {
  measure::Plan plan = measure::load_plan(kSource + "/data/plans/holdout.json");
  EXPECT_EQ(plan.name, kHoldoutPlan);
  std::set<Key> keys;
  for (const measure::PlanEntry& entry : plan.entries)
    keys.insert(key_of(plan.networks.at(static_cast<size_t>(entry.network)).name, entry.config));
  return keys;
}

// The shipped files data/PREFIX*.xz, sorted.
std::vector<fs::path> shipped_files(const std::string& prefix) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kSource + "/data"))
    if (entry.path().filename().string().rfind(prefix, 0) == 0 && entry.path().extension() == ".xz")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// A shipped .db.xz decompressed into this test's scratch folder; its path.
std::string decompressed(const fs::path& xz) {
  const std::string db = scratch(xz.stem().string());
  EXPECT_EQ(std::system(("xz -dkc '" + xz.string() + "' > '" + db + "'").c_str()), 0) << xz;
  return db;
}

// The runs of a shipped .db.xz, by configuration; plans of the runs into `plans`.
std::set<Key> shipped_keys(const std::string& xz, std::set<std::string>& plans) {
  const std::string db = decompressed(xz);
  store::Store store = store::Store::open(db, store::Database::Mode::ReadOnly);
  std::map<std::string, std::string> names;
  for (const records::NetworkRecord& network : store.networks(false)) names[network.hash] = network.name;
  std::set<Key> keys;
  for (const records::RunRecord& run : store.runs()) {
    keys.insert(key_of(names.at(run.network_hash), run.config));
    plans.insert(run.plan);
  }
  return keys;
}

TEST(Holdout, NoShippedTrainingDatasetHoldsAHoldoutConfiguration) {
  const std::set<Key> holdout = holdout_plan_keys();
  ASSERT_GE(holdout.size(), 40u);
  const std::vector<fs::path> datasets = shipped_files("dnncast-");
  for (const fs::path& path : datasets) {
    const std::string name = path.filename().string();
    std::set<std::string> plans;
    std::set<Key> trained = shipped_keys(path.string(), plans);
    EXPECT_GT(trained.size(), 100u) << name;
    EXPECT_EQ(plans.count(kHoldoutPlan), 0u) << name << " is a training dataset and holds holdout runs";
    int shared = 0;
    for (const Key& key : holdout) shared += trained.count(key) > 0;
    EXPECT_EQ(shared, 0) << name << " holds " << shared << " of the holdout's configurations";
  }
  EXPECT_GE(datasets.size(), 2u);  // dnncast-cpu2 and dnncast-zen3-avx2 at least
}

// The shipped holdout measurements are the plan's configurations, so the keys above are the same
// kind of thing as a dataset's (a network name of the plan is the name its runs record).
TEST(Holdout, ShippedHoldoutDatasetsHoldThePlansConfigurations) {
  const std::set<Key> plan = holdout_plan_keys();
  const std::vector<fs::path> datasets = shipped_files("holdout-");
  for (const fs::path& path : datasets) {
    const std::string name = path.filename().string();
    std::set<std::string> plans;
    std::set<Key> measured = shipped_keys(path.string(), plans);
    EXPECT_EQ(plans, std::set<std::string>{kHoldoutPlan}) << name;
    for (const Key& key : measured) EXPECT_EQ(plan.count(key), 1u) << name << ": a run outside the plan";
    EXPECT_GE(measured.size() * 10, plan.size() * 9) << name << ": fewer than 90% of the plan's configurations";
  }
  EXPECT_GE(datasets.size(), 1u);
}

// Runs of the holdout plan are left out of every training table (train, evaluate, calibrate,
// features export) and are what `evaluate --predictor` scores.
TEST(Holdout, RunsOfTheHoldoutPlanNeverEnterATrainingTable) {
  const std::string path = scratch("mixed.db");
  {
    store::Store store = store::Store::open(path);
    records::EnvironmentRecord environment;
    environment.cpu_model = "Test CPU 9000";
    environment.cores = 2;
    environment.threads = 1;
    environment.memory_bytes = int64_t{8} << 30;
    environment.build_type = "Release";
    const int64_t environment_id = store.ensure_environment(environment);
    const records::ModelRef model = records::parse_model_source("zoo:resnet18");
    for (int64_t batch : {1, 2, 4, 8}) {
      records::RunConfig config;
      config.batch = batch;
      config.input = {3, 32, 32};
      records::RunRecord run;
      run.environment_id = environment_id;
      run.config = config;
      run.result.time_ms_median = 10.0 * static_cast<double>(batch);
      run.measured_at = "2026-12-01T00:00:00Z";
      run.plan = batch == 4 ? kHoldoutPlan : "zoo-quick";
      store.insert_run(records::network_record(model, config), run);
    }
  }
  auto batches = [](const TrainingTable& table) {
    std::set<int64_t> found;
    for (const Sample& sample : table.samples) found.insert(sample.config.batch);
    return found;
  };
  TrainingTable training = load_training_table(path);
  EXPECT_EQ(batches(training), (std::set<int64_t>{1, 2, 8}));
  EXPECT_EQ(training.runs_used, 3);
  bool noted = false;
  for (const std::string& note : training.notes) noted = noted || note.find("1 runs of the holdout plan") == 0;
  EXPECT_TRUE(noted) << "no note says the holdout run was left out";

  TableOptions only;
  only.holdout = HoldoutRuns::Only;
  EXPECT_EQ(batches(load_training_table(path, only)), (std::set<int64_t>{4}));
  TableOptions all;
  all.holdout = HoldoutRuns::Include;
  EXPECT_EQ(batches(load_training_table(path, all)), (std::set<int64_t>{1, 2, 4, 8}));
}

// The shipped predictor scored on the shipped holdout: every configuration gets a forecast and a
// coverage in [0, 1]; the figures themselves are in docs/RESULTS.md (a score, not a pass mark).
TEST(Holdout, ShippedPredictorScoresOnTheShippedHoldout) {
  int scored = 0;
  for (const fs::path& path : shipped_files("holdout-")) {
    const std::string db = decompressed(path);
    for (const std::string& set : forecast::shipped_predictor_sets(kSource + "/data/predictors")) {
      PredictorScore score = score_predictor(set, db);
      EXPECT_GT(score.all.configurations, 0) << set;
      EXPECT_EQ(score.all.runs, score.all.model.count);
      EXPECT_GE(score.all.coverage, 0.0);
      EXPECT_LE(score.all.coverage, 1.0);
      EXPECT_GT(score.all.noise_configurations, 0) << "the holdout is measured twice: it has its own floor";
      ++scored;
    }
  }
  EXPECT_GE(scored, 1);
}

}  // namespace
}  // namespace dnncast::study
