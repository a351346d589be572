// Forecasts past the trained batches (forecast/extrapolation.h): the rule on its own, then through the
// forecast API over the zoo at batches 1-256 with the shipped predictor, and the monotone-in-batch
// check of `evaluate --predictor` against the measured series of the shipped dataset.
#include "forecast/extrapolation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "features/layer_features.h"
#include "forecast/forecast.h"
#include "forecast/layer_model.h"
#include "models/zoo.h"
#include "study/holdout.h"

namespace dnncast::forecast {
namespace {

namespace fs = std::filesystem;

const std::string kSource = DNNCAST_SOURCE_DIR;
const std::string kCpuSet = kSource + "/data/predictors/amd-epyc-2cpu";

TEST(BatchExtrapolation, BoundedOnlyPastTheTrainedRange) {
  EXPECT_FALSE(bound_from(128, 1, 128));
  EXPECT_FALSE(bound_from(1, 1, 128));
  EXPECT_FALSE(bound_from(300, 128, 128));  // one trained batch: nothing to bound by
  ASSERT_TRUE(bound_from(256, 1, 128));
  EXPECT_EQ(*bound_from(256, 1, 128), 128);
}

TEST(BatchExtrapolation, HeldBetweenTheLastTrainedTimeAndItsTimePerSample) {
  // 300 ms at batch 128: at 256 between 300 (time never falls) and 600 (time per sample never rises).
  EXPECT_DOUBLE_EQ(bounded_past_range(128, 300, 450, 256), 450);  // inside: the model's own
  EXPECT_DOUBLE_EQ(bounded_past_range(128, 300, 250, 256), 300);  // falling: held at 300
  EXPECT_DOUBLE_EQ(bounded_past_range(128, 300, 900, 256), 600);  // per sample rising: held at 600
}

TEST(BatchExtrapolation, CarriedByALayerWiseRatioOnlyWhereItIsPlausible) {
  EXPECT_DOUBLE_EQ(carried_past_range(128, 300, 900, 1.5, 256), 450);  // the ratio carries t(B)
  EXPECT_DOUBLE_EQ(carried_past_range(128, 300, 500, 2.0, 256), 600);
  EXPECT_DOUBLE_EQ(carried_past_range(128, 300, 500, 1.0, 256), 300);
  EXPECT_DOUBLE_EQ(carried_past_range(128, 300, 500, 2.5, 256), 500);  // implausible: the model's own, bounded
  EXPECT_DOUBLE_EQ(carried_past_range(128, 300, 900, 0.8, 256), 600);
  EXPECT_DOUBLE_EQ(carried_past_range(128, 300, 450, std::nan(""), 256), 450);
}

// The zoo at batches 1-256: past the largest trained batch the forecast never falls and its time per
// sample never rises; inside it is the predictor's own. At 64 px the whole-network learner's; at 224 px
// (the largest trained input) the corrected layer-wise model's, held alike.
TEST(BatchExtrapolation, ZooForecastsPastTheTrainedBatchesAreMonotone) {
  for (int64_t pixels : {64, 224})
    for (const char* model : {"resnet18", "mobilenet_v2", "vgg11", "densenet121", "squeezenet1_1"}) {
      double previous_ms = 0, previous_per_sample = 0;
      int64_t batch_max = 0;
      for (int64_t batch = 1; batch <= 256; batch *= 2) {
        ForecastRequest request;
        request.model.name = model;
        request.model.spec.batch = batch;
        request.model.spec.input = {3, pixels, pixels};
        request.predictor_dir = kCpuSet;
        Forecast forecast = forecast::forecast(request);
        // The corrected layer-wise model at the largest trained input and past the trained batches.
        const std::string expected_model = pixels == 224 || batch > 128 ? "corrected layer-wise" : "whole";
        if (batch_max == 0) {
          PredictorSet set = load_predictor_set(kCpuSet);
          batch_max = set.time->manifest().training.at("batch_max").get<int64_t>();
          ASSERT_GE(batch_max, 64);
          ASSERT_LT(batch_max, 256);  // the sweep reaches past it
        }
        ASSERT_GT(forecast.time_ms, 0) << model << " " << pixels << " px, batch " << batch;
        EXPECT_LE(forecast.time_ms_low, forecast.time_ms) << model << " " << pixels << " px, batch " << batch;
        EXPECT_GE(forecast.time_ms_high, forecast.time_ms) << model << " " << pixels << " px, batch " << batch;
        const double per_sample = forecast.time_ms / static_cast<double>(batch);
        if (batch > batch_max) {
          EXPECT_EQ(forecast.extrapolated_from, batch_max) << model << " " << pixels << " px, batch " << batch;
          EXPECT_GE(forecast.time_ms, previous_ms) << model << " " << pixels << " px, batch " << batch;
          EXPECT_LE(per_sample, previous_per_sample * (1 + 1e-12)) << model << " " << pixels << " px, batch " << batch;
          bool noted = false;
          for (const std::string& note : forecast.notes)
            noted = noted || (note.find("past the trained range") != std::string::npos &&
                              note.find("held between") != std::string::npos);
          EXPECT_TRUE(noted) << model << " " << pixels << " px, batch " << batch;
          EXPECT_NE(forecast.time_model.find(expected_model), std::string::npos)
              << model << " " << pixels << " px, batch " << batch;
        } else {
          EXPECT_EQ(forecast.extrapolated_from, 0) << model << " " << pixels << " px, batch " << batch;
          EXPECT_EQ(forecast.time_model, expected_model) << model << " " << pixels << " px, batch " << batch;
        }
        previous_ms = forecast.time_ms;
        previous_per_sample = per_sample;
      }
    }
}

// A layer-wise model that knows a cost law linear in the batch (1 GFLOP/s plus 20 us a node, fitted
// on the zoo's layers at batches 1-256): past the trained batches the forecast is t(B) L(b) / L(B)
// within the bounds, L that model's sum over the network's layers; inside them it is untouched. Then
// the same through `forecast` with the model saved into a copy of the shipped set.
TEST(BatchExtrapolation, ALayerWiseModelCarriesTheForecastByItsBatchRatio) {
  std::vector<features::LayerSites> sites;
  for (const char* name : {"resnet18", "mobilenet_v2", "vgg11", "squeezenet1_1", "densenet121"})
    sites.push_back(features::layer_sites(models::build_zoo_model(name, {1, {3, 64, 64}, 0, 1000})));
  std::vector<LayerExample> examples;
  for (const features::LayerSites& network : sites)
    for (int64_t batch = 1; batch <= 256; batch *= 2) {
      LayerExample example;
      example.sites = &network;
      example.config.batch = batch;
      for (const features::LayerSite& site : network.nodes)
        example.ms.push_back(1e-6 * (site.flops_fwd + site.flops_bwd) * static_cast<double>(batch) + 0.02);
      example.ms.push_back(5e-6 * network.params * 2);  // SGD with momentum: parameters and one state
      examples.push_back(std::move(example));
    }
  const LayerModel layers = LayerModel::fit(examples);

  PredictorSet set = load_predictor_set(kCpuSet);
  const int64_t batch_max = set.time->manifest().training.at("batch_max").get<int64_t>();
  Graph graph = models::build_zoo_model("resnet18", {256, {3, 64, 64}, 0, 1000});
  const features::GraphFeatures graph_part = features::graph_features(graph);
  const features::HardwareFeatures hardware = hardware_of(set.environment());
  features::TrainingConfig config;
  config.batch = 256;
  features::TrainingConfig at_max = config;
  at_max.batch = batch_max;
  const Estimate own = set.time->predict_one(features::featurize(graph_part, config, hardware));
  const double at_high = set.time->predict_one(features::featurize(graph_part, at_max, hardware)).value;
  const features::LayerSites resnet18 = features::layer_sites(graph);
  LayerScaling scaling{&layers, &resnet18, false};
  int64_t bounded_at = 0;
  const Estimate carried = time_forecast(*set.time, own, graph_part, config, hardware, &bounded_at, &scaling);
  EXPECT_EQ(bounded_at, batch_max);
  const double ratio = layers.iteration_ms(resnet18, config, false) / layers.iteration_ms(resnet18, at_max, false);
  EXPECT_DOUBLE_EQ(scaling.ratio, ratio);
  // The law is nearly proportional to the batch: the ratio of 256 to 128 is close to 2.
  EXPECT_GT(ratio, 1.6);
  EXPECT_LT(ratio, 2.2);
  EXPECT_EQ(scaling.used, ratio >= 1 && ratio <= 2);
  EXPECT_DOUBLE_EQ(carried.value, carried_past_range(batch_max, at_high, own.value, ratio, 256));
  EXPECT_LE(carried.low, carried.value);
  EXPECT_GE(carried.high, carried.value);
  // Inside the trained batches: the predictor's own forecast, the layer-wise model not asked.
  config.batch = 64;
  LayerScaling inside{&layers, &resnet18, false};
  const Estimate own_64 = set.time->predict_one(features::featurize(graph_part, config, hardware));
  EXPECT_DOUBLE_EQ(time_forecast(*set.time, own_64, graph_part, config, hardware, nullptr, &inside).value,
                   own_64.value);
  EXPECT_EQ(inside.ratio, 0);

  // Through the forecast API: a copy of the shipped set with the model in time/layers (and without
  // the corrected model, which a set carries past the trained batches where it has one).
  const std::string dir = std::string(DNNCAST_BINARY_DIR) + "/test_tmp/BatchExtrapolationLayers";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(kCpuSet, dir + "/set", fs::copy_options::recursive);
  fs::remove_all(dir + "/set/time/layers");
  fs::remove_all(dir + "/set/time/corrected");
  layers.save(dir + "/set/time/layers");
  ForecastRequest request;
  request.model.name = "resnet18";
  request.model.spec.batch = 256;
  request.model.spec.input = {3, 64, 64};
  request.predictor_dir = dir + "/set";
  request.threads = 1;
  Forecast forecast = forecast::forecast(request);
  EXPECT_DOUBLE_EQ(forecast.time_ms, carried.value);
  EXPECT_EQ(forecast.extrapolated_from, batch_max);
  EXPECT_EQ(forecast.time_model.find("layer-wise") != std::string::npos, scaling.used) << forecast.time_model;
  bool noted = false;
  for (const std::string& note : forecast.notes)
    noted = noted || note.find("layer-wise model's ratio") != std::string::npos;
  EXPECT_TRUE(noted);
  request.model.spec.batch = 64;
  EXPECT_EQ(forecast::forecast(request).time_model, "whole");
  fs::remove_all(dir);
}

// Against the measured series of the shipped dataset (every run, as `evaluate --predictor SET --db
// data/dnncast-cpu2.db --all-runs`): where the measured time per sample does not rise from one
// batch to the next, the forecast's rises in at most 2% of the pairs.
TEST(BatchExtrapolation, ForecastTimePerSampleFollowsTheMeasuredSeries) {
  const std::string dir = std::string(DNNCAST_BINARY_DIR) + "/test_tmp/BatchExtrapolation";
  fs::create_directories(dir);
  const std::string db = dir + "/cpu2.db";
  ASSERT_EQ(std::system(("xz -dkc '" + kSource + "/data/dnncast-cpu2.db.xz' > '" + db + "'").c_str()), 0);
  study::ScoreOptions options;
  options.runs = study::HoldoutRuns::Include;
  study::PredictorScore score = study::score_predictor(kCpuSet, db, options);
  const study::MonotoneCheck& check = score.monotone;
  EXPECT_GT(check.pairs, 500);
  EXPECT_GT(check.measured_flat, check.pairs / 2);
  EXPECT_LE(check.measured_flat, check.pairs);
  EXPECT_LE(check.forecast_rises, check.measured_flat / 50) << check.worst << " +" << check.worst_rise;
  fs::remove(db);
}

}  // namespace
}  // namespace dnncast::forecast
