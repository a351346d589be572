// Host calibrations (forecast/host_calibration.h): the fits on hand-made measurements with known answers, the file and
// its errors, finding this host's, and `predict` through one (the CLI against the API with the source set alone).
#include "forecast/host_calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"
#include "core/error.h"
#include "forecast/forecast.h"
#include "forecast/host_match.h"
#include "import/model_source.h"
#include "models/layer_cases.h"
#include "models/zoo.h"

namespace dnncast::forecast {
namespace {

using nlohmann::json;

const std::string kCpuSet = std::string(DNNCAST_SOURCE_DIR) + "/data/predictors/amd-epyc-2cpu";

// A calibration of this host over the source set, with one scale for every layer kind.
HostCalibration this_host_calibration(double any_kind_scale) {
  HostCalibration calibration;
  calibration.environment = host_environment();
  calibration.source_dir = kCpuSet;
  calibration.kind_scale = {{kAnyKind, any_kind_scale}};
  return calibration;
}

// A request for a zoo model at batch B and 3 x size x size from the source set.
ForecastRequest source_request(const std::string& model, int64_t batch, int64_t size) {
  ForecastRequest request;
  request.model.name = model;
  request.model.spec.batch = batch;
  request.model.spec.input = {3, size, size};
  request.predictor_dir = kCpuSet;
  return request;
}

// The source set's forecast as on the host it was trained on, which a calibrated forecast starts from: without the
// host check, and where this host is another CPU (the Intel Xeon of session 40) with the unmatched widening of its
// interval undone.
Forecast source_forecast(ForecastRequest request) {
  request.host_check = false;
  Forecast result = forecast(request);
  if (result.host_match && !result.host_match->exact) {
    result.time_ms_low *= kUnmatchedHostWiden;
    result.time_ms_high /= kUnmatchedHostWiden;
  }
  return result;
}

TEST(HostCalibration, KindScalesAreTimeWeightedGeometricMeans) {
  std::vector<LayerRatio> ratios{{"conv", 9, 3}, {"conv", 1, 1}, {"conv", 2, 1}, {"bn", 4, 1}, {"bn", 4, 1}};
  HostCalibration calibration;
  fit_kind_scales(ratios, calibration);
  // conv: weights 9, 1, 2 on log ratios log 3, 0, log 2.
  EXPECT_NEAR(calibration.kind_scale.at("conv"), std::exp((9 * std::log(3.0) + 2 * std::log(2.0)) / 12), 1e-12);
  EXPECT_EQ(calibration.kind_layers.at("conv"), 3);
  EXPECT_FALSE(calibration.kind_scale.count("bn"));  // 2 layers: below kMinKindLayers, left to "*"
  EXPECT_NEAR(calibration.kind_scale.at(kAnyKind),
              std::exp((9 * std::log(3.0) + 2 * std::log(2.0) + 8 * std::log(4.0)) / 20), 1e-12);
  EXPECT_DOUBLE_EQ(calibration.scale_of("bn"), calibration.kind_scale.at(kAnyKind));
  // Nothing usable: one line, not a scale of NaN.
  HostCalibration empty;
  EXPECT_THROW(fit_kind_scales({{"conv", 0, 1}, {"conv", 1, -1}}, empty), InputError);
}

TEST(HostCalibration, WholeShiftIsARatioUntilASlopeEarnsItsPlace) {
  HostCalibration calibration;
  fit_whole_shift({}, calibration);
  EXPECT_EQ(calibration.shift, "none");
  EXPECT_DOUBLE_EQ(calibration.shifted(42), 42);
  fit_whole_shift({{30, 10}}, calibration);  // one run: the forecast there is the measurement
  EXPECT_EQ(calibration.shift, "ratio");
  EXPECT_NEAR(calibration.shifted(10), 30, 1e-9);
  EXPECT_NEAR(calibration.shifted(100), 300, 1e-9);
  // Measured = 2 x adjusted^1.5 exactly on six runs: the power law wins the leave-one-out.
  std::vector<WholeRatio> runs;
  for (double adjusted : {1.0, 3.0, 10.0, 30.0, 100.0, 300.0}) runs.push_back({2 * std::pow(adjusted, 1.5), adjusted});
  fit_whole_shift(runs, calibration);
  EXPECT_EQ(calibration.shift, "lms");
  EXPECT_NEAR(calibration.log_slope, 1.5, 1e-9);
  EXPECT_NEAR(calibration.shifted(1000), 2 * std::pow(1000.0, 1.5), 1e-6 * std::pow(1000.0, 1.5));
  // A constant ratio with noise: the ratio stays.
  runs = {{21, 10}, {19, 10}, {62, 30}, {58, 30}, {205, 100}, {195, 100}};
  fit_whole_shift(runs, calibration);
  EXPECT_EQ(calibration.shift, "ratio");
  EXPECT_NEAR(calibration.shifted(50), 100, 2);
}

// Whole runs of this host at other sizes anchor measured / source (issue 52): the host check's probes pooled, each run
// of a calibrated configuration; a least-squares line in log-log through them, flat beyond the smallest and largest.
TEST(HostCalibration, SizeAnchorsCarryMeasuredOverSourceByALineInLogLog) {
  HostCalibration calibration;
  EXPECT_DOUBLE_EQ(calibration.anchored_ratio(500), 1.0);  // none: the source as it is
  calibration.host_check_ratio = 0.8;
  calibration.host_check_source_ms = 100;
  // Runs as calibrate records them: measured, source x layer factor, source. Two of the same configuration pool by
  // their geometric mean (0.4 x 1.1 and 0.4 / 1.1: 0.4). The three anchors lie on one line in log-log.
  const double middle = 0.8 * std::sqrt(0.5);
  fit_whole_shift({{1000 * middle, 900, 1000}, {4400, 5000, 10000}, {4000 / 1.1, 5000, 10000}}, calibration);
  ASSERT_EQ(calibration.size_anchors.size(), 3U);
  EXPECT_DOUBLE_EQ(calibration.size_anchors[0].first, 100);
  EXPECT_DOUBLE_EQ(calibration.size_anchors[0].second, 0.8);
  EXPECT_NEAR(calibration.size_anchors[2].second, 0.4, 1e-12);
  EXPECT_NEAR(calibration.anchored_ratio(1000), middle, 1e-12);
  EXPECT_NEAR(calibration.anchored_ratio(std::sqrt(1000.0 * 10000.0)), 0.8 * std::pow(0.5, 0.75), 1e-12);
  EXPECT_NEAR(calibration.anchored_ratio(5), 0.8, 1e-12);    // below the smallest: the line's value there
  EXPECT_NEAR(calibration.anchored_ratio(1e7), 0.4, 1e-12);  // above the largest: likewise
  // Anchors off one line: the line, not a path through each (one network's run is not its size's ratio).
  calibration.size_anchors = {{100, 1.0}, {1000, 0.5}, {10000, 1.0}};
  EXPECT_NEAR(calibration.anchored_ratio(1000), std::pow(0.5, 1.0 / 3), 1e-12);
  EXPECT_NEAR(calibration.anchored_ratio(100), std::pow(0.5, 1.0 / 3), 1e-12);
  // Runs without a source forecast (the cross-host evaluation's shift) anchor nothing: the host check alone.
  fit_whole_shift({{4000, 5000}}, calibration);
  ASSERT_EQ(calibration.size_anchors.size(), 1U);
  EXPECT_DOUBLE_EQ(calibration.anchored_ratio(1e6), 0.8);
}

// Whole runs with their network's arithmetic intensity (issue 52, session 34): a plane in log intensity and log size
// through them tells a network of dense 3x3 convolutions from a depthwise one of the same size.
TEST(HostCalibration, MixAnchorsCarryMeasuredOverSourceByIntensityAndSize) {
  HostCalibration calibration;
  // Anchors exactly on log r = log 0.5 - 0.4 (log I - log 100) + 0.1 (log S - log 1000), spread wide enough that the
  // ridge (kMixRidge) moves the slopes by under 1%.
  auto on_plane = [](double intensity, double source_ms) {
    return 0.5 * std::pow(intensity / 100, -0.4) * std::pow(source_ms / 1000, 0.1);
  };
  for (const auto& [intensity, source_ms] :
       std::vector<std::pair<double, double>>{{10, 30}, {1000, 30}, {10, 30000}, {1000, 30000}, {100, 1000}})
    calibration.mix_anchors.push_back({source_ms, on_plane(intensity, source_ms), intensity});
  EXPECT_NEAR(calibration.anchored_ratio(300, 50) / on_plane(50, 300), 1, 0.02);
  EXPECT_STREQ(calibration.anchoring(50).by, "size and intensity");
  EXPECT_TRUE(calibration.anchoring(50).plane());
  EXPECT_EQ(calibration.anchoring(50).runs, 5U);
  EXPECT_NEAR(calibration.anchored_ratio(5000, 400) / on_plane(400, 5000), 1, 0.02);
  // The dense network runs faster here than the depthwise one of the same source time.
  EXPECT_LT(calibration.anchored_ratio(500, 330), calibration.anchored_ratio(500, 30));
  // Beyond the anchors' intensities and sizes: the plane's value at their edge.
  EXPECT_NEAR(calibration.anchored_ratio(1e7, 1e5), calibration.anchored_ratio(30000, 1000), 1e-12);
  // Unknown intensity, or anchors within a factor of 2 of one intensity: the line in size (size_anchors; none here).
  EXPECT_DOUBLE_EQ(calibration.anchored_ratio(500, 0), 1.0);
  EXPECT_STREQ(calibration.anchoring(0).by, "size");
  EXPECT_EQ(calibration.anchoring(0).runs, 0U);
  HostCalibration narrow = calibration;
  for (MixAnchor& anchor : narrow.mix_anchors) anchor.intensity = 100 + anchor.source_ms / 1000;
  EXPECT_DOUBLE_EQ(narrow.anchored_ratio(500, 100), 1.0);
  EXPECT_FALSE(narrow.anchoring(100).plane());

  // fit_whole_shift: the host check's probes one by one, then the runs of known intensity (one configuration's runs
  // pooled by their geometric mean); a run without an intensity anchors the size line alone.
  HostCalibration fitted;
  fitted.host_check_ratio = 0.7;
  fitted.host_check_source_ms = 100;
  fitted.host_check_probes = {{280, 0.38, 326}, {93, 0.98, 30}, {26, 1.07, 52}, {139, 0.88, 327}};
  fit_whole_shift({{0.44 * 1.1 * 38778, 9000, 38778, 164}, {0.44 / 1.1 * 38778, 9000, 38778, 164}, {500, 600, 1000}},
                  fitted);
  ASSERT_EQ(fitted.mix_anchors.size(), 5U);
  EXPECT_NEAR(fitted.mix_anchors[4].ratio, 0.44, 1e-12);
  EXPECT_DOUBLE_EQ(fitted.mix_anchors[4].intensity, 164);
  EXPECT_EQ(fitted.size_anchors.size(), 3U);        // the pooled check, the 1000 ms run, the 38778 ms configuration
  EXPECT_LT(fitted.anchored_ratio(333, 326), 0.6);  // a resnet18 of 333 ms: the dense probes' speed here
  EXPECT_GT(fitted.anchored_ratio(389, 25), 0.8);   // a mobilenet_v2 of 389 ms: the depthwise probe's
}

TEST(HostCalibration, LayerFactorWeighsEachKindByItsShareOfTheSourceTime) {
  features::LayerSites sites;
  features::LayerSite conv, relu;
  conv.op = "Conv2d", conv.groups = 1, conv.in_channels = 8, conv.out_channels = 16;
  relu.op = "ReLU";
  sites.nodes = {conv, relu};
  HostCalibration calibration;
  calibration.kind_scale = {{kAnyKind, 1.0}, {"conv", 3.0}, {"act", 0.5}};
  // rows: conv 6 ms, relu 2 ms, optimizer 2 ms (kAnyKind).
  EXPECT_NEAR(calibration.layer_factor(sites, {6, 2, 2}), (18 + 1 + 2) / 10.0, 1e-12);
}

// A layer timed here (by its case key) replaces its kind's scale: the model calibrated at its batch and input.
TEST(HostCalibration, TimedLayersReplaceTheirKindsScale) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.input = {3, 32, 32};
  const Graph graph = models::build_zoo_model("squeezenet1_1", spec);
  const features::LayerSites sites = features::layer_sites(graph);
  std::vector<double> rows(sites.nodes.size() + 1, 1.0);  // every row 1 ms at the source
  HostCalibration calibration;
  calibration.kind_scale = {{kAnyKind, 0.5}};
  double covered = -1;
  EXPECT_DOUBLE_EQ(calibration.layer_factor(graph, sites, rows, &covered), 0.5);
  EXPECT_EQ(covered, 0);
  // The first convolution timed here at 7 ms: its row is 7, the others keep 0.5 each.
  int first_conv = -1;
  for (int node = 0; node < graph.size() && first_conv < 0; ++node)
    if (graph.node(node).op == "Conv2d") first_conv = node;
  ASSERT_GE(first_conv, 0);
  calibration.layer_ms[models::case_of_node(graph, first_conv, "test").key] = 7;
  const double total = static_cast<double>(rows.size());
  EXPECT_NEAR(calibration.layer_factor(graph, sites, rows, &covered), (7 + 0.5 * (total - 1)) / total, 1e-12);
  EXPECT_NEAR(covered, 1 / total, 1e-12);
  // Another batch is another shape: not timed, the kind's scale again.
  spec.batch = 4;
  const Graph other = models::build_zoo_model("squeezenet1_1", spec);
  const features::LayerSites other_sites = features::layer_sites(other);
  EXPECT_DOUBLE_EQ(calibration.layer_factor(other, other_sites, std::vector<double>(other_sites.nodes.size() + 1, 1.0)),
                   0.5);
}

TEST(HostCalibration, FileRoundTripsAndRefusesNonsense) {
  cli_test::ScratchDir dir("host_calibration");
  ASSERT_TRUE(dir.ok());
  HostCalibration calibration;
  calibration.environment = host_environment();
  calibration.source_dir = kCpuSet;
  calibration.kind_scale = {{kAnyKind, 0.5}, {"conv", 0.25}};
  calibration.kind_layers = {{kAnyKind, 10}, {"conv", 4}};
  calibration.layer_ms = {{"abc:1x3x8x8", 2.5}};
  calibration.host_check_ratio = 0.77;
  calibration.host_check_source_ms = 98.7;
  calibration.host_check_checked = "2026-12-05T23:29:13Z";
  calibration.size_anchors = {{98.7, 0.77}, {38778, 0.44}};
  calibration.host_check_probes = {{278.9, 0.38, 326.2}, {92.9, 0.98, 30.5}};
  calibration.mix_anchors = {{278.9, 0.38, 326.2}, {92.9, 0.98, 30.5}, {38778, 0.44, 164}};
  calibration.shift = "ratio";
  calibration.log_intercept = std::log(1.8);
  calibration.log_spread = 0.2;
  calibration.save(dir.path() + "/a");
  HostCalibration loaded = HostCalibration::load(dir.path() + "/a");
  EXPECT_EQ(loaded.to_json(), calibration.to_json());

  auto refused = [&](json document, const std::string& expected) {
    std::ofstream(dir.path() + "/a/host.json") << document.dump();
    try {
      HostCalibration::load(dir.path() + "/a");
      ADD_FAILURE() << "accepted " << document.dump();
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  };
  json good = calibration.to_json();
  json bad = good;
  bad["format"] = "something/9";
  refused(bad, "not a host calibration");
  bad = good;
  bad["kind_scale"]["conv"] = -1;
  refused(bad, "kind_scale 'conv' is not a positive number");
  bad = good;
  bad["kind_scale"].erase("*");
  refused(bad, "no \"*\" entry");
  bad = good;
  bad["layer_ms"]["abc:1x3x8x8"] = 0;
  refused(bad, "layer_ms 'abc:1x3x8x8' is not a positive number");
  bad = good;
  bad["size_anchors"] = json::array({json::array({100, 0.5}), json::array({50, 0.5})});  // not rising
  refused(bad, "size_anchors[1] is not a positive source time (rising)");
  bad = good;
  bad["size_anchors"][0][1] = 0;
  refused(bad, "size_anchors[0]");
  bad = good;
  bad["mix_anchors"][1] = json::array({92.9, 0.98});  // no intensity
  refused(bad, "mix_anchors[1] is not [source ms, ratio below 100, intensity]");
  bad = good;
  bad["host_check"]["probes"][0][2] = "dense";
  refused(bad, "host_check: probes[0] is not");
  bad = good;
  bad["host_check"]["source_ms"] = -3;
  refused(bad, "host_check ratio or source_ms is not a positive number");
  bad = good;
  bad["shift"]["map"] = "magic";
  refused(bad, "unknown shift 'magic'");
  bad = good;
  bad.erase("environment");
  refused(bad, "host.json");
  EXPECT_THROW(HostCalibration::load(dir.path() + "/missing"), InputError);
}

TEST(HostCalibration, FoundForThisHostOnly) {
  cli_test::ScratchDir dir("host_calibration_find");
  ASSERT_TRUE(dir.ok());
  HostCalibration calibration;
  calibration.environment = host_environment();
  calibration.environment.cpu_family += 1;  // another CPU
  calibration.source_dir = kCpuSet;
  calibration.kind_scale = {{kAnyKind, 1.0}};
  calibration.save(dir.path() + "/other");
  EXPECT_FALSE(find_host_calibration(dir.path(), host_environment()));
  calibration.environment = host_environment();
  calibration.save(dir.path() + "/mine");
  std::ofstream(dir.path() + "/broken.json") << "{";  // not a folder: ignored
  EXPECT_EQ(find_host_calibration(dir.path(), host_environment()).value_or(""), dir.path() + "/mine");
  EXPECT_FALSE(find_host_calibration(dir.path() + "/none", host_environment()));
}

// predict through a calibration folder: the source set's forecast times the calibration's factor, with this host
// matched exactly; and found without flags through DNNCAST_CALIBRATIONS.
TEST(HostCalibration, PredictAppliesItsFactorToTheSourceForecast) {
  cli_test::ScratchDir dir("host_calibration_predict");
  ASSERT_TRUE(dir.ok());
  HostCalibration calibration = this_host_calibration(0.5);  // every layer half as long here...
  calibration.shift = "ratio";
  calibration.log_intercept = std::log(3.0);  // ...and real iterations three times the layers' share
  calibration.log_spread = 0.1;
  calibration.save(dir.path() + "/host");

  ForecastRequest request = source_request("resnet18", 8, 64);
  const Forecast source = source_forecast(request);
  request.predictor_dir = dir.path() + "/host";
  const Forecast calibrated = forecast(request);
  EXPECT_NEAR(calibrated.time_ms, source.time_ms * 1.5, 1e-9 * source.time_ms);
  EXPECT_LE(calibrated.time_ms_low, calibrated.time_ms / std::exp(0.1) + 1e-9);
  EXPECT_GE(calibrated.time_ms_high, calibrated.time_ms * std::exp(0.1) - 1e-9);
  // None of its layers was timed here: the interval keeps the unknown host's widening on top (issue 52).
  EXPECT_NEAR(calibrated.time_ms_low,
              std::min(source.time_ms_low * 1.5, calibrated.time_ms / std::exp(0.1)) / kUnmatchedHostWiden,
              1e-9 * source.time_ms);
  EXPECT_NEAR(calibrated.time_ms_high,
              std::max(source.time_ms_high * 1.5, calibrated.time_ms * std::exp(0.1)) * kUnmatchedHostWiden,
              1e-9 * source.time_ms);
  ASSERT_TRUE(calibrated.host_match);
  EXPECT_TRUE(calibrated.host_match->exact);
  EXPECT_EQ(calibrated.calibration, dir.path() + "/host");
  EXPECT_NE(calibrated.time_model.find("calibrated on this host"), std::string::npos);
  EXPECT_EQ(calibrated.peak_bytes, source.peak_bytes);  // memory is the simulator's either way

  // The CLI without flags finds it through DNNCAST_CALIBRATIONS (the tests' own is empty).
  const std::string saved = std::getenv("DNNCAST_CALIBRATIONS") ? std::getenv("DNNCAST_CALIBRATIONS") : "";
  setenv("DNNCAST_CALIBRATIONS", dir.path().c_str(), 1);
  cli_test::Result result =
      cli_test::run("predict", {"resnet18", "--batch", "8", "--input", "3x64x64", "--json"}, dir.path());
  setenv("DNNCAST_CALIBRATIONS", saved.c_str(), 1);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json printed = json::parse(result.out);
  EXPECT_EQ(printed["calibration"], dir.path() + "/host");
  EXPECT_NEAR(printed["time_ms"].get<double>(), calibrated.time_ms, 1e-9 * calibrated.time_ms);
  EXPECT_EQ(printed["host_match"]["match"], "exact");
  // A what-if ISA is not this host: the calibration is not used.
  setenv("DNNCAST_CALIBRATIONS", dir.path().c_str(), 1);
  result = cli_test::run("predict", {"resnet18", "--batch", "8", "--input", "3x64x64", "--json", "--host-isa", "avx2"},
                         dir.path());
  setenv("DNNCAST_CALIBRATIONS", saved.c_str(), 1);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(json::parse(result.out).contains("calibration"));

  // In process: found without a predictor folder, unless the request asks for the shipped set as it is (the host
  // check's probes, calibrate/host_probe.cpp).
  ForecastRequest found;
  found.model = request.model;
  found.host_check = false;
  setenv("DNNCAST_CALIBRATIONS", (dir.path() + "/none").c_str(), 1);
  const Forecast shipped = forecast(found);
  setenv("DNNCAST_CALIBRATIONS", dir.path().c_str(), 1);
  const Forecast followed = forecast(found);
  found.use_calibration = false;
  const Forecast unadapted = forecast(found);
  setenv("DNNCAST_CALIBRATIONS", saved.c_str(), 1);
  EXPECT_EQ(followed.calibration, dir.path() + "/host");
  EXPECT_TRUE(unadapted.calibration.empty());
  EXPECT_DOUBLE_EQ(unadapted.time_ms, shipped.time_ms);
  EXPECT_NE(unadapted.time_ms, followed.time_ms);
}

// Whole runs of this host that make a plane in intensity and size carry a configuration none of whose layers were
// timed here, and its interval is the plane's own error (kMixLogSpread each way), not the source's interval scaled:
// that one, made for the data's host, held every configuration on session 34's hosts (x4 wide on the AVX2 one).
TEST(HostCalibration, APlaneOfWholeRunsSetsTheIntervalByItsOwnError) {
  cli_test::ScratchDir dir("host_calibration_plane");
  ASSERT_TRUE(dir.ok());
  HostCalibration calibration = this_host_calibration(0.5);
  calibration.log_spread = 0.1;
  calibration.size_anchors = {{100, 0.7}, {1000, 0.6}};
  calibration.mix_anchors = {{280, 0.38, 326}, {93, 0.98, 30}, {26, 1.07, 52}, {139, 0.88, 327}, {38778, 0.44, 164}};
  calibration.save(dir.path() + "/host");

  ForecastRequest request = source_request("mobilenet_v2", 4, 64);
  const Forecast source = source_forecast(request);
  request.predictor_dir = dir.path() + "/host";
  const Forecast calibrated = forecast(request);
  const double intensity = arithmetic_intensity(import::load_model("mobilenet_v2", request.model.spec));
  ASSERT_TRUE(calibration.anchoring(intensity).plane());
  const double ratio = calibration.anchored_ratio(source.time_ms, intensity);
  EXPECT_NEAR(calibrated.time_ms, source.time_ms * ratio, 1e-9 * source.time_ms);
  EXPECT_NEAR(calibrated.time_ms_low, calibrated.time_ms * std::exp(-kMixLogSpread), 1e-9 * source.time_ms);
  EXPECT_NEAR(calibrated.time_ms_high, calibrated.time_ms * std::exp(kMixLogSpread), 1e-9 * source.time_ms);
  EXPECT_LT(calibrated.time_ms_high / calibrated.time_ms_low, source.time_ms_high / source.time_ms_low);
  // Farther than a factor of e in source time from every anchor, the plane's interval is wider (session 40: on the
  // Intel Xeon the rows between the probes and the calibrated run missed x1.50).
  EXPECT_DOUBLE_EQ(calibration.plane_log_spread(150), kMixLogSpread);
  EXPECT_DOUBLE_EQ(calibration.plane_log_spread(38778 * 2), kMixLogSpread);
  EXPECT_DOUBLE_EQ(calibration.plane_log_spread(280 * 3), kMixFarLogSpread);
  EXPECT_DOUBLE_EQ(calibration.plane_log_spread(10), kMixLogSpread);
  EXPECT_DOUBLE_EQ(calibration.plane_log_spread(5), kMixFarLogSpread);
  ForecastRequest far_request = source_request("resnet50", 4, 64);
  const Forecast far_source = source_forecast(far_request);
  ASSERT_GT(std::log(far_source.time_ms / 280), kMixNearLogDistance) << far_source.time_ms;
  ASSERT_GT(std::log(38778 / far_source.time_ms), kMixNearLogDistance) << far_source.time_ms;
  far_request.predictor_dir = dir.path() + "/host";
  const Forecast far = forecast(far_request);
  EXPECT_NEAR(far.time_ms_high, far.time_ms * std::exp(kMixFarLogSpread), 1e-9 * far.time_ms);
  EXPECT_NEAR(far.time_ms_low, far.time_ms * std::exp(-kMixFarLogSpread), 1e-9 * far.time_ms);
  bool said = false;
  for (const std::string& note : calibrated.notes)
    said |= note.find("by its size and intensity from 5 whole runs") != std::string::npos &&
            note.find("interval x1.50 each way") != std::string::npos;
  EXPECT_TRUE(said);

  // Four anchors too close in intensity make no plane: the line in size, and the source's interval scaled.
  for (MixAnchor& anchor : calibration.mix_anchors) anchor.intensity = 100;
  calibration.save(dir.path() + "/line");
  request.predictor_dir = dir.path() + "/line";
  const Forecast lined = forecast(request);
  const double scale = lined.time_ms / source.time_ms;
  EXPECT_NEAR(scale, calibration.anchored_ratio(source.time_ms), 1e-9);
  EXPECT_NEAR(lined.time_ms_high, std::max(source.time_ms_high * scale, lined.time_ms * std::exp(0.1)),
              1e-9 * source.time_ms);
}

// Issue 52: a configuration whose real iterations were timed here is forecast as its measurement, whatever the shift
// fitted over every model calibrated into the folder says (calibrating mobilenet_v2 after resnet50 moved resnet50's
// forecast 18% off its measurement); another configuration of a model timed here takes that model's own shift, and a
// model never timed here the folder's.
TEST(HostCalibration, AMeasuredConfigurationStaysItsMeasurement) {
  cli_test::ScratchDir dir("host_calibration_measured");
  ASSERT_TRUE(dir.ok());
  models::ModelSpec spec;
  spec.batch = 8;
  spec.input = {3, 64, 64};
  features::TrainingConfig config;
  config.batch = 8;
  HostCalibration calibration = this_host_calibration(0.5);
  calibration.shift = "ratio";
  calibration.log_intercept = std::log(3.0);
  const Graph resnet18 = import::load_model("resnet18", spec);
  calibration.whole_ms[whole_key(resnet18, config)] = 1234.5;
  calibration.model_log_shift[resnet18.architecture_hash()] = std::log(2.0);  // resnet18's own iterations: x2
  calibration.save(dir.path() + "/host");
  EXPECT_EQ(HostCalibration::load(dir.path() + "/host").whole_ms, calibration.whole_ms);  // kept in the file
  EXPECT_EQ(HostCalibration::load(dir.path() + "/host").model_log_shift, calibration.model_log_shift);

  ForecastRequest request;
  request.model.name = "resnet18";
  request.model.spec = spec;
  request.predictor_dir = kCpuSet;
  const Forecast source = source_forecast(request);
  request.predictor_dir = dir.path() + "/host";
  const Forecast measured = forecast(request);
  EXPECT_DOUBLE_EQ(measured.time_ms, 1234.5);
  EXPECT_NEAR(measured.time_ms_low, 1234.5 / 1.13, 0.5);
  EXPECT_NEAR(measured.time_ms_high, 1234.5 * 1.13, 0.5);
  EXPECT_NE(measured.time_model.find("measured on this host"), std::string::npos);
  // Batch 16 was not timed: the source forecast, layers x0.5, resnet18's own shift x2 (not the folder's x3).
  request.model.spec.batch = 16;
  const Forecast other = forecast(request);
  request.predictor_dir = kCpuSet;
  EXPECT_NEAR(other.time_ms, source_forecast(request).time_ms * 1.0, 1e-9 * other.time_ms);
  // A model never timed here takes the folder's shift: x0.5 x3.
  request.model.name = "mobilenet_v2";
  const Forecast mobilenet_source = source_forecast(request);
  request.predictor_dir = dir.path() + "/host";
  EXPECT_NEAR(forecast(request).time_ms, mobilenet_source.time_ms * 1.5, 1e-9 * mobilenet_source.time_ms);
  EXPECT_GT(source.time_ms, 0);
  // With whole runs of this host anchoring sizes: a model never timed here (none of its layers either) takes measured /
  // source at its own source forecast, and keeps the source's interval scaled (no widening).
  calibration.size_anchors = {{mobilenet_source.time_ms / 10, 0.5}, {mobilenet_source.time_ms * 10, 0.2}};
  calibration.save(dir.path() + "/host");
  const Forecast anchored = forecast(request);
  const double expected = mobilenet_source.time_ms * std::sqrt(0.5 * 0.2);  // halfway in log
  EXPECT_NEAR(anchored.time_ms, expected, 1e-9 * expected);
  EXPECT_NEAR(anchored.time_ms_low,
              std::min(mobilenet_source.time_ms_low * expected / mobilenet_source.time_ms,
                       expected / std::exp(calibration.log_spread)),
              1e-9 * expected);
  EXPECT_NE(anchored.notes.back().find("by its size from 2 whole runs of this host"), std::string::npos)
      << anchored.notes.back();
  // A broken entry names itself.
  json document = calibration.to_json();
  document["whole_ms"]["x"] = -1;
  EXPECT_THROW(HostCalibration::from_json(document, "test"), InputError);
}

}  // namespace
}  // namespace dnncast::forecast
