#include "cli/transfer_table.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "cli/parse_args.h"
#include "core/error.h"
#include "features/featurizer.h"
#include "study/training.h"

namespace dnncast::cli {

namespace {

bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[16] = {};
  in.read(magic, 16);
  return in.gcount() == 16 && std::string(magic, 15) == "SQLite format 3";
}

// Options read from a dataset when --options is not given: the configuration and the network's size.
const std::vector<std::string> kDatasetOptions{
    "log.batch",  "log.threads",   "input.pixels",          "log.flops_train",
    "log.params", "log.act_bytes", "config.opt_state_bytes"};

// Does a sample pass every key=value of a --*-where filter?
bool passes(const study::Sample& sample, const std::map<std::string, std::string>& where) {
  for (const auto& [key, value] : where) {
    std::string actual;
    if (key == "threads")
      actual = std::to_string(sample.config.threads);
    else if (key == "batch")
      actual = std::to_string(sample.config.batch);
    else if (key == "input")
      actual = sample.config.input_text();
    else if (key == "optimizer")
      actual = name(sample.config.optimizer);
    else if (key == "precision")
      actual = name(sample.config.precision);
    else if (key == "device")
      actual = name(sample.config.device);
    else if (key == "network")
      actual = sample.network_name;
    else if (key == "family")
      actual = sample.family;
    else if (key == "env")
      actual = sample.environment_hash;
    else
      DNNCAST_ASSERT(false);
    if (actual != value) return false;
  }
  return true;
}

std::map<std::string, std::string> parse_where(const std::string& text, const std::string& flag) {
  static const std::vector<std::string> keys{"threads", "batch",   "input",  "optimizer", "precision",
                                             "device",  "network", "family", "env"};
  std::map<std::string, std::string> where;
  for (const std::string& item : split_list(text)) {
    size_t equals = item.find('=');
    std::string key = item.substr(0, equals);
    if (equals == std::string::npos || equals + 1 == item.size())
      throw InputError(flag + ": expected key=value, got " + quote(item));
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string known;
      for (const std::string& name : keys) known += (known.empty() ? "" : ", ") + name;
      throw InputError(flag + ": unknown key " + quote(key) + " (known: " + known + ")");
    }
    where[key] = item.substr(equals + 1);
  }
  return where;
}

transfer::OptionTable read_dataset_table(const std::string& path, const std::vector<std::string>& options,
                                         const std::string& metric, const std::string& where_text,
                                         const std::string& flag) {
  if (metric != "time_ms" && metric != "peak_bytes")
    throw InputError("dataset " + quote(path) + ": unknown --metric " + quote(metric) +
                     " (datasets have time_ms, peak_bytes)");
  std::map<std::string, std::string> where = parse_where(where_text, flag);
  std::vector<int> columns;
  const std::vector<std::string>& names = features::feature_names();
  for (const std::string& option : options) {
    auto found = std::find(names.begin(), names.end(), option);
    if (found == names.end())
      throw InputError(
          "dataset " + quote(path) + " has no option column " + quote(option) + " (options are feature names such as " +
          "config.batch, config.threads, input.pixels, log.flops_train, total.params; see the featurizer)");
    columns.push_back(static_cast<int>(found - names.begin()));
  }
  study::TrainingTable table = study::load_training_table(path);
  std::vector<int64_t> rows;
  for (size_t k = 0; k < table.samples.size(); ++k)
    if (passes(table.samples[k], where) && (metric == "time_ms" || table.samples[k].peak() > 0))
      rows.push_back(static_cast<int64_t>(k));
  std::string name = path + (where_text.empty() ? "" : " [" + where_text + "]");
  if (rows.empty()) throw InputError("no configuration of " + quote(name) + " has a " + metric);
  transfer::OptionTable out;
  out.name = name;
  out.options = options;
  out.x.resize(static_cast<int64_t>(rows.size()), static_cast<int64_t>(columns.size()));
  out.y.resize(static_cast<int64_t>(rows.size()));
  for (size_t r = 0; r < rows.size(); ++r) {
    const study::Sample& sample = table.samples[static_cast<size_t>(rows[r])];
    for (size_t c = 0; c < columns.size(); ++c)
      out.x(static_cast<int64_t>(r), static_cast<int64_t>(c)) = table.x(rows[r], columns[c]);
    out.y(static_cast<int64_t>(r)) = metric == "time_ms" ? sample.time_ms() : sample.peak();
  }
  return out;
}

}  // namespace

transfer::OptionTable read_table(const std::string& path, const std::vector<std::string>& options,
                                 const std::string& metric, const std::string& where, const std::string& flag) {
  std::ifstream probe(path);
  if (!probe) throw InputError(flag + ": cannot open " + quote(path));
  if (is_sqlite_file(path))
    return read_dataset_table(path, options.empty() ? kDatasetOptions : options, metric, where, flag);
  if (!where.empty())
    throw InputError(flag + "-where applies to dnncast datasets only; " + quote(path) + " is a CSV file");
  if (options.empty()) throw InputError("--options is required for CSV file " + quote(path));
  return transfer::read_csv_table(path, options, metric);
}

}  // namespace dnncast::cli
