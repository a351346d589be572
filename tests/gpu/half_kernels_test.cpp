// Half-precision kernels (gpu/half_kernels.h): Vidur's fp16 rows are the kernels of the layer they name and the test
// GPUs' rows stay out; learned without one model, the model times that model's measured GEMMs; amp / bf16 transformer
// forecasts go through it and land near a published end-to-end time; bad files name themselves.
#include "gpu/half_kernels.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "gpu/gpu_forecast.h"

namespace dnncast::gpu {
namespace {

namespace fs = std::filesystem;

const hardware::Catalogue& catalogue() {
  static const hardware::Catalogue loaded = hardware::Catalogue::load();
  return loaded;
}

const HalfKernelTables* vidur() {
  static const HalfKernelTables* loaded = []() -> const HalfKernelTables* {
    if (default_vidur_dir().empty()) return nullptr;
    return new HalfKernelTables(load_vidur_kernels(catalogue()));
  }();
  return loaded;
}

TEST(HalfKernels, VidurRowsAreTheLayersKernelsAndTheTestGpusStayOut) {
  if (!vidur()) GTEST_SKIP() << "no ../shared/data/public/vidur/compute";
  std::set<std::string> gpus;
  for (const KernelMeasurement& row : vidur()->rows) gpus.insert(row.gpu);
  EXPECT_EQ(gpus, std::set<std::string>{"a40"});  // Vidur's A100 is an 80 GB one, and its H100 an H100
  EXPECT_GT(vidur()->held_out, 100000);
  // Llama-2-7B (hidden 4096, 32 heads, 32 KV heads, MLP 11008 gated) at 4096 tokens on one GPU: the fused QKV GEMM
  // is 4096 x 4096 -> 12288, gate+up 4096 -> 22016; their times are Vidur's medians (6.7 and 3.7 ms on the A40).
  bool qkv = false, up = false;
  for (const KernelMeasurement& row : vidur()->rows) {
    if (row.group != "Llama-2-7b-hf" || row.shape.family != KernelFamily::Gemm || row.shape.m != 4096) continue;
    if (row.shape.n == 12288 && row.shape.k == 4096) {
      qkv = true;
      EXPECT_NEAR(row.seconds, 3.7e-3, 0.2e-3);
    }
    if (row.shape.n == 22016 && row.shape.k == 4096) {
      up = true;
      EXPECT_NEAR(row.seconds, 6.7e-3, 0.3e-3);
      EXPECT_DOUBLE_EQ(row.shape.flops, 2.0 * 4096 * 22016 * 4096);
      EXPECT_DOUBLE_EQ(row.shape.bytes, 2.0 * (4096.0 * 4096 + 4096.0 * 22016 + 4096.0 * 22016));
    }
  }
  EXPECT_TRUE(qkv && up);
  const HalfKernelTables all = load_vidur_kernels(catalogue(), "", true);
  gpus.clear();
  for (const KernelMeasurement& row : all.rows) gpus.insert(row.gpu);
  EXPECT_EQ(gpus, (std::set<std::string>{"a100-80gb", "a40", "h100-sxm"}));
  EXPECT_EQ(all.held_out, 0);
  // No fit takes them.
  std::vector<KernelMeasurement> test_rows;
  for (const KernelMeasurement& row : all.rows)
    if (row.gpu == "h100-sxm" && test_rows.size() < 60) test_rows.push_back(row);
  EXPECT_THROW(GpuKernelModel::fit(test_rows, catalogue(), 1, true), InputError);
}

TEST(HalfKernels, LearnedWithoutAModelItTimesThatModelsGemms) {
  if (!vidur()) GTEST_SKIP() << "no ../shared/data/public/vidur/compute";
  std::vector<KernelMeasurement> train;
  for (const KernelMeasurement& row : vidur()->rows)
    if (row.group != "Llama-2-7b-hf") train.push_back(row);
  const GpuKernelModel model = GpuKernelModel::fit(train, catalogue(), 60, true);
  const KernelDevice a40 = half_kernel_device(catalogue().gpu("a40"), GpuPrecision::Fp16);
  const GpuCalibration calibration = load_gpu_calibration();
  double model_error = 0, roofline_error = 0, curve_error = 0;
  int rows = 0;
  for (const KernelMeasurement& row : vidur()->rows) {
    if (row.group != "Llama-2-7b-hf" || row.shape.family != KernelFamily::Gemm || row.shape.m < 256) continue;
    model_error += std::abs(model.timed_alone_seconds(row.shape, a40, row.gpu) / row.seconds - 1);
    roofline_error += std::abs(roofline_seconds(row.shape, a40) / row.seconds - 1);
    curve_error += std::abs(
        curve_kernel_seconds(row.shape, catalogue().gpu("a40"), GpuPrecision::Fp16, calibration) / row.seconds - 1);
    ++rows;
  }
  ASSERT_GT(rows, 500);
  EXPECT_LT(model_error / rows, 0.12);
  EXPECT_LT(model_error / rows, 0.6 * roofline_error / rows);
  EXPECT_LT(model_error / rows, 0.2 * curve_error / rows);  // the curves fitted on CNN tables miss these by 4x
}

TEST(HalfKernels, AGemmsShareAtTheFp32RateStaysWithTheModelAndCostsMoreWhereTensorCoresOutrunTheFp32Pipes) {
  // The A100's datasheet: 312 TFLOPS of FP16 tensor math, 19.5 of FP32 (16x); the A40's 149.7 and 37.4 (4x).
  const hardware::GpuSpec &a100 = catalogue().gpu("a100-40gb"), &a40 = catalogue().gpu("a40");
  const KernelDevice gemm = half_kernel_device(a100, GpuPrecision::Fp16, KernelFamily::Gemm, 0.05);
  EXPECT_NEAR(gemm.fp32_flops / (1 / (1 / 312e12 + 0.05 / 19.5e12)), 1.0, 0.002);
  EXPECT_DOUBLE_EQ(half_kernel_device(a100, GpuPrecision::Fp16, KernelFamily::Norm, 0.05).fp32_flops, 312e12);
  EXPECT_DOUBLE_EQ(half_kernel_device(a100, GpuPrecision::Fp16, KernelFamily::Gemm, 0).fp32_flops, 312e12);
  if (!vidur()) GTEST_SKIP() << "no ../shared/data/public/vidur/compute";
  std::vector<KernelMeasurement> rows;
  for (size_t index = 0; index < vidur()->rows.size(); index += 4) rows.push_back(vidur()->rows[index]);
  const GpuKernelModel plain = GpuKernelModel::fit(rows, catalogue(), 40, true, 0);
  const GpuKernelModel shared = GpuKernelModel::fit(rows, catalogue(), 40, true, 0.05);
  EXPECT_EQ(plain.gemm_vector_share(), 0);
  EXPECT_EQ(shared.gemm_vector_share(), 0.05);
  EXPECT_THROW(GpuKernelModel::fit(rows, catalogue(), 1, true, -0.1), InputError);
  // Learned on the A40 alone, the share moves a large GEMM's time on the A40 little and slows it on the A100, whose
  // tensor cores wait four times as long on the FP32 pipes for the same FLOPs.
  const KernelShape large = gemm_kernel(1, 8192, 8192, 8192, true);
  auto seconds = [&](const GpuKernelModel& model, const hardware::GpuSpec& gpu) {
    return model.seconds(large,
                         half_kernel_device(gpu, GpuPrecision::Fp16, KernelFamily::Gemm, model.gemm_vector_share()));
  };
  const double on_a40 = seconds(shared, a40) / seconds(plain, a40),
               on_a100 = seconds(shared, a100) / seconds(plain, a100);
  EXPECT_NEAR(on_a40, 1.0, 0.15);
  EXPECT_GT(on_a100, on_a40 * 1.2);
  // Written and read back with the model; a folder without the file is a model of share 0; a bad value is refused.
  const fs::path dir = fs::temp_directory_path() / ("dnncast-half-share-" + std::to_string(::getpid()));
  shared.save(dir.string(), "test");
  const GpuKernelModel loaded = GpuKernelModel::load(dir.string());
  EXPECT_EQ(loaded.gemm_vector_share(), 0.05);
  EXPECT_EQ(seconds(loaded, a100), seconds(shared, a100));
  fs::remove(dir / "tensor_gemm.csv");
  EXPECT_EQ(GpuKernelModel::load(dir.string()).gemm_vector_share(), 0);
  std::ofstream(dir / "tensor_gemm.csv") << "key,value\ngemm_vector_share,lots\n";
  try {
    GpuKernelModel::load(dir.string());
    ADD_FAILURE() << "a share 'lots' was read";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("tensor_gemm.csv line 2"), std::string::npos) << error.what();
  }
  fs::remove_all(dir);
}

TEST(HalfKernels, AmpTransformersAreTimedByThemNearAPublishedStep) {
  if (!shipped_half_kernel_model()) GTEST_SKIP() << "no data/hardware/gpu_kernels_fp16";
  const fs::path config = fs::temp_directory_path() / ("dnncast-bert-squad-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(config);
    out << R"({"architectures": ["BertForQuestionAnswering"], "model_type": "bert", "hidden_size": 768,
      "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
      "max_position_embeddings": 512, "type_vocab_size": 2, "vocab_size": 30522, "num_labels": 2})";
  }
  GpuForecastRequest request;
  request.model.name = config.string();
  request.model.spec.seq_len = 384;
  request.model.spec.batch = 108;
  request.optimizer = Optimizer::AdamW;
  request.gpu = catalogue().gpu("a40");
  std::map<GpuPrecision, GpuForecast> by;
  for (GpuPrecision precision : {GpuPrecision::Fp32, GpuPrecision::Tf32, GpuPrecision::Fp16}) {
    request.precision = precision;
    by[precision] = forecast_gpu(request);
    EXPECT_EQ(by[precision].time_model, "per-kernel");
  }
  fs::remove(config);
  // Tensor cores are faster than FP32 units: before the half-precision model, the curves said amp was slower.
  EXPECT_LT(by[GpuPrecision::Fp16].time_ms, by[GpuPrecision::Tf32].time_ms);
  EXPECT_LT(by[GpuPrecision::Tf32].time_ms, by[GpuPrecision::Fp32].time_ms);
  // NVIDIA's BERT-base SQuAD fine-tuning with amp at batch 108 on an A40: 603.35 ms a step (Lambda's published
  // table, ../shared/data/public/gpu_benchmarks/lambda_pytorch_dle_1gpu.csv; no fit read it).
  EXPECT_NEAR(by[GpuPrecision::Fp16].time_ms / 603.35, 1.0, 0.2);
  // A CNN at amp keeps the curves (no public half-precision convolution row).
  request.model.name = "resnet50";
  request.model.spec = {};
  request.model.spec.batch = 32;
  request.precision = GpuPrecision::Fp16;
  EXPECT_EQ(forecast_gpu(request).time_model, "calibrated curves");
}

TEST(HalfKernels, AMalformedVidurFileNamesItself) {
  const fs::path dir = fs::temp_directory_path() / ("dnncast-vidur-" + std::to_string(::getpid()));
  fs::create_directories(dir / "a40" / "org" / "tiny");
  {
    std::ofstream out(dir / "a40" / "org" / "tiny" / "mlp.csv");
    out << "time_stats.add.median,n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,"
           "num_tensor_parallel_workers\n0.01,4,4,256,1024,1000,True,64,1\nslow,4,4,256,1024,1000,True,64,1\n";
  }
  try {
    load_vidur_kernels(catalogue(), dir.string());
    ADD_FAILURE() << "a median 'slow' was read";
  } catch (const InputError& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("mlp.csv line 3"), std::string::npos) << text;
    EXPECT_NE(text.find("time_stats.add.median"), std::string::npos) << text;
  }
  fs::create_directories(dir / "v100" / "org" / "tiny");
  std::ofstream(dir / "v100" / "org" / "tiny" / "mlp.csv") << "n_head\n";
  EXPECT_THROW(load_vidur_kernels(catalogue(), dir.string()), InputError);
  EXPECT_THROW(load_vidur_kernels(catalogue(), (dir / "absent").string()), InputError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dnncast::gpu
