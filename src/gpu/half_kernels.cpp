// Half-precision kernels from Vidur's measurements (half_kernels.h).
#include "gpu/half_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "core/csv.h"
#include "core/error.h"

namespace dnncast::gpu {

namespace fs = std::filesystem;

namespace {

// Vidur's GPU folders and the catalogue's names for them (Vidur's A100 is the 80 GB SXM4 of a DGX A100).
const std::map<std::string, std::string>& vidur_gpus() {
  static const std::map<std::string, std::string> gpus = {{"a100", "a100-80gb"}, {"a40", "a40"}, {"h100", "h100-sxm"}};
  return gpus;
}

struct VidurLayer {
  double heads = 0, kv_heads = 0, embd = 0, expanded = 0, tokens = 0, tp = 1;
  bool gated = false;
};

// The kernels of one of Vidur's rows, by its column name, at 2 bytes an element (half_kernels.h).
std::vector<std::pair<std::string, KernelShape>> layer_kernels(const VidurLayer& layer) {
  const double tokens = layer.tokens, embd = layer.embd, head_dim = layer.embd / layer.heads;
  const double qkv = (layer.heads + 2 * layer.kv_heads) * head_dim / layer.tp;
  const double expanded = layer.expanded / layer.tp;
  auto gemm = [&](double n, double k) {
    KernelShape shape = gemm_kernel(1, tokens, n, k, true);
    shape.bytes *= 0.5;
    return shape;
  };
  const double rotary = tokens * (layer.heads + layer.kv_heads) * head_dim / layer.tp;
  const double act = tokens * expanded;
  return {
      {"emb", elementwise_kernel(tokens * embd, 0, 4 * tokens * embd + 8 * tokens)},  // gather rows, write them
      {"input_layernorm", row_kernel(KernelFamily::Norm, tokens, embd, 5, 4)},
      {"attn_pre_proj", gemm(qkv, embd)},
      {"attn_rope", elementwise_kernel(rotary, 6 * rotary, 4 * rotary + 16 * tokens * head_dim / 2)},
      {"attn_post_proj", gemm(embd, layer.heads * head_dim / layer.tp)},
      {"post_attention_layernorm", row_kernel(KernelFamily::Norm, tokens, embd, 5, 4)},
      {"mlp_up_proj", gemm((layer.gated ? 2 : 1) * expanded, embd)},
      // SiLU-and-multiply reads gate and up and writes one; GELU reads one and writes one.
      {"mlp_act", layer.gated ? elementwise_kernel(act, 6 * act, 6 * act) : elementwise_kernel(act, 8 * act, 4 * act)},
      {"mlp_down_proj", gemm(embd, expanded)},
      {"add", elementwise_kernel(tokens * embd, tokens * embd, 6 * tokens * embd)},
  };
}

double field(const std::map<std::string, size_t>& columns, const std::vector<std::string>& fields,
             const std::string& column, const std::string& where, bool allow_zero = false) {
  const auto at = columns.find(column);
  if (at == columns.end()) throw InputError(where + ": no column " + column);
  const std::string& text = at->second < fields.size() ? fields[at->second] : std::string();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || value < 0 || (value == 0 && !allow_zero))
    throw InputError(where + ": column " + column + " is " + quote(text) + ", not a positive number");
  return value;
}

double relative_error(double forecast, double measured) { return std::abs(forecast - measured) / measured; }

}  // namespace

KernelDevice half_kernel_device(const hardware::GpuSpec& gpu, GpuPrecision precision) {
  KernelDevice device = kernel_device(gpu);
  const std::optional<double>& peak = precision == GpuPrecision::Bf16   ? gpu.bf16_tensor_tflops
                                      : precision == GpuPrecision::Tf32 ? gpu.tf32_tensor_tflops
                                                                        : gpu.fp16_tensor_tflops;
  const char* column = precision == GpuPrecision::Bf16   ? "bf16_tensor_tflops"
                       : precision == GpuPrecision::Tf32 ? "tf32_tensor_tflops"
                                                         : "fp16_tensor_tflops";
  if (!(peak.value_or(0) > 0))
    throw InputError("GPU " + quote(gpu.name) + " has no " + column + " in the catalogue (" + gpu.file +
                     "): the half-precision kernel model needs it");
  device.fp32_flops = *peak * 1e12;
  return device;
}

KernelDevice half_kernel_device(const hardware::GpuSpec& gpu, GpuPrecision precision, KernelFamily family,
                                double gemm_vector_share) {
  KernelDevice device = half_kernel_device(gpu, precision);
  if (family == KernelFamily::Gemm && gemm_vector_share > 0)
    device.fp32_flops = 1 / (1 / device.fp32_flops + gemm_vector_share / (*gpu.fp32_tflops * 1e12));
  return device;
}

std::string default_vidur_dir() { return shared_public_dir("DNNCAST_VIDUR_DATA", "vidur/compute"); }

HalfKernelTables load_vidur_kernels(const hardware::Catalogue& catalogue, const std::string& given,
                                    bool include_test_gpus) {
  HalfKernelTables tables;
  tables.dir = given.empty() ? default_vidur_dir() : given;
  std::error_code error;
  if (tables.dir.empty() || !fs::is_directory(tables.dir, error))
    throw InputError(
        "no Vidur kernel folder found (../shared/data/public/vidur/compute): set DNNCAST_VIDUR_DATA or pass "
        "--half-kernels DIR");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(tables.dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error))
    if (it->path().filename() == "mlp.csv.xz" || it->path().filename() == "mlp.csv") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError("no GPU/ORG/MODEL/mlp.csv[.xz] under " + quote(tables.dir));
  for (const fs::path& file : files) {
    const fs::path relative = fs::relative(file, tables.dir, error);
    const std::string folder = relative.begin()->string();
    const auto mapped = vidur_gpus().find(folder);
    if (mapped == vidur_gpus().end())
      throw InputError(file.string() + ": GPU folder " + quote(folder) + " is not one of Vidur's a100, a40, h100");
    const hardware::GpuSpec& gpu = catalogue.gpu(mapped->second);
    const bool test = is_held_out_test_gpu(gpu.name);
    const std::string model = file.parent_path().filename().string();
    std::istringstream in(table_text(file.string()));
    std::vector<std::string> header, fields;
    int64_t line = 0;
    if (!read_csv_record(in, header, line)) throw InputError(file.string() + ": empty");
    std::map<std::string, size_t> columns;
    for (size_t index = 0; index < header.size(); ++index) columns[header[index]] = index;
    while (read_csv_record(in, fields, line)) {
      if (fields.empty() || (fields.size() == 1 && fields[0].empty())) continue;
      const std::string where = file.string() + " line " + std::to_string(line);
      VidurLayer layer;
      layer.heads = field(columns, fields, "n_head", where);
      layer.kv_heads = field(columns, fields, "n_kv_head", where);
      layer.embd = field(columns, fields, "n_embd", where);
      layer.expanded = field(columns, fields, "n_expanded_embd", where);
      layer.tokens = field(columns, fields, "num_tokens", where);
      layer.tp = field(columns, fields, "num_tensor_parallel_workers", where);
      const auto gated = columns.find("use_gated_mlp");
      if (gated == columns.end() || gated->second >= fields.size()) throw InputError(where + ": no use_gated_mlp");
      layer.gated = fields[gated->second] == "True";
      for (const auto& [column, shape] : layer_kernels(layer)) {
        const std::string name = "time_stats." + column + ".median";
        if (!columns.count(name)) continue;  // a layer without it (phi-2 has no second norm)
        if (test && !include_test_gpus) {
          ++tables.held_out;
          continue;
        }
        KernelMeasurement row;
        row.shape = shape;
        row.gpu = gpu.name;
        row.group = model;
        row.seconds = field(columns, fields, name, where) * 1e-3;
        tables.rows.push_back(row);
      }
    }
  }
  return tables;
}

double curve_kernel_seconds(const KernelShape& shape, const hardware::GpuSpec& gpu, GpuPrecision precision,
                            const GpuCalibration& calibration) {
  const KernelDevice device = half_kernel_device(gpu, precision);
  const double vector = *gpu.fp32_tflops * 1e12;
  const double memory_s = shape.bytes / (device.bandwidth * calibration.memory_efficiency);
  double compute_s = shape.flops / vector;
  if (shape.family == KernelFamily::Gemm || shape.family == KernelFamily::Conv) {
    const GpuCalibration::Curve& curve =
        shape.family == KernelFamily::Gemm ? calibration.gemm_tensor : calibration.conv_tensor;
    compute_s = curve_compute_seconds(shape.flops, curve, device.fp32_flops, vector, device.sms, true, calibration);
  }
  return std::max(compute_s + memory_s, calibration.kernel_launch_us * 1e-6);
}

std::vector<HalfKernelError> judge_half_kernels(const HalfKernelTables& tables, const hardware::Catalogue& catalogue,
                                                const GpuCalibration& calibration, int rounds,
                                                double gemm_vector_share) {
  std::vector<KernelMeasurement> training;
  std::set<std::string> groups;
  for (const KernelMeasurement& row : tables.rows)
    if (!is_held_out_test_gpu(row.gpu)) training.push_back(row), groups.insert(row.group);
  if (training.empty()) throw InputError("no half-precision kernel rows of a training GPU in " + quote(tables.dir));
  // The model of each row: on a training GPU, fitted without the row's model; on a test GPU, fitted on every row.
  std::map<std::string, GpuKernelModel> without;
  for (const std::string& group : groups) {
    std::vector<KernelMeasurement> rest;
    for (const KernelMeasurement& row : training)
      if (row.group != group) rest.push_back(row);
    without.emplace(group, GpuKernelModel::fit(rest, catalogue, rounds, true, gemm_vector_share));
  }
  std::unique_ptr<GpuKernelModel> all;
  struct Sum {
    int64_t rows = 0;
    double model = 0, curve = 0, roofline = 0;
  };
  std::map<std::pair<std::string, int>, Sum> sums;
  for (const KernelMeasurement& row : tables.rows) {
    const bool test = is_held_out_test_gpu(row.gpu);
    if (test && !all)
      all = std::make_unique<GpuKernelModel>(GpuKernelModel::fit(training, catalogue, rounds, true, gemm_vector_share));
    const GpuKernelModel& model = test ? *all : without.at(row.group);
    const hardware::GpuSpec& gpu = catalogue.gpu(row.gpu);
    const KernelDevice device =
        half_kernel_device(gpu, GpuPrecision::Fp16, row.shape.family, model.gemm_vector_share());
    Sum& sum = sums[{row.gpu, static_cast<int>(row.shape.family)}];
    ++sum.rows;
    sum.model += relative_error(model.timed_alone_seconds(row.shape, device, row.gpu), row.seconds);
    sum.curve += relative_error(curve_kernel_seconds(row.shape, gpu, GpuPrecision::Fp16, calibration), row.seconds);
    sum.roofline += relative_error(roofline_seconds(row.shape, device), row.seconds);
  }
  std::vector<HalfKernelError> errors;
  for (const auto& [key, sum] : sums) {
    HalfKernelError error;
    error.gpu = key.first;
    error.family = static_cast<KernelFamily>(key.second);
    error.rows = sum.rows;
    error.model_mre = sum.model / static_cast<double>(sum.rows);
    error.curve_mre = sum.curve / static_cast<double>(sum.rows);
    error.roofline_mre = sum.roofline / static_cast<double>(sum.rows);
    error.test_gpu = is_held_out_test_gpu(key.first);
    errors.push_back(error);
  }
  return errors;
}

std::string default_half_kernel_dir() {
  const std::string dir = hardware::default_catalogue_dir();
  return dir.empty() ? "" : (fs::path(dir) / "gpu_kernels_fp16").string();
}

const GpuKernelModel* shipped_half_kernel_model() {
  static const std::unique_ptr<GpuKernelModel> model = []() -> std::unique_ptr<GpuKernelModel> {
    const std::string dir = default_half_kernel_dir();
    std::error_code error;
    if (dir.empty() || !fs::exists(fs::path(dir) / "floors.csv", error)) return nullptr;
    return std::make_unique<GpuKernelModel>(GpuKernelModel::load(dir));
  }();
  return model.get();
}

}  // namespace dnncast::gpu
