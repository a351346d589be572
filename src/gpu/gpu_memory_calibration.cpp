// The nvidia-smi memory model fitted to GPUMemNet's measurements and judged by architecture held out
// (gpu_memory_calibration.h).
#include "gpu/gpu_memory_calibration.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace dnncast::gpu {

std::vector<GpuMemorySample> simulate_gpumemnet(const std::vector<GpuMemNetRow>& rows, bool libtorch_step) {
  memory::MemoryConfig config = gpu_memory_config(GpuMemoryCalibration{}, Optimizer::Adam);
  config.python_defaults = !libtorch_step;
  // The model before issue 34: libtorch 1.13's step through the caching allocator, plus an assumed context.
  memory::MemoryConfig before = config;
  before.python_defaults = false;
  before.cuda_context_bytes = kAssumedContextBytes;
  std::vector<GpuMemorySample> samples;
  samples.reserve(rows.size());
  for (const GpuMemNetRow& row : rows) {
    const Graph graph = gpumemnet_graph(row);
    const memory::MemoryReport report = memory::simulate_memory(graph, config);
    GpuMemorySample sample;
    sample.line = row.line;
    sample.arch = row.arch;
    sample.batch = row.batch;
    for (const GpuMemNetLayer& layer : row.layers) sample.parameters += layer.params;
    sample.peak_allocated_bytes = report.peak_allocated_bytes;
    sample.peak_reserved_bytes = report.peak_reserved_bytes;
    sample.measured_bytes = row.measured_mib * double(int64_t{1} << 20);
    sample.before_bytes = memory::simulate_memory(graph, before).required_bytes;
    samples.push_back(sample);
  }
  return samples;
}

int64_t forecast_bytes(const GpuMemorySample& sample, const GpuMemoryCalibration& calibration) {
  const memory::MemoryConfig config = gpu_memory_config(calibration, Optimizer::Adam);
  return memory::cuda_memory_parts(sample.peak_allocated_bytes, sample.peak_reserved_bytes, config).total_bytes();
}

GpuMemoryCalibration fit_gpu_memory(const std::vector<GpuMemorySample>& samples, const std::vector<bool>& use,
                                    double under_share) {
  GpuMemoryCalibration calibration;
  calibration.workspace_bytes = kCublasWorkspaceBytes;
  // Relative error e = (C + r A + W + R - m) / m is linear in the context C and the fraction r: the normal
  // equations of sum e^2 in (C, r), with a = 1/m, b = A/m, y = (m - W - R)/m.
  double aa = 0, ab = 0, bb = 0, ay = 0, by = 0;
  int64_t count = 0;
  for (size_t index = 0; index < samples.size(); ++index) {
    if (!use.empty() && !use[index]) continue;
    const GpuMemorySample& s = samples[index];
    const double a = 1 / s.measured_bytes, b = double(s.peak_allocated_bytes) / s.measured_bytes;
    const double y =
        (s.measured_bytes - double(calibration.workspace_bytes) - double(s.peak_reserved_bytes)) / s.measured_bytes;
    aa += a * a, ab += a * b, bb += b * b, ay += a * y, by += b * y;
    ++count;
  }
  if (count < 2)
    throw InputError("fitting the GPU memory model needs at least 2 measurements, got " + std::to_string(count));
  const double det = aa * bb - ab * ab;
  double context = det != 0 ? (ay * bb - by * ab) / det : ay / aa;
  double fraction = det != 0 ? (aa * by - ab * ay) / det : 0;
  if (fraction < 0) fraction = 0, context = ay / aa;  // no extra reserve: the context alone
  calibration.reserve_fraction = fraction;
  calibration.context_bytes = std::max<int64_t>(0, std::llround(context));
  // The context each sample would need to be forecast no more than 5% below its measurement; raise the fitted
  // one to the (1 - under_share) quantile of those.
  std::vector<double> needed;
  for (size_t index = 0; index < samples.size(); ++index) {
    if (!use.empty() && !use[index]) continue;
    GpuMemoryCalibration without = calibration;
    without.context_bytes = 0;
    needed.push_back(0.95 * samples[index].measured_bytes - double(forecast_bytes(samples[index], without)));
  }
  std::sort(needed.begin(), needed.end());
  const auto at = static_cast<size_t>(std::floor((1 - under_share) * double(needed.size() - 1)));
  calibration.context_bytes = std::max<int64_t>(calibration.context_bytes, std::llround(std::ceil(needed[at])));
  return calibration;
}

GpuMemoryScore score(const std::vector<GpuMemorySample>& samples, const std::vector<int64_t>& forecast) {
  DNNCAST_ASSERT(samples.size() == forecast.size());
  GpuMemoryScore result;
  result.rows = static_cast<int64_t>(samples.size());
  if (samples.empty()) return result;
  int64_t under = 0;
  for (size_t index = 0; index < samples.size(); ++index) {
    const double ratio = double(forecast[index]) / samples[index].measured_bytes;
    result.mean_relative_error += std::abs(ratio - 1) / double(samples.size());
    if (ratio < 0.95) ++under;
    result.max_under = std::max(result.max_under, 1 - ratio);
    result.max_over = std::max(result.max_over, ratio - 1);
  }
  result.under_5pct_share = double(under) / double(samples.size());
  return result;
}

GpuMemoryEvaluation leave_one_arch_out(const std::vector<GpuMemorySample>& samples) {
  GpuMemoryEvaluation evaluation;
  for (const GpuMemorySample& sample : samples)
    if (std::find(evaluation.archs.begin(), evaluation.archs.end(), sample.arch) == evaluation.archs.end())
      evaluation.archs.push_back(sample.arch);
  std::sort(evaluation.archs.begin(), evaluation.archs.end());
  evaluation.held_out_forecast.assign(samples.size(), 0);
  for (const std::string& arch : evaluation.archs) {
    std::vector<bool> use(samples.size());
    for (size_t index = 0; index < samples.size(); ++index) use[index] = samples[index].arch != arch;
    evaluation.fitted.push_back(fit_gpu_memory(samples, use));
    for (size_t index = 0; index < samples.size(); ++index)
      if (!use[index]) evaluation.held_out_forecast[index] = forecast_bytes(samples[index], evaluation.fitted.back());
  }
  for (const GpuMemorySample& sample : samples) evaluation.before_forecast.push_back(sample.before_bytes);
  return evaluation;
}

}  // namespace dnncast::gpu
