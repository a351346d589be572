#include "store/dataset_csv.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "core/error.h"
#include "import/graph_json.h"
#include "records/network_source.h"

namespace dnncast::store {

namespace {

std::string number_text(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);  // shortest text that reads back exactly
  return std::string(buffer, result.ptr);
}

std::string optional_text(const std::optional<double>& value) { return value ? number_text(*value) : ""; }
std::string optional_text(const std::optional<int64_t>& value) { return value ? std::to_string(*value) : ""; }

// Identity columns must be present; the others default (NULL, "", 0) when missing.
const std::vector<std::string>& required_columns() {
  static const std::vector<std::string> columns{
      "network_hash", "network_source", "env_cpu_model",     "env_cores",      "env_threads", "env_memory_bytes",
      "env_gpu_name", "env_gpu_driver", "env_torch_version", "env_build_type", "batch",       "input",
      "seq_len",      "optimizer",      "precision",         "threads",        "device",      "repeat_index",
      "status"};
  return columns;
}

class Row {
 public:
  Row(const std::map<std::string, size_t>& index, const std::vector<std::string>& fields, std::string where)
      : index_(index), fields_(fields), where_(std::move(where)) {}

  bool has(const std::string& column) const {
    auto found = index_.find(column);
    return found != index_.end() && found->second < fields_.size() && !fields_[found->second].empty();
  }
  std::string text(const std::string& column) const {
    auto found = index_.find(column);
    if (found == index_.end() || found->second >= fields_.size()) return "";
    return fields_[found->second];
  }
  int64_t integer(const std::string& column) const {
    std::optional<int64_t> value = optional_integer(column);
    return value ? *value : 0;
  }
  std::optional<int64_t> optional_integer(const std::string& column) const {
    if (!has(column)) return std::nullopt;
    std::string field = text(column);
    int64_t value = 0;
    auto result = std::from_chars(field.data(), field.data() + field.size(), value);
    if (result.ec != std::errc() || result.ptr != field.data() + field.size())
      fail(column + " must be an integer, got " + quote(field));
    return value;
  }
  // NaN is refused everywhere; infinity only where the store records it (`allow_infinity`: a
  // median's CI below 6 iterations, profile::detail::median_rel_ci).
  std::optional<double> optional_number(const std::string& column, bool allow_infinity = false) const {
    if (!has(column)) return std::nullopt;
    std::string field = text(column);
    double value = 0;
    auto result = std::from_chars(field.data(), field.data() + field.size(), value);
    if (result.ec != std::errc() || result.ptr != field.data() + field.size())
      fail(column + " must be a number, got " + quote(field));
    if (std::isnan(value) || (std::isinf(value) && !(allow_infinity && value > 0)))
      fail(column + (allow_infinity ? " must be a number or inf, got " : " must be a finite number, got ") +
           quote(field));
    return value;
  }
  [[noreturn]] void fail(const std::string& message) const { throw InputError(where_ + ": " + message); }

 private:
  const std::map<std::string, size_t>& index_;
  const std::vector<std::string>& fields_;
  std::string where_;
};

// The environment columns of a row (the CPU fingerprint, schema 3, is absent from older files and
// then not recorded).
records::EnvironmentRecord environment_of(const Row& row) {
  records::EnvironmentRecord environment;
  environment.cpu_model = row.text("env_cpu_model");
  environment.cores = row.integer("env_cores");
  environment.threads = row.integer("env_threads");
  environment.memory_bytes = row.integer("env_memory_bytes");
  environment.gpu_name = row.text("env_gpu_name");
  environment.gpu_driver = row.text("env_gpu_driver");
  environment.torch_version = row.text("env_torch_version");
  environment.build_type = row.text("env_build_type");
  environment.host = row.text("env_host");
  environment.cpu_vendor = row.text("env_cpu_vendor");
  environment.cpu_family = row.integer("env_cpu_family");
  environment.cpu_model_number = row.integer("env_cpu_model_number");
  environment.cpu_stepping = row.integer("env_cpu_stepping");
  environment.isa = row.text("env_isa");
  environment.aten_capability = row.text("env_aten_capability");
  environment.isa_cap = row.text("env_isa_cap");
  environment.l2_bytes = row.integer("env_l2_bytes");
  environment.l3_bytes = row.integer("env_l3_bytes");
  environment.base_mhz = row.optional_number("env_base_mhz").value_or(0.0);
  return environment;
}

// The configuration and result columns of a row into `run`.
void read_run_fields(const Row& row, records::RunRecord& run) {
  try {
    run.config.input = records::parse_input_text(row.text("input"));
  } catch (const InputError& error) {
    row.fail(error.what());
  }
  run.config.batch = row.integer("batch");
  run.config.seq_len = row.integer("seq_len");
  try {
    run.config.optimizer = parse_optimizer(row.text("optimizer"));
    run.config.precision = parse_precision(row.text("precision"));
    run.config.device = parse_device(row.text("device"));
  } catch (const InputError& error) {
    row.fail(error.what());
  }
  run.config.threads = row.integer("threads");
  run.repeat_index = row.integer("repeat_index");
  if (run.config.batch <= 0 || run.config.threads <= 0 || run.repeat_index < 0)
    row.fail("batch and threads must be positive, repeat_index non-negative");
  records::RunResult& result = run.result;
  result.status = row.text("status");
  result.message = row.text("message");
  result.time_ms_median = row.optional_number("time_ms_median");
  result.time_ms_p10 = row.optional_number("time_ms_p10");
  result.time_ms_p90 = row.optional_number("time_ms_p90");
  result.time_ms_mean = row.optional_number("time_ms_mean");
  result.iterations = row.integer("iterations");
  result.time_rel_ci = row.optional_number("time_rel_ci", /*allow_infinity=*/true);
  result.warmup_iterations = row.integer("warmup_iterations");
  result.time_ms_normalised = row.optional_number("time_ms_normalised");
  result.probe_ms_before = row.optional_number("probe_ms_before");
  result.probe_ms_after = row.optional_number("probe_ms_after");
  result.peak_bytes = row.optional_integer("peak_bytes");
  result.baseline_bytes = row.optional_integer("baseline_bytes");
  result.energy_j = row.optional_number("energy_j");
  result.load_other_cpus = row.optional_number("load_other_cpus");
  result.cpu_wait_share = row.optional_number("cpu_wait_share");  // a CSV written before schema 5 has none
  result.wall_s = row.optional_number("wall_s");
  run.cpus = row.text("cpus");
  run.host = row.text("host");
  run.plan = row.text("plan");
  run.measured_at = row.has("measured_at") ? row.text("measured_at") : records::utc_now();
}

}  // namespace

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> columns{"run_id",
                                                "network_hash",
                                                "network_name",
                                                "network_family",
                                                "network_source",
                                                "env_hash",
                                                "env_cpu_model",
                                                "env_cores",
                                                "env_threads",
                                                "env_memory_bytes",
                                                "env_gpu_name",
                                                "env_gpu_driver",
                                                "env_torch_version",
                                                "env_build_type",
                                                "env_host",
                                                "env_cpu_vendor",
                                                "env_cpu_family",
                                                "env_cpu_model_number",
                                                "env_cpu_stepping",
                                                "env_isa",
                                                "env_aten_capability",
                                                "env_isa_cap",
                                                "env_l2_bytes",
                                                "env_l3_bytes",
                                                "env_base_mhz",
                                                "batch",
                                                "input",
                                                "seq_len",
                                                "optimizer",
                                                "precision",
                                                "threads",
                                                "device",
                                                "repeat_index",
                                                "status",
                                                "message",
                                                "time_ms_median",
                                                "time_ms_p10",
                                                "time_ms_p90",
                                                "time_ms_mean",
                                                "iterations",
                                                "time_rel_ci",
                                                "warmup_iterations",
                                                "time_ms_normalised",
                                                "probe_ms_before",
                                                "probe_ms_after",
                                                "peak_bytes",
                                                "baseline_bytes",
                                                "energy_j",
                                                "load_other_cpus",
                                                "wall_s",
                                                "cpus",
                                                "host",
                                                "plan",
                                                "measured_at",
                                                "cpu_wait_share",
                                                "graph_json"};
  return columns;
}

void export_csv(Store& store, std::ostream& out, bool with_graphs) {
  std::map<int64_t, records::NetworkRecord> networks;
  for (records::NetworkRecord& network : store.networks(with_graphs)) networks.emplace(network.id, std::move(network));
  std::map<int64_t, records::EnvironmentRecord> environments;
  for (records::EnvironmentRecord& environment : store.environments())
    environments.emplace(environment.id, environment);
  const std::vector<std::string>& columns = csv_columns();
  size_t column_count = with_graphs ? columns.size() : columns.size() - 1;
  write_csv_record(out, std::vector<std::string>(columns.begin(), columns.begin() + static_cast<long>(column_count)));
  for (const records::RunRecord& run : store.runs()) {
    const records::NetworkRecord& network = networks.at(run.network_id);
    const records::EnvironmentRecord& environment = environments.at(run.environment_id);
    const records::RunResult& result = run.result;
    std::vector<std::string> fields{std::to_string(run.id),
                                    network.hash,
                                    network.name,
                                    network.family,
                                    network.source,
                                    environment.hash(),
                                    environment.cpu_model,
                                    std::to_string(environment.cores),
                                    std::to_string(environment.threads),
                                    std::to_string(environment.memory_bytes),
                                    environment.gpu_name,
                                    environment.gpu_driver,
                                    environment.torch_version,
                                    environment.build_type,
                                    environment.host,
                                    environment.cpu_vendor,
                                    std::to_string(environment.cpu_family),
                                    std::to_string(environment.cpu_model_number),
                                    std::to_string(environment.cpu_stepping),
                                    environment.isa,
                                    environment.aten_capability,
                                    environment.isa_cap,
                                    std::to_string(environment.l2_bytes),
                                    std::to_string(environment.l3_bytes),
                                    number_text(environment.base_mhz),
                                    std::to_string(run.config.batch),
                                    run.config.input_text(),
                                    std::to_string(run.config.seq_len),
                                    name(run.config.optimizer),
                                    name(run.config.precision),
                                    std::to_string(run.config.threads),
                                    name(run.config.device),
                                    std::to_string(run.repeat_index),
                                    result.status,
                                    result.message,
                                    optional_text(result.time_ms_median),
                                    optional_text(result.time_ms_p10),
                                    optional_text(result.time_ms_p90),
                                    optional_text(result.time_ms_mean),
                                    std::to_string(result.iterations),
                                    optional_text(result.time_rel_ci),
                                    std::to_string(result.warmup_iterations),
                                    optional_text(result.time_ms_normalised),
                                    optional_text(result.probe_ms_before),
                                    optional_text(result.probe_ms_after),
                                    optional_text(result.peak_bytes),
                                    optional_text(result.baseline_bytes),
                                    optional_text(result.energy_j),
                                    optional_text(result.load_other_cpus),
                                    optional_text(result.wall_s),
                                    run.cpus,
                                    run.host,
                                    run.plan,
                                    run.measured_at,
                                    optional_text(result.cpu_wait_share)};
    if (with_graphs) fields.push_back(network.graph_json);
    DNNCAST_ASSERT(fields.size() == column_count);
    write_csv_record(out, fields);
  }
}

ImportSummary import_csv(Store& store, std::istream& in, const std::string& source) {
  ImportSummary summary;
  int64_t line = 0;
  std::vector<std::string> header;
  try {
    if (!read_csv_record(in, header, line)) throw InputError("empty file (expected a header line)");
  } catch (const InputError& error) {
    throw error.with_context(source);
  }
  std::map<std::string, size_t> index;
  for (size_t col = 0; col < header.size(); ++col)
    if (!index.emplace(header[col], col).second)
      throw InputError(source + ": column " + quote(header[col]) + " appears twice in the header");
  for (const std::string& column : required_columns())
    if (!index.count(column)) throw InputError(source + ": missing column " + quote(column));

  std::map<std::string, int64_t> environment_ids;          // by hash
  std::map<std::string, records::NetworkRecord> networks;  // by hash, as stored or to be stored
  Transaction transaction(store.db());
  std::vector<std::string> fields;
  for (;;) {
    int64_t record_line = line + 1;
    try {
      if (!read_csv_record(in, fields, line)) break;
    } catch (const InputError& error) {
      throw error.with_context(source);
    }
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    Row row(index, fields, source + ":" + std::to_string(record_line));
    if (fields.size() != header.size())
      row.fail("expected " + std::to_string(header.size()) + " fields, got " + std::to_string(fields.size()));
    ++summary.rows;

    records::EnvironmentRecord environment = environment_of(row);
    std::string environment_hash = environment.hash();
    if (row.has("env_hash") && row.text("env_hash") != environment_hash)
      row.fail("env_hash " + row.text("env_hash") + " does not match the environment fields (" + environment_hash +
               ")");
    auto environment_id = environment_ids.find(environment_hash);
    if (environment_id == environment_ids.end())
      environment_id = environment_ids.emplace(environment_hash, store.ensure_environment(environment)).first;

    records::RunRecord run;
    run.environment_id = environment_id->second;
    read_run_fields(row, run);
    std::string network_hash = row.text("network_hash");
    auto network = networks.find(network_hash);
    if (network == networks.end()) {
      std::optional<records::NetworkRecord> stored = store.network_by_hash(network_hash);
      records::NetworkRecord record;
      if (stored) {
        record = *stored;
      } else if (row.has("graph_json")) {
        Graph graph;
        try {
          graph = import::read_graph_json(row.text("graph_json"), "graph_json");
        } catch (const InputError& error) {
          row.fail(error.what());
        }
        if (graph.architecture_hash() != network_hash)
          row.fail("graph_json has hash " + graph.architecture_hash() + ", the row says " + network_hash);
        record.graph_json = row.text("graph_json");
      } else {
        // Rebuild from the source, as the campaign built it (batch 1, the row's input).
        try {
          records::ModelRef model = records::parse_model_source(row.text("network_source"));
          if (model.kind == records::ModelRef::Kind::File)
            row.fail("network " + network_hash + " (" + model.source() +
                     ") is not in the database and the file has no graph_json column; export with --graphs");
          record = records::network_record(model, run.config);
        } catch (const InputError& error) {
          std::string text = error.what();
          if (text.rfind(source, 0) == 0) throw;
          row.fail(text);
        }
        if (record.hash != network_hash)
          row.fail("rebuilding " + row.text("network_source") + " gives hash " + record.hash + ", the row says " +
                   network_hash + " (a different dnncast version?)");
      }
      record.hash = network_hash;
      if (!stored) {
        record.source = row.text("network_source");
        record.name = row.has("network_name") ? row.text("network_name") : record.name;
        record.family = row.has("network_family") ? row.text("network_family") : record.family;
      }
      network = networks.emplace(network_hash, record).first;
    }
    try {
      if (store.insert_run(network->second, run))
        ++summary.inserted;
      else
        ++summary.duplicates;
    } catch (const InputError& error) {
      row.fail(error.what());
    }
  }
  transaction.commit();
  return summary;
}

}  // namespace dnncast::store
