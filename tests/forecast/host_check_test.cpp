// The host check (forecast/host_check.h): when it calls a host off, its cache keyed by host, boot and clock, and a
// forecast on an off host scaled, widened and saying so -- and left alone on a host in line with the data.
#include "forecast/host_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cli_run.h"
#include "forecast/forecast.h"
#include "forecast/host_calibration.h"
#include "forecast/host_match.h"
#include "forecast/predict.h"

namespace dnncast::forecast {
namespace {

using cli_test::ScopedEnv;

HostCheck check_of(const std::vector<double>& ratios) {
  HostCheck check;
  for (double ratio : ratios) {
    HostProbe probe;
    probe.model = "resnet18";
    probe.measured_ms = 100 * ratio;
    probe.forecast_ms = 100;
    check.probes.push_back(probe);
  }
  check.summarize();
  return check;
}

TEST(HostCheck, OffBeyondTheToleranceEitherWayOrWhenUneven) {
  EXPECT_FALSE(check_of({1.0, 1.1, 0.9, 1.05}).off());
  EXPECT_NEAR(check_of({0.5, 2.0}).ratio, 1.0, 1e-12);  // geometric mean
  EXPECT_TRUE(check_of({0.5, 2.0}).off());              // in line on average, uneven by 4x
  EXPECT_TRUE(check_of({0.6, 0.65, 0.7}).off());        // 1.5x faster than the data
  EXPECT_TRUE(check_of({1.5, 1.6}).off());              // slower
  const HostCheck check = check_of({0.24, 0.8});
  EXPECT_NEAR(check.low, 0.24, 1e-12);
  EXPECT_NEAR(check.high, 0.8, 1e-12);
}

TEST(HostCheck, TheCacheIsKeyedByHostBootAndClock) {
  cli_test::ScratchDir dir("host_check_cache");
  ASSERT_TRUE(dir.ok());
  ScopedEnv cache("DNNCAST_CACHE_DIR", dir.path());
  const records::EnvironmentRecord host = host_environment();
  const std::string key = host_check_key(host);
  EXPECT_NE(key.find(host.hash()), std::string::npos);
  records::EnvironmentRecord clocked = host;
  clocked.base_mhz += 400;
  EXPECT_NE(host_check_key(clocked), key);  // another clock checks again
  EXPECT_FALSE(cached_host_check(key));
  HostCheck check = check_of({0.5, 0.6});
  check.key = key;
  check.predictor = "set";
  check.checked = "2026-12-05T00:00:00Z";
  save_host_check(check);
  ASSERT_TRUE(cached_host_check(key));
  EXPECT_NEAR(cached_host_check(key)->ratio, check.ratio, 1e-12);
  EXPECT_FALSE(cached_host_check(host_check_key(clocked)));
  std::ofstream(dir.path() + "/host-check.json") << "{\"format\": \"dnncast-host-check/1\", \"key\": ";
  EXPECT_FALSE(cached_host_check(key));  // a damaged cache is not trusted
}

TEST(HostCheck, AForecastOnAnOffHostIsScaledWidenedAndSaysSo) {
  cli_test::ScratchDir dir("host_check_forecast");
  ASSERT_TRUE(dir.ok());
  ScopedEnv cache("DNNCAST_CACHE_DIR", dir.path());
  ScopedEnv enabled("DNNCAST_HOST_CHECK", "on");  // the tests' main turns it off
  ForecastRequest request;
  request.model.name = "resnet50";
  request.model.spec.batch = 4;
  request.model.spec.input = {3, 96, 96};
  request.host_check = false;
  const Forecast shipped = forecast(request);
  ASSERT_TRUE(shipped.host_match);

  HostCheck off = check_of({0.24, 0.5, 0.7});
  off.key = host_check_key(host_environment());
  off.predictor = shipped.predictor;
  off.checked = "2026-12-05T00:00:00Z";
  save_host_check(off);
  request.host_check = true;
  const Forecast checked = forecast(request);
  // x1.5 each way, in place of a nearest set's x2.5 for another CPU.
  const double widen = shipped.host_match->exact ? kHostCheckWiden : kHostCheckWiden / kUnmatchedHostWiden;
  EXPECT_NEAR(checked.time_ms, shipped.time_ms * off.ratio, 1e-9 * shipped.time_ms);
  EXPECT_NEAR(checked.time_ms_low, shipped.time_ms_low * off.ratio / widen, 1e-9 * shipped.time_ms);
  EXPECT_NEAR(checked.time_ms_high, shipped.time_ms_high * off.ratio * widen, 1e-9 * shipped.time_ms);
  ASSERT_TRUE(checked.host_match);
  EXPECT_NEAR(checked.host_match->speed.at("ratio").get<double>(), off.ratio, 1e-12);
  Prediction prediction;
  prediction.cpu = checked;
  const std::string note = prediction_note(prediction);
  EXPECT_NE(note.find("0.24-0.70x"), std::string::npos) << note;
  EXPECT_NE(note.find("dnncast calibrate resnet50 --batch 4 --input 3x96x96"), std::string::npos) << note;
  // Off for another predictor set: not this one's probes.
  off.predictor = "/elsewhere";
  save_host_check(off);
  EXPECT_DOUBLE_EQ(forecast(request).time_ms, shipped.time_ms);
  // In line with the data: nothing changes, nothing is said.
  HostCheck in_line = check_of({0.95, 1.05, 1.1});
  in_line.key = off.key;
  in_line.predictor = shipped.predictor;
  in_line.checked = off.checked;
  save_host_check(in_line);
  const Forecast same = forecast(request);
  EXPECT_DOUBLE_EQ(same.time_ms, shipped.time_ms);
  EXPECT_DOUBLE_EQ(same.time_ms_high, shipped.time_ms_high);
  EXPECT_TRUE(same.host_match->speed.is_null());
}

}  // namespace
}  // namespace dnncast::forecast
