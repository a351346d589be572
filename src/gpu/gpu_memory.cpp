// The nvidia-smi memory model's constants (gpu_memory.h): the file that holds them and the configuration
// every GPU memory forecast simulates with.
#include "gpu/gpu_memory.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/csv.h"
#include "core/error.h"
#include "hardware/catalogue.h"

namespace dnncast::gpu {

std::string default_gpu_memory_calibration_path() {
  const std::string dir = hardware::default_catalogue_dir();
  return dir.empty() ? "" : (std::filesystem::path(dir) / "gpu_memory_calibration.csv").string();
}

namespace {

// The file's keys: the first three are required, the later ones default to 0 (a file from before issue 46).
constexpr const char* kRequiredKeys[] = {"context_bytes", "workspace_bytes", "reserve_fraction"};
constexpr const char* kOptionalKeys[] = {"cudnn_context_bytes", "conv_workspace_fraction", "upper_margin",
                                         "upper_quantile"};

std::string number_text(double value) {
  std::ostringstream text;
  text.precision(6);
  text << value;
  return text.str();
}

}  // namespace

// key,value,detail rows: the keys above; the details of context_bytes (fitted on) and upper_margin (measured how).
GpuMemoryCalibration load_gpu_memory_calibration(const std::string& given) {
  const std::string path = given.empty() ? default_gpu_memory_calibration_path() : given;
  if (path.empty())
    throw InputError(
        "no GPU memory calibration: data/hardware/gpu_memory_calibration.csv not found (set DNNCAST_HARDWARE)");
  std::ifstream in(path);
  if (!in) throw InputError("cannot read GPU memory calibration " + quote(path));
  GpuMemoryCalibration calibration;
  calibration.source = path;
  std::map<std::string, double> values;
  std::vector<std::string> fields;
  int64_t line = 0;
  auto known = [](const std::string& key) {
    for (const char* name : kRequiredKeys)
      if (key == name) return true;
    for (const char* name : kOptionalKeys)
      if (key == name) return true;
    return false;
  };
  double value = 0;
  std::string where;
  while (read_key_value_record(in, path, fields, line, value, where)) {
    if (!known(fields[0]))
      throw InputError(where + ": unknown key " + quote(fields[0]) +
                       " (context_bytes, workspace_bytes, reserve_fraction, cudnn_context_bytes, "
                       "conv_workspace_fraction, upper_margin, upper_quantile)");
    if (values.count(fields[0])) throw InputError(where + ": key " + quote(fields[0]) + " given twice");
    values[fields[0]] = value;
    if (fields[0] == "context_bytes" && fields.size() > 2) calibration.fitted_on = fields[2];
    if (fields[0] == "upper_margin" && fields.size() > 2) calibration.margin_from = fields[2];
  }
  for (const char* key : kRequiredKeys)
    if (!values.count(key)) throw InputError(path + ": key " + quote(key) + " is missing");
  calibration.context_bytes = static_cast<int64_t>(std::llround(values["context_bytes"]));
  calibration.workspace_bytes = static_cast<int64_t>(std::llround(values["workspace_bytes"]));
  calibration.reserve_fraction = values["reserve_fraction"];
  calibration.cudnn_context_bytes = static_cast<int64_t>(std::llround(values["cudnn_context_bytes"]));
  calibration.conv_workspace_fraction = values["conv_workspace_fraction"];
  calibration.upper_margin = values["upper_margin"];
  calibration.upper_quantile = values["upper_quantile"];
  for (const char* key : {"reserve_fraction", "conv_workspace_fraction", "upper_margin"})
    if (values[key] >= 10) throw InputError(path + ": " + key + " must be below 10");
  if (calibration.upper_quantile > 1) throw InputError(path + ": upper_quantile must be at most 1");
  return calibration;
}

void write_gpu_memory_calibration(const GpuMemoryCalibration& calibration, const std::string& path,
                                  const std::string& header) {
  std::ofstream out(path);
  if (!out) throw InputError("cannot write " + quote(path));
  out << "# " << header << "\n";
  write_csv_record(out, {"key", "value", "detail"});
  write_csv_record(out, {"context_bytes", std::to_string(calibration.context_bytes), calibration.fitted_on});
  write_csv_record(out, {"workspace_bytes", std::to_string(calibration.workspace_bytes),
                         "derived: PyTorch's default cuBLAS workspace (:4096:2:16:8), not fitted"});
  write_csv_record(out, {"reserve_fraction", number_text(calibration.reserve_fraction),
                         "fitted: extra reserve per byte of simulated tensors"});
  write_csv_record(out, {"cudnn_context_bytes", std::to_string(calibration.cudnn_context_bytes),
                         "fitted: what cuDNN's kernels add to the context (graphs with convolutions or BatchNorm)"});
  write_csv_record(out, {"conv_workspace_fraction", number_text(calibration.conv_workspace_fraction),
                         "fitted: cuDNN's workspaces per byte of the largest dense convolution's input + output"});
  write_csv_record(out, {"upper_margin", number_text(calibration.upper_margin), calibration.margin_from});
  write_csv_record(out, {"upper_quantile", number_text(calibration.upper_quantile),
                         "the quantile of measured / forecast on held-out runs the margin was taken at"});
  if (!out) throw InputError("cannot write " + quote(path));
}

void apply_gpu_memory_calibration(const GpuMemoryCalibration& calibration, memory::MemoryConfig& config) {
  config.device = Device::Cuda;
  config.python_defaults = true;
  config.cuda_context_bytes = calibration.context_bytes;
  config.cuda_workspace_bytes = calibration.workspace_bytes;
  config.cuda_reserve_fraction = calibration.reserve_fraction;
  config.cuda_cudnn_context_bytes = calibration.cudnn_context_bytes;
  config.cuda_conv_workspace_fraction = calibration.conv_workspace_fraction;
  config.cuda_upper_margin = calibration.upper_margin;
}

memory::MemoryConfig gpu_memory_config(const GpuMemoryCalibration& calibration, Optimizer optimizer) {
  memory::MemoryConfig config;
  config.optimizer = optimizer;
  config.precision = Precision::Fp32;
  apply_gpu_memory_calibration(calibration, config);
  return config;
}

std::vector<std::string> gpu_memory_notes(const GpuMemoryCalibration& calibration, const std::string& gpu,
                                          bool context_measured, bool cudnn_loaded) {
  auto mib = [](int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(int64_t{1} << 20));
    return std::string(text);
  };
  const std::string on =
      calibration.fitted_on.empty() ? "(no detail in " + calibration.source + ")" : calibration.fitted_on;
  std::vector<std::string> notes;
  notes.push_back(context_measured ? "context: " + mib(calibration.context_bytes) +
                                         " would be the fitted one; the measured one given is used"
                                   : "context: " + mib(calibration.context_bytes) + ", " + on);
  char fraction[64];
  std::snprintf(fraction, sizeof fraction, "%.2f%%", 100 * calibration.reserve_fraction);
  notes.push_back("allocator reserve: the simulated caching allocator's segments beyond its blocks, plus " +
                  std::string(fraction) + " of the tensors (fitted alike)");
  notes.push_back("workspaces: " + mib(calibration.workspace_bytes) +
                  ", PyTorch's default cuBLAS workspace (derived, not fitted)");
  if (!cudnn_loaded) {
    notes.push_back("cuDNN: not loaded (no convolution or BatchNorm), so neither its kernels nor its workspaces count");
  } else if (calibration.cudnn_context_bytes > 0 || calibration.conv_workspace_fraction > 0) {
    char cudnn[200];
    std::snprintf(cudnn, sizeof cudnn,
                  "cuDNN (graphs with convolutions or BatchNorm): its kernels add %s to the context, its workspaces "
                  "%.0f%% of the largest dense convolution's input + output (fitted alike)",
                  mib(calibration.cudnn_context_bytes).c_str(), 100 * calibration.conv_workspace_fraction);
    notes.push_back(cudnn);
  }
  if (calibration.upper_margin > 0) {
    char margin[200];
    std::snprintf(margin, sizeof margin,
                  "upper bound: the forecast + %.1f%%, the %.0f%% quantile of measured / forecast on runs held out "
                  "of the fit; fits and the largest batch are judged on it",
                  100 * calibration.upper_margin, 100 * calibration.upper_quantile);
    notes.push_back(margin);
  }
  if (gpu != kGpuMemoryFittedOn)
    notes.push_back(
        "the contexts, reserve and workspace fractions and the margin were fitted on an A100 40GB and "
        "are carried over to " +
        gpu + " (its driver, CUDA version and kernels may differ)");
  return notes;
}

}  // namespace dnncast::gpu
