// The per-kernel GPU time model (kernel_model.h): features, the fitted ensembles, their files.
#include "gpu/kernel_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/csv.h"
#include "core/error.h"
#include "core/json_limits.h"
#include "gpu/half_kernels.h"
#include "learn/learner.h"

namespace dnncast::gpu {

namespace fs = std::filesystem;

namespace {

const std::array<std::string, kKernelFamilies>& family_names() {
  static const std::array<std::string, kKernelFamilies> names = {"gemm", "conv", "norm", "softmax", "elementwise"};
  return names;
}

double log2_of(double value) { return std::log2(std::max(value, 1e-30)); }

// Waves of `tiles` over the SMs (one resident tile per SM), and the last wave's fill (1: full).
std::pair<double, double> waves(double tiles, double sms) {
  const double count = tiles / sms;
  return {log2_of(count), count / std::ceil(std::max(count, 1e-12))};
}

void gemm_features(double batch, double m, double n, double k, const KernelShape& shape, const KernelDevice& device,
                   std::vector<float>& out) {
  for (double value : {batch, m, n, k, shape.flops, shape.bytes}) out.push_back(static_cast<float>(log2_of(value)));
  for (double tile : {128.0, 64.0}) {
    const auto [count, fill] = waves(batch * std::ceil(m / tile) * std::ceil(n / tile), device.sms);
    out.push_back(static_cast<float>(count));
    out.push_back(static_cast<float>(fill));
  }
  // Alignment: the largest power of two (up to 128) dividing each size. cuBLAS's vectorised kernels need it,
  // and the public rows' random sizes are mostly odd where a model's (1024, 4096, ...) are not.
  for (double size : {m, n, k}) {
    int twos = 0;
    for (int64_t value = static_cast<int64_t>(size); twos < 7 && value > 0 && value % 2 == 0; value /= 2) ++twos;
    out.push_back(static_cast<float>(twos));
  }
  const double ridge = device.fp32_flops / device.bandwidth;
  out.push_back(static_cast<float>(log2_of(shape.flops / std::max(shape.bytes, 1.0) / ridge)));
}

void row_features(const KernelShape& shape, const KernelDevice& device, std::vector<float>& out) {
  const double elements = shape.m * shape.n;
  for (double value : {shape.m, shape.n, elements}) out.push_back(static_cast<float>(log2_of(value)));
  out.push_back(static_cast<float>(shape.flops / std::max(elements, 1.0)));
  out.push_back(static_cast<float>(shape.bytes / std::max(elements, 1.0)));
  const auto [count, fill] = waves(elements / 2048.0, device.sms);
  out.push_back(static_cast<float>(count));
  out.push_back(static_cast<float>(fill));
}

}  // namespace

const std::string& name(KernelFamily family) { return family_names()[static_cast<size_t>(family)]; }

KernelShape gemm_kernel(double batch, double m, double n, double k, bool shared_b) {
  KernelShape shape;
  shape.family = KernelFamily::Gemm;
  shape.batch = batch, shape.m = m, shape.n = n, shape.k = k;
  shape.flops = 2 * batch * m * n * k;
  shape.bytes = 4 * (batch * m * k + (shared_b ? 1 : batch) * k * n + batch * m * n);
  return shape;
}

const std::string& name(ConvPass pass) {
  static const std::array<std::string, 3> names = {"forward", "input-grad", "weight-grad"};
  return names[static_cast<size_t>(pass)];
}

KernelShape conv_kernel(double batch, double channels, double out_channels, double kernel, double size, double stride,
                        double padding, ConvPass pass) {
  KernelShape shape;
  shape.family = KernelFamily::Conv;
  shape.batch = batch, shape.channels = channels, shape.out_channels = out_channels;
  shape.kernel = kernel, shape.size = size, shape.stride = stride, shape.padding = padding;
  shape.pass = pass;
  const double out = std::max(1.0, std::floor((size + 2 * padding - kernel) / stride) + 1);
  const double taps = channels * kernel * kernel;  // weights per output channel
  shape.flops = 2 * batch * out * out * out_channels * taps;
  shape.bytes = 4 * (batch * channels * size * size + out_channels * taps + batch * out * out * out_channels);
  switch (pass) {
    case ConvPass::Forward:
      shape.m = batch * out * out, shape.n = out_channels, shape.k = taps;
      break;
    case ConvPass::InputGrad:
      shape.m = batch * size * size, shape.n = channels, shape.k = out_channels * kernel * kernel;
      break;
    case ConvPass::WeightGrad:
      shape.m = out_channels, shape.n = taps, shape.k = batch * out * out;
      break;
  }
  return shape;
}

KernelShape row_kernel(KernelFamily family, double rows, double cols, double flops_per_element,
                       double bytes_per_element) {
  KernelShape shape;
  shape.family = family;
  shape.m = rows, shape.n = cols;
  shape.flops = flops_per_element * rows * cols;
  shape.bytes = bytes_per_element * rows * cols;
  return shape;
}

KernelShape elementwise_kernel(double elements, double flops, double bytes) {
  KernelShape shape;
  shape.family = KernelFamily::Elementwise;
  shape.m = std::max(1.0, elements), shape.n = 1;
  shape.flops = flops, shape.bytes = bytes;
  return shape;
}

KernelDevice kernel_device(const hardware::GpuSpec& gpu) {
  auto need = [&](bool known, const char* column) {
    if (!known)
      throw InputError("GPU " + quote(gpu.name) + " has no " + column + " in the catalogue (" + gpu.file +
                       "): the per-kernel model needs it");
  };
  need(gpu.fp32_tflops.value_or(0) > 0, "fp32_tflops");
  need(gpu.bandwidth_gbs.value_or(0) > 0, "bandwidth_gbs");
  need(gpu.sm_count.value_or(0) > 0, "sm_count");
  KernelDevice device;
  device.fp32_flops = *gpu.fp32_tflops * 1e12;
  device.bandwidth = *gpu.bandwidth_gbs * 1e9;
  device.sms = static_cast<double>(*gpu.sm_count);
  return device;
}

double roofline_seconds(const KernelShape& shape, const KernelDevice& device) {
  return std::max(shape.flops / device.fp32_flops, shape.bytes / device.bandwidth);
}

std::vector<float> kernel_features(const KernelShape& shape, const KernelDevice& device, bool queued) {
  std::vector<float> out;
  out.reserve(24);
  switch (shape.family) {
    case KernelFamily::Gemm:
      gemm_features(shape.batch, shape.m, shape.n, shape.k, shape, device, out);
      break;
    case KernelFamily::Conv:
      gemm_features(1, shape.m, shape.n, shape.k, shape, device, out);
      for (double value :
           {shape.kernel, shape.stride, log2_of(shape.size), log2_of(shape.channels), static_cast<double>(shape.pass)})
        out.push_back(static_cast<float>(value));
      break;
    default:
      row_features(shape, device, out);
  }
  out.push_back(queued ? 1.f : 0.f);
  return out;
}

int kernel_feature_count(KernelFamily family) {
  KernelShape shape;
  shape.family = family;
  KernelDevice device{1e12, 1e9, 1};
  return static_cast<int>(kernel_features(shape, device).size());
}

bool is_held_out_test_gpu(const std::string& name) {
  // NeuSight's test GPUs: the H100 in every form and the chips of its family (GH200's GPU is an H100, the H200 an
  // H100 with more memory), the L4, the A100 80GB.
  for (const char* prefix : {"h100", "h200", "gh200", "a100-80gb"})
    if (name.rfind(prefix, 0) == 0) return true;
  return name == "l4";
}

// ---------------------------------------------------------------------------------------------
// The model

GpuKernelModel::GpuKernelModel() = default;
GpuKernelModel::~GpuKernelModel() = default;
GpuKernelModel::GpuKernelModel(GpuKernelModel&&) noexcept = default;
GpuKernelModel& GpuKernelModel::operator=(GpuKernelModel&&) noexcept = default;

bool GpuKernelModel::has(KernelFamily family) const { return learners_[static_cast<size_t>(family)] != nullptr; }

namespace {

// Below the roofline only where measurements are: cuDNN's Winograd 3x3 convolutions need fewer
// multiplications than the direct count the roofline uses.
double busy_from_ratio(const KernelShape& shape, double roof, double log_ratio) {
  return roof *
         std::exp(std::max(shape.family == KernelFamily::Conv && shape.kernel == 3 ? std::log(0.25) : 0.0, log_ratio));
}

}  // namespace

double GpuKernelModel::seconds(const KernelShape& shape, const KernelDevice& device) const {
  return seconds(shape, device, false);
}

double GpuKernelModel::seconds(const KernelShape& shape, const KernelDevice& device, bool queued) const {
  const double roof = roofline_seconds(shape, device);
  const auto& learner = learners_[static_cast<size_t>(shape.family)];
  if (!learner) return roof;
  const std::vector<float> features = kernel_features(shape, device, queued);
  double log_ratio = 0;
  learner->predict_rows(features.data(), 1, static_cast<int64_t>(features.size()), &log_ratio);
  return busy_from_ratio(shape, roof, log_ratio);
}

std::vector<double> GpuKernelModel::seconds_many(const std::vector<const KernelShape*>& shapes,
                                                 const KernelDevice& device) const {
  std::vector<double> out(shapes.size());
  for (size_t family = 0; family < learners_.size(); ++family) {
    std::vector<size_t> mine;
    std::vector<float> rows;
    size_t width = 0;
    for (size_t index = 0; index < shapes.size(); ++index) {
      if (static_cast<size_t>(shapes[index]->family) != family) continue;
      if (!learners_[family]) {
        out[index] = roofline_seconds(*shapes[index], device);
        continue;
      }
      const std::vector<float> features = kernel_features(*shapes[index], device);
      DNNCAST_ASSERT(width == 0 || features.size() == width);
      width = features.size();
      rows.insert(rows.end(), features.begin(), features.end());
      mine.push_back(index);
    }
    if (mine.empty()) continue;
    std::vector<double> log_ratios(mine.size());
    learners_[family]->predict_rows(rows.data(), static_cast<int64_t>(mine.size()), static_cast<int64_t>(width),
                                    log_ratios.data());
    for (size_t row = 0; row < mine.size(); ++row)
      out[mine[row]] =
          busy_from_ratio(*shapes[mine[row]], roofline_seconds(*shapes[mine[row]], device), log_ratios[row]);
  }
  return out;
}

double GpuKernelModel::timed_alone_seconds(const KernelShape& shape, const KernelDevice& device,
                                           const std::string& gpu) const {
  const std::vector<double>& floors = floors_[static_cast<size_t>(shape.family)];
  double floor = 0;
  const auto at = std::find(gpus_.begin(), gpus_.end(), gpu);
  if (at != gpus_.end() && static_cast<size_t>(at - gpus_.begin()) < floors.size()) {
    floor = floors[static_cast<size_t>(at - gpus_.begin())];
  } else {
    int known = 0;
    for (double value : floors)
      if (value > 0) floor += value, ++known;
    floor = known > 0 ? floor / known : 0;
  }
  return floor + seconds(shape, device);
}

GpuKernelModel GpuKernelModel::fit(const std::vector<KernelMeasurement>& rows, const hardware::Catalogue& catalogue,
                                   int rounds, bool half, double gemm_vector_share) {
  if (!(gemm_vector_share >= 0 && gemm_vector_share < 10))
    throw InputError("a GEMM share at the FP32 rate of " + std::to_string(gemm_vector_share) +
                     ": expected a number from 0 to 10");
  GpuKernelModel model;
  model.gemm_vector_share_ = half ? gemm_vector_share : 0;
  std::map<std::string, KernelDevice> devices, gemm_devices;
  for (const KernelMeasurement& row : rows) {
    if (is_held_out_test_gpu(row.gpu))
      throw InputError("a row of " + row.gpu + ", a test GPU of NeuSight's protocol, reached the fit");
    if (!devices.count(row.gpu)) {
      const hardware::GpuSpec& gpu = catalogue.gpu(row.gpu);
      devices[row.gpu] = half ? half_kernel_device(gpu, GpuPrecision::Fp16) : kernel_device(gpu);
      gemm_devices[row.gpu] =
          half ? half_kernel_device(gpu, GpuPrecision::Fp16, KernelFamily::Gemm, gemm_vector_share) : devices[row.gpu];
      model.gpus_.push_back(row.gpu);
    }
  }
  for (int family = 0; family < kKernelFamilies; ++family) {
    std::vector<const KernelMeasurement*> mine;
    for (const KernelMeasurement& row : rows)
      if (static_cast<int>(row.shape.family) == family && row.seconds > 0) mine.push_back(&row);
    std::vector<double>& floors = model.floors_[static_cast<size_t>(family)];
    floors.assign(model.gpus_.size(), 0);
    if (mine.size() < 50) continue;
    // The launch floor of each GPU: 0.9 x the 1st percentile of its latencies in this family, timed alone (a
    // queued call's latency has no floor in it).
    for (size_t gpu = 0; gpu < model.gpus_.size(); ++gpu) {
      std::vector<double> times;
      for (const KernelMeasurement* row : mine)
        if (row->gpu == model.gpus_[gpu] && row->timed_alone) times.push_back(row->seconds);
      if (times.empty()) continue;
      std::sort(times.begin(), times.end());
      floors[gpu] = 0.9 * times[times.size() / 100];
    }
    const int columns = kernel_feature_count(static_cast<KernelFamily>(family));
    learn::Matrix x(static_cast<Eigen::Index>(mine.size()), columns);
    learn::Vector y(static_cast<Eigen::Index>(mine.size()));
    for (size_t index = 0; index < mine.size(); ++index) {
      const KernelMeasurement& row = *mine[index];
      const KernelDevice& device =
          (family == static_cast<int>(KernelFamily::Gemm) ? gemm_devices : devices).at(row.gpu);
      const std::vector<float> features = kernel_features(row.shape, device, !row.timed_alone);
      for (int column = 0; column < columns; ++column)
        x(static_cast<Eigen::Index>(index), column) = features[static_cast<size_t>(column)];
      const size_t gpu =
          static_cast<size_t>(std::find(model.gpus_.begin(), model.gpus_.end(), row.gpu) - model.gpus_.begin());
      const double busy = row.timed_alone ? std::max(row.seconds - floors[gpu], 0.25 * row.seconds) : row.seconds;
      y(static_cast<Eigen::Index>(index)) = std::log(busy / roofline_seconds(row.shape, device));
    }
    auto learner = learn::make_learner(
        "xgboost", {{"rounds", rounds}, {"learning_rate", 0.1}, {"max_depth", 6}, {"subsample", 0.8}});
    learner->fit(x, y);
    model.learners_[static_cast<size_t>(family)] = std::move(learner);
  }
  model.source_ = "fitted";
  return model;
}

// ---------------------------------------------------------------------------------------------
// Files: FAMILY/xgboost.json (+ trees) with FAMILY/learner.json, and floors.csv

std::string GpuKernelModel::default_dir() {
  const std::string dir = hardware::default_catalogue_dir();
  return dir.empty() ? "" : (fs::path(dir) / "gpu_kernels").string();
}

void GpuKernelModel::save(const std::string& dir, const std::string& header) const {
  std::error_code error;
  fs::create_directories(dir, error);
  std::ofstream floors((fs::path(dir) / "floors.csv").string());
  if (error || !floors) throw InputError("cannot write the per-kernel model into " + quote(dir));
  floors << "# " << header << "\n";
  write_csv_record(floors, {"gpu", "family", "launch_floor_us"});
  for (int family = 0; family < kKernelFamilies; ++family) {
    const auto& learner = learners_[static_cast<size_t>(family)];
    if (!learner) continue;
    const fs::path sub = fs::path(dir) / family_names()[static_cast<size_t>(family)];
    fs::create_directories(sub, error);
    learner->save(sub.string());
    std::ofstream meta((sub / "learner.json").string());
    meta << nlohmann::json{{"learner", learner->name()}, {"hyperparameters", learner->hyperparameters()}}.dump(2)
         << "\n";
    for (size_t gpu = 0; gpu < gpus_.size(); ++gpu) {
      std::ostringstream value;
      value.precision(5);
      value << 1e6 * floors_[static_cast<size_t>(family)][gpu];
      write_csv_record(floors, {gpus_[gpu], family_names()[static_cast<size_t>(family)], value.str()});
    }
  }
  if (!floors) throw InputError("cannot write the per-kernel model into " + quote(dir));
  if (gemm_vector_share_ > 0) {
    std::ofstream share((fs::path(dir) / "tensor_gemm.csv").string());
    std::ostringstream value;
    value.precision(6);
    value << gemm_vector_share_;
    share << "# a GEMM's share of its FLOPs at the FP32 rate on top of the tensor-core peak (half_kernels.h)\n";
    write_csv_record(share, {"key", "value"});
    write_csv_record(share, {"gemm_vector_share", value.str()});
    if (!share) throw InputError("cannot write the per-kernel model into " + quote(dir));
  }
}

GpuKernelModel GpuKernelModel::load(const std::string& given) {
  const std::string dir = given.empty() ? default_dir() : given;
  const fs::path floors_path = fs::path(dir) / "floors.csv";
  std::ifstream floors(floors_path.string());
  if (dir.empty() || !floors)
    throw InputError("no per-kernel GPU model in " + quote(dir) + " (data/hardware/gpu_kernels; set DNNCAST_HARDWARE)");
  GpuKernelModel model;
  model.source_ = dir;
  std::vector<std::string> fields;
  int64_t line = 0;
  while (read_csv_record(floors, fields, line)) {
    if (fields.empty() || fields[0].empty() || fields[0][0] == '#' || fields[0] == "gpu") continue;
    const std::string where = floors_path.string() + " line " + std::to_string(line);
    const auto family = std::find(family_names().begin(), family_names().end(), fields.size() == 3 ? fields[1] : "");
    double floor_us = -1;
    try {
      if (fields.size() == 3) floor_us = std::stod(fields[2]);
    } catch (const std::exception&) {
    }
    if (family == family_names().end() || !(floor_us >= 0))
      throw InputError(where + ": expected gpu,family,launch_floor_us");
    auto gpu = std::find(model.gpus_.begin(), model.gpus_.end(), fields[0]);
    if (gpu == model.gpus_.end()) gpu = model.gpus_.insert(model.gpus_.end(), fields[0]);
    auto& values = model.floors_[static_cast<size_t>(family - family_names().begin())];
    values.resize(model.gpus_.size(), 0);
    values[static_cast<size_t>(gpu - model.gpus_.begin())] = floor_us * 1e-6;
  }
  const fs::path share_path = fs::path(dir) / "tensor_gemm.csv";
  std::ifstream share(share_path.string());
  line = 0;
  while (share && read_csv_record(share, fields, line)) {
    if (fields.empty() || fields[0].empty() || fields[0][0] == '#' || fields[0] == "key") continue;
    const std::string where = share_path.string() + " line " + std::to_string(line);
    char* end = nullptr;
    const double value = fields.size() == 2 ? std::strtod(fields[1].c_str(), &end) : -1;
    if (fields.size() != 2 || fields[0] != "gemm_vector_share" || end == fields[1].c_str() || *end != '\0' ||
        !(value >= 0 && value < 10))
      throw InputError(where + ": expected gemm_vector_share,VALUE (a number from 0 to 10)");
    model.gemm_vector_share_ = value;
  }
  for (int family = 0; family < kKernelFamilies; ++family) {
    model.floors_[static_cast<size_t>(family)].resize(model.gpus_.size(), 0);
    const fs::path sub = fs::path(dir) / family_names()[static_cast<size_t>(family)];
    std::ifstream meta((sub / "learner.json").string());
    if (!meta) continue;
    const std::string text = read_all(meta);
    check_json_nesting(text, (sub / "learner.json").string());
    try {
      const nlohmann::json info = nlohmann::json::parse(text);
      model.learners_[static_cast<size_t>(family)] =
          learn::load_learner(info.at("learner").get<std::string>(), info.at("hyperparameters"), sub.string());
    } catch (const nlohmann::json::exception& error) {
      throw InputError((sub / "learner.json").string() + ": " + error.what());
    }
  }
  return model;
}

}  // namespace dnncast::gpu
