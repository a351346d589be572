// The executor and the isolation of measurements: a training step of a tiny network runs in a
// child process; parameters match the IR for every zoo model; peak memory is deterministic; out
// of memory, a crash and a hang come back as statuses while this process carries on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/op_registry.h"
#include "models/zoo.h"
#include "profile/internal.h"
#include "profile/measure.h"

namespace dnncast::profile {
namespace {

// 2 x 3 x 16 x 16 -> conv/bn/relu -> maxpool -> conv/bn -> add (residual) -> relu -> pool -> linear 10.
Graph tiny_network(int64_t batch = 2) {
  GraphBuilder b("tiny", "test");
  int x = b.input(TensorShape{batch, 3, 16, 16});
  x = b.conv("conv1", x, 8, 3, 1, 1, 1, false);
  x = b.batchnorm("bn1", x);
  x = b.act("relu1", "ReLU", x);
  x = b.maxpool("pool", x, 2, 2);
  int y = b.conv("conv2", x, 8, 3, 1, 1);
  y = b.batchnorm("bn2", y);
  x = b.add("add", x, y);
  x = b.act("relu2", "ReLU", x);
  x = b.adaptive_avgpool("gap", x, 1, 1);
  x = b.flatten("flatten", x);
  b.linear("fc", x, 10);
  return b.finish();
}

Limits quick_limits() {
  Limits limits;
  limits.time_budget_s = 0.3;
  limits.warmup_budget_s = 0.3;
  limits.timeout_s = 60;
  return limits;
}

// Sets an environment variable for one scope (the child inherits it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(Profile, TinyNetworkTrainsInAChild) {
  Graph graph = tiny_network();
  Measurement m = measure_isolated(graph, TrainConfig{}, quick_limits());
  ASSERT_EQ(m.status, "ok") << m.message;
  EXPECT_GT(m.time_ms.median, 0);
  EXPECT_LE(m.time_ms.p10, m.time_ms.median);
  EXPECT_GE(m.time_ms.p90, m.time_ms.median);
  EXPECT_GE(m.time_ms.n, 5);
  EXPECT_EQ(static_cast<int64_t>(m.iteration_ms.size()), m.time_ms.n);
  EXPECT_GE(m.warmup_iterations, 2);
  EXPECT_EQ(m.params, graph_param_count(graph));
  EXPECT_EQ(m.param_bytes, 4 * m.params);
  EXPECT_EQ(m.grad_bytes, m.param_bytes);             // every parameter got a gradient
  EXPECT_EQ(m.optimizer_state_bytes, m.param_bytes);  // SGD momentum: one buffer per parameter
  // Above the baseline: at least the gradients and the momentum buffers.
  EXPECT_GE(m.peak_bytes, m.grad_bytes + m.optimizer_state_bytes);
  EXPECT_GT(m.probe_before_ms, 0);
  EXPECT_GT(m.probe_after_ms, 0);
  EXPECT_GT(m.time_ms_normalised, 0);
  EXPECT_FALSE(m.env.cpu_model.empty());
  EXPECT_EQ(m.env.threads, 1);
  EXPECT_FALSE(m.env.torch_version.empty());
  EXPECT_FALSE(m.energy_note.empty());  // a source or the reason there is none
}

TEST(Profile, AdamStateIsTwoBuffersPerParameter) {
  TrainConfig config;
  config.optimizer = Optimizer::AdamW;
  Measurement m = measure_isolated(tiny_network(), config, quick_limits());
  ASSERT_EQ(m.status, "ok") << m.message;
  EXPECT_EQ(m.optimizer_state_bytes, 2 * m.param_bytes);
}

TEST(Profile, Bf16AutocastOnCpu) {
  TrainConfig config;
  config.precision = Precision::Bf16;
  Measurement m = measure_isolated(tiny_network(), config, quick_limits());
  ASSERT_EQ(m.status, "ok") << m.message;
  EXPECT_EQ(m.param_bytes, 4 * m.params);  // master weights stay fp32 under autocast
}

// bf16-pure: parameters, gradients and SGD's momentum in bf16 (2 bytes each), as model.bfloat16() trains; the
// BatchNorm and convolutions of the tiny network run in bf16 too (the executor needs no per-op support).
TEST(Profile, PureBf16TrainsEverythingInBf16) {
  TrainConfig config;
  config.precision = Precision::Bf16Pure;
  Measurement m = measure_isolated(tiny_network(), config, quick_limits());
  ASSERT_EQ(m.status, "ok") << m.message;
  EXPECT_EQ(m.param_bytes, 2 * m.params);
  EXPECT_EQ(m.grad_bytes, 2 * m.params);
  EXPECT_EQ(m.optimizer_state_bytes, 2 * m.params);
}

TEST(Profile, PeakBytesIdenticalAcrossProcesses) {
  Graph graph = tiny_network(4);
  std::set<int64_t> peaks;
  for (int repeat = 0; repeat < 3; ++repeat) {
    Measurement m = measure_isolated(graph, TrainConfig{}, quick_limits());
    ASSERT_EQ(m.status, "ok") << m.message;
    peaks.insert(m.peak_bytes);
  }
  EXPECT_EQ(peaks.size(), 1u) << "peak bytes differ between processes";
  EXPECT_GT(*peaks.begin(), 0);
}

TEST(Profile, PerLayerTimesEveryNode) {
  TrainConfig config;
  config.per_layer = true;
  Graph graph = tiny_network();
  Measurement m = measure_isolated(graph, config, quick_limits());
  ASSERT_EQ(m.status, "ok") << m.message;
  ASSERT_EQ(static_cast<int>(m.layers.size()), graph.size() - 1);  // all but the Input
  double sum = 0;
  for (const LayerTime& layer : m.layers) {
    EXPECT_GT(layer.forward_ms, 0) << layer.node;
    EXPECT_GT(layer.backward_ms, 0) << layer.node;  // every node here has a backward
    sum += layer.forward_ms + layer.backward_ms;
  }
  EXPECT_NEAR(m.layer_sum_ms, sum, 1e-9);
  EXPECT_GT(m.optimizer_step_ms, 0);
  EXPECT_GT(m.zero_grad_ms, 0);
  EXPECT_NEAR(m.layer_gap_ms, m.time_ms.median - sum - m.optimizer_step_ms - m.zero_grad_ms, 1e-9);
}

TEST(Profile, SmallMemoryLimitIsOom) {
  Limits limits = quick_limits();
  limits.memory_bytes = 200 * 1024;  // the tiny network's activations alone exceed this at batch 64
  Measurement m = measure_isolated(tiny_network(64), TrainConfig{}, limits);
  EXPECT_EQ(m.status, "oom") << m.message;
  EXPECT_NE(m.message.find("limit"), std::string::npos) << m.message;
  // The parent is unharmed: the next measurement works.
  EXPECT_EQ(measure_isolated(tiny_network(), TrainConfig{}, quick_limits()).status, "ok");
}

TEST(Profile, ThrowingOpIsError) {
  ScopedEnv fault("DNNCAST_PROFILE_FAULT", "throw:conv2");
  Measurement m = measure_isolated(tiny_network(), TrainConfig{}, quick_limits());
  EXPECT_EQ(m.status, "error");
  EXPECT_NE(m.message.find("injected fault in node 'conv2'"), std::string::npos) << m.message;
}

TEST(Profile, CrashingChildIsError) {
  ScopedEnv fault("DNNCAST_PROFILE_FAULT", "abort:bn2");
  Measurement m = measure_isolated(tiny_network(), TrainConfig{}, quick_limits());
  EXPECT_EQ(m.status, "error");
  EXPECT_NE(m.message.find("signal 6"), std::string::npos) << m.message;
}

TEST(Profile, HangingChildTimesOut) {
  ScopedEnv fault("DNNCAST_PROFILE_FAULT", "hang:fc");
  Limits limits = quick_limits();
  limits.timeout_s = 4;
  Measurement m = measure_isolated(tiny_network(), TrainConfig{}, limits);
  EXPECT_EQ(m.status, "timeout") << m.message;
  EXPECT_GE(m.wall_s, 4);
  EXPECT_LT(m.wall_s, 20);
}

TEST(Profile, BadConfigurationsAreInputErrors) {
  Graph graph = tiny_network();
  TrainConfig config;
  config.precision = Precision::Fp16;  // cpu autocasts to bf16 only
  EXPECT_THROW(measure_isolated(graph, config, quick_limits()), InputError);
  config = TrainConfig{};
  config.threads = 100000;
  EXPECT_THROW(measure_isolated(graph, config, quick_limits()), InputError);
  config = TrainConfig{};
  config.device = Device::Cuda;  // Debian's libtorch has no CUDA
  if (!detail::cuda_available()) {
    EXPECT_THROW(measure_isolated(graph, config, quick_limits()), InputError);
  }
}

TEST(Profile, UnsupportedOpNamesIt) {
  Graph graph;
  graph.name = "odd";
  Node input;
  input.name = "x";
  input.op = "Input";
  input.attrs["shape"] = std::vector<int64_t>{1, 4};
  graph.add(input);
  Node odd;
  odd.name = "warp";
  odd.op = "WarpDrive";
  odd.inputs = {0};
  graph.add(odd);
  try {
    check_supported(graph);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("'WarpDrive'"), std::string::npos) << text;
    EXPECT_NE(text.find("'warp'"), std::string::npos) << text;
  }
}

TEST(Profile, ExecutorRunsEveryRegisteredOp) {
  std::vector<std::string> supported = supported_ops();
  std::set<std::string> have(supported.begin(), supported.end());
  for (const std::string& name : OpRegistry::instance().names())
    EXPECT_TRUE(have.count(name)) << "executor lacks " << name;
}

// The module's parameters are created by the executor from each op's attributes, independently
// of the op's cost rule; both must agree for every model of the zoo (torchvision's counts are
// checked against the IR in tests/models).
TEST(Profile, ModuleParametersEqualTheIrForTheWholeZoo) {
  for (const models::ZooEntry& entry : models::zoo()) {
    models::ModelSpec spec;
    spec.batch = 1;
    Graph graph = models::build_zoo_model(entry.name, spec);
    EXPECT_EQ(module_param_count(graph), graph_param_count(graph)) << entry.name;
  }
}

TEST(Profile, StatisticsOfKnownSamples) {
  std::vector<double> values{5, 1, 4, 2, 3};
  EXPECT_TRUE(std::isinf(detail::median_rel_ci(values)));  // too few samples
  std::vector<double> flat(50, 10.0);
  EXPECT_DOUBLE_EQ(detail::median_rel_ci(flat), 0);
  std::vector<double> ramp;
  for (int index = 1; index <= 100; ++index) ramp.push_back(index);
  // n = 100: ranks 40 and 61 bound the median (50.5): half-width 10.5.
  EXPECT_NEAR(detail::median_rel_ci(ramp), 10.5 / 50.5, 1e-12);
  EXPECT_EQ(detail::cpu_list_text({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
}

TEST(Profile, MeasurementJsonRoundTrips) {
  Measurement m;
  m.time_ms = {12.5, 11, 14, 12.7, 40, 0.01};
  m.iteration_ms = {12.5, 12.4};
  m.peak_bytes = 12345;
  m.energy_j = 1.5;
  m.energy_note = "test";
  m.layers = {{"conv1", "Conv2d", 1.0, 2.0}};
  m.layer_sum_ms = 3;
  m.env.cpu_model = "cpu";
  Measurement back = measurement_from_json(to_json(m));
  EXPECT_EQ(back.time_ms.median, 12.5);
  EXPECT_EQ(back.time_ms.n, 40);
  EXPECT_EQ(back.peak_bytes, 12345);
  ASSERT_TRUE(back.energy_j.has_value());
  EXPECT_EQ(*back.energy_j, 1.5);
  ASSERT_EQ(back.layers.size(), 1u);
  EXPECT_EQ(back.layers[0].backward_ms, 2.0);
  EXPECT_EQ(back.env.cpu_model, "cpu");
  EXPECT_EQ(back.iteration_ms.size(), 2u);
}

}  // namespace
}  // namespace dnncast::profile
