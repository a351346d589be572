#include "measure/plan.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "graph/builder.h"
#include "import/graph_json.h"
#include "store/test_util.h"

namespace dnncast::measure {
namespace {

using nlohmann::json;

Plan parse(const std::string& text, const std::string& base_dir = ".") {
  return parse_plan(json::parse(text), "plan.json", base_dir);
}

// The error text of parsing a plan that must fail.
std::string plan_error(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "plan accepted: " << text;
  return "";
}

std::set<std::string> entry_keys(const Plan& plan, const std::vector<size_t>& indices) {
  std::set<std::string> keys;
  for (size_t index : indices) {
    const PlanEntry& entry = plan.entries[index];
    const records::RunConfig& c = entry.config;
    keys.insert(plan.networks[static_cast<size_t>(entry.network)].hash + "|" + std::to_string(c.batch) + "|" +
                c.input_text() + "|" + name(c.optimizer) + "|" + std::to_string(c.threads));
  }
  return keys;
}

std::vector<size_t> all_indices(const Plan& plan) {
  std::vector<size_t> indices(plan.entries.size());
  for (size_t index = 0; index < indices.size(); ++index) indices[index] = index;
  return indices;
}

TEST(Plan, GridIsTheFullCartesianProduct) {
  Plan plan = parse(R"({"name": "g", "repeats": 3, "models": ["resnet18", "resnet34"], "batches": [1, 2],
                        "inputs": [32, [3, 64, 48]], "optimizers": ["sgd", "adam"], "threads": [1, 2]})");
  EXPECT_EQ(plan.name, "g");
  ASSERT_EQ(plan.entries.size(), 2u * 2 * 2 * 2 * 2);
  EXPECT_EQ(plan.run_count(), 3 * 32);
  EXPECT_EQ(entry_keys(plan, all_indices(plan)).size(), 32u);  // all distinct
  std::map<std::string, int> per_model;
  for (const PlanEntry& entry : plan.entries) ++per_model[plan.networks[static_cast<size_t>(entry.network)].name];
  EXPECT_EQ(per_model["resnet18"], 16);
  EXPECT_EQ(per_model["resnet34"], 16);
  EXPECT_EQ(plan.entries[0].config.input, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(plan.entries.back().config.input, (std::vector<int64_t>{3, 64, 48}));
  EXPECT_EQ(plan.entries[0].config.precision, Precision::Fp32);
  EXPECT_EQ(plan.entries[0].config.device, Device::Cpu);
}

TEST(Plan, FamiliesExpandToTheirZooModels) {
  Plan plan = parse(R"({"name": "f", "models": [{"family": "resnet"}, "resnet18"], "batches": [1], "inputs": [32]})");
  std::set<std::string> names;
  for (const PlanNetwork& network : plan.networks) names.insert(network.name);
  EXPECT_TRUE(names.count("resnet50"));
  EXPECT_TRUE(names.count("resnet152"));
  EXPECT_FALSE(names.count("resnext50_32x4d"));  // family "resnext"
  EXPECT_EQ(plan.entries.size(), names.size());  // resnet18 listed twice, measured once
}

TEST(Plan, RandomSamplingIsDistinctDeterministicAndSeeded) {
  const char* text = R"({"name": "r", "models": [{"family": "resnet"}], "batches": [1, 2, 4, 8, 16, 32, 64],
                         "inputs": [32, 64, 96, 128], "optimizers": ["sgd", "adam"], "threads": [1, 2],
                         "sampling": {"strategy": "random", "count": 50, "seed": SEED}})";
  auto with_seed = [&](int seed) {
    std::string plan_text = text;
    plan_text.replace(plan_text.find("SEED"), 4, std::to_string(seed));
    return parse(plan_text);
  };
  Plan a = with_seed(7), b = with_seed(7), c = with_seed(8);
  ASSERT_EQ(a.entries.size(), 50u);
  std::set<std::string> keys_a = entry_keys(a, all_indices(a));
  EXPECT_EQ(keys_a.size(), 50u);
  EXPECT_EQ(keys_a, entry_keys(b, all_indices(b)));
  EXPECT_NE(keys_a, entry_keys(c, all_indices(c)));
  // A sample of the grid: every entry is also an entry of the full grid.
  std::string grid_text = text;
  grid_text.replace(grid_text.find("\"random\""), 8, "\"grid\"");
  grid_text.replace(grid_text.find(", \"count\": 50"), 13, "");
  Plan grid = parse(grid_text.replace(grid_text.find("SEED"), 4, "7"));
  ASSERT_EQ(grid.entries.size(), 5u * 7 * 4 * 2 * 2);  // resnet18/34/50/101/152
  std::set<std::string> grid_keys = entry_keys(grid, all_indices(grid));
  for (const std::string& key : keys_a) EXPECT_TRUE(grid_keys.count(key)) << key;
}

TEST(Plan, LatinHypercubeCoversEveryLevelEvenly) {
  // 16 models for 16 samples: each model is drawn once, so no two samples can coincide.
  Plan plan = parse(R"({"name": "l", "models": [{"synthetic": [0, 15]}], "batches": [1, 2, 4, 8, 16, 32, 64, 128],
                        "inputs": [32, 64, 96, 128], "optimizers": ["sgd", "adam"], "threads": [1, 2],
                        "sampling": {"strategy": "latin_hypercube", "count": 16, "seed": 3}})");
  ASSERT_EQ(plan.entries.size(), 16u);
  std::map<int64_t, int> batches;
  std::map<std::string, int> inputs, optimizers;
  std::set<int> networks;
  for (const PlanEntry& entry : plan.entries) {
    networks.insert(entry.network);
    ++batches[entry.config.batch];
    ++inputs[entry.config.input_text()];
    ++optimizers[name(entry.config.optimizer)];
  }
  // Each of the 8 batch levels owns 2 of the 16 strata, each input 4, each optimizer 8.
  ASSERT_EQ(batches.size(), 8u);
  for (const auto& [batch, count] : batches) EXPECT_EQ(count, 2) << batch;
  for (const auto& [input, count] : inputs) EXPECT_EQ(count, 4) << input;
  for (const auto& [optimizer, count] : optimizers) EXPECT_EQ(count, 8) << optimizer;
  EXPECT_EQ(networks.size(), 16u);
}

TEST(Plan, ShardsPartitionThePlan) {
  Plan plan = parse(R"({"name": "s", "models": [{"family": "resnet"}], "batches": [1, 2, 4],
                        "inputs": [32, 64], "optimizers": ["sgd", "adam"], "threads": [1, 2]})");
  std::set<std::string> whole = entry_keys(plan, all_indices(plan));
  ASSERT_EQ(whole.size(), plan.entries.size());
  for (int64_t count : {1, 3, 7}) {
    std::set<std::string> united;
    size_t total = 0;
    for (int64_t index = 0; index < count; ++index) {
      std::vector<size_t> mine = shard_entries(plan, {index, count});
      total += mine.size();
      std::set<std::string> keys = entry_keys(plan, mine);
      for (const std::string& key : keys) EXPECT_TRUE(united.insert(key).second) << "in two shards: " << key;
      // Balanced: sizes differ by at most one.
      EXPECT_LE(mine.size(), plan.entries.size() / static_cast<size_t>(count) + 1);
    }
    EXPECT_EQ(total, plan.entries.size());
    EXPECT_EQ(united, whole);
  }
  EXPECT_EQ(parse_shard("2/5").index, 2);
  EXPECT_EQ(parse_shard("2/5").count, 5);
  for (const char* bad : {"5/5", "-1/3", "1", "a/b", "1/0", "1/2/3", "1/2x"})
    EXPECT_THROW(parse_shard(bad), InputError) << bad;
}

TEST(Plan, GroupsInheritDefaultsAndOverlapsAreMeasuredOnce) {
  Plan plan = parse(R"({"name": "g", "batches": [1, 2], "inputs": [32], "threads": [1],
                        "groups": [{"models": ["resnet18"]},
                                   {"models": ["resnet18", "resnet34"], "batches": [2, 4]}]})");
  // resnet18: batches 1, 2 (group 0) + 4 (group 1; 2 already there); resnet34: 2, 4.
  EXPECT_EQ(plan.entries.size(), 5u);
}

TEST(Plan, GraphFilesKeepTheirInputAndVaryTheBatch) {
  store::testing::ScratchDir dir;
  GraphBuilder builder("tiny", "custom");
  int x = builder.input(TensorShape{1, 3, 20, 20});
  x = builder.conv("conv", x, 4, 3, 1, 1);
  x = builder.adaptive_avgpool("pool", x, 1, 1);
  x = builder.flatten("flatten", x);
  builder.linear("fc", x, 10);
  std::ofstream(dir.file("tiny.json")) << import::write_graph_json(builder.finish());
  Plan plan =
      parse(R"({"name": "file", "models": ["tiny.json", {"graph": "tiny.json"}], "batches": [1, 8]})", dir.path());
  ASSERT_EQ(plan.entries.size(), 2u);
  EXPECT_EQ(plan.entries[1].config.batch, 8);
  EXPECT_EQ(plan.entries[1].config.input, (std::vector<int64_t>{3, 20, 20}));
  EXPECT_EQ(plan.networks[0].family, "custom");
  Graph graph = records::build_network(plan.networks[0].model, plan.entries[1].config);
  EXPECT_EQ(graph.node(graph.size() - 1).shape, (TensorShape{8, 10}));
}

TEST(Plan, BadEntriesAreNamed) {
  struct Case {
    const char* plan;
    std::vector<const char*> expected;
  };
  const std::vector<Case> cases{
      {R"({"name": "x", "models": ["resnet18", "resnet5"], "batches": [1], "inputs": [32]})",
       {"plan.json: models[1]", "unknown model 'resnet5'", "resnet50"}},
      {R"({"name": "x", "models": ["resnet18"], "batches": [1, -4], "inputs": [32]})",
       {"plan.json: batches[1]", "batch must be in"}},
      {R"({"name": "x", "models": ["resnet18"], "batches": [1], "inputs": [32], "optimizers": ["adagrad"]})",
       {"optimizers[0]", "optimizer 'adagrad': expected one of", "sgd, adam, adamw"}},
      {R"({"name": "x", "models": ["resnet18"], "batchs": [1], "inputs": [32]})", {"unknown key 'batchs'", "batches"}},
      {R"({"name": "x", "models": ["resnet18"], "batches": [1]})", {"needs \"inputs\""}},
      {R"({"name": "x", "models": [{"synthetic": [10, 2]}], "batches": [1], "inputs": [32]})",
       {"models[0]", "is empty"}},
      {R"({"name": "x", "models": [{"family": "transformerz"}], "batches": [1], "inputs": [32]})",
       {"models[0]", "unknown family 'transformerz'"}},
      {R"({"name": "x", "models": ["missing.json"], "batches": [1]})", {"models[0]", "cannot open graph file"}},
      {R"({"name": "x", "models": ["resnet18"], "batches": [1], "inputs": [32],
           "sampling": {"strategy": "random"}})",
       {"sampling", "needs \"count\""}},
      {R"({"name": "x", "models": ["resnet18"], "batches": [1], "inputs": [32],
           "sampling": {"strategy": "sobol", "count": 3}})",
       {"sampling.strategy", "unknown strategy 'sobol'"}},
      {R"({"name": "x", "models": ["resnet18"], "batches": [1], "inputs": [[3, 32]]})", {"inputs[0]", "C x H x W"}},
      {R"({"name": "x", "models": ["resnet18"], "batches": [1], "inputs": [32], "threads": [0]})",
       {"threads[0]", "thread count"}},
      {R"({"name": "x", "models": ["resnet18"], "batches": [1], "inputs": [32], "measure": {"timeout_s": -1}})",
       {"measure.timeout_s"}},
      {R"({"name": "x", "models": ["resnet18"], "batches": [1], "inputs": [32], "measure": {"per_layer": 1}})",
       {"measure.per_layer", "true or false"}},
      {R"({"models": ["resnet18"], "batches": [1], "inputs": [32]})", {"needs a \"name\""}},
      {R"({"name": "x", "format": "dnncast-plan/9", "models": ["resnet18"], "batches": [1], "inputs": [32]})",
       {"unsupported"}},
      {R"({"name": "x", "groups": [{"models": ["resnet18"], "batches": [1], "inputs": [32]},
                                   {"models": ["resnet18"], "batches": [1, "two"], "inputs": [32]}]})",
       {"groups[1].batches[1]", "must be an integer"}},
  };
  for (const Case& item : cases) {
    std::string text = plan_error(item.plan);
    for (const char* expected : item.expected) EXPECT_NE(text.find(expected), std::string::npos) << text;
  }
  EXPECT_THROW(load_plan("/nonexistent/plan.json"), InputError);
}

}  // namespace
}  // namespace dnncast::measure
