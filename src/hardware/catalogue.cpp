#include "hardware/catalogue.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "core/csv.h"
#include "core/error.h"
#include "core/text.h"  // closest_names

namespace dnncast::hardware {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kGpuColumns{"name",
                                           "aliases",
                                           "vendor",
                                           "full_name",
                                           "architecture",
                                           "fp32_tflops",
                                           "tf32_tensor_tflops",
                                           "fp16_tensor_tflops",
                                           "bf16_tensor_tflops",
                                           "memory_gib",
                                           "bandwidth_gbs",
                                           "sm_count",
                                           "l2_mib",
                                           "tdp_w",
                                           "from_gpu_specs",
                                           "source_url",
                                           "date",
                                           "notes"};
const std::vector<std::string> kInstanceColumns{
    "provider",           "instance_type",           "gpu",    "gpu_count",    "gpu_memory_gib", "vcpus", "memory_gib",
    "price_usd_per_hour", "spot_price_usd_per_hour", "region", "source_commit"};
// Columns of a GPU row whose value from_gpu_specs may claim.
const std::vector<std::string> kValueColumns{
    "fp32_tflops", "tf32_tensor_tflops", "fp16_tensor_tflops", "bf16_tensor_tflops",
    "memory_gib",  "bandwidth_gbs",      "sm_count",           "l2_mib",
    "tdp_w"};

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    std::string part = trim(text.substr(start, end - start));
    if (!part.empty()) parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

std::string hint(const std::string& wrong, const std::vector<std::string>& known) {
  std::string text;
  for (const std::string& name : closest_names(wrong, known, 3)) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// One CSV file being read: its records after the header, with line numbers, and the column positions.
class Table {
 public:
  Table(const std::string& path, const std::vector<std::string>& columns) : path_(path) {
    std::ifstream in(path);
    if (!in) throw InputError("cannot read catalogue file " + quote(path));
    std::vector<std::string> fields;
    int64_t line = 0;
    bool have_header = false;
    try {
      while (true) {
        int64_t start = line + 1;
        if (!read_csv_record(in, fields, line)) break;
        if (fields.size() == 1 && trim(fields[0]).empty()) continue;  // blank line
        if (!fields.empty() && !fields[0].empty() && fields[0][0] == '#') continue;
        if (!have_header) {
          have_header = true;
          header_line_ = start;
          set_header(fields, columns);
          continue;
        }
        if (fields.size() != header_.size())
          fail(start, std::to_string(fields.size()) + " fields, the header has " + std::to_string(header_.size()));
        rows_.push_back({start, fields});
      }
    } catch (const InputError& error) {
      std::string message = error.what();
      if (message.rfind(path_, 0) == 0) throw;
      throw InputError(path_ + ": " + message);
    }
    if (!have_header)
      throw InputError(path_ + ": no header line (want " + columns.front() + "," + columns[1] + ",...)");
  }

  struct Row {
    int64_t line;
    std::vector<std::string> fields;
  };
  const std::vector<Row>& rows() const { return rows_; }

  [[noreturn]] void fail(int64_t line, const std::string& what) const {
    throw InputError(path_ + " line " + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void fail(const Row& row, const std::string& column, const std::string& what) const {
    throw InputError(path_ + " line " + std::to_string(row.line) + " column " +
                     std::to_string(position_.at(column) + 1) + " (" + column + "): " + what);
  }

  std::string text(const Row& row, const std::string& column) const { return trim(row.fields[position_.at(column)]); }
  std::string required(const Row& row, const std::string& column) const {
    std::string value = text(row, column);
    if (value.empty()) fail(row, column, "empty; this column is required");
    return value;
  }
  // An empty field is unknown; otherwise a finite number, positive unless `zero_ok`.
  std::optional<double> number(const Row& row, const std::string& column, bool zero_ok = false) const {
    std::string value = text(row, column);
    if (value.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    double parsed = std::strtod(value.c_str(), &end);
    if (end != value.c_str() + value.size() || errno != 0 || !std::isfinite(parsed) || parsed < 0 ||
        (parsed == 0 && !zero_ok))
      fail(row, column, quote(value) + " is not a " + (zero_ok ? "non-negative" : "positive") + " number");
    return parsed;
  }
  std::optional<int64_t> integer(const Row& row, const std::string& column) const {
    std::optional<double> value = number(row, column);
    if (value && (*value != std::floor(*value) || *value > 1e15))
      fail(row, column, quote(text(row, column)) + " is not a whole number");
    return value ? std::optional<int64_t>(static_cast<int64_t>(*value)) : std::nullopt;
  }
  const std::string& path() const { return path_; }

 private:
  void set_header(const std::vector<std::string>& fields, const std::vector<std::string>& columns) {
    header_ = fields;
    for (size_t index = 0; index < fields.size(); ++index) {
      std::string column = trim(fields[index]);
      if (std::find(columns.begin(), columns.end(), column) == columns.end())
        throw InputError(path_ + " line " + std::to_string(header_line_) + " column " + std::to_string(index + 1) +
                         ": unknown column " + quote(column) + " (did you mean " + hint(column, columns) + "?)");
      if (!position_.emplace(column, index).second)
        throw InputError(path_ + " line " + std::to_string(header_line_) + ": column " + quote(column) + " twice");
    }
    for (const std::string& column : columns)
      if (position_.count(column) == 0)
        throw InputError(path_ + " line " + std::to_string(header_line_) + ": missing column " + quote(column));
  }

  std::string path_;
  int64_t header_line_ = 0;
  std::vector<std::string> header_;
  std::map<std::string, size_t> position_;
  std::vector<Row> rows_;
};

// "Tesla T4[G]=fp32_tflops bandwidth_gbs;P4[E]=sm_count"
std::vector<SpecsReference> parse_specs_references(const Table& table, const Table::Row& row) {
  std::vector<SpecsReference> references;
  for (const std::string& part : split(table.text(row, "from_gpu_specs"), ';')) {
    size_t open = part.find('['), close = part.find("]=");
    if (open == std::string::npos || close == std::string::npos || close < open + 2)
      table.fail(row, "from_gpu_specs", quote(part) + " is not GPU[SOURCE]=FIELD FIELD...");
    SpecsReference reference{trim(part.substr(0, open)), part.substr(open + 1, close - open - 1), {}};
    for (const std::string& field : split(part.substr(close + 2), ' ')) {
      if (std::find(kValueColumns.begin(), kValueColumns.end(), field) == kValueColumns.end())
        table.fail(row, "from_gpu_specs",
                   "unknown field " + quote(field) + " (did you mean " + hint(field, kValueColumns) + "?)");
      reference.fields.push_back(field);
    }
    if (reference.gpu.empty() || reference.fields.empty())
      table.fail(row, "from_gpu_specs", quote(part) + " names no GPU or no field");
    references.push_back(reference);
  }
  return references;
}

// Runs of letters and digits, lower case, less the vendor's and product line's words that name no
// card ("tesla v100" is no closer to "Tesla V100-SXM2-32GB" than "v100-32gb"): "NVIDIA A100-SXM4-40GB"
// -> a100, sxm4, 40gb.
std::vector<std::string> model_words(const std::string& text) {
  static const std::vector<std::string> kBrands{"nvidia", "tesla", "geforce", "amd", "instinct"};
  std::vector<std::string> result;
  std::string word;
  for (size_t index = 0; index <= text.size(); ++index) {
    const char c = index < text.size() ? text[index] : ' ';
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      continue;
    }
    if (!word.empty() && std::find(kBrands.begin(), kBrands.end(), word) == kBrands.end()) result.push_back(word);
    word.clear();
  }
  return result;
}

bool is_header_of(const std::string& path, const std::string& first_column) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read catalogue file " + quote(path));
  std::vector<std::string> fields;
  int64_t line = 0;
  try {
    while (read_csv_record(in, fields, line)) {
      if (fields.empty() || (fields.size() == 1 && trim(fields[0]).empty())) continue;
      if (!fields[0].empty() && fields[0][0] == '#') continue;
      return trim(fields[0]) == first_column;
    }
  } catch (const InputError& error) {
    throw InputError(path + ": " + error.what());
  }
  return false;
}

}  // namespace

std::string catalogue_key(const std::string& name) {
  std::string key;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

void Catalogue::add_gpu(GpuSpec spec) {
  const std::string key = catalogue_key(spec.name);
  gpus_.erase(
      std::remove_if(gpus_.begin(), gpus_.end(), [&](const GpuSpec& old) { return catalogue_key(old.name) == key; }),
      gpus_.end());
  std::vector<std::string> names{spec.name};
  names.insert(names.end(), spec.aliases.begin(), spec.aliases.end());
  for (const std::string& name : names) {
    const GpuSpec* other = find(name);
    if (other != nullptr)
      throw InputError(spec.file + " line " + std::to_string(spec.line) + ": name " + quote(name) + " of GPU " +
                       quote(spec.name) + " is already GPU " + quote(other->name) + " (" + other->file + " line " +
                       std::to_string(other->line) + ")");
  }
  gpus_.push_back(std::move(spec));
  std::sort(gpus_.begin(), gpus_.end(), [](const GpuSpec& a, const GpuSpec& b) { return a.name < b.name; });
}

void Catalogue::add_gpu_file(const std::string& path) {
  Table table(path, kGpuColumns);
  files_.push_back(path);
  for (const Table::Row& row : table.rows()) {
    GpuSpec spec;
    spec.name = table.required(row, "name");
    if (catalogue_key(spec.name).empty()) table.fail(row, "name", quote(spec.name) + " has no letter or digit");
    for (char& c : spec.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    spec.aliases = split(table.text(row, "aliases"), ';');
    spec.vendor = table.text(row, "vendor");
    spec.full_name = table.text(row, "full_name");
    spec.architecture = table.text(row, "architecture");
    spec.fp32_tflops = table.number(row, "fp32_tflops");
    spec.tf32_tensor_tflops = table.number(row, "tf32_tensor_tflops");
    spec.fp16_tensor_tflops = table.number(row, "fp16_tensor_tflops");
    spec.bf16_tensor_tflops = table.number(row, "bf16_tensor_tflops");
    spec.memory_gib = table.number(row, "memory_gib");
    spec.bandwidth_gbs = table.number(row, "bandwidth_gbs");
    spec.sm_count = table.integer(row, "sm_count");
    spec.l2_mib = table.number(row, "l2_mib");
    spec.tdp_w = table.number(row, "tdp_w");
    spec.from_gpu_specs = parse_specs_references(table, row);
    spec.source_url = table.required(row, "source_url");
    spec.date = table.required(row, "date");
    spec.notes = table.text(row, "notes");
    spec.file = path;
    spec.line = row.line;
    add_gpu(std::move(spec));
  }
}

void Catalogue::apply_instance_gpus(const std::string& path) {
  Table table(path, {"provider", "instance_type", "gpu", "why"});
  files_.push_back(path);
  for (const Table::Row& row : table.rows()) {
    const std::string provider = table.required(row, "provider"), type = table.required(row, "instance_type");
    const GpuSpec* gpu = find(table.required(row, "gpu"));
    if (gpu == nullptr) table.fail(row, "gpu", "GPU " + quote(table.required(row, "gpu")) + " is not in the catalogue");
    table.required(row, "why");
    bool matched = false;
    for (CloudInstance& instance : instances_)
      if (instance.provider == provider && instance.instance_type == type) instance.gpu = gpu->name, matched = true;
    if (!matched) table.fail(row, "instance_type", "no instance " + quote(provider + " " + type) + " to resolve");
  }
}

void Catalogue::apply_gpu_links(const std::string& path) {
  Table table(path, {"gpu", "link", "link_gbs", "datasheet_gbs", "source_url", "date", "notes"});
  files_.push_back(path);
  for (const Table::Row& row : table.rows()) {
    const std::string name = table.required(row, "gpu");
    auto spec = std::find_if(gpus_.begin(), gpus_.end(), [&](const GpuSpec& gpu) { return gpu.name == name; });
    if (spec == gpus_.end()) table.fail(row, "gpu", "GPU " + quote(name) + " is not in the catalogue");
    std::optional<double> gbs = table.number(row, "link_gbs");
    if (!gbs || *gbs <= 0) table.fail(row, "link_gbs", "must be a positive number of GB/s");
    table.required(row, "source_url");
    spec->link = table.required(row, "link");
    spec->link_gbs = gbs;
  }
}

void Catalogue::add_instance_file(const std::string& path) {
  Table table(path, kInstanceColumns);
  files_.push_back(path);
  for (const Table::Row& row : table.rows()) {
    CloudInstance instance;
    instance.provider = table.required(row, "provider");
    instance.instance_type = table.text(row, "instance_type");
    instance.gpu_listed = table.required(row, "gpu");
    const GpuSpec* gpu = find(instance.gpu_listed);
    if (gpu == nullptr) {
      std::vector<std::string> known;
      for (const GpuSpec& spec : gpus_) known.push_back(spec.name);
      table.fail(row, "gpu",
                 "GPU " + quote(instance.gpu_listed) + " is not in the catalogue (did you mean " +
                     hint(catalogue_key(instance.gpu_listed), known) + "? add it with --catalogue FILE)");
    }
    instance.gpu = gpu->name;
    std::optional<int64_t> count = table.integer(row, "gpu_count");
    if (!count) table.fail(row, "gpu_count", "empty; this column is required");
    instance.gpu_count = *count;
    instance.gpu_memory_gib = table.number(row, "gpu_memory_gib");
    instance.vcpus = table.number(row, "vcpus");
    instance.memory_gib = table.number(row, "memory_gib");
    std::optional<double> price = table.number(row, "price_usd_per_hour", true);
    if (!price) table.fail(row, "price_usd_per_hour", "empty; this column is required");
    instance.price_usd_per_hour = *price;
    instance.spot_price_usd_per_hour = table.number(row, "spot_price_usd_per_hour", true);
    instance.region = table.text(row, "region");
    instance.source_commit = table.text(row, "source_commit");
    instances_.push_back(std::move(instance));
  }
}

Catalogue Catalogue::load(const std::vector<std::string>& extra_files, const std::string& dir) {
  std::string root = dir.empty() ? default_catalogue_dir() : dir;
  if (root.empty())
    throw InputError("no data/hardware folder found above the dnncast executable; set DNNCAST_HARDWARE to one");
  Catalogue catalogue;
  catalogue.add_gpu_file((fs::path(root) / "gpus.csv").string());
  // User GPU files first, so that their instances (and the shipped ones) may name their GPUs.
  std::vector<std::string> instance_files{(fs::path(root) / "instances.csv").string()};
  for (const std::string& file : extra_files) {
    if (is_header_of(file, "name"))
      catalogue.add_gpu_file(file);
    else if (is_header_of(file, "provider"))
      instance_files.push_back(file);
    else
      throw InputError(file +
                       ": not a catalogue file (its header must be gpus.csv's or instances.csv's, docs/DEVICES.md)");
  }
  for (const std::string& file : instance_files) catalogue.add_instance_file(file);
  const fs::path overrides = fs::path(root) / "instance_gpus.csv";
  if (fs::exists(overrides)) catalogue.apply_instance_gpus(overrides.string());
  const fs::path links = fs::path(root) / "gpu_links.csv";
  if (fs::exists(links)) catalogue.apply_gpu_links(links.string());
  return catalogue;
}

const GpuSpec* Catalogue::find(const std::string& name) const {
  const std::string key = catalogue_key(name);
  if (key.empty()) return nullptr;
  for (const GpuSpec& spec : gpus_) {
    if (catalogue_key(spec.name) == key) return &spec;
    for (const std::string& alias : spec.aliases)
      if (catalogue_key(alias) == key) return &spec;
  }
  return nullptr;
}

const GpuSpec& Catalogue::gpu(const std::string& name) const {
  if (const GpuSpec* spec = find(name)) return *spec;
  // Closest by key over names and aliases, reported by catalogue name.
  std::vector<std::string> keys;
  std::map<std::string, std::string> name_of;
  for (const GpuSpec& spec : gpus_) {
    for (const std::string& alias : spec.aliases) name_of.emplace(catalogue_key(alias), spec.name);
    name_of[catalogue_key(spec.name)] = spec.name;
  }
  for (const auto& [key, owner] : name_of) keys.push_back(key);
  std::vector<std::string> close;
  for (const std::string& key : closest_names(catalogue_key(name), keys, keys.size())) {
    const std::string& owner = name_of[key];
    if (std::find(close.begin(), close.end(), owner) == close.end()) close.push_back(owner);
    if (close.size() == 3) break;
  }
  std::string text;
  for (const std::string& owner : close) text += (text.empty() ? "" : ", ") + owner;
  throw InputError("unknown GPU " + quote(name) + " (did you mean " + text + "? `dnncast devices` lists all " +
                   std::to_string(gpus_.size()) + ")");
}

const GpuSpec* Catalogue::match_driver_name(const std::string& reported) const {
  if (const GpuSpec* spec = find(reported)) return spec;
  const std::vector<std::string> reported_words = model_words(reported);
  const GpuSpec* best = nullptr;
  size_t best_words = 0;
  bool tied = false;
  for (const GpuSpec& spec : gpus_) {
    std::vector<std::string> names{spec.name, spec.full_name};
    names.insert(names.end(), spec.aliases.begin(), spec.aliases.end());
    for (const std::string& name : names) {
      const std::vector<std::string> wanted = model_words(name);
      if (wanted.empty() || wanted.size() < best_words) continue;
      const bool all = std::all_of(wanted.begin(), wanted.end(), [&](const std::string& word) {
        return std::find(reported_words.begin(), reported_words.end(), word) != reported_words.end();
      });
      if (!all) continue;
      if (wanted.size() > best_words) {
        best = &spec, best_words = wanted.size(), tied = false;
      } else if (best != &spec) {
        tied = true;
      }
    }
  }
  return tied ? nullptr : best;
}

const Catalogue& shipped_catalogue(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<const Catalogue>> loaded;  // by folder
  const std::string root = dir.empty() ? default_catalogue_dir() : dir;
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(root);
  if (found == loaded.end())
    found = loaded.emplace(root, std::make_unique<const Catalogue>(Catalogue::load({}, root))).first;
  return *found->second;
}

std::string default_catalogue_dir() {
  if (const char* dir = std::getenv("DNNCAST_HARDWARE")) return dir;
  std::error_code error;
  fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) return "";
  for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / "data" / "hardware" / "gpus.csv", error)) return (dir / "data" / "hardware").string();
    if (dir == dir.root_path()) break;
  }
  return "";
}

}  // namespace dnncast::hardware
