// Predictor bundles, the training table, evaluation and predictor-set lookup, on a real dataset
// file whose times follow a known function of the networks' real FLOPs (so a correct pipeline
// must recover it), plus the bundles shipped in data/predictors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "core/error.h"
#include "graph/op_registry.h"
#include "hardware/catalogue.h"
#include "learn/learner.h"
#include "records/network_source.h"
#include "store/dataset_csv.h"
#include "study/evaluate.h"
#include "study/training.h"

namespace dnncast::study {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  // One folder per test: ctest runs tests of this binary in parallel processes. Suite set-up has
  // no current test: one folder per process then.
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string owner = test != nullptr ? std::string(test->test_suite_name()) + "." + test->name()
                                      : "suite-" + std::to_string(::getpid());
  std::string dir = std::string(DNNCAST_BINARY_DIR) + "/test_tmp/" + owner + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

records::EnvironmentRecord test_environment(const std::string& gpu = "") {
  records::EnvironmentRecord environment;
  environment.cpu_model = "Test CPU 9000";
  environment.cores = 2;
  environment.threads = 2;
  environment.memory_bytes = int64_t{8} << 30;
  environment.gpu_name = gpu;
  environment.build_type = "Release";
  return environment;
}

struct Truth {
  double time_ms, peak_bytes;
};

// The "machine" of this dataset: time = 3e-8 ms/FLOP + 0.2 ms per sample + 1 ms, memory =
// 4 x parameter bytes + saved bytes + 1 MB; repeats differ by +-2%.
Truth truth_of(const Graph& graph_at_batch) {
  double flops = 0, saved = 0, params = 0;
  for (int node = 0; node < graph_at_batch.size(); ++node) {
    OpCost cost = node_cost(graph_at_batch, node);
    flops += static_cast<double>(cost.flops_fwd + cost.flops_bwd);
    saved += static_cast<double>(cost.saved_bytes());
    params += static_cast<double>(cost.params);
  }
  double batch = static_cast<double>(graph_at_batch.node(0).shape[0]);
  return {3e-8 * flops + 0.2 * batch + 1.0, 16 * params + saved + 1e6};
}

// Writes a dataset: `networks` zoo/synthetic models x batches 1..32 at 32x32, 2 repeats each,
// plus one failed (oom) run.
// With `layers`, repeat 0 of every configuration also carries per-layer timings that follow the
// same machine: 3e-8 ms/FLOP per node, the rest (0.2 ms per sample + 1 ms) in the optimizer rows.
std::vector<records::LayerTiming> layer_timings_of(const Graph& graph_at_batch) {
  std::vector<records::LayerTiming> timings;
  for (int node = 0; node < graph_at_batch.size(); ++node) {
    const Node& item = graph_at_batch.node(node);
    if (item.op == "Input") continue;
    OpCost cost = node_cost(graph_at_batch, node);
    double ms = 3e-8 * static_cast<double>(cost.flops_fwd + cost.flops_bwd);
    timings.push_back({item.name, item.op, ms / 3, 2 * ms / 3, ms / 3, 2 * ms / 3});
  }
  double batch = static_cast<double>(graph_at_batch.node(0).shape[0]);
  timings.push_back({"optimizer.step", records::kOptimizerStepOp, 0.2 * batch + 0.5, 0, 0.2 * batch + 0.5, 0.0});
  timings.push_back({"optimizer.zero_grad", records::kZeroGradOp, 0.25, 0, 0.25, 0.0});
  timings.push_back({"loss", records::kLossOp, 0, 0, 0.25, 0.0});
  return timings;
}

std::string make_dataset(const std::string& name, const std::vector<std::string>& sources, double noise,
                         bool layers = false) {
  std::string dir = temp_dir(name);
  std::string path = dir + "/data.db";
  store::Store store = store::Store::open(path);
  int64_t environment_id = store.ensure_environment(test_environment());
  learn::Rng rng(5);
  for (const std::string& source : sources) {
    records::ModelRef model = records::parse_model_source(source);
    for (int64_t batch : {1, 2, 4, 8, 16, 32}) {
      records::RunConfig config;
      config.batch = batch;
      config.input = {3, 32, 32};
      config.precision = Precision::Fp32;
      config.threads = 1;
      Graph graph = records::build_network(model, config);
      Truth truth = truth_of(graph);
      records::NetworkRecord network = records::network_record(model, config);
      for (int64_t repeat = 0; repeat < 2; ++repeat) {
        records::RunRecord run;
        run.environment_id = environment_id;
        run.config = config;
        run.repeat_index = repeat;
        run.result.time_ms_median = truth.time_ms * (1 + (repeat == 0 ? noise : -noise));
        run.result.peak_bytes = static_cast<int64_t>(truth.peak_bytes);
        run.measured_at = "2024-01-01T00:00:00Z";
        run.plan = repeat == 0 ? "first" : "second";
        if (layers && repeat == 0) run.result.layers = layer_timings_of(graph);
        store.insert_run(network, run);
      }
    }
  }
  records::RunRecord failed;
  failed.environment_id = environment_id;
  failed.config.batch = 64;
  failed.config.input = {3, 32, 32};
  failed.result.status = "oom";
  failed.measured_at = "2024-01-01T00:00:00Z";
  store.insert_run(records::network_record(records::parse_model_source(sources.front()), failed.config), failed);
  return path;
}

const std::vector<std::string> kSources{"zoo:resnet18", "zoo:squeezenet1_1", "zoo:mobilenet_v2", "zoo:vgg11",
                                        "synthetic:1",  "synthetic:2",       "synthetic:3",      "synthetic:4"};

class PredictorPipeline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dataset_ = new std::string(make_dataset("pipeline", kSources, 0.02)); }
  static void TearDownTestSuite() {
    fs::remove_all(fs::path(*dataset_).parent_path().parent_path());  // this process's suite folder
    delete dataset_;
  }
  static std::string* dataset_;
};
std::string* PredictorPipeline::dataset_ = nullptr;

TEST_F(PredictorPipeline, TableGroupsRepeatsAndSkipsFailures) {
  TrainingTable table = load_training_table(*dataset_);
  EXPECT_EQ(table.samples.size(), kSources.size() * 6);
  EXPECT_EQ(table.runs_used, static_cast<int64_t>(kSources.size() * 12));
  EXPECT_EQ(table.runs_skipped, 1);
  ASSERT_FALSE(table.notes.empty());
  EXPECT_NE(table.notes.front().find("oom"), std::string::npos) << table.notes.front();
  EXPECT_EQ(table.x.rows(), static_cast<int64_t>(table.samples.size()));
  EXPECT_EQ(table.x.cols(), static_cast<int64_t>(features::feature_count()));
  EXPECT_TRUE(table.has_memory());
  for (const Sample& sample : table.samples) {
    ASSERT_EQ(sample.times_ms.size(), 2u);
    EXPECT_NEAR(sample.time_ms(), (sample.times_ms[0] + sample.times_ms[1]) / 2, 1e-12);
  }
  TableOptions unknown_environment;
  unknown_environment.environment = "no-such-env";
  EXPECT_THROW(load_training_table(*dataset_, unknown_environment), InputError);
  TableOptions unknown_column;
  unknown_column.time_column = "p50";
  EXPECT_THROW(load_training_table(*dataset_, unknown_column), InputError);
  EXPECT_THROW(load_training_table(temp_dir("missing") + "/none.db"), InputError);
}

// `dnncast dataset features`: one CSV row per configuration, the measured mean and the features
// by name; checked against the graph rebuilt here (its conv MACs) and the dataset's own truth.
TEST_F(PredictorPipeline, FeaturesCsvHasOneRowPerConfiguration) {
  TrainingTable table = load_training_table(*dataset_);
  std::stringstream csv;
  write_features_csv(table, csv);
  std::vector<std::string> header, fields;
  int64_t line = 0;
  ASSERT_TRUE(read_csv_record(csv, header, line));
  const std::vector<std::string>& names = features::feature_names();
  ASSERT_EQ(header.size(), 12 + names.size());
  EXPECT_EQ(header[10], "time_ms");
  EXPECT_TRUE(std::equal(names.begin(), names.end(), header.begin() + 12));
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  // Conv2d nodes are split by kind (plain, depthwise, grouped): their MACs add up to all Conv2d's.
  const std::vector<size_t> conv_macs = {column("kind.Conv2d.macs"), column("kind.DepthwiseConv2d.macs"),
                                         column("kind.GroupedConv2d.macs")};
  for (size_t index : conv_macs) ASSERT_LT(index, header.size());
  size_t rows = 0;
  while (read_csv_record(csv, fields, line)) {
    ASSERT_EQ(fields.size(), header.size()) << "line " << line;
    records::RunConfig config;
    config.batch = std::stoll(fields[3]);
    config.input = records::parse_input_text(fields[4]);
    const std::string& network = fields[1];
    records::ModelRef model =
        records::parse_model_source(network.rfind("synthetic:", 0) == 0 ? network : "zoo:" + network);
    Graph graph = records::build_network(model, config);
    EXPECT_NEAR(std::stod(fields[10]), truth_of(graph).time_ms, 1e-9 * truth_of(graph).time_ms) << network;
    double macs = 0;
    for (int node = 0; node < graph.size(); ++node)
      if (graph.node(node).op == "Conv2d") macs += static_cast<double>(node_cost(graph, node).macs);
    double listed = 0;
    for (size_t index : conv_macs) listed += std::stod(fields[index]);
    EXPECT_EQ(listed, macs) << network << " batch " << config.batch;
    ++rows;
  }
  EXPECT_EQ(rows, table.samples.size());
}

TEST_F(PredictorPipeline, TrainSaveLoadPredict) {
  TrainingTable table = load_training_table(*dataset_);
  TrainOptions options;
  options.target = "time";
  options.budget_s = 0;  // no time budget: the 4 candidates below, on any machine
  options.folds = 4;
  options.learners = {"ridge", "xgboost"};
  options.max_candidates = 4;
  forecast::Predictor predictor = train_predictor(table, options);
  const forecast::Manifest& manifest = predictor.manifest();
  EXPECT_EQ(manifest.feature_version, features::kFeatureVersion);
  EXPECT_EQ(manifest.environments.size(), 1u);
  EXPECT_EQ(manifest.training["configurations"], table.samples.size());
  EXPECT_EQ(manifest.training["candidates_tried"], 4);  // the candidate budget, however fast the machine
  // Times are a smooth function of FLOPs and batch; 2% noise. Held-out error must be small.
  EXPECT_LT(manifest.cv["mre"].get<double>(), 0.10) << manifest.to_json().dump(1);
  EXPECT_LT(manifest.interval_low, 0);
  EXPECT_GT(manifest.interval_high, 0);

  std::string dir = temp_dir("bundle");
  predictor.save(dir);
  forecast::Predictor loaded = forecast::Predictor::load(dir);
  std::vector<forecast::Estimate> before = predictor.predict(table.x), after = loaded.predict(table.x);
  for (size_t row = 0; row < before.size(); ++row) {
    EXPECT_NEAR(before[row].value, after[row].value, 1e-6 * before[row].value);
    EXPECT_LE(after[row].low, after[row].value);
    EXPECT_GE(after[row].high, after[row].value);
  }

  // A calibration shift (log y' = b + a log y) survives save and load and moves value and interval.
  forecast::Manifest shifted_manifest = loaded.manifest();
  shifted_manifest.shift_log_intercept = std::log(0.5);
  shifted_manifest.shift_log_slope = 0.9;
  loaded.set_manifest(shifted_manifest);
  std::string shifted_dir = temp_dir("bundle_shifted");
  loaded.save(shifted_dir);
  std::vector<forecast::Estimate> moved = forecast::Predictor::load(shifted_dir).predict(table.x);
  for (size_t row = 0; row < before.size(); ++row) {
    EXPECT_NEAR(moved[row].value, 0.5 * std::pow(before[row].value, 0.9), 1e-6 * moved[row].value);
    EXPECT_NEAR(moved[row].high, 0.5 * std::pow(before[row].high, 0.9), 1e-6 * moved[row].high);
  }
  nlohmann::json bad_shift = nlohmann::json::parse(std::ifstream(shifted_dir + "/manifest.json"));
  bad_shift["shift"]["log_slope"] = -1;
  std::ofstream(shifted_dir + "/manifest.json") << bad_shift.dump();
  EXPECT_THROW(forecast::Predictor::load(shifted_dir), InputError);

  // A bundle from another feature version is refused with a clear message.
  nlohmann::json manifest_json = nlohmann::json::parse(std::ifstream(dir + "/manifest.json"));
  manifest_json["feature_version"] = features::kFeatureVersion + 1;
  std::ofstream(dir + "/manifest.json") << manifest_json.dump();
  try {
    forecast::Predictor::load(dir);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("feature version"), std::string::npos) << error.what();
  }
  EXPECT_THROW(forecast::Predictor::load(temp_dir("no_bundle")), InputError);
}

TEST_F(PredictorPipeline, MemoryPredictorIsNearExact) {
  TrainingTable table = load_training_table(*dataset_);
  TrainOptions options;
  options.target = "memory";
  options.budget_s = 0;  // no time budget: the 6 candidates below, on any machine
  options.folds = 4;
  options.learners = {"ridge", "stepwise"};
  options.max_candidates = 6;
  forecast::Predictor predictor = train_predictor(table, options);
  // Memory is an exact linear function of feature columns: a linear learner recovers it.
  EXPECT_LT(predictor.manifest().cv["mre"].get<double>(), 0.01);
}

TEST_F(PredictorPipeline, EvaluateBesideBaselineAndNoiseFloor) {
  TrainingTable table = load_training_table(*dataset_);
  EvaluateOptions options;
  options.split = "random";
  options.learner = "ridge";
  options.keep_predictions = true;
  EvaluationReport report = evaluate(table, options);
  ASSERT_EQ(report.targets.size(), 2u);
  const TargetEvaluation& time = report.targets[0];
  // Every held-out run is kept, and its errors are the ones the MRE averages.
  ASSERT_EQ(static_cast<int64_t>(time.predictions.size()), time.model.count);
  double sum = 0;
  for (const TestPrediction& run : time.predictions) sum += std::abs(run.predicted - run.measured) / run.measured;
  EXPECT_NEAR(sum / static_cast<double>(time.predictions.size()), time.model.mre, 1e-12);
  std::ostringstream csv;
  write_predictions_csv(table, report, csv);
  std::string text = csv.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'),
            1 + time.model.count + report.targets[1].model.count);  // a header, then a line per run and target
  EXPECT_EQ(text.rfind("target,network,family,environment,batch,", 0), 0u);
  // Each line names the plan of its run: as many "first" as "second" repeats, per target; the
  // layer-wise forecast is empty (this data has no per-layer timings).
  EXPECT_EQ(text.find(",signed_error,plan,layerwise,scaled,corrected\n"),
            text.find('\n') - std::string(",signed_error,plan,layerwise,scaled,corrected").size());
  size_t firsts = 0, seconds = 0;
  for (size_t at = text.find(",first,,,\n"); at != std::string::npos; at = text.find(",first,,,\n", at + 1)) ++firsts;
  for (size_t at = text.find(",second,,,\n"); at != std::string::npos; at = text.find(",second,,,\n", at + 1))
    ++seconds;
  EXPECT_EQ(firsts, seconds);
  EXPECT_EQ(static_cast<int64_t>(firsts + seconds), time.model.count + report.targets[1].model.count);
  // One transform kind only, or an error naming the ones that apply.
  options.keep_predictions = false;
  options.transform = "log_residual";
  options.targets = {"time"};
  EXPECT_EQ(evaluate(table, options).targets[0].transform.rfind("log_residual(", 0), 0u);
  options.transform = "sqrt";
  EXPECT_THROW(evaluate(table, options), InputError);
  options.transform = "";
  // Hyperparameters over the learner's defaults reach the fitted candidate; unknown ones are refused.
  options.hyperparameters = {{"alpha", 1000.0}};
  TargetEvaluation regularised = evaluate(table, options).targets[0];
  EXPECT_EQ(regularised.hyperparameters["alpha"], 1000.0);
  EXPECT_NE(regularised.model.mre, time.model.mre);  // the same split and learner, another alpha
  options.hyperparameters = {{"alpa", 3.5}};
  EXPECT_THROW(evaluate(table, options), InputError);
  options.hyperparameters = nlohmann::json::object();
  options.targets = {};
  // Two repeats at +-2%: each repeat is 4% away from the other, relative to itself: 2/1.02*2% and
  // 2/0.98*2%, scaled by sqrt(1/2) for k = 2 (study/evaluate.h): about 2%, each repeat vs. the mean.
  EXPECT_NEAR(time.noise_floor.mre, (0.04 / 1.02 + 0.04 / 0.98) / 2 * std::sqrt(0.5), 1e-9);
  EXPECT_EQ(time.noise_configurations, static_cast<int64_t>(table.samples.size()));
  // Designed and synthetic networks side by side: their test runs add up to all, and each kind's
  // floor is over its own configurations (every one has two repeats at +-2% here).
  ASSERT_EQ(time.by_kind.size(), 2u);
  EXPECT_EQ(time.by_kind[0].kind, "designed");
  EXPECT_EQ(time.by_kind[1].kind, "synthetic");
  EXPECT_EQ(time.by_kind[0].model.count + time.by_kind[1].model.count, time.model.count);
  EXPECT_EQ(time.by_kind[0].noise_configurations + time.by_kind[1].noise_configurations, time.noise_configurations);
  for (const KindErrors& kind : time.by_kind) EXPECT_NEAR(kind.noise_floor.mre, time.noise_floor.mre, 1e-3);
  EXPECT_EQ(time.model.count, 2 * time.test_configurations);
  // The roofline is the exact form of this dataset's time: its error is the noise (2%).
  EXPECT_NEAR(time.baseline.mre, 0.02, 0.005);
  const TargetEvaluation& memory = report.targets[1];
  EXPECT_EQ(memory.noise_floor.mre, 0);
  EXPECT_NE(report.markdown().find("| predictor | MRE |"), std::string::npos);
  EXPECT_EQ(report.to_json()["targets"][0]["target"], "time");

  std::string description;
  auto family = make_split(table, "family", 3, 1, &description);
  EXPECT_EQ(family.size(), 3u);
  for (const auto& [train, test] : family) {
    std::set<std::string> train_families;
    for (int64_t row : train) train_families.insert(table.samples[static_cast<size_t>(row)].family);
    for (int64_t row : test) EXPECT_EQ(train_families.count(table.samples[static_cast<size_t>(row)].family), 0u);
  }
  {
    // One designed family and the synthetic ones: too few to hold designed families out, so the
    // synthetic family is a test family too.
    TrainingTable few = load_training_table(make_dataset("one_family", {"zoo:resnet18", "synthetic:1"}, 0.0));
    auto folds = make_split(few, "family", 5, 1, &description);
    ASSERT_EQ(folds.size(), 2u);
    std::set<std::string> tested;
    for (const auto& [train, test] : folds)
      for (int64_t row : test) tested.insert(few.samples[static_cast<size_t>(row)].family);
    EXPECT_EQ(tested, (std::set<std::string>{"resnet", "synthetic"}));
  }
  auto batch = make_split(table, "batch", 5, 1, &description);
  ASSERT_EQ(batch.size(), 1u);
  for (int64_t row : batch[0].second) EXPECT_EQ(table.samples[static_cast<size_t>(row)].config.batch, 32);
  EXPECT_THROW(make_split(table, "input", 5, 1, &description), InputError);  // one image size
  {
    // The input split holds out the largest image size, whatever its batch, and trains on the rest.
    TrainingTable sizes = table;
    std::set<int64_t> larger;
    for (size_t row = 0; row < sizes.samples.size(); row += 5) {
      sizes.samples[row].config.input = {3, 64, 48};
      larger.insert(static_cast<int64_t>(row));
    }
    sizes.samples[1].config.input = {3, 48, 48};  // fewer pixels than 64x48
    auto input = make_split(sizes, "input", 5, 1, &description);
    ASSERT_EQ(input.size(), 1u);
    EXPECT_EQ(std::set<int64_t>(input[0].second.begin(), input[0].second.end()), larger);
    EXPECT_EQ(input[0].first.size() + input[0].second.size(), sizes.samples.size());
    EXPECT_NE(description.find("3x64x48"), std::string::npos) << description;
  }
  EXPECT_THROW(make_split(table, "env", 5, 1, &description), InputError);  // one environment
  EXPECT_THROW(make_split(table, "weekday", 5, 1, &description), InputError);

  // Synthetic networks stay in every training part: only designed families are tested.
  for (const auto& [train, test] : family) {
    for (int64_t row : test) EXPECT_NE(table.samples[static_cast<size_t>(row)].family, "synthetic");
    size_t synthetic = 0;
    for (int64_t row : train) synthetic += table.samples[static_cast<size_t>(row)].family == "synthetic";
    EXPECT_EQ(synthetic, 4u * 6u);  // synthetic:1-4 x 6 batches
  }

  // The family split reports each held-out family: every designed family once, their runs adding
  // up to the test runs, their MREs averaging (weighted by runs) to the overall one.
  options.split = "family";
  options.folds = 3;
  EvaluationReport by_family = evaluate(table, options);
  const TargetEvaluation& family_time = by_family.targets[0];
  std::set<std::string> families;
  for (const Sample& sample : table.samples)
    if (sample.family != "synthetic") families.insert(sample.family);
  ASSERT_EQ(family_time.by_family.size(), families.size());
  int64_t runs = 0;
  double weighted = 0, weighted_baseline = 0;
  for (const FamilyErrors& row : family_time.by_family) {
    EXPECT_EQ(families.count(row.family), 1u) << row.family;
    EXPECT_LE(std::abs(row.model_median_signed), row.model_mre * 2 + 1e-12) << row.family;
    runs += row.runs;
    weighted += row.model_mre * static_cast<double>(row.runs);
    weighted_baseline += row.baseline_mre * static_cast<double>(row.runs);
  }
  EXPECT_EQ(runs, family_time.model.count);
  EXPECT_NEAR(weighted / static_cast<double>(runs), family_time.model.mre, 1e-9);
  EXPECT_NEAR(weighted_baseline / static_cast<double>(runs), family_time.baseline.mre, 1e-9);
  EXPECT_NE(by_family.markdown().find("| family | test runs |"), std::string::npos);
  EXPECT_EQ(by_family.to_json()["targets"][0]["by_family"].size(), families.size());
}

// Per-layer timings reach the layer-wise model: matched to the graphs, fitted on each training part
// only, its sum evaluated on its own (close to the truth here: the layers follow the machine's law)
// and, with layer_feature, given to the time predictor as est.layers_ms.
TEST(LayerWise, EvaluateScoresTheLayerSumAndFeedsItAsAFeature) {
  std::string path = make_dataset("layers", kSources, 0.02, /*layers=*/true);
  TableOptions table_options;
  TrainingTable plain = load_training_table(path, table_options);
  EXPECT_TRUE(plain.layer_runs.empty());  // only loaded when asked
  table_options.layer_sites = true;
  TrainingTable table = load_training_table(path, table_options);
  ASSERT_EQ(table.layer_runs.size(), kSources.size() * 6);
  for (const Sample& sample : table.samples) EXPECT_GE(sample.layer_sites, 0);
  EvaluateOptions options;
  options.split = "random";
  options.learner = "xgboost";
  options.targets = {"time"};
  TargetEvaluation without = evaluate(table, options).targets[0];
  EXPECT_GT(without.layerwise.count, 0);
  EXPECT_EQ(without.layerwise.count, without.model.count);
  EXPECT_LT(without.layerwise.mre, 0.15) << "the layer-wise sum should follow the per-layer law";
  EXPECT_EQ(without.transform.find("est.layers_ms"), std::string::npos) << without.transform;
  options.layer_feature = true;
  TargetEvaluation with = evaluate(table, options).targets[0];
  EXPECT_NE(with.transform.find("est.layers_ms"), std::string::npos) << with.transform;
  EXPECT_EQ(with.layerwise.mre, without.layerwise.mre);  // the same layer models either way
  // Without per-layer timings there is no layer-wise row.
  EXPECT_EQ(evaluate(plain, options).targets[0].layerwise.count, 0);

  // `--model scaled`: the whole-network learner, carried past the training part's largest batch by
  // the layer-wise sum's ratio. Inside the trained batches (the random split) it is the learner's
  // own forecast; on the batch split every test run (batch 32) lies past the trained 16, and the
  // layers follow the law, so the ratio carries the forecast at 16 to the truth at 32.
  options.layer_feature = false;
  options.scaled = true;
  TargetEvaluation random = evaluate(table, options).targets[0];
  EXPECT_EQ(random.scaled.count, random.model.count);
  EXPECT_EQ(random.scaled_past_range, 0);
  EXPECT_DOUBLE_EQ(random.scaled.mre, random.model.mre);
  options.split = "batch";
  TargetEvaluation batch = evaluate(table, options).targets[0];
  ASSERT_GT(batch.model.count, 0);
  EXPECT_EQ(batch.scaled.count, batch.model.count);
  EXPECT_EQ(batch.scaled_past_range, batch.model.count);
  EXPECT_LT(batch.scaled.mre, 0.15) << "whole-network learner past the trained batches: " << batch.model.mre;
  EXPECT_EQ(evaluate(plain, options).targets[0].scaled.count, 0);  // no layer-wise model: no scaled row

  // `--model corrected`: the layer-wise sum times a learned correction (log_ratio over est.layers_ms).
  // The sum follows the law past the trained batches here, so the correction, flat there, keeps it.
  options.scaled = false;
  options.corrected = true;
  TargetEvaluation corrected = evaluate(table, options).targets[0];
  EXPECT_EQ(corrected.corrected.count, corrected.model.count);
  EXPECT_EQ(corrected.corrected_learner, "xgboost");
  EXPECT_LT(corrected.corrected.mre, 0.15) << "the corrected layer-wise sum past the trained batches";
  EXPECT_EQ(evaluate(plain, options).targets[0].corrected.count, 0);  // no layer-wise model: no corrected row
}

TEST(PredictorErrors, TooSmallDatasetIsAnInputError) {
  std::string path = make_dataset("small", {"zoo:resnet18"}, 0.0);
  TrainingTable table = load_training_table(path);
  TrainOptions options;
  options.budget_s = 1;
  try {
    train_predictor(table, options);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("too small"), std::string::npos) << error.what();
  }
}

TEST(NoiseFloor, HandComputed) {
  // Repeats {10, 12}: 12 vs 10 is 20% of 10; 10 vs 12 is 1/6 of 12. {5}: no partner, ignored.
  // Two repeats: scaled by sqrt((2-1)/2).
  learn::ErrorStats stats = noise_floor({{10, 12}, {5}});
  EXPECT_EQ(stats.count, 2);
  EXPECT_NEAR(stats.mre, (0.2 + 2.0 / 12) / 2 * std::sqrt(0.5), 1e-12);
}

TEST(NoiseFloor, EstimatesTheErrorAgainstTheTrueMeanWhateverTheRepeatCount) {
  // Configurations with a known true time and 10% Gaussian noise: the floor estimated from the
  // repeats alone must match the error of a forecast that knows the true time, whether the
  // configurations were measured twice or five times (unscaled, k = 2 would read 41% high).
  std::mt19937_64 random(7);
  std::normal_distribution<double> noise(0.0, 0.1);
  std::uniform_real_distribution<double> log_time(0.0, 8.0);
  for (int repeats : {2, 3, 5}) {
    std::vector<std::vector<double>> measured;
    std::vector<double> against_truth;
    for (int config = 0; config < 20000 / repeats; ++config) {
      double truth = std::exp(log_time(random));
      std::vector<double> values;
      for (int r = 0; r < repeats; ++r) {
        values.push_back(truth * (1 + noise(random)));
        against_truth.push_back(std::abs(truth - values.back()) / values.back());
      }
      measured.push_back(values);
    }
    double direct = learn::error_stats(against_truth).mre;
    learn::ErrorStats estimated = noise_floor(measured);
    EXPECT_NEAR(estimated.mre / direct, 1.0, 0.03) << repeats << " repeats: " << estimated.mre << " vs " << direct;
  }
}

// Writes a minimal predictor set (a real trained ridge model) for an environment.
void write_set(const std::string& dir, const records::EnvironmentRecord& environment) {
  forecast::Manifest manifest;
  manifest.target = "time";
  manifest.unit = "ms";
  manifest.feature_version = features::kFeatureVersion;
  manifest.features = features::feature_names();
  manifest.columns = {features::feature_index("total.flops_train")};
  manifest.learner = "ridge";
  manifest.transform = learn::TargetTransform::log();
  manifest.environments = {environment};
  std::unique_ptr<learn::Learner> learner = learn::make_learner("ridge");
  learn::Matrix x(3, 1);
  x << 1, 2, 3;
  learner->fit(x, learn::Vector::LinSpaced(3, 0, 1));
  manifest.hyperparameters = learner->hyperparameters();
  forecast::Predictor(manifest, std::move(learner)).save(dir + "/time");
}

// A manifest whose integers are floats or out of int's range is refused in one line (fuzz_predictor_manifest found
// "columns": [1.1e+55] read through nlohmann's get<int>(), undefined behaviour under UBSan; issue 37).
TEST(PredictorErrors, NonIntegerColumnsAndVersionsAreInputErrors) {
  const std::string root = temp_dir("bad_ints");
  write_set(root + "/set", test_environment());
  const std::string manifest_path = root + "/set/time/manifest.json";
  const nlohmann::json good = nlohmann::json::parse(std::ifstream(manifest_path));
  ASSERT_NO_THROW(forecast::Predictor::load(root + "/set/time"));
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {{"columns", nlohmann::json::array({1.1e55})},
                                                                     {"columns", nlohmann::json::array({4294967296LL})},
                                                                     {"columns", nlohmann::json::array({0.5})},
                                                                     {"feature_version", 1.5},
                                                                     {"feature_version", 1e300},
                                                                     {"columns", "0"}};
  for (const auto& [key, value] : cases) {
    nlohmann::json bad = good;
    bad[key] = value;
    std::ofstream(manifest_path) << bad.dump();
    try {
      forecast::Predictor::load(root + "/set/time");
      ADD_FAILURE() << key << " = " << value.dump() << " was accepted";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(key), std::string::npos) << error.what();
    }
  }
}

TEST(PredictorSets, ChoiceByDeviceAndHost) {
  std::string root = temp_dir("sets");
  write_set(root + "/test-cpu", test_environment());
  write_set(root + "/t4", test_environment("Tesla T4"));
  std::vector<std::string> sets = forecast::shipped_predictor_sets(root);
  ASSERT_EQ(sets.size(), 2u);
  hardware::HostInfo host;
  host.cpu_model = "Test CPU 9000";
  host.logical_cores = 2;
  // The device as predict resolves it with a predictor folder given (a catalogued GPU's name finds its set).
  auto device = [&](const std::string& typed) {
    return forecast::resolve_predict_device(typed, root, hardware::shipped_catalogue(), "--device");
  };
  EXPECT_EQ(forecast::choose_predictor_set(sets, device(""), host).dir, root + "/test-cpu");
  EXPECT_EQ(forecast::choose_predictor_set(sets, device(""), host).note, "");
  EXPECT_EQ(forecast::choose_predictor_set(sets, device("t4"), host).dir, root + "/t4");
  EXPECT_EQ(forecast::choose_predictor_set(sets, device("Tesla T4"), host).dir, root + "/t4");
  host.cpu_model = "Other CPU";
  forecast::SetChoice fallback = forecast::choose_predictor_set(sets, device("cpu"), host);
  EXPECT_EQ(fallback.dir, root + "/test-cpu");
  EXPECT_NE(fallback.note.find("Other CPU"), std::string::npos);
  try {
    forecast::choose_predictor_set(sets, device("a100-40gb"), host);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("t4 (Tesla T4)"), std::string::npos) << message;
    EXPECT_NE(message.find("test-cpu (Test CPU 9000 (2 CPUs))"), std::string::npos) << message;
  }
  forecast::PredictorSet set = forecast::load_predictor_set(root + "/t4");
  EXPECT_TRUE(set.time.has_value());
  EXPECT_FALSE(set.memory.has_value());
  EXPECT_EQ(set.environment().gpu_name, "Tesla T4");
  // The features' peaks are the catalogue row's that the driver-reported name finds (data/hardware/gpus.csv).
  const features::HardwareFeatures gpu = forecast::hardware_of(set.environment());
  const hardware::GpuSpec& t4 = hardware::Catalogue::load().gpu("t4");
  EXPECT_TRUE(gpu.gpu);
  EXPECT_EQ(gpu.peak_flops_f32, *t4.fp32_tflops * 1e12);
  EXPECT_EQ(gpu.memory_bandwidth_bytes_s, *t4.bandwidth_gbs * 1e9);
  EXPECT_EQ(gpu.memory_bytes, static_cast<int64_t>(*t4.memory_gib) << 30);
  EXPECT_GT(gpu.peak_flops_f32, 8e12);
  // A catalogued GPU by alias finds the set measured on it; an uncatalogued one does not.
  EXPECT_EQ(forecast::choose_predictor_set(sets, device("T4g"), host).dir, root + "/t4");
  EXPECT_THROW(forecast::choose_predictor_set(sets, device("l4"), host), InputError);
}

TEST(ShippedPredictors, LoadWithThisBuildsFeatures) {
  std::string root = std::string(DNNCAST_SOURCE_DIR) + "/data/predictors";
  std::vector<std::string> sets = forecast::shipped_predictor_sets(root);
  ASSERT_FALSE(sets.empty()) << "no predictor set under " << root;  // else the loop checks nothing
  for (const std::string& dir : sets) {
    forecast::PredictorSet set = forecast::load_predictor_set(dir);
    ASSERT_TRUE(set.time.has_value()) << dir;
    EXPECT_EQ(set.time->manifest().feature_version, features::kFeatureVersion) << dir;
  }
}

}  // namespace
}  // namespace dnncast::study
