// NeuSight's per-kernel measurements (kernel_model.h load_kernel_tables): ops/train/OP/GPU.csv[.xz], one
// kernel call a row, fp32, latency in ms (../shared/data/public/neusight/README.md); and DeepBench's training
// convolutions, each pass of each row a kernel (load_deepbench_convolutions), and its training GEMMs
// (load_deepbench_gemms).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/csv.h"
#include "core/error.h"
#include "gpu/kernel_model.h"

namespace dnncast::gpu {

namespace fs = std::filesystem;

std::string table_text(const std::string& name) {
  const fs::path path(name);
  if (path.extension() != ".xz") {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) throw InputError("cannot read " + quote(path.string()));
    return text.str();
  }
  const std::string command = "xz -dc '" + path.string() + "' 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw InputError("cannot run xz to read " + quote(path.string()));
  std::string text;
  char buffer[1 << 16];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, got);
  if (pclose(pipe) != 0) throw InputError("cannot decompress " + quote(path.string()) + " (is xz installed?)");
  return text;
}

namespace {

// Per element of the elementwise ops: FLOPs, and bytes read + written (fp32).
struct ElementCost {
  double flops, bytes;
};
const std::map<std::string, ElementCost>& element_costs() {
  static const std::map<std::string, ElementCost> costs = {
      {"add", {1, 12}}, {"mul", {1, 12}}, {"div", {1, 12}},    {"pow", {4, 12}}, {"addu", {1, 8}},
      {"mulu", {1, 8}}, {"divu", {1, 8}}, {"powu", {4, 8}},    {"relu", {1, 8}}, {"tanh", {6, 8}},
      {"gelu", {8, 8}}, {"ln", {8, 8}},   {"softmax", {5, 8}},
  };
  return costs;
}

// The column's value: a finite number above 0 (a padding may be 0). InputError names the file, line and column.
double number(const std::vector<std::string>& header, const std::vector<std::string>& fields, const std::string& column,
              const std::string& where) {
  const bool padding = column == "Padding" || column == "pad_w" || column == "pad_h";
  for (size_t index = 0; index < header.size() && index < fields.size(); ++index) {
    if (header[index] != column) continue;
    char* end = nullptr;
    const double value = std::strtod(fields[index].c_str(), &end);
    if (end == fields[index].c_str() || *end != '\0' || !std::isfinite(value) ||
        !(value > 0 || (value == 0 && padding)))
      throw InputError(where + ": column " + column + " is " + quote(fields[index]) + ", not a " +
                       (padding ? "number of at least 0" : "positive number"));
    return value;
  }
  throw InputError(where + ": no column " + column);
}

KernelShape shape_of(const std::string& op, const std::vector<std::string>& header,
                     const std::vector<std::string>& fields, const std::string& where) {
  auto get = [&](const char* column) { return number(header, fields, column, where); };
  if (op == "linear" || op == "bmm") return gemm_kernel(get("B"), get("M"), get("N"), get("K"), op == "linear");
  if (op == "conv")
    return conv_kernel(get("B"), get("Input_Channel"), get("Output_Channel"), get("Kernel_Szie"), get("Input_Size"),
                       get("Stride"), get("Padding"));
  const ElementCost cost = element_costs().at(op);
  const KernelFamily family = op == "ln"        ? KernelFamily::Norm
                              : op == "softmax" ? KernelFamily::Softmax
                                                : KernelFamily::Elementwise;
  if (family != KernelFamily::Elementwise) return row_kernel(family, get("B"), get("H"), cost.flops, cost.bytes);
  const double elements = get("B") * get("H");
  return elementwise_kernel(elements, cost.flops * elements, cost.bytes * elements);
}

}  // namespace

std::string shared_public_dir(const char* variable, const std::string& relative) {
  if (const char* dir = std::getenv(variable)) return dir;
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) return "";
  for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    const fs::path candidate = dir / "shared" / "data" / "public" / relative;
    if (fs::is_directory(candidate, error)) return candidate.string();
    if (dir == dir.root_path()) break;
  }
  return "";
}

std::string default_kernel_tables_dir() { return shared_public_dir("DNNCAST_NEUSIGHT_DATA", "neusight/ops/train"); }

KernelTables load_kernel_tables(const hardware::Catalogue& catalogue, const std::string& given) {
  KernelTables tables;
  tables.dir = given.empty() ? default_kernel_tables_dir() : given;
  std::error_code error;
  if (tables.dir.empty() || !fs::is_directory(tables.dir, error))
    throw InputError(
        "no per-kernel tables found (../shared/data/public/neusight/ops/train): set "
        "DNNCAST_NEUSIGHT_DATA or pass --ops DIR");
  std::vector<fs::path> files;
  for (const auto& op_dir : fs::directory_iterator(tables.dir)) {
    if (!op_dir.is_directory() ||
        !(element_costs().count(op_dir.path().filename().string()) || op_dir.path().filename() == "linear" ||
          op_dir.path().filename() == "bmm" || op_dir.path().filename() == "conv"))
      continue;
    for (const auto& file : fs::directory_iterator(op_dir.path())) files.push_back(file.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError("no OP/GPU.csv files under " + quote(tables.dir));
  for (const fs::path& file : files) {
    std::string stem = file.filename().string();
    stem = stem.substr(0, stem.find(".csv"));
    std::string listed = stem;
    for (char& c : listed)
      if (c == '_') c = ' ';
    const hardware::GpuSpec* gpu = catalogue.find(listed);
    if (!gpu) throw InputError(file.string() + ": GPU " + quote(listed) + " is not in the catalogue");
    if (gpu->vendor != "nvidia") continue;
    const std::string op = file.parent_path().filename().string();
    std::istringstream in(table_text(file.string()));
    std::vector<std::string> header, fields;
    int64_t line = 0;
    if (!read_csv_record(in, header, line)) throw InputError(file.string() + ": empty");
    while (read_csv_record(in, fields, line)) {
      if (fields.empty() || (fields.size() == 1 && fields[0].empty())) continue;
      if (is_held_out_test_gpu(gpu->name)) {
        ++tables.held_out;
        continue;
      }
      const std::string where = file.string() + " line " + std::to_string(line);
      KernelMeasurement row;
      row.shape = shape_of(op, header, fields, where);
      row.gpu = gpu->name;
      row.seconds = number(header, fields, "Latency", where) * 1e-3;
      tables.rows.push_back(row);
    }
  }
  return tables;
}

namespace {

// A file of the public GPU benchmarks' folder, or "" when the folder or the file is not found.
std::string public_benchmark_file(const std::string& name) {
  const std::string dir = shared_public_dir("DNNCAST_PUBLIC_DATA", "gpu_benchmarks");
  if (dir.empty()) return "";
  const fs::path path = fs::path(dir) / name;
  std::error_code error;
  return fs::is_regular_file(path, error) ? path.string() : "";
}

// DeepBench's device column prefixes, and the catalogue GPU each is filed under (kernel_model.h).
const std::vector<std::pair<std::string, std::string>>& deepbench_devices() {
  static const std::vector<std::pair<std::string, std::string>> devices = {{"V100", "v100-32gb"},
                                                                           {"P100", "p100"},
                                                                           {"1080Ti", "gtx1080ti"},
                                                                           {"TitanXp", "titan-xp"},
                                                                           {"T4", "t4"},
                                                                           {"M40", "m40"},
                                                                           {"TitanX_Pascal", "titan-x-pascal"}};
  return devices;
}

// Reads up to the header row (the first not commented), which must start with `first`.
std::vector<std::string> deepbench_header(std::istream& in, int64_t& line, const std::string& path, const char* first,
                                          const char* named) {
  std::vector<std::string> header;
  while (read_csv_record(in, header, line))
    if (!header.empty() && !header[0].empty() && header[0][0] != '#') break;
  if (header.empty() || header[0] != first) throw InputError(path + ": no header row starting with " + named);
  return header;
}

// One DeepBench time of a catalogue GPU: a queued row (its latency is the busy time), or a test GPU's, counted out.
void add_queued_row(const KernelShape& shape, const std::string& gpu, double ms, KernelTables& tables,
                    DeepBenchLoad& load) {
  if (is_held_out_test_gpu(gpu)) {
    ++tables.held_out;
    return;
  }
  KernelMeasurement row;
  row.shape = shape;
  row.gpu = gpu;
  row.seconds = ms * 1e-3;
  row.group = "deepbench";
  row.timed_alone = false;
  tables.rows.push_back(row);
  ++load.rows;
}

}  // namespace

std::string default_deepbench_convolutions() { return public_benchmark_file("deepbench_conv_train_fp32.csv"); }
std::string default_deepbench_gemms() { return public_benchmark_file("deepbench_gemm_train_fp32.csv"); }

DeepBenchLoad load_deepbench_gemms(const hardware::Catalogue& catalogue, const std::string& path,
                                   KernelTables& tables) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + quote(path));
  DeepBenchLoad load;
  std::vector<std::string> fields;
  int64_t line = 0;
  const std::vector<std::string> header = deepbench_header(in, line, path, "M", "M,N,K");
  while (read_csv_record(in, fields, line)) {
    if (fields.empty() || (fields.size() == 1 && fields[0].empty())) continue;
    const std::string where = path + " line " + std::to_string(line);
    const double m = number(header, fields, "M", where), n = number(header, fields, "N", where),
                 k = number(header, fields, "K", where);
    for (const auto& [prefix, listed] : deepbench_devices()) {
      const auto at = std::find(header.begin(), header.end(), prefix + "_ms");
      if (at == header.end()) continue;
      const size_t column = static_cast<size_t>(at - header.begin());
      if (column >= fields.size() || fields[column].empty()) continue;  // not run
      const double ms = number(header, fields, *at, where);
      const hardware::GpuSpec* gpu = catalogue.find(listed);
      if (!gpu) {
        ++load.skipped[prefix + ": not in the catalogue"];
        continue;
      }
      add_queued_row(gemm_kernel(1, m, n, k), gpu->name, ms, tables, load);
    }
  }
  return load;
}

DeepBenchLoad load_deepbench_convolutions(const hardware::Catalogue& catalogue, const std::string& path,
                                          KernelTables& tables) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + quote(path));
  static const std::array<std::pair<const char*, ConvPass>, 3> passes = {{{"_fwd_ms", ConvPass::Forward},
                                                                          {"_bwd_data_ms", ConvPass::InputGrad},
                                                                          {"_bwd_filter_ms", ConvPass::WeightGrad}}};
  DeepBenchLoad load;
  std::vector<std::string> fields;
  int64_t line = 0;
  const std::vector<std::string> header = deepbench_header(in, line, path, "W", "W,H,C,N,K");
  auto column = [&](const std::string& name) -> int {
    const auto at = std::find(header.begin(), header.end(), name);
    return at == header.end() ? -1 : static_cast<int>(at - header.begin());
  };
  while (read_csv_record(in, fields, line)) {
    if (fields.empty() || (fields.size() == 1 && fields[0].empty())) continue;
    const std::string where = path + " line " + std::to_string(line);
    auto get = [&](const char* name) { return number(header, fields, name, where); };
    const double width = get("W"), height = get("H"), channels = get("C"), batch = get("N"), out = get("K"),
                 kernel_w = get("filter_w"), kernel_h = get("filter_h"), stride_w = get("stride_w"),
                 stride_h = get("stride_h");
    const double pad_w = get("pad_w"), pad_h = get("pad_h");
    const bool square = width == height && kernel_w == kernel_h && stride_w == stride_h && pad_w == pad_h;
    for (const auto& [prefix, listed] : deepbench_devices()) {
      const hardware::GpuSpec* gpu = catalogue.find(listed);
      for (const auto& [suffix, pass] : passes) {
        const int at = column(prefix + suffix);
        if (at < 0) continue;
        if (static_cast<size_t>(at) >= fields.size() || fields[static_cast<size_t>(at)].empty())
          continue;  // N/A (the first layer's input gradient) or not run
        const double ms = number(header, fields, header[static_cast<size_t>(at)], where);
        if (!gpu) {
          ++load.skipped[prefix + ": not in the catalogue"];
          continue;
        }
        if (!square) {
          ++load.skipped["non-square kernel, input, stride or padding"];
          continue;
        }
        add_queued_row(conv_kernel(batch, channels, out, kernel_w, width, stride_w, pad_w, pass), gpu->name, ms, tables,
                       load);
      }
    }
  }
  return load;
}

}  // namespace dnncast::gpu
