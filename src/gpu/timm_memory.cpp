// GPUMemNet's timm rows, the zoo's matches and their simulation (timm_memory.h).
#include "gpu/timm_memory.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/csv.h"
#include "core/error.h"
#include "core/text.h"
#include "gpu/gpumemnet.h"
#include "graph/op_registry.h"
#include "hardware/catalogue.h"
#include "import/model_source.h"
#include "memory/simulator.h"

namespace dnncast::gpu {

namespace {

// The header's columns by name, after any "#" note lines; throws naming the first missing one.
std::map<std::string, size_t> read_header(std::istream& in, const std::string& path, std::vector<std::string>& fields,
                                          int64_t& line, const std::vector<std::string>& needed) {
  while (read_csv_record(in, fields, line)) {
    if (fields.empty() || fields[0].empty() || fields[0][0] == '#') continue;
    std::map<std::string, size_t> column;
    for (size_t index = 0; index < fields.size(); ++index) column[fields[index]] = index;
    for (const std::string& name : needed)
      if (!column.count(name)) throw InputError(path + " line " + std::to_string(line) + ": no column " + quote(name));
    return column;
  }
  throw InputError(path + ": no header line");
}

// "3x224x224" -> {3, 224, 224}.
std::vector<int64_t> parse_input(const std::string& text) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (true) {
    const size_t end = text.find('x', start);
    const std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size() || value < 1 || value > 65536)
      throw InputError("input: expected CxHxW, got " + quote(text));
    dims.push_back(value);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (dims.size() != 3) throw InputError("input: expected CxHxW, got " + quote(text));
  return dims;
}

}  // namespace

std::vector<TimmMemoryRow> load_timm_memory_rows(const std::string& path) {
  std::ifstream in = open_published_table(path);
  std::vector<std::string> fields;
  int64_t line = 0;
  const std::map<std::string, size_t> column =
      read_header(in, path, fields, line, {"model", "batch", "nvidia_smi_peak_mib", "faketensor_estimate_mib"});
  std::vector<TimmMemoryRow> rows;
  while (read_csv_record(in, fields, line)) {
    if (fields.size() == 1 && fields[0].empty()) continue;
    const std::string where = path + " line " + std::to_string(line);
    if (fields.size() < column.size())
      throw InputError(where + ": " + std::to_string(fields.size()) + " fields, the header has " +
                       std::to_string(column.size()));
    try {
      TimmMemoryRow row;
      row.line = line;
      row.model = fields[column.at("model")];
      if (row.model.empty()) throw InputError("empty model name");
      const double batch = parse_bounded_number(fields[column.at("batch")], "batch", 1e9);
      if (batch < 1 || batch != static_cast<double>(static_cast<int64_t>(batch)))
        throw InputError("batch: expected a positive whole number, got " + quote(fields[column.at("batch")]));
      row.batch = static_cast<int64_t>(batch);
      row.measured_mib = parse_bounded_number(fields[column.at("nvidia_smi_peak_mib")], "nvidia_smi_peak_mib", 1e9);
      if (!(row.measured_mib > 0)) throw InputError("nvidia_smi_peak_mib must be positive");
      row.faketensor_mib =
          parse_bounded_number(fields[column.at("faketensor_estimate_mib")], "faketensor_estimate_mib", 1e9);
      rows.push_back(std::move(row));
    } catch (const InputError& error) {
      throw InputError(where + ": " + error.what());
    }
  }
  if (rows.empty()) throw InputError(path + ": no rows");
  return rows;
}

std::string default_timm_zoo_map_path() {
  const std::string dir = hardware::default_catalogue_dir();
  return dir.empty() ? "" : (std::filesystem::path(dir) / "timm_zoo_map.csv").string();
}

std::vector<TimmZooMatch> load_timm_zoo_map(const std::string& given) {
  const std::string path = given.empty() ? default_timm_zoo_map_path() : given;
  if (path.empty()) throw InputError("no timm map: data/hardware/timm_zoo_map.csv not found (set DNNCAST_HARDWARE)");
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + quote(path));
  std::vector<std::string> fields;
  int64_t line = 0;
  const std::map<std::string, size_t> column =
      read_header(in, path, fields, line, {"timm", "zoo", "input", "attention", "family", "differs"});
  std::vector<TimmZooMatch> map;
  std::set<std::string> seen;
  while (read_csv_record(in, fields, line)) {
    if (fields.empty() || (fields.size() == 1 && fields[0].empty()) || fields[0][0] == '#') continue;
    const std::string where = path + " line " + std::to_string(line);
    if (fields.size() < column.size())
      throw InputError(where + ": " + std::to_string(fields.size()) + " fields, the header has " +
                       std::to_string(column.size()));
    TimmZooMatch match;
    match.timm = fields[column.at("timm")];
    match.zoo = fields[column.at("zoo")];
    match.family = fields[column.at("family")];
    match.attention = fields[column.at("attention")];
    match.differs = fields[column.at("differs")];
    if (match.timm.empty() || match.family.empty()) throw InputError(where + ": timm and family must be given");
    if (!seen.insert(match.timm).second) throw InputError(where + ": " + quote(match.timm) + " mapped twice");
    try {
      models::zoo_entry(match.zoo);
      match.input = parse_input(fields[column.at("input")]);
    } catch (const InputError& error) {
      throw InputError(where + ": " + error.what());
    }
    if (!match.attention.empty() && match.attention != "sdpa" && match.attention != "eager")
      throw InputError(where + ": attention must be empty, eager or sdpa, got " + quote(match.attention));
    map.push_back(std::move(match));
  }
  if (map.empty()) throw InputError(path + ": no rows");
  return map;
}

TimmSimulation simulate_timm(const std::vector<TimmMemoryRow>& rows, const std::vector<TimmZooMatch>& map,
                             Optimizer optimizer) {
  TimmSimulation out;
  out.rows = static_cast<int64_t>(rows.size());
  std::map<std::string, const TimmZooMatch*> by_name;
  for (const TimmZooMatch& match : map) by_name[match.timm] = &match;
  std::set<std::string> models, mapped;
  const memory::MemoryConfig config = gpu_memory_config(GpuMemoryCalibration{}, optimizer);
  for (const TimmMemoryRow& row : rows) {
    models.insert(row.model);
    auto found = by_name.find(row.model);
    if (found == by_name.end()) continue;
    mapped.insert(row.model);
    if (row.measured_mib >= kAtCapacityShare * kTimmGpuMemoryMib) {
      out.at_capacity.push_back(row);
      continue;
    }
    const TimmZooMatch& match = *found->second;
    models::ModelSpec spec;
    spec.batch = row.batch;
    spec.input = match.input;
    spec.attention = match.attention;
    const Graph graph = import::load_model(match.zoo, spec);
    const memory::MemoryReport report = memory::simulate_memory(graph, config);
    GpuMemorySample sample;
    sample.line = row.line;
    sample.arch = row.model;
    sample.family = match.family;
    sample.source = "timm";
    sample.batch = row.batch;
    for (int index = 0; index < graph.size(); ++index) sample.parameters += node_cost(graph, index).params;
    sample.peak_allocated_bytes = report.peak_allocated_bytes;
    sample.peak_reserved_bytes = report.peak_reserved_bytes;
    sample.cudnn = memory::CudnnUse::of(graph);
    sample.measured_bytes = row.measured_mib * double(int64_t{1} << 20);
    out.samples.push_back(sample);
  }
  out.models = static_cast<int64_t>(models.size());
  out.mapped_models = static_cast<int64_t>(mapped.size());
  return out;
}

std::vector<std::pair<std::string, double>> tensors_per_sample_ratios(const std::vector<TimmMemoryRow>& rows,
                                                                      const TimmSimulation& simulation) {
  std::map<std::pair<std::string, int64_t>, double> fake;
  for (const TimmMemoryRow& row : rows) fake[{row.model, row.batch}] = row.faketensor_mib * double(int64_t{1} << 20);
  std::map<std::string, std::map<int64_t, int64_t>> simulated;
  for (const GpuMemorySample& sample : simulation.samples)
    simulated[sample.arch][sample.batch] = sample.peak_allocated_bytes;
  std::vector<std::pair<std::string, double>> ratios;
  for (const auto& [model, by_batch] : simulated) {
    if (!by_batch.count(8) || !by_batch.count(32) || !fake.count({model, 8}) || !fake.count({model, 32})) continue;
    const double theirs = fake[{model, 32}] - fake[{model, 8}];
    if (theirs <= 0) continue;
    ratios.emplace_back(model, double(by_batch.at(32) - by_batch.at(8)) / theirs);
  }
  return ratios;
}

}  // namespace dnncast::gpu
