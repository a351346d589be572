// The forecast API (forecast/forecast.h) called directly, against an independent path: the built
// `dnncast` binary's --json output for the same configuration (the CLI must print exactly what the
// API returns), plus what the structs say on their own and the API's errors.
#include "forecast/forecast.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"
#include "core/error.h"
#include "forecast/forecast_json.h"
#include "gpu/gpu_forecast.h"
#include "import/model_source.h"

namespace dnncast::forecast {
namespace {

using nlohmann::json;

const std::string kCpuSet = std::string(DNNCAST_SOURCE_DIR) + "/data/predictors/amd-epyc-2cpu";

class ForecastApi : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dnncast_forecast_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + cli_test::shell_quoted(dir_)).c_str()); }

  json cli_json(const std::string& command, const std::vector<std::string>& args) {
    cli_test::Result result = cli_test::run(command, args, dir_);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return json::parse(result.out);
  }

  std::string dir_;
};

ForecastRequest request_for(const std::string& model, int64_t batch) {
  ForecastRequest request;
  request.model.name = model;
  request.model.spec.batch = batch;
  request.predictor_dir = kCpuSet;
  return request;
}

// `predict --device GPU --json`: what forecast_gpu returns, in to_json's reading order (an ordered_json
// compares its keys in order): what was forecast, then time, memory, basis, notes.
TEST_F(ForecastApi, GpuPredictMatchesTheCliJsonInReadingOrder) {
  gpu::GpuForecastRequest request;
  request.model.name = "resnet18";
  request.model.spec.batch = 8;
  request.gpu = hardware::shipped_catalogue().gpu("t4");
  request.epoch_samples = 1000;
  request.max_batch = true;
  cli_test::Result run = cli_test::run(
      "predict", {"resnet18", "--batch", "8", "--device", "t4", "--epoch-samples", "1000", "--max-batch", "--json"},
      dir_);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::ordered_json printed = nlohmann::ordered_json::parse(run.out);
  EXPECT_EQ(to_json(gpu::forecast_gpu(request)), printed);
  std::vector<std::string> keys;
  for (const auto& item : printed.items()) keys.push_back(item.key());
  auto at = [&](const std::string& key) {
    const auto found = std::find(keys.begin(), keys.end(), key);
    EXPECT_NE(found, keys.end()) << key;
    return found - keys.begin();
  };
  EXPECT_EQ(at("model"), 0);
  EXPECT_LT(at("device"), at("time_ms"));
  EXPECT_LT(at("epoch_s"), at("required_bytes"));
  EXPECT_LT(at("max_batch"), at("basis"));
  EXPECT_EQ(at("notes"), static_cast<std::ptrdiff_t>(keys.size()) - 1);
  EXPECT_GT(printed.at("max_batch").get<int64_t>(), 8);  // resnet18 at 8 is far from T4's 16 GiB
}

TEST_F(ForecastApi, PredictMatchesTheCliJson) {
  ForecastRequest plain = request_for("resnet18", 8);
  ForecastRequest epoch = request_for("mobilenet_v2", 4);
  epoch.threads = 1;
  epoch.epoch_samples = 1001;
  ForecastRequest sequence = request_for("gpt2_small", 2);
  sequence.model.spec.seq_len = 64;
  sequence.optimizer = Optimizer::Adam;
  struct Case {
    ForecastRequest request;
    std::vector<std::string> args;
  };
  const std::vector<Case> cases{
      {plain, {"resnet18", "--batch", "8"}},
      {epoch, {"mobilenet_v2", "--batch", "4", "--threads", "1", "--epoch-samples", "1001"}},
      {sequence, {"gpt2_small", "--batch", "2", "--seq", "64", "--optimizer", "adam"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--predictor", kCpuSet, "--json"});
    json expected = cli_json("predict", args);
    Forecast result = forecast(c.request);
    EXPECT_EQ(to_json(result), expected) << c.args[0];
    EXPECT_EQ(result.model, c.args[0]);
    EXPECT_GT(result.time_ms, 0);
    EXPECT_LE(result.time_ms_low, result.time_ms);
    EXPECT_GE(result.time_ms_high, result.time_ms);
  }
}

// Issue 37: distinct forecasts in one process share the layer-wise model's row cache (forecast/layer_model.h) and
// walk the trees several rows at a time; each `dnncast predict` process starts with an empty cache. Distinct
// resnet50 configurations past the trained batches (the layer-wise sums at the batch and at the largest trained
// one) and at 224 px (the corrected model), each forecast twice here after a warm-up: the same JSON as the CLI's,
// to the last digit.
TEST_F(ForecastApi, DistinctForecastsFromTheRowCacheMatchTheCliJson) {
  struct Case {
    int64_t batch, size;
    Optimizer optimizer;
  };
  const std::vector<Case> cases{{200, 224, Optimizer::Sgd}, {201, 224, Optimizer::Sgd}, {512, 96, Optimizer::Adam},
                                {1000, 64, Optimizer::Sgd}, {64, 224, Optimizer::Adam}, {130, 32, Optimizer::Adam}};
  auto request_of = [](const Case& c) {
    ForecastRequest request = request_for("resnet50", c.batch);
    request.model.spec.input = {3, c.size, c.size};
    request.optimizer = c.optimizer;
    return request;
  };
  for (const Case& c : cases) forecast(request_of(c));  // the cache filled
  for (const Case& c : cases) {
    const std::string input = "3x" + std::to_string(c.size) + "x" + std::to_string(c.size);
    json expected = cli_json("predict", {"resnet50", "--batch", std::to_string(c.batch), "--input", input,
                                         "--optimizer", name(c.optimizer), "--predictor", kCpuSet, "--json"});
    EXPECT_EQ(to_json(forecast(request_of(c))), expected) << c.batch << " at " << input;
    EXPECT_EQ(to_json(forecast(request_of(c))), expected) << c.batch << " at " << input << ", again";
  }
}

TEST_F(ForecastApi, PredictStructsSayWhereEachNumberCameFrom) {
  ForecastRequest request = request_for("resnet18", 8);
  request.epoch_samples = 100;
  Forecast result = forecast(request);
  ASSERT_TRUE(result.epoch_s.has_value());
  EXPECT_EQ(result.epoch_iterations, 13);  // ceil(100 / 8)
  EXPECT_DOUBLE_EQ(*result.epoch_s, result.time_ms * 13 / 1000.0);
  ASSERT_TRUE(result.simulated());  // resnet18 fp32 sgd on a CPU: the simulator models it
  ASSERT_TRUE(result.peak_bytes && result.peak_total_bytes);
  EXPECT_EQ(*result.peak_bytes_low, *result.peak_bytes);
  EXPECT_EQ(*result.peak_bytes_high, *result.peak_bytes);
  EXPECT_GT(*result.peak_total_bytes, *result.peak_bytes);
  EXPECT_FALSE(result.memory_isa.empty());
  EXPECT_TRUE(result.host_match.has_value());  // a CPU set
  EXPECT_EQ(result.predictor, kCpuSet);
  EXPECT_FALSE(result.env_hash.empty());

  ForecastRequest no_epoch = request_for("resnet18", 8);
  EXPECT_FALSE(forecast(no_epoch).epoch_s.has_value());
}

TEST_F(ForecastApi, PredictNotesABatchOutsideTheTrainedRange) {
  Forecast result = forecast(request_for("resnet18", 100000));
  bool noted = false;
  for (const std::string& note : result.notes)
    noted = noted || note.find("past the trained range") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST_F(ForecastApi, PredictErrorsAreInputErrors) {
  ForecastRequest optimizer = request_for("resnet18", 8);
  optimizer.optimizer = Optimizer::AdamW;  // not among the shipped set's sgd, adam
  try {
    forecast(optimizer);
    ADD_FAILURE() << "an untrained optimizer was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("was trained on optimizers"), std::string::npos) << error.what();
  }
  EXPECT_THROW(forecast(request_for("resnet18", 0)), InputError);
  ForecastRequest threads = request_for("resnet18", 8);
  threads.threads = -1;
  EXPECT_THROW(forecast(threads), InputError);
  EXPECT_THROW(forecast(request_for("no_such_model", 8)), InputError);
  ForecastRequest missing = request_for("resnet18", 8);
  missing.predictor_dir = dir_ + "/nothing";
  EXPECT_THROW(forecast(missing), InputError);
}

TEST_F(ForecastApi, MemoryMatchesTheCliJson) {
  MemoryRequest request;
  request.model.name = "resnet18";
  request.model.spec.batch = 4;
  request.config.optimizer = Optimizer::Adam;
  request.config.threads = 2;
  request.config.keep_timeline = true;
  request.fits_limit = int64_t{1} << 30;
  request.batch_limit = int64_t{2} << 30;
  const std::vector<std::string> args{"resnet18", "--batch",    "4",      "--optimizer", "adam",        "--threads",
                                      "2",        "--timeline", "--fits", "1GiB",        "--max-batch", "2GiB"};
  request.measure_command = "dnncast memory";
  for (const std::string& arg : args) request.measure_command += " " + arg;
  request.measure_command += " --measure";
  std::vector<std::string> cli_args = args;
  cli_args.push_back("--json");
  json expected = cli_json("memory", cli_args);
  MemoryForecast result = forecast_memory(request);
  EXPECT_EQ(to_json(result), expected);
  EXPECT_EQ(result.fits, result.report.required_bytes <= request.fits_limit);
  EXPECT_GT(result.max_batch.batch, 0);
  EXPECT_LE(result.max_batch.required_bytes, request.batch_limit);
  EXPECT_FALSE(result.report.timeline.empty());
  EXPECT_EQ(result.input, "3x224x224");
}

TEST_F(ForecastApi, MemoryErrorsAreInputErrors) {
  MemoryRequest request;
  request.model.name = "resnet18";
  request.config.precision = Precision::Bf16;  // autocast's convolutions are not modelled
  EXPECT_THROW(forecast_memory(request), InputError);
  request.config.precision = Precision::Fp32;
  request.model.name = "synthetic:not_a_seed";
  EXPECT_THROW(forecast_memory(request), InputError);
}

TEST_F(ForecastApi, InspectMatchesTheCliJson) {
  for (const char* model : {"resnet18", "gpt2_small"}) {
    models::ModelSpec spec;
    spec.batch = 2;
    Inspection inspection = inspect(import::load_model(model, spec));
    EXPECT_EQ(to_json(inspection), cli_json("inspect", {model, "--batch", "2", "--json"})) << model;
    ASSERT_FALSE(inspection.layers.empty());
    int64_t params = 0;
    for (const LayerRow& row : inspection.layers) params += row.params;
    EXPECT_EQ(params, inspection.total.params);
    EXPECT_EQ(inspection.batch, 2);
    EXPECT_EQ(inspection.layer_count, static_cast<int64_t>(inspection.layers.size()));
    EXPECT_LE(inspection.saved_bytes_distinct, inspection.total.saved_bytes);
  }
}

}  // namespace
}  // namespace dnncast::forecast
