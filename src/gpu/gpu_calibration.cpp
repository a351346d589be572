// Public GPU tables, the calibration fit and the held-out evaluation (gpu_calibration.h).
#include "gpu/gpu_calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <set>
#include <tuple>

#include "core/csv.h"
#include "core/error.h"
#include "gpu/kernel_model.h"
#include "import/model_source.h"

namespace fs = std::filesystem;

namespace dnncast::gpu {

namespace {

// One table: its header's columns by name, rows as maps.
struct Table {
  std::string path;
  std::vector<std::string> columns;
  std::vector<std::pair<int64_t, std::vector<std::string>>> rows;  // line, fields

  const std::string& get(const std::vector<std::string>& fields, const std::string& column, int64_t line) const {
    auto at = std::find(columns.begin(), columns.end(), column);
    if (at == columns.end()) throw InputError(path + ": no column " + quote(column));
    const size_t index = static_cast<size_t>(at - columns.begin());
    if (index >= fields.size()) throw InputError(path + " line " + std::to_string(line) + ": too few fields");
    return fields[index];
  }
  double number(const std::vector<std::string>& fields, const std::string& column, int64_t line) const {
    const std::string& text = get(fields, column, line);
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(value) || value <= 0)
      throw InputError(path + " line " + std::to_string(line) + ": " + column + " " + quote(text) +
                       " is not a positive number");
    return value;
  }
};

Table read_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read public table " + quote(path));
  Table table;
  table.path = path;
  std::string comment;
  std::getline(in, comment);  // line 1: what the file is
  int64_t line = 1;
  std::vector<std::string> fields;
  if (!read_csv_record(in, table.columns, line)) throw InputError(path + ": no header");
  while (read_csv_record(in, fields, line))
    if (!fields.empty() && !(fields.size() == 1 && fields[0].empty())) table.rows.push_back({line, fields});
  return table;
}

// The table's GPU name without the host's wording ("LambdaCloud 1x H100 80GB SXM5" -> "H100 80GB SXM5").
std::string strip_host(std::string name) {
  for (const char* prefix : {"Lambda Cloud - ", "LambdaCloud 1x ", "LambdaCloud "})
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  if (name.size() > 3 && name.compare(name.size() - 3, 3, " V1") == 0) name.resize(name.size() - 3);
  return name;
}

struct Collector {
  const hardware::Catalogue& catalogue;
  PublicTables& out;

  // Adds the row when its GPU, model and the peak its precision needs are known; counts it otherwise.
  void add(PublicMeasurement row, const std::string& model_listed, const std::string& zoo_model) {
    if (zoo_model.empty()) return skip(row.table + ": model " + model_listed + " is not in the zoo");
    const hardware::GpuSpec* gpu = catalogue.find(strip_host(row.gpu_listed));
    if (!gpu) return skip(row.table + ": GPU " + row.gpu_listed + " is not in the catalogue");
    // The columns the forecast at the row's precision needs (gpu_forecast.h), each named.
    const std::vector<std::string> missing = missing_peaks(*gpu, row.precision);
    if (!missing.empty()) {
      std::string columns;
      for (const std::string& column : missing) columns += (columns.empty() ? "" : ", ") + column;
      return skip(row.table + ": GPU " + gpu->name + " has no " + columns + " in the catalogue (" +
                  name(row.precision) + " needs " + (missing.size() == 1 ? "it" : "them") + ")");
    }
    row.gpu = gpu->name;
    row.model = zoo_model;
    out.rows.push_back(row);
  }
  void skip(const std::string& reason) { ++out.skipped[reason]; }
};

std::string lookup(const std::vector<std::pair<const char*, const char*>>& names, const std::string& listed) {
  for (const auto& [from, to] : names)
    if (listed == from) return to;
  return "";
}

void load_lambda_tf(const Table& table, Collector& collect) {
  static const std::vector<std::pair<const char*, const char*>> models = {{"alexnet", "alexnet"},
                                                                          {"inception3", "inception_v3"},
                                                                          {"resnet50", "resnet50"},
                                                                          {"resnet152", "resnet152"},
                                                                          {"vgg16", "vgg16"}};
  for (const auto& [line, fields] : table.rows) {
    PublicMeasurement row;
    row.table = "lambda_tf";
    row.line = line;
    row.gpu_listed = table.get(fields, "gpu", line);
    row.framework = Framework::TensorFlow;
    // TF32 is on by default in NVIDIA's TensorFlow 1.15 builds for CUDA 11 and in TensorFlow >= 2.4; TensorFlow
    // 2.3 has none.
    const std::string& cuda = table.get(fields, "cuda", line);
    const std::string& version = table.get(fields, "tf_version", line);
    const bool tf32 = (version == "1.15" && cuda.rfind("V11", 0) == 0) || version == "2.4";
    row.precision = table.get(fields, "precision", line) == "fp16" ? GpuPrecision::Fp16
                    : tf32                                         ? GpuPrecision::Tf32
                                                                   : GpuPrecision::Fp32;
    const std::string& xla = table.get(fields, "xla", line);
    if (xla != "yes" && xla != "no")
      throw InputError(table.path + " line " + std::to_string(line) + ": xla must be yes or no, got " + quote(xla));
    row.xla = xla == "yes";
    row.spec.batch = static_cast<int64_t>(table.number(fields, "batch_size", line));
    row.measured_ms = table.number(fields, "ms_per_iter_derived", line);
    const std::string& model = table.get(fields, "model", line);
    collect.add(row, model, lookup(models, model));
  }
}

void load_lambda_pytorch(const Table& table, Collector& collect) {
  for (const auto& [line, fields] : table.rows) {
    const std::string& model = table.get(fields, "model", line);
    const std::string& precision = table.get(fields, "precision", line);
    if (model != "resnet50") {
      collect.skip("lambda_pytorch: " + model + " (real data; SQuAD/COCO models not in the zoo)");
      continue;
    }
    if (table.get(fields, "data", line) != "synthetic") {
      collect.skip("lambda_pytorch: resnet50 with real data (data loading timed)");
      continue;
    }
    if (precision == "fp16_pure") {
      collect.skip("lambda_pytorch: resnet50 fp16_pure (pure half, not autocast)");
      continue;
    }
    PublicMeasurement row;
    row.table = "lambda_pytorch";
    row.line = line;
    row.gpu_listed = table.get(fields, "gpu", line);
    // NGC containers run fp32 convolutions and GEMMs on TF32 tensor cores where the GPU has them.
    row.precision = precision == "amp_fp16" ? GpuPrecision::Fp16 : GpuPrecision::Tf32;
    row.spec.batch = static_cast<int64_t>(table.number(fields, "batch_size", line));
    row.measured_ms = table.number(fields, "ms_per_iter_derived", line);
    collect.add(row, model, "resnet50");
  }
}

void load_jcjohnson(const Table& table, Collector& collect) {
  static const std::vector<std::pair<const char*, const char*>> models = {
      {"AlexNet", "alexnet"},    {"Inception-V1", "googlenet"}, {"VGG-16", "vgg16"},
      {"VGG-19", "vgg19"},       {"ResNet-18", "resnet18"},     {"ResNet-34", "resnet34"},
      {"ResNet-50", "resnet50"}, {"ResNet-101", "resnet101"},   {"ResNet-152", "resnet152"}};
  // The newest cuDNN per model and GPU (versions compare as text: 4.0.07 < 5.0.05 < 5.1.10).
  std::map<std::pair<std::string, std::string>, std::pair<std::string, size_t>> newest;
  for (size_t index = 0; index < table.rows.size(); ++index) {
    const auto& [line, fields] = table.rows[index];
    const std::string& cudnn = table.get(fields, "cudnn_version", line);
    if (cudnn == "None") {
      collect.skip("jcjohnson: rows without cuDNN (torch/nn kernels or the CPU)");
      continue;
    }
    auto key = std::make_pair(table.get(fields, "model", line), table.get(fields, "device", line));
    auto at = newest.find(key);
    if (at == newest.end() || at->second.first < cudnn) {
      if (at != newest.end()) collect.skip("jcjohnson: older cuDNN versions of a model and GPU");
      newest[key] = {cudnn, index};
    } else {
      collect.skip("jcjohnson: older cuDNN versions of a model and GPU");
    }
  }
  for (const auto& [key, chosen] : newest) {
    const auto& [line, fields] = table.rows[chosen.second];
    PublicMeasurement row;
    row.table = "jcjohnson";
    row.line = line;
    row.gpu_listed = key.second;
    row.framework = Framework::Torch7;
    row.with_optimizer_step = false;
    row.spec.batch = static_cast<int64_t>(table.number(fields, "batch_size", line));
    row.measured_ms = table.number(fields, "total_fwd_bwd_ms", line);
    collect.add(row, key.first, lookup(models, key.first));
  }
}

void load_u39kun(const Table& table, Collector& collect) {
  static const std::vector<std::pair<const char*, const char*>> models = {
      {"vgg16", "vgg16"}, {"resnet152", "resnet152"}, {"densenet161", "densenet161"}};
  for (const auto& [line, fields] : table.rows) {
    if (table.get(fields, "mode", line) != "train") continue;  // eval rows are forward only
    const std::string& framework = table.get(fields, "framework", line);
    PublicMeasurement row;
    row.table = "u39kun";
    row.line = line;
    if (framework.rfind("PyTorch", 0) == 0) {
      row.framework = Framework::PyTorch;
    } else if (framework.rfind("TensorFlow", 0) == 0 || framework.rfind("Tensorflow", 0) == 0) {
      row.framework = Framework::TensorFlow;
    } else {
      collect.skip("u39kun: " + framework.substr(0, framework.find(' ')) + " rows");
      continue;
    }
    row.gpu_listed = table.get(fields, "gpu", line);
    row.precision = table.get(fields, "precision", line) == "fp16" ? GpuPrecision::Fp16 : GpuPrecision::Fp32;
    row.with_optimizer_step = false;
    row.spec.batch = static_cast<int64_t>(table.number(fields, "batch_size", line));
    row.measured_ms = table.number(fields, "time_ms", line);
    const std::string& model = table.get(fields, "model", line);
    collect.add(row, model, lookup(models, model));
  }
}

}  // namespace

std::string default_public_dir() { return shared_public_dir("DNNCAST_PUBLIC_DATA", "gpu_benchmarks"); }

PublicTables load_public_tables(const hardware::Catalogue& catalogue, const std::string& given) {
  PublicTables tables;
  tables.dir = given.empty() ? default_public_dir() : given;
  if (tables.dir.empty())
    throw InputError(
        "no public GPU tables found (../shared/data/public/gpu_benchmarks): set DNNCAST_PUBLIC_DATA "
        "or pass --public DIR");
  Collector collect{catalogue, tables};
  const fs::path dir(tables.dir);
  load_lambda_tf(read_table((dir / "lambda_tf_cnn_benchmarks_1gpu.csv").string()), collect);
  load_lambda_pytorch(read_table((dir / "lambda_pytorch_dle_1gpu.csv").string()), collect);
  load_jcjohnson(read_table((dir / "jcjohnson_cnn_benchmarks_torch7.csv").string()), collect);
  load_u39kun(read_table((dir / "u39kun_framework_gpu_bs16.csv").string()), collect);
  return tables;
}

// ---------------------------------------------------------------------------------------------
// Prepared rows

CalibrationSet::CalibrationSet(const std::vector<PublicMeasurement>& rows, const hardware::Catalogue& catalogue,
                               const GpuKernelModel* kernels)
    : rows_(rows) {
  std::map<std::pair<const GpuWork*, const hardware::GpuSpec*>, std::shared_ptr<const KernelBusy>> busy;
  std::map<std::tuple<std::string, int64_t, int, bool>, std::shared_ptr<const GpuWork>> built;
  for (const PublicMeasurement& row : rows_) {
    gpus_.push_back(&catalogue.gpu(row.gpu));
    auto key = std::make_tuple(row.model, row.spec.batch, static_cast<int>(row.precision), row.with_optimizer_step);
    auto at = built.find(key);
    if (at == built.end()) {
      const Graph graph = import::load_model(row.model, row.spec);
      at = built
               .emplace(key, std::make_shared<const GpuWork>(
                                 gpu_work(graph, row.precision, Optimizer::Sgd, row.with_optimizer_step)))
               .first;
    }
    work_.push_back(at->second);
    std::shared_ptr<const KernelBusy> row_busy;
    if (kernels && times_per_kernel(*gpus_.back(), row.precision)) {
      auto& cached = busy[{at->second.get(), gpus_.back()}];
      if (!cached) cached = std::make_shared<const KernelBusy>(kernel_busy(*at->second, *gpus_.back(), *kernels));
      row_busy = cached;
    }
    busy_.push_back(row_busy);
  }
}

GpuTiming CalibrationSet::time(size_t index, const GpuCalibration& calibration) const {
  if (busy_[index]) return time_from_busy(*busy_[index], rows_[index].framework, calibration);
  return time_on_gpu(*work_[index], *gpus_[index], rows_[index].precision, rows_[index].framework, calibration);
}

// ---------------------------------------------------------------------------------------------
// The fit

namespace {

double logistic(double x) { return 1 / (1 + std::exp(-x)); }
double logit(double p) { return std::log(p / (1 - p)); }

constexpr size_t kParameters = 19;
constexpr double kConvCeilingMax = 3;  // fp32 Winograd and FFT kernels beat the direct FLOP count
constexpr double kHuber = 0.3;         // log-ratio beyond which the loss grows linearly
using Point = std::array<double, kParameters>;

// Unbounded coordinates -> constants: ceilings and memory efficiency in (0, 1), the rest positive.
GpuCalibration decode(const Point& x) {
  GpuCalibration c;
  c.conv_fp32 = {kConvCeilingMax * logistic(x[0]), std::exp(x[1])};
  c.conv_tensor = {logistic(x[2]), std::exp(x[3])};
  c.gemm_fp32 = {logistic(x[4]), std::exp(x[5])};
  c.gemm_tensor = {logistic(x[6]), std::exp(x[7])};
  c.memory_efficiency = logistic(x[8]);
  c.kernel_launch_us = std::exp(x[9]);
  c.iteration_us = std::exp(x[10]);
  c.tensorflow_factor = std::exp(x[11]);
  c.torch7_factor = std::exp(x[12]);
  c.conv3x3_fp32 = {kConvCeilingMax * logistic(x[13]), std::exp(x[14])};
  c.conv_tf32 = {kConvCeilingMax * logistic(x[15]), std::exp(x[16])};
  c.tensorflow_iteration_us = std::exp(x[17]);
  c.tensor_vector_share = std::exp(x[18]);
  c.source = "fit";
  return c;
}

Point start_point() {
  return {logit(0.6 / kConvCeilingMax),
          std::log(2e8),
          logit(0.4),
          std::log(2e8),
          logit(0.6),
          std::log(2e8),
          logit(0.4),
          std::log(2e8),
          logit(0.7),
          std::log(5.0),
          std::log(1000.0),
          0.0,
          0.0,
          logit(1.0 / kConvCeilingMax),
          std::log(2e8),
          logit(0.4 / kConvCeilingMax),
          std::log(2e8),
          std::log(1000.0),
          std::log(0.02)};
}

// Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5), `iterations` steps.
Point nelder_mead(const std::function<double(const Point&)>& f, Point start, double step, int iterations) {
  std::vector<Point> simplex(kParameters + 1, start);
  for (size_t i = 0; i < kParameters; ++i) simplex[i + 1][i] += step;
  std::vector<double> value(simplex.size());
  for (size_t i = 0; i < simplex.size(); ++i) value[i] = f(simplex[i]);
  std::vector<size_t> order(simplex.size());
  for (int iteration = 0; iteration < iterations; ++iteration) {
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value[a] < value[b]; });
    const size_t worst = order.back(), second = order[order.size() - 2], best = order.front();
    Point centroid{};
    for (size_t i = 0; i + 1 < order.size(); ++i)
      for (size_t d = 0; d < kParameters; ++d) centroid[d] += simplex[order[i]][d] / kParameters;
    auto along = [&](double t) {
      Point p;
      for (size_t d = 0; d < kParameters; ++d) p[d] = centroid[d] + t * (simplex[worst][d] - centroid[d]);
      return p;
    };
    const Point reflected = along(-1);
    const double reflected_value = f(reflected);
    if (reflected_value < value[best]) {
      const Point expanded = along(-2);
      const double expanded_value = f(expanded);
      if (expanded_value < reflected_value)
        simplex[worst] = expanded, value[worst] = expanded_value;
      else
        simplex[worst] = reflected, value[worst] = reflected_value;
    } else if (reflected_value < value[second]) {
      simplex[worst] = reflected, value[worst] = reflected_value;
    } else {
      const Point contracted = along(0.5);
      const double contracted_value = f(contracted);
      if (contracted_value < value[worst]) {
        simplex[worst] = contracted, value[worst] = contracted_value;
      } else {
        for (size_t i = 0; i < simplex.size(); ++i) {
          if (i == best) continue;
          for (size_t d = 0; d < kParameters; ++d)
            simplex[i][d] = simplex[best][d] + 0.5 * (simplex[i][d] - simplex[best][d]);
          value[i] = f(simplex[i]);
        }
      }
    }
  }
  return simplex[static_cast<size_t>(std::min_element(value.begin(), value.end()) - value.begin())];
}

}  // namespace

std::vector<size_t> CalibrationSet::scored_rows(bool with_test_gpus) const {
  std::vector<size_t> rows;
  for (size_t index = 0; index < rows_.size(); ++index)
    if (with_test_gpus || !is_held_out_test_gpu(rows_[index].gpu)) rows.push_back(index);
  return rows;
}

GpuCalibration fit_gpu_calibration(const CalibrationSet& set, const std::vector<bool>& use) {
  // The test GPUs of NeuSight's protocol are judged, never fitted on.
  std::vector<size_t> rows;
  for (size_t index : set.scored_rows())
    if (use.empty() || use[index]) rows.push_back(index);
  if (rows.empty()) throw InputError("no public measurements to calibrate on");
  bool tensorflow = false, torch7 = false, fp32_curves = false;
  for (size_t index : rows) {
    tensorflow |= set.row(index).framework == Framework::TensorFlow;
    torch7 |= set.row(index).framework == Framework::Torch7;
    fp32_curves |= !set.per_kernel(index) && set.row(index).precision == GpuPrecision::Fp32;
  }
  // The fp32 curves with no row to time (the per-kernel model times them) keep their start values.
  const Point start = start_point();
  auto unused_fp32 = [&](const Point& x) {
    double pull = 0;
    if (!fp32_curves)
      for (size_t i : {0, 1, 4, 5, 13, 14}) pull += (x[i] - start[i]) * (x[i] - start[i]);
    return pull;
  };
  auto loss = [&](const Point& x) {
    const GpuCalibration c = decode(x);
    double sum = 0;
    for (size_t index : rows) {
      // Huber on the log ratio: a broken run in a table (lambda_tf has a VGG-16 fp16 row 17x its
      // twins) pulls the fit linearly, not quadratically.
      const double error = std::abs(std::log(set.time(index, c).time_ms / set.row(index).measured_ms));
      sum += error < kHuber ? error * error : kHuber * (2 * error - kHuber);
    }
    // A framework with no rows keeps factor 1 (a weak pull, so its coordinate does not wander).
    return sum / static_cast<double>(rows.size()) +
           (tensorflow ? 0 : x[11] * x[11] + (x[17] - x[10]) * (x[17] - x[10])) + (torch7 ? 0 : x[12] * x[12]) +
           unused_fp32(x);
  };
  Point best = start_point();
  for (double step : {1.0, 0.5, 0.25}) best = nelder_mead(loss, best, step, 1500);
  GpuCalibration calibration = decode(best);
  std::map<std::string, std::set<std::string>> tables;
  std::map<std::string, int64_t> counts;
  for (size_t index : rows) {
    tables[set.row(index).gpu].insert(set.row(index).table);
    ++counts[set.row(index).gpu];
  }
  for (const auto& [gpu, count] : counts) {
    std::string joined;
    for (const std::string& table : tables[gpu]) joined += (joined.empty() ? "" : " ") + table;
    calibration.gpus.push_back({gpu, {count, joined}});
  }
  return calibration;
}

namespace {

HeldOut held_out_by(const CalibrationSet& set, const std::string& group,
                    const std::function<const CalibrationSet&(const std::string&)>& fold_set) {
  auto key = [&](size_t index) { return group == "gpu" ? set.row(index).gpu : set.row(index).model; };
  std::set<std::string> groups;
  for (size_t index = 0; index < set.size(); ++index) groups.insert(key(index));
  HeldOut held;
  held.group = group;
  held.forecast_ms.assign(set.size(), 0);
  held.roofline_ms.assign(set.size(), 0);
  for (const std::string& name : groups) {
    const CalibrationSet& fold = fold_set(name);
    std::vector<bool> use(set.size());
    for (size_t index = 0; index < set.size(); ++index) use[index] = key(index) != name;
    const GpuCalibration calibration = fit_gpu_calibration(fold, use);
    for (size_t index = 0; index < set.size(); ++index) {
      if (use[index]) continue;
      const GpuTiming timing = fold.time(index, calibration);
      held.forecast_ms[index] = timing.time_ms;
      held.roofline_ms[index] = timing.roofline_ms;
    }
  }
  return held;
}

}  // namespace

HeldOut leave_one_out(const CalibrationSet& set, const std::string& group) {
  if (group != "gpu" && group != "model") throw InputError("leave-one-out group " + quote(group) + ": gpu or model");
  return held_out_by(set, group, [&](const std::string&) -> const CalibrationSet& { return set; });
}

HeldOut leave_one_gpu_out(const CalibrationSet& set, const hardware::Catalogue& catalogue,
                          const std::map<std::string, GpuKernelModel>& folds) {
  std::unique_ptr<CalibrationSet> current;
  return held_out_by(set, "gpu", [&](const std::string& gpu) -> const CalibrationSet& {
    const auto at = folds.find(gpu);
    if (at == folds.end()) return set;
    current = std::make_unique<CalibrationSet>(set.rows(), catalogue, &at->second);
    return *current;
  });
}

// The tables' own noise floor: rows of one GPU, model, batch, precision and framework (TensorFlow with XLA or
// without) measured more than once (other systems, software versions), each row's relative deviation from its
// group's mean.
std::pair<double, int64_t> duplicate_spread(const CalibrationSet& set) {
  std::map<std::string, std::vector<double>> groups;
  for (size_t index = 0; index < set.size(); ++index) {
    const PublicMeasurement& row = set.row(index);
    groups[row.table + "/" + row.gpu + "/" + row.model + "/" + std::to_string(row.spec.batch) + "/" +
           name(row.precision) + "/" + name(row.framework) + (row.xla ? "+xla" : "")]
        .push_back(row.measured_ms);
  }
  double sum = 0;
  int64_t rows = 0;
  for (const auto& [key, times] : groups) {
    if (times.size() < 2) continue;
    double mean = 0;
    for (double t : times) mean += t / static_cast<double>(times.size());
    for (double t : times) sum += std::abs(t / mean - 1), ++rows;
  }
  return {rows ? sum / static_cast<double>(rows) : 0, rows};
}

// Every row: measured, the fit on all rows, held out by GPU and by model, and the plain roofline.
void write_residuals(const CalibrationSet& set, const GpuCalibration& calibration, const HeldOut& held_gpu,
                     const HeldOut& held_model, const std::string& path, bool with_test_gpus) {
  std::ofstream out(path);
  if (!out) throw InputError("--residuals " + quote(path) + ": cannot write the file");
  out << "# dnncast GPU forecast residuals: written by `dnncast calibrate-gpus --residuals " << path
      << "`; per public row (../shared/data/public/gpu_benchmarks) the measured time per iteration, the forecast "
         "fitted on all rows, the forecast with the row's GPU held out of the fit, with its model held out, and "
         "the plain roofline (ms)"
      << (with_test_gpus ? ""
                         : "; the three forecasts of NeuSight's test GPUs' rows empty (--score-test-gpus writes them)")
      << "\n";
  write_csv_record(out, {"table", "line", "gpu", "model", "batch", "precision", "framework", "measured_ms", "fit_ms",
                         "held_gpu_ms", "held_model_ms", "roofline_ms"});
  char number[5][32];
  for (size_t index = 0; index < set.size(); ++index) {
    const PublicMeasurement& row = set.row(index);
    const GpuTiming timing = set.time(index, calibration);
    const double values[5] = {row.measured_ms, timing.time_ms, held_gpu.forecast_ms[index],
                              held_model.forecast_ms[index], timing.roofline_ms};
    const bool hidden = !with_test_gpus && is_held_out_test_gpu(row.gpu);
    for (int column = 0; column < 5; ++column) {
      std::snprintf(number[column], sizeof number[column], "%.6g", values[column]);
      if (hidden && column >= 1 && column <= 3) number[column][0] = '\0';
    }
    write_csv_record(out,
                     {row.table, std::to_string(row.line), row.gpu, row.model, std::to_string(row.spec.batch),
                      name(row.precision), name(row.framework), number[0], number[1], number[2], number[3], number[4]});
  }
  if (!out) throw InputError("--residuals " + quote(path) + ": writing failed");
}

}  // namespace dnncast::gpu
