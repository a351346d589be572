#include "measure/campaign.h"

#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "measure/host_environment.h"

#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast::measure {

namespace {

using Clock = std::chrono::steady_clock;

using dnncast::seconds_since;

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long long total = static_cast<long long>(seconds + 0.5);
  char buffer[64];
  if (total >= 86400)
    std::snprintf(buffer, sizeof buffer, "%lldd%02lldh", total / 86400, total % 86400 / 3600);
  else if (total >= 3600)
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", total / 3600, total % 3600 / 60);
  else
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", total / 60, total % 60);
  return buffer;
}

// One run to do: an entry of the plan and a repeat index.
struct WorkItem {
  size_t entry;
  int64_t repeat;
};

std::string describe(const Plan& plan, const WorkItem& item) {
  const PlanEntry& entry = plan.entries[item.entry];
  const records::RunConfig& config = entry.config;
  std::ostringstream text;
  text << plan.networks[static_cast<size_t>(entry.network)].name << " b" << config.batch << " "
       << (config.input.empty() ? "seq" + std::to_string(config.seq_len) : config.input_text()) << " "
       << name(config.optimizer) << " " << name(config.precision) << " t" << config.threads;
  if (config.device != Device::Cpu) text << " " << name(config.device);
  text << " #" << item.repeat;
  return text.str();
}

std::string result_text(const records::RunResult& result) {
  char buffer[256];
  if (result.status == "ok" && result.time_ms_median) {
    std::snprintf(buffer, sizeof buffer, "ok %.4g ms (p10 %.4g, p90 %.4g, n %lld), peak %s, load %.2f, %.1f s",
                  *result.time_ms_median, result.time_ms_p10.value_or(0), result.time_ms_p90.value_or(0),
                  static_cast<long long>(result.iterations),
                  format_bytes(static_cast<double>(result.peak_bytes.value_or(0)), ByteStyle::FixedKiB).c_str(),
                  result.load_other_cpus.value_or(0), result.wall_s.value_or(0));
    // A run that shared its CPU with another process says so: its times are that process's as much as its own.
    if (result.cpu_wait_share.value_or(0) > records::kSharedCpuWaitShare) {
      char shared[96];
      std::snprintf(shared, sizeof shared, "; waited for its CPU %.0f%% of its time (another process ran there)",
                    100 * *result.cpu_wait_share);
      return std::string(buffer) + shared;
    }
    return buffer;
  }
  std::string message = result.message.substr(0, 120);
  std::replace(message.begin(), message.end(), '\n', ' ');
  return result.status + (message.empty() ? "" : ": " + message);
}

// Progress: a bar redrawn in place on a terminal, one line per run otherwise.
class Progress {
 public:
  Progress(std::FILE* out, bool bar, int64_t total, int64_t done_before)
      : out_(out), bar_(bar), total_(total), done_(done_before), start_(Clock::now()) {}

  void starting(const std::string& what) {
    if (bar_) draw("measuring " + what);
  }

  void finished(const std::string& what, const records::RunResult& result) {
    ++done_;
    ++measured_;
    if (bar_) {
      draw(what + ": " + result_text(result));
      return;
    }
    int width = static_cast<int>(std::to_string(total_).size());
    std::fprintf(out_, "[%*lld/%lld] %s: %s\n", width, static_cast<long long>(done_), static_cast<long long>(total_),
                 what.c_str(), result_text(result).c_str());
    std::fflush(out_);
  }

  void close() {
    if (bar_ && drawn_) std::fputc('\n', out_);
    std::fflush(out_);
  }

 private:
  void draw(const std::string& last) {
    double elapsed = seconds_since(start_);
    double rate_per_s = measured_ > 0 ? static_cast<double>(measured_) / elapsed : 0;
    double eta = rate_per_s > 0 ? static_cast<double>(total_ - done_) / rate_per_s : -1;
    const int bar_width = 24;
    int filled = total_ > 0 ? static_cast<int>(bar_width * done_ / total_) : bar_width;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(bar_width, '.');
    char head[160];
    std::snprintf(head, sizeof head, "[%s] %lld/%lld %.1f/min ETA %s | ", bar.c_str(), static_cast<long long>(done_),
                  static_cast<long long>(total_), rate_per_s * 60, eta < 0 ? "?" : duration_text(eta).c_str());
    std::string line = head + last;
    winsize size{};
    size_t columns = ioctl(fileno(out_), TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? size.ws_col : 120;
    if (line.size() >= columns) line.resize(columns - 1);
    std::fprintf(out_, "\r%s\033[K", line.c_str());
    std::fflush(out_);
    drawn_ = true;
  }

  std::FILE* out_;
  bool bar_;
  int64_t total_, done_, measured_ = 0;
  Clock::time_point start_;
  bool drawn_ = false;
};

// Pins this process (and so every measurement child it forks) to `cpus`; returns them.
std::vector<int> pin_to(const std::vector<int>& wanted) {
  std::vector<int> allowed = allowed_cpus();
  std::vector<int> cpus = wanted.empty() ? allowed : wanted;
  for (int cpu : cpus)
    if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end())
      throw InputError("--cpus: CPU " + std::to_string(cpu) +
                       " is not available to this process (allowed: " + format_cpu_list(allowed) + ")");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw InputError("cannot pin the campaign to CPUs " + format_cpu_list(cpus));
  return cpus;
}

#ifdef DNNCAST_HAVE_TORCH
profile::TrainConfig train_config(const records::RunConfig& config, bool per_layer = false) {
  profile::TrainConfig train;
  train.set_setup(config);
  train.per_layer = per_layer;
  train.threads = config.threads;
  return train;
}

profile::Limits limits_of(const MeasureOptions& options) {
  profile::Limits limits;
  limits.memory_bytes = options.memory_limit_bytes;
  limits.timeout_s = options.timeout_s;
  limits.time_budget_s = options.time_budget_s;
  limits.warmup_budget_s = options.warmup_budget_s;
  limits.ci_target = options.target_rel_ci;
  limits.min_iterations = options.min_iterations;
  limits.max_iterations = options.max_iterations;
  return limits;
}

records::RunResult result_of(const profile::Measurement& measurement) {
  records::RunResult result;
  result.status = measurement.status;
  result.message = measurement.message;
  if (measurement.time_ms.n > 0) {
    result.time_ms_median = measurement.time_ms.median;
    result.time_ms_p10 = measurement.time_ms.p10;
    result.time_ms_p90 = measurement.time_ms.p90;
    result.time_ms_mean = measurement.time_ms.mean;
    result.time_rel_ci = measurement.time_ms.rel_ci;
  }
  result.iterations = measurement.time_ms.n;
  result.warmup_iterations = measurement.warmup_iterations;
  if (measurement.time_ms_normalised > 0) result.time_ms_normalised = measurement.time_ms_normalised;
  if (measurement.probe_before_ms > 0) result.probe_ms_before = measurement.probe_before_ms;
  if (measurement.probe_after_ms > 0) result.probe_ms_after = measurement.probe_after_ms;
  if (measurement.status == "ok" || measurement.peak_bytes > 0) result.peak_bytes = measurement.peak_bytes;
  if (measurement.status == "ok" || measurement.baseline_bytes > 0) result.baseline_bytes = measurement.baseline_bytes;
  result.energy_j = measurement.energy_j;
  if (measurement.time_ms.n > 0) {  // measured while timing
    result.load_other_cpus = measurement.load_other_cpus;
    result.cpu_wait_share = measurement.cpu_wait_share;
  }
  result.wall_s = measurement.wall_s;
  if (!measurement.layers.empty()) {
    for (const profile::LayerTime& layer : measurement.layers)
      result.layers.push_back({layer.node, layer.op, layer.forward_ms, layer.backward_ms, layer.iteration_forward_ms,
                               layer.iteration_backward_ms});
    result.layers.push_back({"optimizer.step", records::kOptimizerStepOp, measurement.optimizer_step_ms, 0,
                             measurement.iteration_step_ms, 0.0});
    result.layers.push_back({"optimizer.zero_grad", records::kZeroGradOp, measurement.zero_grad_ms, 0,
                             measurement.iteration_zero_grad_ms, 0.0});
    result.layers.push_back({"loss", records::kLossOp, 0, 0, measurement.iteration_loss_ms, 0.0});
  }
  return result;
}

// Everything the shard will ask of the profiler is checked before the first measurement.
void check_measurable(const Plan& plan, const std::vector<size_t>& entries) {
  std::set<std::tuple<Optimizer, Precision, int64_t, Device>> configs;
  std::set<int> networks;
  for (size_t index : entries) {
    const records::RunConfig& config = plan.entries[index].config;
    networks.insert(plan.entries[index].network);
    if (!configs.emplace(config.optimizer, config.precision, config.threads, config.device).second) continue;
    try {
      profile::validate_config(train_config(config));
    } catch (const InputError& error) {
      throw InputError(plan.source + ": optimizer " + name(config.optimizer) + ", precision " + name(config.precision) +
                       ", " + std::to_string(config.threads) + " threads on " + name(config.device) + ": " +
                       error.what());
    }
  }
  // Every network of the shard must consist of ops the executor runs. Checked once per distinct
  // architecture (the op set does not depend on the input size).
  std::set<std::string> checked;
  for (int network_index : networks) {
    const PlanNetwork& network = plan.networks[static_cast<size_t>(network_index)];
    if (!checked.insert(network.hash).second) continue;
    records::RunConfig size;
    for (size_t index : entries) {
      if (plan.entries[index].network != network_index) continue;
      size = plan.entries[index].config;
      break;
    }
    size.batch = 1;
    try {
      profile::check_supported(records::build_network(network.model, size));
    } catch (const InputError& error) {
      throw InputError(plan.source + ": model " + network.model.source() + ": " + error.what());
    }
  }
}
#endif

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream stream(text);
  std::string part;
  auto fail = [&text]() { throw InputError("CPU list " + quote(text) + ": expected numbers and ranges like 0-3,6"); };
  auto number = [&fail](const std::string& digits) {
    if (digits.empty() || digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) fail();
    return std::stoi(digits);
  };
  while (std::getline(stream, part, ',')) {
    size_t dash = part.find('-');
    int first = number(part.substr(0, dash));
    int last = dash == std::string::npos ? first : number(part.substr(dash + 1));
    if (last < first || last >= CPU_SETSIZE) fail();
    for (int cpu = first; cpu <= last; ++cpu)
      if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) cpus.push_back(cpu);
  }
  if (cpus.empty() || text.back() == ',') fail();
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string text;
  for (size_t index = 0; index < cpus.size();) {
    size_t end = index;
    while (end + 1 < cpus.size() && cpus[end + 1] == cpus[end] + 1) ++end;
    text += (text.empty() ? "" : ",") + std::to_string(cpus[index]);
    if (end > index) text += "-" + std::to_string(cpus[end]);
    index = end + 1;
  }
  return text;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

namespace {

// The plan entries of this shard, kept to the threads asked for.
std::vector<size_t> campaign_entries(const Plan& plan, const CampaignOptions& options) {
  std::vector<size_t> entries = shard_entries(plan, options.shard);
  if (options.threads.empty()) return entries;
  std::vector<size_t> kept;
  for (size_t index : entries)
    if (std::find(options.threads.begin(), options.threads.end(), plan.entries[index].config.threads) !=
        options.threads.end())
      kept.push_back(index);
  return kept;
}

// What a campaign knows before it measures: one environment per device the shard uses (the GPU fields
// differ), the dataset when there is one, and what is already done in it per device.
struct CampaignState {
  std::map<std::string, records::EnvironmentRecord> environments;
  std::optional<store::Store> store;
  std::map<std::string, int64_t> environment_ids;
  std::map<std::string, std::set<records::RunKey>> done;
  std::set<std::string> stored_networks;
};

CampaignState open_campaign(const Plan& plan, const std::vector<size_t>& entries, const CampaignOptions& options) {
  CampaignState state;
  for (size_t index : entries) {
    const std::string& device = name(plan.entries[index].config.device);
    if (!state.environments.count(device))
      state.environments.emplace(device, detect_environment(plan.entries[index].config.device));
  }
  bool have_db = !options.dry_run || access(options.db_path.c_str(), F_OK) == 0;
  if (!have_db) return state;
  state.store = store::Store::open(options.db_path,
                                   options.dry_run ? store::Database::Mode::ReadOnly : store::Database::Mode::Create);
  for (const auto& [device, environment] : state.environments) {
    const int64_t id = state.store->environment_id(environment, options.dry_run);
    state.environment_ids[device] = id;
    if (id) state.done[device] = state.store->run_keys(id);
  }
  for (const records::NetworkRecord& network : state.store->networks(false)) state.stored_networks.insert(network.hash);
  return state;
}

// Repeat-major order: every configuration once before any twice, so a campaign stopped early still
// covers the plan evenly and repeats are spread over time (the noise floor sees the drift).
std::vector<WorkItem> campaign_todo(const Plan& plan, const std::vector<size_t>& entries, CampaignState& state,
                                    CampaignSummary& summary) {
  std::vector<WorkItem> todo;
  for (int64_t repeat = 0; repeat < plan.repeats; ++repeat) {
    for (size_t index : entries) {
      const PlanEntry& entry = plan.entries[index];
      const std::set<records::RunKey>& device_done = state.done[name(entry.config.device)];
      records::RunKey key{plan.networks[static_cast<size_t>(entry.network)].hash, entry.config, repeat};
      if (device_done.count(key))
        ++summary.done_before;
      else
        todo.push_back({index, repeat});
    }
  }
  return todo;
}

void print_campaign_header(const Plan& plan, const CampaignOptions& options, const CampaignSummary& summary,
                           size_t todo, const std::vector<int>& cpus) {
  std::set<std::string> architectures;
  for (const PlanEntry& entry : plan.entries)
    architectures.insert(plan.networks[static_cast<size_t>(entry.network)].hash);
  std::fprintf(options.out,
               "campaign %s (%s): %zu networks, %zu configurations x %lld repeats = %lld runs; shard %lld/%lld: %lld "
               "runs, %lld already in %s, %zu to measure on CPUs %s\n",
               plan.name.c_str(), plan.source.c_str(), architectures.size(), plan.entries.size(),
               static_cast<long long>(plan.repeats), static_cast<long long>(plan.run_count()),
               static_cast<long long>(options.shard.index), static_cast<long long>(options.shard.count),
               static_cast<long long>(summary.planned), static_cast<long long>(summary.done_before),
               options.db_path.c_str(), todo, format_cpu_list(cpus).c_str());
}

#ifdef DNNCAST_HAVE_TORCH
// Measures one work item in a child process and stores the run (its own transaction: committed before
// the next run starts). What fails as an InputError here (a file graph at another batch) is a result.
const records::RunResult& measure_and_store(const Plan& plan, const WorkItem& item, const std::vector<int>& cpus,
                                            const profile::Limits& limits, CampaignState& state,
                                            records::RunRecord& run) {
  const PlanEntry& entry = plan.entries[item.entry];
  const PlanNetwork& network = plan.networks[static_cast<size_t>(entry.network)];
  run.environment_id = state.environment_ids.at(name(entry.config.device));
  run.config = entry.config;
  run.repeat_index = item.repeat;
  run.plan = plan.name;
  run.host = state.environments.at(name(entry.config.device)).host;
  run.cpus = format_cpu_list(cpus);
  Clock::time_point run_start = Clock::now();
  try {
    Graph graph = records::build_network(network.model, entry.config);
    profile::Measurement measurement =
        profile::measure_isolated(graph, train_config(entry.config, plan.measure.per_layer), limits);
    run.result = result_of(measurement);
    if (!measurement.env.cpus.empty()) run.cpus = measurement.env.cpus;
  } catch (const InputError& error) {
    run.result = records::RunResult{};
    run.result.status = "error";
    run.result.message = error.what();
    run.result.wall_s = seconds_since(run_start);
  }
  run.measured_at = records::utc_now();
  records::NetworkRecord record;
  record.hash = network.hash;
  if (!state.stored_networks.count(network.hash)) {
    record = records::network_record(network.model, entry.config);
    DNNCAST_ASSERT(record.hash == network.hash);
  }
  state.store->insert_run(record, run);
  state.stored_networks.insert(network.hash);
  return run.result;
}

void measure_todo(const Plan& plan, const std::vector<WorkItem>& todo, const std::vector<int>& cpus,
                  const CampaignOptions& options, Clock::time_point start, CampaignState& state,
                  CampaignSummary& summary) {
  bool bar = options.progress_bar < 0 ? isatty(fileno(options.out)) != 0 : options.progress_bar == 1;
  Progress progress(options.out, bar, summary.planned, summary.done_before);
  profile::Limits limits = limits_of(plan.measure);
  for (const WorkItem& item : todo) {
    if ((options.max_runs > 0 && summary.measured >= options.max_runs) ||
        (options.stop_after_s > 0 && seconds_since(start) >= options.stop_after_s)) {
      summary.stopped_early = true;
      break;
    }
    std::string what = describe(plan, item);
    progress.starting(what);
    records::RunRecord run;
    const std::string& status = measure_and_store(plan, item, cpus, limits, state, run).status;
    ++summary.measured;
    (status == "ok"        ? summary.ok
     : status == "oom"     ? summary.oom
     : status == "timeout" ? summary.timeout
                           : summary.error)++;
    progress.finished(what, run.result);
  }
  progress.close();
}
#endif

}  // namespace

CampaignSummary run_campaign(const Plan& plan, const CampaignOptions& options) {
  Clock::time_point start = Clock::now();
  CampaignSummary summary;
  std::vector<size_t> entries = campaign_entries(plan, options);
  summary.planned = static_cast<int64_t>(entries.size()) * plan.repeats;

#ifndef DNNCAST_HAVE_TORCH
  if (!options.dry_run)
    throw InputError("this dnncast was built without libtorch, so it cannot measure (campaign --dry-run still works)");
#endif
  std::vector<int> cpus = options.dry_run ? allowed_cpus() : pin_to(options.cpus);
#ifdef DNNCAST_HAVE_TORCH
  check_measurable(plan, entries);
#endif
  CampaignState state = open_campaign(plan, entries, options);
  std::vector<WorkItem> todo = campaign_todo(plan, entries, state, summary);
  print_campaign_header(plan, options, summary, todo.size(), cpus);
  if (options.dry_run) {
    size_t shown = std::min<size_t>(todo.size(), 20);
    for (size_t index = 0; index < shown; ++index)
      std::fprintf(options.out, "  %s\n", describe(plan, todo[index]).c_str());
    if (shown < todo.size()) std::fprintf(options.out, "  ... and %zu more\n", todo.size() - shown);
    summary.elapsed_s = seconds_since(start);
    return summary;
  }
#ifdef DNNCAST_HAVE_TORCH
  measure_todo(plan, todo, cpus, options, start, state, summary);
#endif
  summary.elapsed_s = seconds_since(start);
  std::fprintf(options.out,
               "campaign %s shard %lld/%lld: measured %lld runs in %s (ok %lld, oom %lld, error %lld, timeout %lld); "
               "%lld of %lld runs of the shard are in %s%s\n",
               plan.name.c_str(), static_cast<long long>(options.shard.index),
               static_cast<long long>(options.shard.count), static_cast<long long>(summary.measured),
               duration_text(summary.elapsed_s).c_str(), static_cast<long long>(summary.ok),
               static_cast<long long>(summary.oom), static_cast<long long>(summary.error),
               static_cast<long long>(summary.timeout), static_cast<long long>(summary.done_before + summary.measured),
               static_cast<long long>(summary.planned), options.db_path.c_str(),
               summary.stopped_early ? " (stopped early: run it again to continue)" : "");
  return summary;
}

}  // namespace dnncast::measure
