// The training table: a dataset's runs grouped into configurations, featurized (predictor.h).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "import/graph_json.h"
#include "memory/simulator.h"
#include "records/network_source.h"
#include "store/dataset_csv.h"
#include "study/training.h"

namespace dnncast::study {

namespace fs = std::filesystem;
using nlohmann::json;

double Sample::time_ms() const {
  double sum = 0;
  for (double value : times_ms) sum += value;
  return times_ms.empty() ? 0 : sum / static_cast<double>(times_ms.size());
}

double Sample::peak() const {
  double sum = 0;
  for (double value : peak_bytes) sum += value;
  return peak_bytes.empty() ? 0 : sum / static_cast<double>(peak_bytes.size());
}

bool TrainingTable::has_memory() const {
  return !samples.empty() &&
         std::all_of(samples.begin(), samples.end(), [](const Sample& sample) { return !sample.peak_bytes.empty(); });
}

namespace {

// The graph of a stored network at a run's input and `batch`: rebuilt from its source, or else
// from the stored graph JSON with the Input shape replaced.
Graph network_graph(const records::NetworkRecord& network, const records::RunConfig& config, int64_t batch = 1) {
  records::RunConfig at_one = config;
  at_one.batch = batch;
  try {
    return records::build_network(records::parse_model_source(network.source), at_one);
  } catch (const InputError& first) {
    if (network.graph_json.empty()) throw;
    Graph graph = import::read_graph_json(network.graph_json, "network " + network.name);
    for (Node& node : graph.mutable_nodes()) {
      if (node.op != "Input") continue;
      std::vector<int64_t> shape{batch};
      if (!config.input.empty())
        shape.insert(shape.end(), config.input.begin(), config.input.end());
      else if (config.seq_len > 0)
        shape.push_back(config.seq_len);
      else
        throw;
      node.attrs["shape"] = shape;
    }
    graph.infer_shapes();
    return graph;
  }
}

bool matches_environment(const records::EnvironmentRecord& environment, const std::string& wanted) {
  return wanted == environment.hash() || wanted == forecast::environment_label(environment) ||
         wanted == forecast::environment_slug(environment);
}

}  // namespace

void write_features_csv(const TrainingTable& table, std::ostream& out) {
  out << "environment,network,family,batch,input,seq_len,optimizer,precision,threads,repeats,time_ms,peak_bytes";
  for (const std::string& name : features::feature_names()) out << ',' << csv_quote(name);
  out << '\n';
  char number[32];
  auto put = [&](double value) {  // the shortest of 15 or 17 digits that reads back exactly
    std::snprintf(number, sizeof number, "%.15g", value);
    if (std::strtod(number, nullptr) != value) std::snprintf(number, sizeof number, "%.17g", value);
    out << ',' << number;
  };
  for (size_t row = 0; row < table.samples.size(); ++row) {
    const Sample& sample = table.samples[row];
    out << csv_quote(sample.environment_hash) << ',' << csv_quote(sample.network_name) << ','
        << csv_quote(sample.family) << ',' << sample.config.batch << ',' << sample.config.input_text() << ','
        << sample.config.seq_len << ',' << csv_quote(name(sample.config.optimizer)) << ','
        << csv_quote(name(sample.config.precision)) << ',' << sample.config.threads << ',' << sample.times_ms.size();
    put(sample.time_ms());
    if (sample.peak_bytes.empty())
      out << ',';
    else
      put(sample.peak());
    for (int64_t col = 0; col < table.x.cols(); ++col) put(table.x(static_cast<int64_t>(row), col));
    out << '\n';
  }
}

features::TrainingConfig training_config_of(const records::RunConfig& run) {
  features::TrainingConfig config;
  config.batch = run.batch;
  config.set_setup(run);
  config.threads = run.threads;
  return config;
}

namespace {

// What reading a dataset's runs leaves beside the table: the inputs of featurizing.
struct TableSources {
  std::map<std::string, records::EnvironmentRecord> environments;  // by hash
  std::map<std::string, records::NetworkRecord> networks;          // by hash
  std::map<int64_t, std::vector<records::LayerTiming>> layer_times;
  std::vector<std::pair<size_t, int64_t>> timed_runs;  // (sample, run id) of the runs with layer timings
  std::map<std::string, int64_t> skipped_by_cause;
  int64_t holdout_left_out = 0;
};

void check_environment_known(const TableSources& sources, const std::string& wanted, const std::string& db_path) {
  if (wanted.empty()) return;
  bool found = false;
  std::string known;
  for (const auto& [hash, environment] : sources.environments) {
    found = found || matches_environment(environment, wanted);
    known += (known.empty() ? "" : ", ") + forecast::environment_slug(environment) + " (" + hash + ")";
  }
  if (!found)
    throw InputError("environment " + quote(wanted) + " is not in " + db_path +
                     " (known: " + (known.empty() ? "none" : known) + ")");
}

// Groups the ok runs by (environment, network, configuration) into table.samples.
void group_runs(store::Store& store, const TableOptions& options, TableSources& sources, TrainingTable& table) {
  std::map<std::tuple<std::string, std::string, records::RunConfig>, size_t> index;
  for (const records::RunRecord& run : store.runs()) {
    auto environment = sources.environments.find(run.environment_hash);
    if (environment == sources.environments.end()) continue;
    if (!options.environment.empty() && !matches_environment(environment->second, options.environment)) continue;
    const bool holdout_run = run.plan == kHoldoutPlan;
    if (holdout_run ? options.holdout == HoldoutRuns::Exclude : options.holdout == HoldoutRuns::Only) {
      if (holdout_run) ++sources.holdout_left_out;
      continue;
    }
    if (run.result.status != "ok") {
      ++sources.skipped_by_cause["status " + run.result.status];
      continue;
    }
    std::optional<double> time =
        options.time_column == "median" ? run.result.time_ms_median : run.result.time_ms_normalised;
    if (!time || !(*time > 0)) {
      ++sources.skipped_by_cause["no " + options.time_column + " time"];
      continue;
    }
    auto key = std::make_tuple(run.environment_hash, run.network_hash, run.config);
    auto [position, inserted] = index.emplace(key, table.samples.size());
    if (inserted) {
      Sample sample;
      sample.environment_hash = run.environment_hash;
      sample.network_hash = run.network_hash;
      const records::NetworkRecord& network = sources.networks.at(run.network_hash);
      sample.network_name = network.name;
      sample.family = network.family;
      sample.config = run.config;
      table.samples.push_back(std::move(sample));
    }
    Sample& sample = table.samples[position->second];
    if (sources.layer_times.count(run.id)) sources.timed_runs.emplace_back(position->second, run.id);
    sample.times_ms.push_back(*time);
    sample.time_plans.push_back(run.plan);
    if (run.result.peak_bytes && *run.result.peak_bytes > 0) {
      sample.peak_bytes.push_back(static_cast<double>(*run.result.peak_bytes));
      sample.peak_plans.push_back(run.plan);
    }
    ++table.runs_used;
  }
}

// What the simulator says for a sample's configuration (0 where it does not model it), so that
// evaluate can set it beside the measurement and the learned memory predictor.
double simulated_peak(const records::NetworkRecord& network, const Sample& sample,
                      const records::EnvironmentRecord& environment, const TableOptions& options) {
  memory::MemoryConfig memory_config;
  memory_config.optimizer = sample.config.optimizer;
  memory_config.precision = sample.config.precision;
  memory_config.device = environment.gpu_name.empty() ? Device::Cpu : Device::Cuda;
  memory_config.threads = sample.config.threads;
  // The simulator follows the measuring environment's ISA (or TableOptions::isa), never the
  // features of featurize_as: it models the runs as they were measured.
  memory_config.isa = features::effective_isa(
      options.isa != hardware::CpuIsa::Unknown ? options.isa : forecast::hardware_of(environment).isa);
  try {
    return static_cast<double>(
        memory::simulate_memory(network_graph(network, sample.config, sample.config.batch), memory_config).peak_bytes);
  } catch (const InputError&) {
    return 0;
  }
}

// Featurizes the samples (one graph per network and input, scaled to each batch), keeping those
// whose network can be rebuilt; returns their feature rows and where each sample went (SIZE_MAX:
// dropped).
std::vector<std::vector<double>> featurize_samples(const TableOptions& options, TableSources& sources,
                                                   TrainingTable& table, std::vector<size_t>& kept_index) {
  std::map<std::string, int> graph_cache;  // index into table.graphs
  std::map<std::string, std::string> graph_errors;
  std::vector<Sample> kept;
  std::vector<std::vector<double>> rows;
  std::map<std::string, int> sites_of_graph;
  kept_index.assign(table.samples.size(), SIZE_MAX);
  for (size_t sample_index = 0; sample_index < table.samples.size(); ++sample_index) {
    Sample& sample = table.samples[sample_index];
    const records::NetworkRecord& network = sources.networks.at(sample.network_hash);
    std::string key =
        sample.network_hash + "|" + sample.config.input_text() + "|" + std::to_string(sample.config.seq_len);
    auto cached = graph_cache.find(key);
    if (cached == graph_cache.end() && graph_errors.count(key) == 0) {
      try {
        Graph graph = network_graph(network, sample.config);
        table.graphs.push_back(features::graph_features(graph));
        cached = graph_cache.emplace(key, static_cast<int>(table.graphs.size() - 1)).first;
        if (!sources.layer_times.empty() || options.all_layer_sites) {  // layer sites only where something uses them
          table.layer_sites.push_back(features::layer_sites(graph));
          sites_of_graph.emplace(key, static_cast<int>(table.layer_sites.size() - 1));
        }
      } catch (const InputError& error) {
        graph_errors[key] = error.what();
      }
    }
    if (cached == graph_cache.end()) {
      ++sources.skipped_by_cause["network " + sample.network_name + " not rebuildable: " + graph_errors[key]];
      table.runs_skipped += static_cast<int64_t>(sample.times_ms.size());
      table.runs_used -= static_cast<int64_t>(sample.times_ms.size());
      continue;
    }
    const records::EnvironmentRecord& environment = sources.environments.at(sample.environment_hash);
    auto featurized_as = options.featurize_as.find(sample.environment_hash);
    features::HardwareFeatures hardware =
        forecast::hardware_of(featurized_as != options.featurize_as.end() ? featurized_as->second : environment);
    if (options.isa != hardware::CpuIsa::Unknown) hardware.isa = options.isa;
    rows.push_back(features::featurize(table.graphs[static_cast<size_t>(cached->second)],
                                       training_config_of(sample.config), hardware));
    sample.graph = cached->second;
    table.hardware.push_back(hardware);
    if (options.simulate_memory && !sample.peak_bytes.empty())
      sample.simulated_peak_bytes = simulated_peak(network, sample, environment, options);
    if (!sources.layer_times.empty() || options.all_layer_sites) sample.layer_sites = sites_of_graph.at(key);
    table.environments[sample.environment_hash] = environment;
    kept_index[sample_index] = kept.size();
    kept.push_back(std::move(sample));
  }
  table.samples = std::move(kept);
  return rows;
}

// The layer runs of the kept samples whose timings match their graph's nodes.
void match_layer_runs(const TableSources& sources, const std::vector<size_t>& kept_index, TrainingTable& table) {
  int64_t unmatched = 0;
  for (const auto& [sample_index, run_id] : sources.timed_runs) {
    if (kept_index[sample_index] == SIZE_MAX) continue;
    LayerRun layer_run;
    layer_run.sample = kept_index[sample_index];
    const Sample& sample = table.samples[layer_run.sample];
    if (forecast::match_layer_timings(table.layer_sites[static_cast<size_t>(sample.layer_sites)],
                                      sources.layer_times.at(run_id), layer_run.ms))
      table.layer_runs.push_back(std::move(layer_run));
    else
      ++unmatched;
  }
  if (unmatched > 0)
    table.notes.push_back(std::to_string(unmatched) +
                          " runs' layer timings skipped: they do not match the graph's nodes");
}

}  // namespace

TrainingTable load_training_table(const std::string& db_path, const TableOptions& options) {
  if (options.time_column != "median" && options.time_column != "normalised")
    throw InputError("unknown time column " + quote(options.time_column) + " (known: median, normalised)");
  if (!fs::exists(db_path)) throw InputError("dataset " + db_path + " does not exist");
  store::Store store = store::Store::open(db_path, store::Database::Mode::ReadOnly);
  TrainingTable table;
  table.dataset = db_path;

  TableSources sources;
  for (const records::EnvironmentRecord& environment : store.environments())
    sources.environments[environment.hash()] = environment;
  check_environment_known(sources, options.environment, db_path);
  for (records::NetworkRecord& network : store.networks(true)) sources.networks[network.hash] = std::move(network);
  if (options.layer_sites) sources.layer_times = store.layer_times();

  group_runs(store, options, sources, table);
  std::vector<size_t> kept_index;
  std::vector<std::vector<double>> rows = featurize_samples(options, sources, table, kept_index);
  match_layer_runs(sources, kept_index, table);
  for (const auto& [cause, count] : sources.skipped_by_cause) {
    if (cause.rfind("status ", 0) == 0 || cause.rfind("no ", 0) == 0) table.runs_skipped += count;
    table.notes.push_back(std::to_string(count) +
                          (cause.rfind("network", 0) == 0 ? " configurations skipped: " : " runs skipped: ") + cause);
  }
  if (sources.holdout_left_out > 0)
    table.notes.push_back(std::to_string(sources.holdout_left_out) +
                          " runs of the holdout plan left out (never trained on; " +
                          "`dnncast evaluate --predictor SET --db` scores them)");
  if (table.samples.empty() && options.holdout == HoldoutRuns::Only)
    throw InputError("dataset " + db_path + " has no successful run of the holdout plan (data/plans/holdout.json)");
  if (table.samples.empty())
    throw InputError("dataset " + db_path + " has no successful run to learn from" +
                     (table.notes.empty() ? std::string() : " (" + table.notes.front() + ")"));
  size_t columns = features::feature_count();
  table.x.resize(static_cast<int64_t>(rows.size()), static_cast<int64_t>(columns));
  for (size_t row = 0; row < rows.size(); ++row)
    for (size_t col = 0; col < columns; ++col)
      table.x(static_cast<int64_t>(row), static_cast<int64_t>(col)) = rows[row][col];
  return table;
}

std::vector<forecast::LayerExample> layer_examples(const TrainingTable& table, const std::vector<int64_t>* samples) {
  std::vector<char> wanted(table.samples.size(), samples == nullptr ? 1 : 0);
  if (samples)
    for (int64_t sample : *samples) wanted[static_cast<size_t>(sample)] = 1;
  std::vector<forecast::LayerExample> examples;
  for (const LayerRun& run : table.layer_runs) {
    if (!wanted[run.sample]) continue;
    const Sample& sample = table.samples[run.sample];
    forecast::LayerExample example;
    example.sites = &table.layer_sites[static_cast<size_t>(sample.layer_sites)];
    example.config = training_config_of(sample.config);
    example.gpu = !table.environments.at(sample.environment_hash).gpu_name.empty();
    example.ms = run.ms;
    examples.push_back(std::move(example));
  }
  return examples;
}

forecast::LayerModel train_layer_model(const TrainingTable& table, const std::vector<records::LayerBenchRecord>& bench,
                                       const std::string& target, std::ostream* log) {
  std::vector<forecast::LayerExample> examples = layer_examples(table);
  const size_t from_runs = examples.size();
  std::vector<features::LayerSites> bench_sites;  // the examples point into it until the fit
  for (forecast::LayerExample& example : forecast::bench_examples(bench, target, bench_sites))
    examples.push_back(std::move(example));
  if (examples.empty())
    throw InputError(
        "no layer timings to fit a layer-wise model on: the dataset has no per-layer runs and no "
        "single-layer benchmarks were given (dnncast bench-layers)");
  forecast::LayerModel model = forecast::LayerModel::fit(examples);
  if (log)
    *log << "layer-wise model fitted on " << from_runs << " per-layer runs and " << examples.size() - from_runs
         << " layer benchmarks (" << model.training_rows() << " layer rows)\n";
  return model;
}

std::vector<double> layer_estimates_of(const TrainingTable& table, const forecast::LayerModel& model) {
  std::vector<double> estimates(table.samples.size(), 0.0);
  for (size_t index = 0; index < table.samples.size(); ++index) {
    const Sample& sample = table.samples[index];
    if (sample.layer_sites < 0) continue;
    bool gpu = !table.environments.at(sample.environment_hash).gpu_name.empty();
    estimates[index] = model.iteration_ms(table.layer_sites[static_cast<size_t>(sample.layer_sites)],
                                          training_config_of(sample.config), gpu);
  }
  return estimates;
}

}  // namespace dnncast::study
