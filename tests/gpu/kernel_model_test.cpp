// The per-kernel GPU model (gpu/kernel_model.h): learned across GPUs from NeuSight's published kernel latencies,
// it beats the plain roofline on a GPU it never saw; the shipped fit never saw a test GPU of NeuSight's protocol;
// a node's kernels carry its FLOPs; what a phase times orders as it must; bad files name themselves.
#include "gpu/kernel_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "gpu/gpu_forecast.h"
#include "gpu/kernel_evaluation.h"
#include "graph/op_registry.h"
#include "import/model_source.h"

namespace dnncast::gpu {
namespace {

namespace fs = std::filesystem;

const hardware::Catalogue& catalogue() {
  static const hardware::Catalogue loaded = hardware::Catalogue::load();
  return loaded;
}

// The published kernel tables, skipping the test when the shared data is not beside the checkout.
const KernelTables* tables() {
  static const KernelTables* loaded = []() -> const KernelTables* {
    if (default_kernel_tables_dir().empty()) return nullptr;
    return new KernelTables(load_kernel_tables(catalogue()));
  }();
  return loaded;
}

TEST(KernelModel, LearnedOnFourGpusItBeatsTheRooflineOnTheFifth) {
  if (!tables()) GTEST_SKIP() << "no ../shared/data/public/neusight/ops/train";
  // Every 8th row of four GPUs; all of the V100's rows judged (their latencies are NeuSight's measurements).
  std::vector<KernelMeasurement> train;
  int64_t index = 0;
  for (const KernelMeasurement& row : tables()->rows)
    if (row.gpu != "v100-32gb" && index++ % 8 == 0) train.push_back(row);
  const GpuKernelModel model = GpuKernelModel::fit(train, catalogue(), 80);
  const KernelDevice v100 = kernel_device(catalogue().gpu("v100-32gb"));
  std::array<double, kKernelFamilies> model_error{}, roofline_error{};
  std::array<int64_t, kKernelFamilies> rows{};
  for (const KernelMeasurement& row : tables()->rows) {
    if (row.gpu != "v100-32gb") continue;
    const size_t family = static_cast<size_t>(row.shape.family);
    model_error[family] += std::abs(model.timed_alone_seconds(row.shape, v100, row.gpu) / row.seconds - 1);
    roofline_error[family] += std::abs(roofline_seconds(row.shape, v100) / row.seconds - 1);
    ++rows[family];
  }
  for (size_t family = 0; family < kKernelFamilies; ++family) {
    ASSERT_GT(rows[family], 1000) << name(static_cast<KernelFamily>(family));
    const double model_mre = model_error[family] / rows[family], roof_mre = roofline_error[family] / rows[family];
    EXPECT_LT(model_mre, 0.9 * roof_mre) << name(static_cast<KernelFamily>(family));
    EXPECT_LT(model_mre, 0.5) << name(static_cast<KernelFamily>(family));
  }
}

TEST(KernelModel, NoFitSeesATestGpuOfNeuSightsProtocol) {
  for (const char* gpu : {"h100-sxm", "h100-pcie", "l4", "a100-80gb", "a100-80gb-pcie"})
    EXPECT_TRUE(is_held_out_test_gpu(catalogue().gpu(gpu).name)) << gpu;
  EXPECT_FALSE(is_held_out_test_gpu("a100-40gb-pcie"));
  KernelMeasurement row;
  row.shape = gemm_kernel(1, 512, 512, 512);
  row.gpu = "l4";
  row.seconds = 1e-4;
  EXPECT_THROW(GpuKernelModel::fit({row}, catalogue(), 1), InputError);
  // The shipped fit: five training GPUs, none of the test GPUs.
  const GpuKernelModel shipped = GpuKernelModel::load();
  const std::set<std::string> gpus(shipped.gpus().begin(), shipped.gpus().end());
  EXPECT_EQ(gpus, (std::set<std::string>{"a100-40gb-pcie", "p100", "p4", "t4", "v100-32gb"}));
  for (int family = 0; family < kKernelFamilies; ++family)
    EXPECT_TRUE(shipped.has(static_cast<KernelFamily>(family))) << family;
  if (tables()) {
    EXPECT_GT(tables()->held_out, 4000);  // the A100 80GB's conv file
  }
}

TEST(KernelModel, ANodesKernelsCarryItsFlops) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 128;
  const Graph graph = import::load_model("gpt2_small", spec);
  int linear = 0, attention = 0;
  for (int index = 0; index < static_cast<int>(graph.nodes().size()); ++index) {
    const Node& node = graph.nodes()[static_cast<size_t>(index)];
    if (node.op != "Linear" && node.op != "ScaledDotProductAttention") continue;
    const OpCost cost = node_cost(graph, index);
    const NodeKernels kernels = node_kernels(graph, index);
    double gemm_forward = 0, gemm_backward = 0;
    for (const KernelShape& shape : kernels.forward)
      if (shape.family == KernelFamily::Gemm) gemm_forward += shape.flops;
    for (const KernelShape& shape : kernels.backward)
      if (shape.family == KernelFamily::Gemm) gemm_backward += shape.flops;
    // The GEMMs are the op's multiply-accumulates: 2 MACs forward, 4 backward (both gradients).
    EXPECT_DOUBLE_EQ(gemm_forward, 2.0 * static_cast<double>(cost.macs)) << node.name;
    EXPECT_DOUBLE_EQ(gemm_backward, 4.0 * static_cast<double>(cost.macs)) << node.name;
    (node.op == "Linear" ? linear : attention)++;
  }
  EXPECT_GT(linear, 40);
  EXPECT_EQ(attention, 12);
}

// Issue 37: a forecast predicts all its kernels at once, each family's rows walking the trees together: each the
// same, to the bit, as that kernel predicted alone.
TEST(KernelModel, KernelsPredictedTogetherEqualEachAlone) {
  models::ModelSpec spec;
  spec.batch = 24;
  const GpuWork work =
      gpu_work(import::load_model("resnet50", spec), GpuPrecision::Fp32, Optimizer::Sgd, GpuPhase::Train);
  const GpuKernelModel model = GpuKernelModel::load();
  const KernelDevice device = kernel_device(catalogue().gpu("a100-40gb"));
  std::vector<const KernelShape*> shapes;
  for (const auto& shaped : work.shaped) shapes.push_back(&shaped.first);
  ASSERT_GT(shapes.size(), 20u);
  const std::vector<double> together = model.seconds_many(shapes, device);
  ASSERT_EQ(together.size(), shapes.size());
  for (size_t index = 0; index < shapes.size(); ++index)
    EXPECT_EQ(together[index], model.seconds(*shapes[index], device)) << "kernel " << index;
}

TEST(KernelModel, PhasesOrderAsWhatTheyTime) {
  models::ModelSpec spec;
  spec.batch = 4;
  spec.seq_len = 256;
  const Graph graph = import::load_model("gpt2_small", spec);
  const GpuWork train = gpu_work(graph, GpuPrecision::Fp32, Optimizer::Adam, GpuPhase::Train);
  const GpuWork step = gpu_work(graph, GpuPrecision::Fp32, Optimizer::Adam, GpuPhase::ForwardBackward);
  const GpuWork inference = gpu_work(graph, GpuPrecision::Fp32, Optimizer::Adam, GpuPhase::Inference);
  const GpuCalibration calibration = load_gpu_calibration();
  const GpuKernelModel model = GpuKernelModel::load();
  const hardware::GpuSpec& gpu = catalogue().gpu("a100-40gb");
  auto time = [&](const GpuWork& work) {
    const GpuTiming timing = time_on_gpu(work, gpu, GpuPrecision::Fp32, Framework::PyTorch, calibration, &model);
    EXPECT_TRUE(timing.per_kernel);
    return timing.time_ms;
  };
  const double t_train = time(train), t_step = time(step), t_inference = time(inference);
  EXPECT_GT(t_train, t_step);
  // Backward is about twice the forward's work: forward-backward 2.4-4x the forward alone.
  EXPECT_GT(t_step, 2.4 * t_inference);
  EXPECT_LT(t_step, 4.0 * t_inference);
  EXPECT_EQ(parse_gpu_phase("forward-backward"), GpuPhase::ForwardBackward);
  EXPECT_THROW(parse_gpu_phase("backward"), InputError);
  // A tensor-core precision keeps the calibrated curves without the half-precision model (half_kernels.h).
  EXPECT_FALSE(time_on_gpu(train, gpu, GpuPrecision::Bf16, Framework::PyTorch, calibration, &model).per_kernel);
}

TEST(KernelModel, AMalformedTableOrModelNamesItself) {
  const fs::path dir = fs::temp_directory_path() / ("dnncast-kernels-" + std::to_string(::getpid()));
  fs::create_directories(dir / "linear");
  {
    std::ofstream out(dir / "linear" / "Tesla_T4.csv");
    out << "OPName,Latency,B,M,N,K\nlinear,0.05,1,64,64,64\nlinear,fast,1,64,64,64\n";
  }
  try {
    load_kernel_tables(catalogue(), dir.string());
    ADD_FAILURE() << "a latency 'fast' was read";
  } catch (const InputError& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("Tesla_T4.csv line 3"), std::string::npos) << text;
    EXPECT_NE(text.find("Latency"), std::string::npos) << text;
  }
  {
    std::ofstream out(dir / "floors.csv");
    out << "gpu,family,launch_floor_us\nt4,gemm\n";
  }
  try {
    GpuKernelModel::load(dir.string());
    ADD_FAILURE() << "a floors.csv row without its value was read";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("floors.csv line 2"), std::string::npos) << error.what();
  }
  EXPECT_THROW(GpuKernelModel::load((dir / "absent").string()), InputError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dnncast::gpu
