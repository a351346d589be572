// Forecasts past the trained batches (apps/extrapolation.h): the rule on its own, then through the
// forecast API over the zoo at batches 1-256 with the shipped predictor, and the monotone-in-batch
// check of `evaluate --predictor` against the measured series of the shipped dataset.
#include "apps/extrapolation.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/forecast.h"
#include "apps/holdout.h"

namespace dnncast::apps {
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

// The zoo at batches 1-256: past the largest trained batch the forecast never falls and its time per
// sample never rises; inside it is the predictor's own.
TEST(BatchExtrapolation, ZooForecastsPastTheTrainedBatchesAreMonotone) {
  for (const char* model : {"resnet18", "mobilenet_v2", "vgg11", "densenet121", "squeezenet1_1"}) {
    double previous_ms = 0, previous_per_sample = 0;
    int64_t batch_max = 0;
    for (int64_t batch = 1; batch <= 256; batch *= 2) {
      ForecastRequest request;
      request.model = model;
      request.spec.batch = batch;
      request.spec.input = {3, 64, 64};
      request.predictor_dir = kCpuSet;
      Forecast forecast = apps::forecast(request);
      if (batch_max == 0) {
        PredictorSet set = load_predictor_set(kCpuSet);
        batch_max = set.time->manifest().training.at("batch_max").get<int64_t>();
        ASSERT_GE(batch_max, 64);
        ASSERT_LT(batch_max, 256);  // the sweep reaches past it
      }
      ASSERT_GT(forecast.time_ms, 0) << model << " " << batch;
      EXPECT_LE(forecast.time_ms_low, forecast.time_ms) << model << " " << batch;
      EXPECT_GE(forecast.time_ms_high, forecast.time_ms) << model << " " << batch;
      const double per_sample = forecast.time_ms / static_cast<double>(batch);
      if (batch > batch_max) {
        EXPECT_EQ(forecast.extrapolated_from, batch_max) << model << " " << batch;
        EXPECT_GE(forecast.time_ms, previous_ms) << model << " " << batch;
        EXPECT_LE(per_sample, previous_per_sample * (1 + 1e-12)) << model << " " << batch;
        bool noted = false;
        for (const std::string& note : forecast.notes)
          noted = noted || note.find("held between the forecast at batch") != std::string::npos;
        EXPECT_TRUE(noted) << model << " " << batch;
      } else {
        EXPECT_EQ(forecast.extrapolated_from, 0) << model << " " << batch;
      }
      previous_ms = forecast.time_ms;
      previous_per_sample = per_sample;
    }
  }
}

// Against the measured series of the shipped dataset (every run, as `evaluate --predictor SET --db
// data/dnncast-cpu2.db --all-runs`): where the measured time per sample does not rise from one
// batch to the next, the forecast's rises in at most 2% of the pairs.
TEST(BatchExtrapolation, ForecastTimePerSampleFollowsTheMeasuredSeries) {
  const std::string dir = std::string(DNNCAST_BINARY_DIR) + "/test_apps_tmp/BatchExtrapolation";
  fs::create_directories(dir);
  const std::string db = dir + "/cpu2.db";
  ASSERT_EQ(std::system(("xz -dkc '" + kSource + "/data/dnncast-cpu2.db.xz' > '" + db + "'").c_str()), 0);
  ScoreOptions options;
  options.runs = HoldoutRuns::Include;
  PredictorScore score = score_predictor(kCpuSet, db, options);
  const MonotoneCheck& check = score.monotone;
  EXPECT_GT(check.pairs, 500);
  EXPECT_GT(check.measured_flat, check.pairs / 2);
  EXPECT_LE(check.measured_flat, check.pairs);
  EXPECT_LE(check.forecast_rises, check.measured_flat / 50) << check.worst << " +" << check.worst_rise;
  fs::remove(db);
}

}  // namespace
}  // namespace dnncast::apps
