// The per-kernel model's held-out evaluation (kernel_evaluation.h).
#include "gpu/kernel_evaluation.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "core/csv.h"
#include "core/error.h"
#include "import/model_source.h"

namespace dnncast::gpu {

KernelLeaveOneOut leave_one_gpu_out(const KernelTables& tables, const hardware::Catalogue& catalogue, int rounds,
                                    int stride, bool keep_rows) {
  std::set<std::string> gpus;
  for (const KernelMeasurement& row : tables.rows) gpus.insert(row.gpu);
  if (gpus.size() < 2) throw InputError("leaving one GPU out needs kernel rows of two GPUs or more");
  KernelLeaveOneOut result;
  for (const std::string& held : gpus) {
    std::vector<KernelMeasurement> train;
    std::array<int64_t, kKernelFamilies> seen{};
    for (const KernelMeasurement& row : tables.rows)
      if (row.gpu != held && seen[static_cast<size_t>(row.shape.family)]++ % stride == 0) train.push_back(row);
    GpuKernelModel model = GpuKernelModel::fit(train, catalogue, rounds);
    const KernelDevice device = kernel_device(catalogue.gpu(held));
    std::map<std::pair<KernelFamily, std::string>, KernelFamilyError> errors;
    std::array<ConvPassError, 3> passes;
    std::unique_ptr<GpuKernelModel> forward_only;  // fitted when the GPU has DeepBench rows
    for (const KernelMeasurement& row : tables.rows) {
      if (row.gpu != held) continue;
      const std::string source = row.group.empty() ? "neusight" : row.group;
      KernelFamilyError& error = errors[{row.shape.family, source}];
      error.gpu = held;
      error.family = row.shape.family;
      error.source = source;
      ++error.rows;
      const double model_s =
          row.timed_alone ? model.timed_alone_seconds(row.shape, device, held) : model.seconds(row.shape, device, true);
      const double roofline_s = roofline_seconds(row.shape, device);
      if (keep_rows) result.rows.push_back({&row, model_s, roofline_s});
      error.model_mre += std::abs(model_s / row.seconds - 1);
      error.roofline_mre += std::abs(roofline_s / row.seconds - 1);
      if (row.timed_alone || row.shape.family != KernelFamily::Conv) continue;
      if (!forward_only) {
        std::vector<KernelMeasurement> alone;
        for (const KernelMeasurement& other : tables.rows)
          if (other.gpu != held && other.timed_alone && other.shape.family == KernelFamily::Conv)
            alone.push_back(other);
        forward_only = std::make_unique<GpuKernelModel>(GpuKernelModel::fit(alone, catalogue, rounds));
      }
      const KernelShape& shape = row.shape;
      const KernelShape forward = conv_kernel(shape.batch, shape.channels, shape.out_channels, shape.kernel, shape.size,
                                              shape.stride, shape.padding, ConvPass::Forward);
      ConvPassError& pass = passes[static_cast<size_t>(shape.pass)];
      pass.gpu = held;
      pass.pass = shape.pass;
      ++pass.rows;
      pass.model_mre += std::abs(model_s / row.seconds - 1);
      pass.forward_shape_mre += std::abs(forward_only->seconds(forward, device, true) / row.seconds - 1);
      pass.roofline_mre += std::abs(roofline_s / row.seconds - 1);
    }
    for (auto& [key, error] : errors) {
      error.model_mre /= static_cast<double>(error.rows);
      error.roofline_mre /= static_cast<double>(error.rows);
      result.errors.push_back(error);
    }
    for (ConvPassError& pass : passes) {
      if (pass.rows == 0) continue;
      for (double* sum : {&pass.model_mre, &pass.forward_shape_mre, &pass.roofline_mre})
        *sum /= static_cast<double>(pass.rows);
      result.conv_passes.push_back(pass);
    }
    result.models.emplace(held, std::move(model));
  }
  return result;
}

void write_held_out_rows(const KernelLeaveOneOut& held, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError("cannot write " + quote(path));
  out << "gpu,family,source,pass,batch,m,n,k,flops,bytes,measured_s,model_s,roofline_s\n";
  out.precision(9);
  for (const KernelRowForecast& forecast : held.rows) {
    const KernelMeasurement& row = *forecast.row;
    const KernelShape& shape = row.shape;
    out << row.gpu << ',' << name(shape.family) << ',' << (row.group.empty() ? "neusight" : row.group) << ','
        << (shape.family == KernelFamily::Conv ? name(shape.pass) : "") << ',' << shape.batch << ',' << shape.m << ','
        << shape.n << ',' << shape.k << ',' << shape.flops << ',' << shape.bytes << ',' << row.seconds << ','
        << forecast.model_s << ',' << forecast.roofline_s << '\n';
  }
  if (!out) throw InputError("cannot write " + quote(path));
}

std::map<std::string, GpuKernelModel> kernel_folds(const KernelTables& tables, const hardware::Catalogue& catalogue,
                                                   const std::vector<std::string>& gpus, int rounds) {
  std::set<std::string> fitted;  // the GPUs the tables have rows of: the others' folds keep the shipped model
  for (const KernelMeasurement& row : tables.rows) fitted.insert(row.gpu);
  std::map<std::string, GpuKernelModel> folds;
  for (const std::string& gpu : std::set<std::string>(gpus.begin(), gpus.end())) {
    if (!fitted.count(gpu)) continue;
    std::vector<KernelMeasurement> rest;
    for (const KernelMeasurement& row : tables.rows)
      if (row.gpu != gpu) rest.push_back(row);
    folds.emplace(gpu, GpuKernelModel::fit(rest, catalogue, rounds));
  }
  return folds;
}

std::vector<TransformerLabel> load_transformer_labels(const hardware::Catalogue& catalogue, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + quote(path));
  std::vector<std::string> fields, header;
  int64_t line = 0;
  std::vector<TransformerLabel> labels;
  auto column = [&](const char* name) -> const std::string& {
    for (size_t index = 0; index < header.size() && index < fields.size(); ++index)
      if (header[index] == name) return fields[index];
    throw InputError(path + " line " + std::to_string(line) + ": no column " + name);
  };
  while (read_csv_record(in, fields, line)) {
    if (fields.empty() || fields[0].empty() || fields[0][0] == '#') continue;
    if (header.empty()) {
      header = fields;
      continue;
    }
    if (!column("variant").empty() || column("model").rfind("switch", 0) == 0) continue;
    std::string listed = column("device");
    for (char& c : listed)
      if (c == '_') c = ' ';
    const hardware::GpuSpec* gpu = catalogue.find(listed);
    if (!gpu || gpu->vendor != "nvidia") continue;
    TransformerLabel label;
    label.gpu = gpu->name;
    label.gpu_listed = column("device");
    label.model = column("model");
    label.phase = column("mode") == "train" ? GpuPhase::ForwardBackward : GpuPhase::Inference;
    try {
      label.seq = std::stoll(column("seq_len"));
      label.batch = std::stoll(column("batch_size"));
      label.measured_ms = std::stod(column("e2e_ms"));
    } catch (const std::exception&) {
      throw InputError(path + " line " + std::to_string(line) + ": seq_len, batch_size or e2e_ms is not a number");
    }
    label.test_gpu = is_held_out_test_gpu(gpu->name);
    labels.push_back(label);
  }
  return labels;
}

LabelForecast forecast_label(const TransformerLabel& label, const std::string& configs_dir,
                             const hardware::Catalogue& catalogue, const GpuCalibration& calibration,
                             const GpuKernelModel& model) {
  models::ModelSpec spec;
  spec.batch = label.batch;
  spec.seq_len = label.seq;
  const Graph graph = import::load_model((std::filesystem::path(configs_dir) / (label.model + ".json")).string(), spec);
  const GpuTiming timing =
      time_on_gpu(gpu_work(graph, GpuPrecision::Fp32, Optimizer::Sgd, label.phase), catalogue.gpu(label.gpu),
                  GpuPrecision::Fp32, Framework::PyTorch, calibration, &model);
  return {timing.time_ms, timing.roofline_ms};
}

}  // namespace dnncast::gpu
