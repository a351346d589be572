// Jobs and cluster files, the forecast cache, and the schedule of `dnncast schedule` (schedule_jobs.h).
#include "decide/schedule_jobs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/checked.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/json_limits.h"
#include "core/units.h"
#include "graph/tensor.h"

namespace dnncast::decide {

namespace {

using nlohmann::json;

constexpr int64_t kMaxJobs = 10000, kMaxGpus = 10000, kMaxIterations = int64_t{1} << 40;
constexpr double kMaxSeconds = 1e12;

// A field of one job or node: its checks name the file, the entry and the field.
class Fields {
 public:
  Fields(const json& entry, std::string where, const std::vector<std::string>& known) : entry_(entry) {
    where_ = std::move(where);
    if (!entry.is_object()) throw InputError(where_ + ": expected an object");
    for (const auto& item : entry.items())
      if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
        std::string list;
        for (const std::string& name : known) list += (list.empty() ? "" : ", ") + name;
        throw InputError(where_ + ": unknown field " + quote(item.key()) + " (known: " + list + ")");
      }
  }
  bool has(const std::string& field) const { return entry_.contains(field) && !entry_.at(field).is_null(); }
  std::string text(const std::string& field, bool required) const {
    if (!has(field)) {
      if (required) throw InputError(where_ + ": missing field " + quote(field));
      return "";
    }
    const json& value = entry_.at(field);
    if (!value.is_string() || value.get<std::string>().empty())
      throw InputError(where_ + ": field " + quote(field) + " must be a non-empty string");
    const std::string& text = value.get_ref<const std::string&>();
    // A name is printed in tables and one-line messages: a control character (a newline) would break them.
    for (char c : text)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw InputError(where_ + ": field " + quote(field) + " holds a control character: " + quote(text));
    return text;
  }
  int64_t integer(const std::string& field, bool required, int64_t low, int64_t high) const {
    if (!has(field)) {
      if (required) throw InputError(where_ + ": missing field " + quote(field));
      return 0;
    }
    const json& value = entry_.at(field);
    if (!value.is_number_integer() || value.get<int64_t>() < low || value.get<int64_t>() > high ||
        (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(high)))
      throw InputError(where_ + ": field " + quote(field) + " must be an integer from " + std::to_string(low) + " to " +
                       std::to_string(high) + ", got " + value.dump());
    return value.get<int64_t>();
  }
  std::optional<double> number(const std::string& field, double low, double high, bool low_open) const {
    if (!has(field)) return std::nullopt;
    const json& value = entry_.at(field);
    const double x = value.is_number() ? value.get<double>() : std::nan("");
    if (!value.is_number() || !std::isfinite(x) || x < low || (low_open && x == low) || x > high)
      throw InputError(where_ + ": field " + quote(field) + " must be a number " + (low_open ? "above " : "from ") +
                       format_number(low) + (low_open ? " up to " : " to ") + format_number(high) + ", got " +
                       value.dump());
    return x;
  }
  const std::string& where() const { return where_; }

 private:
  static std::string format_number(double x) {
    std::ostringstream out;
    out << x;
    return out.str();
  }
  const json& entry_;
  std::string where_;
};

const json& list_of(const json& document, const std::string& key, const std::string& where) {
  if (!document.is_object() || !document.contains(key))
    throw InputError(where + ": expected an object with a " + quote(key) + " list");
  const json& list = document.at(key);
  if (!list.is_array()) throw InputError(where + ": " + quote(key) + " must be a list");
  if (list.empty()) throw InputError(where + ": " + quote(key) + " is empty");
  return list;
}

json read_json(const std::string& path, const std::string& what) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw InputError(what + " " + quote(path) + ": is a folder, not a file");
  std::ifstream in(path);
  if (!in) throw InputError(what + " " + quote(path) + ": cannot read the file");
  const std::string text = read_all(in);
  check_json_nesting(text, what + " " + quote(path));
  try {
    return json::parse(text);
  } catch (const json::exception& error) {
    throw InputError(what + " " + quote(path) + ": not JSON (" + error.what() + ")");
  }
}

std::string input_text(const models::ModelSpec& spec) {
  std::string text;
  for (int64_t dim : spec.input) text += (text.empty() ? "" : "x") + std::to_string(dim);
  if (spec.seq_len > 0) text = "seq" + std::to_string(spec.seq_len);
  return text;
}

// The lowest on-demand price per GPU of the snapshot's instances with this GPU, and which instance.
std::pair<double, std::string> snapshot_price(const hardware::Catalogue& catalogue, const std::string& gpu) {
  double best = 0;
  std::string source = "none";
  for (const hardware::CloudInstance& instance : catalogue.instances()) {
    if (instance.gpu != gpu || instance.gpu_count < 1) continue;
    const double per_gpu = instance.price_usd_per_hour / static_cast<double>(instance.gpu_count);
    if (source == "none" || per_gpu < best) {
      best = per_gpu;
      source = instance.provider + (instance.instance_type.empty() ? "" : " " + instance.instance_type) +
               " (price snapshot)";
    }
  }
  return {best, source};
}

// Why a forecast on several GPUs has no memory per GPU: its note.
std::string memory_not_forecast(const gpu::GpuForecast& forecast) {
  const std::string prefix = "memory not forecast";
  for (const std::string& note : forecast.notes)
    if (note.rfind(prefix, 0) == 0) return note;
  return prefix;
}

// A job's gang: "gpus", "parallel" and "micro_batches", checked by the parser `dnncast predict --gpus` uses.
void parse_gang(const Fields& fields, JobSpec& job) {
  job.gpus = fields.has("gpus") ? fields.integer("gpus", true, 1, kMaxGpus) : 1;
  const int64_t micro_batches = fields.has("micro_batches") ? fields.integer("micro_batches", true, 1, kMaxGpus) : 1;
  const std::string text = fields.has("parallel") ? fields.text("parallel", true) : "dp";
  const gpu::ParallelNames names{"field 'gpus'", "field 'parallel'", "field 'micro_batches'", "gpus_per_node"};
  try {
    // A gang runs within one node: its collectives never leave it.
    job.parallel = gpu::parse_parallel(text, job.gpus, micro_batches, job.gpus, names);
  } catch (const InputError& error) {
    throw error.with_context(fields.where());
  }
  if (job.spec.batch % micro_batches != 0)
    throw InputError(fields.where() + ": field 'batch' " + std::to_string(job.spec.batch) +
                     " is not a multiple of field 'micro_batches' " + std::to_string(micro_batches));
  if (job.gpus > 1 && job.framework != gpu::Framework::PyTorch)
    throw InputError(fields.where() + ": field 'framework' " + name(job.framework) +
                     ": only PyTorch training is timed on several GPUs");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Files

std::vector<JobSpec> parse_jobs(const json& document, const std::string& where) {
  static const std::vector<std::string> known{"name",      "model",        "batch",     "input",      "seq",
                                              "optimizer", "precision",    "framework", "iterations", "epochs",
                                              "samples",   "priority",     "arrival_s", "deadline_s", "gpus",
                                              "parallel",  "micro_batches"};
  const json& list = list_of(document, "jobs", where);
  if (static_cast<int64_t>(list.size()) > kMaxJobs)
    throw InputError(where + ": " + std::to_string(list.size()) + " jobs, more than " + std::to_string(kMaxJobs));
  std::vector<JobSpec> jobs;
  std::set<std::string> names;
  for (size_t index = 0; index < list.size(); ++index) {
    std::string label = where + ": job " + std::to_string(index + 1);
    if (list[index].is_object() && list[index].contains("name") && list[index].at("name").is_string())
      label += " (" + quote(list[index].at("name").get<std::string>()) + ")";
    const Fields fields(list[index], label, known);
    JobSpec job;
    job.where = label;
    job.name = fields.has("name") ? fields.text("name", true) : "job" + std::to_string(index + 1);
    if (!names.insert(job.name).second) throw InputError(label + ": the name " + quote(job.name) + " is taken");
    job.model = fields.text("model", true);
    job.spec.batch = fields.integer("batch", true, 1, kMaxTensorElements);
    if (fields.has("input") && fields.has("seq")) throw InputError(label + ": give input or seq, not both");
    if (fields.has("input")) {
      const std::string text = fields.text("input", true);
      TensorShape shape;
      try {
        shape = parse_shape(text);
      } catch (const InputError& error) {
        throw error.with_context(label + ": field 'input'");
      }
      if (shape.rank() != 3)
        throw InputError(label + ": field 'input' " + quote(text) + ": expected CxHxW (e.g. 3x224x224)");
      job.spec.input = shape.dims;
    }
    job.spec.seq_len = fields.integer("seq", false, 1, int64_t{1} << 24);
    try {
      if (fields.has("optimizer")) job.optimizer = parse_optimizer(fields.text("optimizer", true), "field 'optimizer'");
      if (fields.has("precision")) {
        job.precision = gpu::parse_gpu_precision(fields.text("precision", true), "field 'precision'");
        job.memory_precision = gpu::memory_precision_of(fields.text("precision", true), "field 'precision'");
      }
      if (fields.has("framework"))
        job.framework = gpu::parse_framework(fields.text("framework", true), "field 'framework'");
    } catch (const InputError& error) {
      throw error.with_context(label);
    }
    parse_gang(fields, job);
    const bool by_iterations = fields.has("iterations"), by_epochs = fields.has("epochs") || fields.has("samples");
    if (by_iterations == by_epochs) throw InputError(label + ": give either 'iterations' or 'epochs' and 'samples'");
    if (by_iterations) {
      job.iterations = fields.integer("iterations", true, 1, kMaxIterations);
    } else {
      job.epochs = fields.integer("epochs", true, 1, 1000000);
      job.samples = fields.integer("samples", true, 1, kMaxTensorElements);
      // Each data-parallel replica takes `batch` samples of an iteration.
      const int64_t global_batch = job.spec.batch * job.parallel.dp;
      const int64_t per_epoch = (job.samples + global_batch - 1) / global_batch;
      if (per_epoch > kMaxIterations / job.epochs) throw InputError(label + ": more than 2^40 iterations");
      job.iterations = job.epochs * per_epoch;
    }
    job.priority = fields.number("priority", 0, 1e6, true).value_or(1);
    job.arrival_s = fields.number("arrival_s", 0, kMaxSeconds, false).value_or(0);
    job.deadline_s = fields.number("deadline_s", 0, kMaxSeconds, true);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::vector<NodeSpec> parse_cluster(const json& document, const std::string& where) {
  static const std::vector<std::string> known{"name", "gpu", "count", "price_per_hour"};
  const json& list = list_of(document, "nodes", where);
  std::vector<NodeSpec> nodes;
  std::set<std::string> names;
  int64_t total = 0;
  for (size_t index = 0; index < list.size(); ++index) {
    const std::string label = where + ": node " + std::to_string(index + 1);
    const Fields fields(list[index], label, known);
    NodeSpec node;
    node.name = fields.has("name") ? fields.text("name", true) : "node" + std::to_string(index + 1);
    if (!names.insert(node.name).second) throw InputError(label + ": the name " + quote(node.name) + " is taken");
    node.gpu = fields.text("gpu", true);
    node.count = fields.has("count") ? fields.integer("count", true, 1, kMaxGpus) : 1;
    node.price_per_hour = fields.number("price_per_hour", 0, 1e6, false);
    total += node.count;
    if (total > kMaxGpus) throw InputError(where + ": more than " + std::to_string(kMaxGpus) + " GPUs");
    nodes.push_back(std::move(node));
  }
  return nodes;
}

std::vector<JobSpec> read_jobs(const std::string& path) { return parse_jobs(read_json(path, "jobs file"), path); }

std::vector<NodeSpec> read_cluster(const std::string& path) {
  return parse_cluster(read_json(path, "--cluster"), path);
}

std::string plan_label(const JobSpec& job) {
  if (job.gpus <= 1) return "1";
  std::string label;
  const std::pair<const char*, int64_t> degrees[] = {
      {"dp", job.parallel.dp}, {"tp", job.parallel.tp}, {"pp", job.parallel.pp}, {"mb", job.parallel.micro_batches}};
  for (const auto& [axis, degree] : degrees)
    if (degree > 1) label += (label.empty() ? "" : " ") + std::string(axis) + std::to_string(degree);
  return label;
}

// ---------------------------------------------------------------------------------------------
// Forecasts

const gpu::GpuForecast* ForecastCache::get(const JobSpec& job, const std::string& gpu, std::string& error) {
  const std::string key = job.model + "|" + std::to_string(job.spec.batch) + "|" + input_text(job.spec) + "|" +
                          name(job.optimizer) + "|" + name(job.precision) + "|" + name(job.framework) + "|" + gpu +
                          "|" + std::to_string(job.gpus) + " " + gpu::describe(job.parallel);
  auto found = entries_.find(key);
  if (found != entries_.end()) {
    ++hits_;
  } else {
    ++misses_;
    gpu::GpuForecastRequest request;
    request.model = {job.model, job.spec, {}};
    request.optimizer = job.optimizer;
    request.precision = job.precision;
    request.memory_precision = job.memory_precision;
    request.framework = job.framework;
    request.parallel = job.parallel;
    request.gpu = catalogue_.gpu(gpu);
    Entry entry;
    // A model or input no GPU could take is the user's error and propagates; a GPU that lacks the peak
    // this precision needs only leaves that GPU out for this job.
    const std::vector<std::string> missing = gpu::missing_peaks(request.gpu, job.precision);
    if (!missing.empty()) {
      std::string columns;
      for (const std::string& column : missing) columns += (columns.empty() ? "" : ", ") + column;
      entry.error = gpu + " has no " + columns + " in the catalogue for " + name(job.precision);
    } else {
      entry.forecast = gpu::forecast_gpu(request, calibration_);
    }
    found = entries_.emplace(key, std::move(entry)).first;
  }
  error = found->second.error;
  return found->second.forecast ? &*found->second.forecast : nullptr;
}

// ---------------------------------------------------------------------------------------------
// The schedule

namespace {

// The cluster's GPU types in order of first appearance, its GPUs in node order and the notes on prices into
// `result`; per type, the GPUs of its largest node. InputError for a job of more GPUs than any node has.
std::vector<int64_t> add_cluster(const ScheduleRequest& request, const hardware::Catalogue& catalogue,
                                 Schedule& result) {
  std::map<std::string, int64_t> type_index;
  std::vector<int64_t> largest_node;
  for (const NodeSpec& node : request.nodes) {
    const hardware::GpuSpec& gpu = catalogue.gpu(node.gpu);
    auto found = type_index.find(gpu.name);
    if (found == type_index.end()) {
      largest_node.push_back(0);
      GpuType type;
      type.gpu = gpu.name;
      type.gpu_name = gpu.full_name;
      type.memory_bytes = gpu.memory_gib ? static_cast<int64_t>(*gpu.memory_gib * 1024 * 1024 * 1024) : 0;
      if (node.price_per_hour) {
        type.price_per_hour = *node.price_per_hour;
        type.price_source = "cluster file";
      } else {
        std::tie(type.price_per_hour, type.price_source) = snapshot_price(catalogue, gpu.name);
      }
      found = type_index.emplace(gpu.name, static_cast<int64_t>(result.types.size())).first;
      result.types.push_back(type);
    } else if (node.price_per_hour && result.types[found->second].price_source != "cluster file") {
      result.types[found->second].price_per_hour = *node.price_per_hour;
      result.types[found->second].price_source = "cluster file";
    } else if (node.price_per_hour && *node.price_per_hour != result.types[found->second].price_per_hour) {
      throw InputError("--cluster: node " + quote(node.name) + " prices " + gpu.name +
                       " differently from an earlier node (one price per GPU type)");
    }
    for (int64_t index = 0; index < node.count; ++index) {
      result.gpus.push_back({node.name, index, found->second});
      ++result.types[found->second].count;
    }
    largest_node[found->second] = std::max(largest_node[found->second], node.count);
  }
  // A gang runs within one node.
  const int64_t largest = *std::max_element(largest_node.begin(), largest_node.end());
  for (const JobSpec& job : request.jobs)
    if (job.gpus > largest)
      throw InputError((job.where.empty() ? "job " + quote(job.name) : job.where) + ": field 'gpus' " +
                       std::to_string(job.gpus) + ": no node of the cluster has that many GPUs (the largest has " +
                       std::to_string(largest) + "; a job of several GPUs runs within one node)");
  for (const GpuType& type : result.types) {
    if (type.price_source == "none")
      result.notes.push_back(type.gpu + ": no price in the cluster file or the price snapshot: its GPU time costs $0");
    else if (type.price_source != "cluster file") {
      char price[32];
      std::snprintf(price, sizeof price, "%.2f", type.price_per_hour);
      result.notes.push_back(type.gpu + " at $" + price +
                             " per GPU-hour, the lowest on-demand price per GPU: " + type.price_source);
    }
  }

  return largest_node;
}

}  // namespace

Schedule schedule(const ScheduleRequest& request) {
  const hardware::Catalogue catalogue = hardware::Catalogue::load(request.catalogue_files);
  ForecastCache cache(catalogue, gpu::load_gpu_calibration(request.calibration_file));
  return schedule(request, cache);
}

Schedule schedule(const ScheduleRequest& request, ForecastCache& cache) {
  if (request.jobs.empty()) throw InputError("no jobs to schedule");
  if (request.nodes.empty()) throw InputError("the cluster has no nodes");
  const hardware::Catalogue& catalogue = cache.catalogue();
  Schedule result;
  result.objective = request.objective;
  result.jobs = request.jobs;
  const int64_t hits_before = cache.hits(), misses_before = cache.misses();

  const std::vector<int64_t> largest_node = add_cluster(request, catalogue, result);

  // Forecasts: once per distinct (model, configuration, GPU).
  const auto forecast_start = SteadyClock::now();
  const int64_t types = static_cast<int64_t>(result.types.size());
  result.forecasts.assign(request.jobs.size(), std::vector<JobOnType>(static_cast<size_t>(types)));
  for (size_t job = 0; job < request.jobs.size(); ++job) {
    const JobSpec& spec = request.jobs[job];
    for (int64_t type = 0; type < types; ++type) {
      JobOnType& on = result.forecasts[job][type];
      std::string error;
      const gpu::GpuForecast* forecast = nullptr;
      try {
        forecast = cache.get(spec, result.types[type].gpu, error);
      } catch (const InputError& failure) {
        throw failure.with_context("job " + quote(spec.name));
      }
      if (!forecast) {
        on.error = error;
        continue;
      }
      if (result.inputs.size() <= job) result.inputs.push_back(forecast->input);
      on.time_ms = forecast->time_ms;
      on.roofline_ms = forecast->roofline_ms;
      on.duration_s = forecast->time_ms / 1e3 * static_cast<double>(spec.iterations);
      on.required_bytes = forecast->required_bytes;
      on.basis = forecast->basis;
      on.fits = forecast->fits.value_or(false) && largest_node[type] >= spec.gpus;
      if (forecast->parallel && !forecast->parallel->memory)
        on.error = memory_not_forecast(*forecast);
      else if (!forecast->fits)
        on.error = result.types[type].gpu + ": memory not catalogued";
      else if (!*forecast->fits)
        on.error = "needs " + format_bytes(static_cast<double>(*forecast->required_bytes)) + " of " +
                   format_bytes(static_cast<double>(*forecast->device_memory_bytes)) +
                   (spec.gpus > 1 ? " per GPU" : "");
      else if (!on.fits)
        on.error = "needs " + std::to_string(spec.gpus) + " GPUs of one node; its largest node has " +
                   std::to_string(largest_node[type]);
    }
    if (result.inputs.size() <= job) result.inputs.push_back(input_text(spec.spec));
  }
  result.forecast_s = seconds_since(forecast_start);

  // The problem of the placeable jobs.
  sched::Problem& problem = result.problem;
  problem.types = types;
  for (size_t gpu = 0; gpu < result.gpus.size(); ++gpu) {
    problem.gpu_type.push_back(result.gpus[gpu].type);
    // Node names are unique and a node's GPUs consecutive: a new name is a new node.
    const bool same_node = gpu > 0 && result.gpus[gpu].node == result.gpus[gpu - 1].node;
    problem.node.push_back(gpu == 0 ? 0 : problem.node.back() + (same_node ? 0 : 1));
  }
  for (const GpuType& type : result.types) problem.price_per_hour.push_back(type.price_per_hour);
  for (size_t job = 0; job < request.jobs.size(); ++job) {
    bool fits_somewhere = false;
    std::string why;
    for (int64_t type = 0; type < types; ++type) {
      const JobOnType& on = result.forecasts[job][type];
      fits_somewhere = fits_somewhere || on.fits;
      why += (why.empty() ? "" : "; ") + result.types[type].gpu + ": " +
             (on.error.empty() ? std::string("fits") : on.error);
    }
    if (!fits_somewhere) {
      result.unplaceable.emplace_back(static_cast<int64_t>(job), "fits no GPU of the cluster (" + why + ")");
      continue;
    }
    result.placed_jobs.push_back(static_cast<int64_t>(job));
    for (int64_t type = 0; type < types; ++type) {
      const JobOnType& on = result.forecasts[job][type];
      problem.duration_s.push_back(on.fits ? *on.duration_s : sched::kNoFit);
    }
    problem.arrival_s.push_back(request.jobs[job].arrival_s);
    problem.weight.push_back(request.jobs[job].priority);
    problem.gpus_needed.push_back(request.jobs[job].gpus);
  }
  problem.jobs = static_cast<int64_t>(result.placed_jobs.size());
  result.cache_hits = cache.hits() - hits_before;
  result.cache_misses = cache.misses() - misses_before;
  if (problem.jobs == 0) throw InputError("no job fits any GPU of the cluster");
  if (request.exact && problem.jobs > sched::kExactMaxJobs)
    throw InputError("--exact takes at most " + std::to_string(sched::kExactMaxJobs) + " placeable jobs, not " +
                     std::to_string(problem.jobs));
  for (int64_t job : result.placed_jobs)
    if (request.exact && request.jobs[job].gpus > 1)
      throw InputError("--exact places one-GPU jobs only: job " + quote(request.jobs[job].name) + " needs " +
                       std::to_string(request.jobs[job].gpus) + " GPUs");
  if (request.objective == sched::Objective::Cost &&
      std::all_of(result.types.begin(), result.types.end(), [](const GpuType& t) { return t.price_per_hour == 0; }))
    throw InputError("--objective cost: no GPU type has a price (give price_per_hour in the cluster file)");

  const auto solve_start = SteadyClock::now();
  result.genetic = sched::genetic(problem, request.objective, request.ga);
  result.solve_s = seconds_since(solve_start);
  auto row = [&](const std::string& solver, const sched::Timeline& timeline) {
    result.solvers.push_back({solver, timeline.makespan_s, timeline.mean_jct_s, timeline.cost_usd});
  };
  row("genetic", result.genetic.timeline);
  if (request.exact) row("exact", sched::exact(problem, request.objective).timeline);
  row("lpt", sched::play(problem, sched::greedy_lpt(problem)));
  row("fifo", sched::play(problem, sched::fifo_first_fit(problem)));
  row("agnostic", sched::play(problem, sched::heterogeneity_agnostic(problem)));
  row("random", sched::play(problem, sched::random_plan(problem, request.ga.seed)));
  for (const auto& [job, why] : result.unplaceable)
    result.notes.push_back("job " + quote(result.jobs[job].name) + " is not scheduled: it " + why);
  int64_t missed = 0;
  for (size_t index = 0; index < result.placed_jobs.size(); ++index) {
    const JobSpec& job = result.jobs[result.placed_jobs[index]];
    if (job.deadline_s && result.genetic.timeline.end_s[index] > *job.deadline_s) ++missed;
  }
  if (missed > 0)
    result.notes.push_back(std::to_string(missed) +
                           " job(s) end after their deadline (deadlines are reported, not "
                           "optimised)");
  return result;
}

// ---------------------------------------------------------------------------------------------
// JSON

nlohmann::ordered_json to_json(const Schedule& schedule) {
  using nlohmann::ordered_json;
  auto or_null = [](const auto& value) -> ordered_json {
    if (value) return *value;
    return nullptr;
  };
  ordered_json out;
  out["objective"] = sched::name(schedule.objective);
  out["jobs"] = schedule.jobs.size();
  out["gpus"] = schedule.gpus.size();
  ordered_json types = ordered_json::array();
  for (const GpuType& type : schedule.types)
    types.push_back({{"gpu", type.gpu},
                     {"name", type.gpu_name},
                     {"count", type.count},
                     {"memory_bytes", type.memory_bytes},
                     {"price_per_hour", type.price_per_hour},
                     {"price_source", type.price_source}});
  out["gpu_types"] = types;
  const sched::Timeline& timeline = schedule.genetic.timeline;
  out["makespan_s"] = timeline.makespan_s;
  out["mean_jct_s"] = timeline.mean_jct_s;
  out["cost_usd"] = timeline.cost_usd;
  ordered_json assignments = ordered_json::array();
  for (size_t index = 0; index < schedule.placed_jobs.size(); ++index) {
    const int64_t job = schedule.placed_jobs[index];
    const JobSpec& spec = schedule.jobs[job];
    const ClusterGpu& gpu = schedule.gpus[schedule.genetic.plan.gpu[index]];
    const JobOnType& on = schedule.forecasts[job][gpu.type];
    ordered_json row{{"job", spec.name},
                     {"model", spec.model},
                     {"batch", spec.spec.batch},
                     {"input", schedule.inputs[job]},
                     {"precision", name(spec.precision)},
                     {"iterations", spec.iterations},
                     {"gpu", gpu.gang_label(spec.gpus)},
                     {"gpu_type", schedule.types[gpu.type].gpu},
                     {"gpus", spec.gpus},
                     {"parallel", spec.gpus > 1 ? ordered_json(plan_label(spec)) : ordered_json(nullptr)},
                     {"arrival_s", spec.arrival_s},
                     {"start_s", timeline.start_s[index]},
                     {"end_s", timeline.end_s[index]},
                     {"duration_s", or_null(on.duration_s)},
                     {"time_ms", or_null(on.time_ms)},
                     {"peak_bytes", or_null(on.required_bytes)},
                     {"gpu_memory_bytes", schedule.types[gpu.type].memory_bytes},
                     {"basis", on.basis},
                     {"deadline_s", or_null(spec.deadline_s)}};
    if (spec.deadline_s) row["deadline_met"] = timeline.end_s[index] <= *spec.deadline_s;
    assignments.push_back(row);
  }
  out["assignments"] = assignments;
  ordered_json unplaceable = ordered_json::array();
  for (const auto& [job, why] : schedule.unplaceable)
    unplaceable.push_back({{"job", schedule.jobs[job].name}, {"reason", why}});
  out["unplaceable"] = unplaceable;
  ordered_json solvers = ordered_json::array();
  for (const SolverRow& row : schedule.solvers)
    solvers.push_back({{"solver", row.solver},
                       {"makespan_s", row.makespan_s},
                       {"mean_jct_s", row.mean_jct_s},
                       {"cost_usd", row.cost_usd}});
  out["solvers"] = solvers;
  ordered_json forecasts = ordered_json::array();
  for (size_t job = 0; job < schedule.jobs.size(); ++job)
    for (size_t type = 0; type < schedule.types.size(); ++type) {
      const JobOnType& on = schedule.forecasts[job][type];
      forecasts.push_back({{"job", schedule.jobs[job].name},
                           {"gpu_type", schedule.types[type].gpu},
                           {"fits", on.fits},
                           {"time_ms", or_null(on.time_ms)},
                           {"duration_s", or_null(on.duration_s)},
                           {"peak_bytes", or_null(on.required_bytes)},
                           {"basis", on.basis},
                           {"error", on.error.empty() ? ordered_json(nullptr) : ordered_json(on.error)}});
    }
  out["forecasts"] = forecasts;
  out["genetic"] = {{"generations", schedule.genetic.best_by_generation.size()},
                    {"evaluations", schedule.genetic.evaluations},
                    {"best_by_generation", schedule.genetic.best_by_generation}};
  out["forecast_cache"] = {{"hits", schedule.cache_hits}, {"misses", schedule.cache_misses}};
  out["notes"] = schedule.notes;
  return out;
}

}  // namespace dnncast::decide
