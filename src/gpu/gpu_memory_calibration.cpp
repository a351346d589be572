// The nvidia-smi memory model fitted to GPUMemNet's measurements and judged by model held out
// (gpu_memory_calibration.h).
#include "gpu/gpu_memory_calibration.h"

#include <algorithm>
#include <array>
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
    sample.family = "mlp";
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
  return memory::cuda_memory_parts(sample.peak_allocated_bytes, sample.peak_reserved_bytes, config, sample.cudnn)
      .total_bytes();
}

namespace {

// The fitted constants, in the order of fit_gpu_memory's unknowns.
enum Unknown { kContext, kReserve, kCudnnContext, kConvWorkspace, kUnknowns };

// Solves the weighted normal equations over the unknowns marked free (the others held at 0); false when singular.
bool solve(std::array<std::array<double, kUnknowns>, kUnknowns> normal, std::array<double, kUnknowns> right,
           const std::array<bool, kUnknowns>& free, std::array<double, kUnknowns>& x) {
  std::vector<int> at;
  for (int k = 0; k < kUnknowns; ++k)
    if (free[k]) at.push_back(k);
  const size_t n = at.size();
  std::vector<std::vector<double>> m(n, std::vector<double>(n + 1));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) m[i][j] = normal[at[i]][at[j]];
    m[i][n] = right[at[i]];
  }
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t row = col + 1; row < n; ++row)
      if (std::abs(m[row][col]) > std::abs(m[pivot][col])) pivot = row;
    if (std::abs(m[pivot][col]) < 1e-300) return false;
    std::swap(m[col], m[pivot]);
    for (size_t row = 0; row < n; ++row) {
      if (row == col) continue;
      const double factor = m[row][col] / m[col][col];
      for (size_t k = col; k <= n; ++k) m[row][k] -= factor * m[col][k];
    }
  }
  x.fill(0);
  for (size_t i = 0; i < n; ++i) x[at[i]] = m[i][n] / m[i][i];
  return true;
}

}  // namespace

GpuMemoryCalibration fit_gpu_memory(const std::vector<GpuMemorySample>& samples, const std::vector<bool>& use,
                                    const GpuMemoryFitOptions& options) {
  if (!(options.under_weight > 0) || !(options.under_share >= 0 && options.under_share < 1))
    throw InputError("the fit's under-forecast weight must be positive and its under share in [0, 1)");
  GpuMemoryCalibration calibration;
  calibration.workspace_bytes = kCublasWorkspaceBytes;
  // Relative error e = (C + r A + Cd u + w B + W + R - m) / m is linear in the contexts C, Cd and the fractions
  // r, w: rows a = (1, A, u, B) / m, y = (m - W - R) / m, each weighted 1 / (its source's rows).
  std::map<std::string, int64_t> per_source;
  for (size_t index = 0; index < samples.size(); ++index)
    if (use.empty() || use[index]) ++per_source[samples[index].source];
  struct Row {
    std::array<double, kUnknowns> a;
    double y, weight;
  };
  std::vector<Row> rows;
  std::array<bool, kUnknowns> seen{};
  for (size_t index = 0; index < samples.size(); ++index) {
    if (!use.empty() && !use[index]) continue;
    const GpuMemorySample& s = samples[index];
    const double m = s.measured_bytes;
    Row row;
    row.a = {1 / m, double(s.peak_allocated_bytes) / m, s.cudnn.loaded ? 1 / m : 0,
             s.cudnn.loaded ? double(s.cudnn.conv_io_bytes) / m : 0};
    row.y = (m - double(calibration.workspace_bytes) - double(s.peak_reserved_bytes)) / m;
    row.weight = 1 / double(per_source[s.source]);
    for (int i = 0; i < kUnknowns; ++i)
      if (row.a[i] != 0) seen[i] = true;
    rows.push_back(row);
  }
  if (rows.size() < 2)
    throw InputError("fitting the GPU memory model needs at least 2 measurements, got " + std::to_string(rows.size()));
  // Asymmetric least squares (an expectile): a sample forecast under its measurement weighs options.under_weight
  // times one over it, reweighted until the sides settle; over the constants the samples inform, dropping the most
  // negative one until none is.
  std::vector<double> side(rows.size(), 1);
  std::array<double, kUnknowns> x{};
  for (int round = 0; round < 30; ++round) {
    std::array<std::array<double, kUnknowns>, kUnknowns> normal{};
    std::array<double, kUnknowns> right{};
    for (size_t r = 0; r < rows.size(); ++r) {
      const double weight = rows[r].weight * side[r];
      for (int i = 0; i < kUnknowns; ++i) {
        for (int j = 0; j < kUnknowns; ++j) normal[i][j] += weight * rows[r].a[i] * rows[r].a[j];
        right[i] += weight * rows[r].a[i] * rows[r].y;
      }
    }
    std::array<bool, kUnknowns> free = seen;
    while (true) {
      if (!solve(normal, right, free, x)) {  // collinear: drop the last free constant but the context
        int last = kUnknowns - 1;
        while (last > 0 && !free[last]) --last;
        if (last == 0) break;
        free[last] = false;
        continue;
      }
      int worst = -1;
      for (int k = 0; k < kUnknowns; ++k)
        if (free[k] && x[k] < 0 && (worst < 0 || x[k] < x[worst])) worst = k;
      if (worst < 0) break;
      free[worst] = false;
    }
    bool changed = false;
    for (size_t r = 0; r < rows.size(); ++r) {
      double fit = 0;
      for (int k = 0; k < kUnknowns; ++k) fit += rows[r].a[k] * x[k];
      const double now = fit < rows[r].y ? options.under_weight : 1;
      changed |= now != side[r];
      side[r] = now;
    }
    if (!changed) break;
  }
  calibration.context_bytes = std::max<int64_t>(0, std::llround(x[kContext]));
  calibration.reserve_fraction = std::max(0.0, x[kReserve]);
  calibration.cudnn_context_bytes = std::max<int64_t>(0, std::llround(x[kCudnnContext]));
  calibration.conv_workspace_fraction = std::max(0.0, x[kConvWorkspace]);
  // The context each sample would need to be forecast no more than 5% below its measurement; raise the fitted
  // one to the (1 - under_share) quantile of those: the CUDA context over the samples without cuDNN (all, when
  // every one has it), then cuDNN's context over those with it.
  auto raise = [&](int64_t GpuMemoryCalibration::*context, bool cudnn_rows) {
    std::vector<double> needed;
    for (size_t index = 0; index < samples.size(); ++index) {
      if ((!use.empty() && !use[index]) || samples[index].cudnn.loaded != cudnn_rows) continue;
      GpuMemoryCalibration without = calibration;
      without.*context = 0;
      needed.push_back(0.95 * samples[index].measured_bytes - double(forecast_bytes(samples[index], without)));
    }
    if (needed.empty()) return false;
    std::sort(needed.begin(), needed.end());
    const auto at = static_cast<size_t>(std::floor((1 - options.under_share) * double(needed.size() - 1)));
    calibration.*context = std::max<int64_t>(calibration.*context, std::llround(std::ceil(needed[at])));
    return true;
  };
  if (!raise(&GpuMemoryCalibration::context_bytes, false)) raise(&GpuMemoryCalibration::context_bytes, true);
  raise(&GpuMemoryCalibration::cudnn_context_bytes, true);
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

GpuMemoryEvaluation leave_group_out(const std::vector<GpuMemorySample>& samples, const SampleGroup& group,
                                    const GpuMemoryFitOptions& options) {
  GpuMemoryEvaluation evaluation;
  std::vector<std::string> of(samples.size());
  for (size_t index = 0; index < samples.size(); ++index) of[index] = group(samples[index]);
  for (const std::string& name : of)
    if (!name.empty() && std::find(evaluation.groups.begin(), evaluation.groups.end(), name) == evaluation.groups.end())
      evaluation.groups.push_back(name);
  std::sort(evaluation.groups.begin(), evaluation.groups.end());
  evaluation.held_out_forecast.assign(samples.size(), 0);
  for (const std::string& name : evaluation.groups) {
    std::vector<bool> use(samples.size());
    for (size_t index = 0; index < samples.size(); ++index) use[index] = of[index] != name;
    evaluation.fitted.push_back(fit_gpu_memory(samples, use, options));
    for (size_t index = 0; index < samples.size(); ++index)
      if (!use[index]) evaluation.held_out_forecast[index] = forecast_bytes(samples[index], evaluation.fitted.back());
  }
  for (const GpuMemorySample& sample : samples) evaluation.before_forecast.push_back(sample.before_bytes);
  return evaluation;
}

UpperMargins upper_margins(const std::vector<GpuMemorySample>& samples, const GpuMemoryEvaluation& evaluation,
                           const SampleGroup& group, double quantile) {
  DNNCAST_ASSERT(quantile > 0 && quantile <= 1 && samples.size() == evaluation.held_out_forecast.size());
  auto margin_of = [&](const std::string& skip) {
    std::vector<double> over;
    for (size_t index = 0; index < samples.size(); ++index) {
      const std::string name = group(samples[index]);
      if (name.empty() || name == skip || evaluation.held_out_forecast[index] <= 0) continue;
      over.push_back(samples[index].measured_bytes / double(evaluation.held_out_forecast[index]) - 1);
    }
    if (over.empty()) return 0.0;
    std::sort(over.begin(), over.end());
    const auto at = static_cast<size_t>(std::ceil(quantile * double(over.size() - 1)));
    return std::max(0.0, over[std::min(at, over.size() - 1)]);
  };
  UpperMargins margins;
  margins.quantile = quantile;
  margins.all = margin_of("");
  for (const std::string& name : evaluation.groups) margins.without.push_back(margin_of(name));
  return margins;
}

FitsCheck check_fits(const std::vector<GpuMemorySample>& samples, const GpuMemoryEvaluation& evaluation,
                     const UpperMargins& margins, const SampleGroup& group, const std::vector<double>& sizes_gib) {
  DNNCAST_ASSERT(margins.without.size() == evaluation.groups.size());
  FitsCheck check;
  for (size_t index = 0; index < samples.size(); ++index) {
    const std::string name = group(samples[index]);
    const auto at = std::find(evaluation.groups.begin(), evaluation.groups.end(), name);
    if (name.empty() || at == evaluation.groups.end()) continue;
    const double measured = samples[index].measured_bytes;
    const double upper =
        double(evaluation.held_out_forecast[index]) * (1 + margins.without[size_t(at - evaluation.groups.begin())]);
    ++check.rows;
    if (measured <= upper) ++check.covered;
    for (double gib : sizes_gib) {
      const double limit = gib * double(int64_t{1} << 30);
      if (std::abs(measured - limit) > 0.25 * limit) continue;
      ++check.pairs;
      if (upper > limit) continue;
      ++check.said_fits;
      if (measured > limit) ++check.wrong;
    }
  }
  return check;
}

}  // namespace dnncast::gpu
