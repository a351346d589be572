// Generated instances, the forecasts' error distribution, and the study of the scheduler
// (schedule_study.h).
#include "decide/schedule_study.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/clock.h"
#include "core/csv.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/stats.h"
#include "gpu/kernel_model.h"

namespace dnncast::decide {

namespace {

struct PoolModel {
  const char* model;
  bool transformer;
};
// Classic training jobs: CNNs at 224 px and transformer encoders / decoders at their default length.
constexpr PoolModel kModels[] = {{"resnet18", false},     {"resnet50", false},    {"vgg16", false},
                                 {"mobilenet_v2", false}, {"densenet121", false}, {"inception_v3", false},
                                 {"vit_b_16", false},     {"bert_base", true},    {"gpt2_small", true}};
// Data-centre and workstation GPUs with memory and fp16 peaks catalogued; some calibrated on public
// measurements, some (t4, l4, a10g) forecast from their specs alone.
constexpr const char* kGpus[] = {"t4", "l4", "a10g", "v100-16gb", "rtx-a6000", "a100-40gb", "a100-80gb", "h100-sxm"};

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

double sd_of(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double mean = mean_of(values);
  double sum = 0;
  for (double v : values) sum += (v - mean) * (v - mean);
  return std::sqrt(sum / static_cast<double>(values.size() - 1));
}

double max_of(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// The problem `schedule` solved with its durations replaced: per job and type, `duration(job, type)`.
template <typename Duration>
sched::Problem with_durations(const Schedule& schedule, Duration duration) {
  sched::Problem problem = schedule.problem;
  for (int64_t index = 0; index < problem.jobs; ++index)
    for (int64_t type = 0; type < problem.types; ++type)
      if (problem.fits(index, type)) problem.duration_s[index * problem.types + type] = duration(index, type);
  return problem;
}

Replay replay(const sched::Problem& truth, const sched::Plan& plan) {
  Replay result;
  result.timeline = sched::play(truth, plan);
  for (int64_t job = 0; job < truth.jobs; ++job)
    result.oom_events += truth.fits(job, truth.gpu_type[plan.gpu[job]]) ? 0 : 1;
  return result;
}

// A lower bound on the makespan: no job ends before its arrival plus its shortest time, and the GPUs
// together are busy at least every job's shortest time.
double makespan_bound(const sched::Problem& problem) {
  double longest = 0, total = 0;
  for (int64_t job = 0; job < problem.jobs; ++job) {
    double shortest = sched::kNoFit;
    for (int64_t type = 0; type < problem.types; ++type) shortest = std::min(shortest, problem.duration(job, type));
    longest = std::max(longest, problem.arrival_s[job] + shortest);
    total += shortest;
  }
  return std::max(longest, total / static_cast<double>(problem.gpus()));
}

// The measured replay (StudyReport): jobs of the classes lambda_tf measured on every GPU of a cluster.
void measured_replay(const ForecastErrors& errors, const StudyOptions& options, SplitMix64& rng, StudyReport& report) {
  // Per (model, precision class) and GPU: ms per sample measured, held out by GPU, by model, roofline
  // (the mean of the table's rows for it). A class with a broken run on some GPU is left out whole.
  using PerSample = std::array<double, 4>;
  std::map<std::string, std::map<std::string, std::pair<PerSample, int>>> sums;
  std::set<std::string> broken;
  for (const ResidualRow& row : errors.rows) {
    if (row.table != "lambda_tf") continue;
    const std::string key = row.model + (row.precision == "fp16" ? " amp" : " fp32/tf32");
    if (row.broken()) {
      broken.insert(key);
      report.broken_rows.push_back(row.gpu + " " + row.model + " " + row.precision + " batch " +
                                   std::to_string(row.batch));
    }
    const double batch = static_cast<double>(row.batch);
    auto& [sum, count] = sums[key][row.gpu];
    const PerSample values{row.measured_ms / batch, row.held_gpu_ms / batch, row.held_model_ms / batch,
                           row.roofline_ms / batch};
    for (size_t kind = 0; kind < sum.size(); ++kind) sum[kind] += values[kind];
    ++count;
  }
  std::map<std::string, std::map<std::string, PerSample>> classes;
  for (const auto& [key, gpus] : sums) {
    if (broken.count(key)) continue;
    report.measured_classes.push_back(key);
    for (const auto& [gpu, sum_count] : gpus) {
      PerSample mean = sum_count.first;
      for (double& value : mean) value /= sum_count.second;
      classes[key][gpu] = mean;
    }
  }
  std::map<std::string, size_t> coverage;
  for (const auto& [key, gpus] : classes)
    for (const auto& [gpu, times] : gpus) ++coverage[gpu];
  for (const auto& [gpu, count] : coverage)
    if (count == classes.size()) report.measured_gpus.push_back(gpu);
  if (report.measured_gpus.size() < 2) return;
  std::vector<const std::map<std::string, PerSample>*> class_list;
  for (const auto& [key, gpus] : classes) class_list.push_back(&gpus);

  for (int64_t index = 0; index < options.instances; ++index) {
    std::vector<std::string> pool = report.measured_gpus;
    const int64_t types = rng.int_between(2, std::min<int64_t>(4, static_cast<int64_t>(pool.size())));
    const int64_t gpus = rng.int_between(std::max(options.min_gpus, types), std::max(options.max_gpus, types));
    const int64_t jobs = rng.int_between(options.min_jobs, options.max_jobs);
    for (int64_t type = 0; type < types; ++type)
      std::swap(pool[type], pool[type + static_cast<int64_t>(rng.below(pool.size() - static_cast<size_t>(type)))]);
    std::array<sched::Problem, 4> problems;  // measured, held out by GPU, by model, roofline
    for (sched::Problem& problem : problems) {
      problem.jobs = jobs;
      problem.types = types;
      problem.price_per_hour.assign(static_cast<size_t>(types), 0);
      for (int64_t gpu = 0; gpu < gpus; ++gpu) problem.gpu_type.push_back(gpu < types ? gpu : 0);
    }
    for (int64_t gpu = types; gpu < gpus; ++gpu) {
      const int64_t type = static_cast<int64_t>(rng.below(static_cast<uint64_t>(types)));
      for (sched::Problem& problem : problems) problem.gpu_type[gpu] = type;
    }
    for (int64_t job = 0; job < jobs; ++job) {
      const auto& times = *class_list[rng.below(class_list.size())];
      const double samples = rng.log_uniform(2e5, 2e7);
      const double arrival = rng.unit() < 0.3 ? std::round(rng.unit() * 3600) : 0;
      for (size_t kind = 0; kind < problems.size(); ++kind) {
        for (int64_t type = 0; type < types; ++type)
          problems[kind].duration_s.push_back(samples * times.at(pool[type])[kind] / 1e3);
        problems[kind].arrival_s.push_back(arrival);
        problems[kind].weight.push_back(1);
      }
    }
    sched::GaOptions ga = options.ga;
    ga.seed = rng.seed_for_child();
    std::array<sched::Timeline, 4> realised;
    for (size_t kind = 0; kind < problems.size(); ++kind)
      realised[kind] = sched::play(problems[0], sched::genetic(problems[kind], sched::Objective::Makespan, ga).plan);
    report.measured_held_gpu.push_back(realised[1].makespan_s / realised[0].makespan_s);
    report.measured_held_model.push_back(realised[2].makespan_s / realised[0].makespan_s);
    report.measured_roofline.push_back(realised[3].makespan_s / realised[0].makespan_s);
    report.measured_held_gpu_jct.push_back(realised[1].mean_jct_s / realised[0].mean_jct_s);
    report.measured_held_model_jct.push_back(realised[2].mean_jct_s / realised[0].mean_jct_s);
    report.measured_roofline_jct.push_back(realised[3].mean_jct_s / realised[0].mean_jct_s);
  }
}

}  // namespace

bool ResidualRow::broken() const {
  return measured_ms > kBrokenFactor * std::max({held_gpu_ms, held_model_ms, roofline_ms});
}

const std::vector<double>& ForecastErrors::for_basis(const std::string& basis) const {
  return basis == "specs" ? specs : calibrated;
}

ForecastErrors load_forecast_errors(const std::string& path_given) {
  const std::string path =
      path_given.empty() ? hardware::default_catalogue_dir() + "/gpu_forecast_residuals.csv" : path_given;
  std::ifstream in(path);
  if (!in) throw InputError("forecast residuals " + quote(path) + ": cannot read the file");
  ForecastErrors errors;
  errors.source = path;
  std::vector<std::string> fields, header;
  int64_t line = 0;
  while (read_csv_record(in, fields, line)) {
    if (fields.empty() || fields[0].rfind("#", 0) == 0) continue;
    if (header.empty()) {
      header = fields;
      continue;
    }
    auto column = [&](const std::string& name) -> double {
      const auto found = std::find(header.begin(), header.end(), name);
      if (found == header.end()) throw InputError(path + ": no column " + quote(name));
      const size_t index = static_cast<size_t>(found - header.begin());
      if (index >= fields.size()) throw InputError(path + ": line " + std::to_string(line) + ": too few fields");
      char* end = nullptr;
      const double value = std::strtod(fields[index].c_str(), &end);
      if (end == fields[index].c_str() || *end != '\0' || !(value > 0) || !std::isfinite(value))
        throw InputError(path + ": line " + std::to_string(line) + ": " + name + " " + quote(fields[index]) +
                         " is not a positive number");
      return value;
    };
    ResidualRow row;
    auto text = [&](const std::string& name) -> std::string {
      const auto found = std::find(header.begin(), header.end(), name);
      if (found == header.end()) throw InputError(path + ": no column " + quote(name));
      const size_t index = static_cast<size_t>(found - header.begin());
      if (index >= fields.size()) throw InputError(path + ": line " + std::to_string(line) + ": too few fields");
      return fields[index];
    };
    row.table = text("table");
    row.gpu = text("gpu");
    // NeuSight's test GPUs' rows are no evidence of the forecast's error to draw from (they are scored once, when
    // asked: `calibrate-gpus --score-test-gpus`; the shipped file leaves their forecasts empty).
    if (gpu::is_held_out_test_gpu(row.gpu)) continue;
    row.model = text("model");
    row.precision = text("precision");
    row.batch = static_cast<int64_t>(column("batch"));
    row.measured_ms = column("measured_ms");
    row.held_gpu_ms = column("held_gpu_ms");
    row.held_model_ms = column("held_model_ms");
    row.roofline_ms = column("roofline_ms");
    if (!row.broken()) {
      errors.calibrated.push_back(std::log(row.measured_ms / row.held_model_ms));
      errors.specs.push_back(std::log(row.measured_ms / row.held_gpu_ms));
    }
    errors.rows.push_back(row);
  }
  if (errors.calibrated.empty()) throw InputError(path + ": no rows");
  return errors;
}

ScheduleRequest generate_instance(uint64_t seed, int64_t jobs, int64_t gpus, int64_t types) {
  DNNCAST_ASSERT(jobs >= 1 && types >= 1 && gpus >= types && types <= static_cast<int64_t>(std::size(kGpus)));
  SplitMix64 rng(seed);
  ScheduleRequest request;
  std::vector<std::string> pool(std::begin(kGpus), std::end(kGpus));
  for (int64_t type = 0; type < types; ++type) {
    const size_t pick = static_cast<size_t>(type) + rng.below(pool.size() - static_cast<size_t>(type));
    std::swap(pool[type], pool[pick]);
  }
  // One GPU of each type, the rest drawn among the types; one node per type.
  std::vector<int64_t> counts(static_cast<size_t>(types), 1);
  for (int64_t gpu = types; gpu < gpus; ++gpu) ++counts[rng.below(static_cast<uint64_t>(types))];
  for (int64_t type = 0; type < types; ++type)
    request.nodes.push_back({"node" + std::to_string(type + 1), pool[type], counts[type], std::nullopt});
  for (int64_t job = 0; job < jobs; ++job) {
    const PoolModel& model = kModels[rng.below(std::size(kModels))];
    JobSpec spec;
    spec.name = "job" + std::to_string(job + 1);
    spec.model = model.model;
    static const int64_t kCnnBatches[] = {16, 32, 64, 128, 256}, kTransformerBatches[] = {4, 8, 16, 32};
    spec.spec.batch = model.transformer ? kTransformerBatches[rng.below(4)] : kCnnBatches[rng.below(5)];
    if (!model.transformer) spec.spec.input = {3, 224, 224};
    spec.precision = rng.below(2) == 0 ? gpu::GpuPrecision::Fp32 : gpu::GpuPrecision::Fp16;
    spec.memory_precision = spec.precision == gpu::GpuPrecision::Fp16 ? Precision::Fp16 : Precision::Fp32;
    spec.iterations = static_cast<int64_t>(std::round(rng.log_uniform(200, 20000)));
    if (rng.unit() < 0.3) spec.arrival_s = std::round(rng.unit() * 3600);
    request.jobs.push_back(spec);
  }
  return request;
}

StudyReport run_study(const StudyOptions& options) {
  StudyReport report;
  const ForecastErrors errors = load_forecast_errors(options.residuals_file);
  report.residuals_source = errors.source;
  report.calibrated_errors = static_cast<int64_t>(errors.calibrated.size());
  report.specs_errors = static_cast<int64_t>(errors.specs.size());
  const hardware::Catalogue& catalogue = hardware::shipped_catalogue();
  ForecastCache cache(catalogue, gpu::load_gpu_calibration());
  SplitMix64 rng(options.seed);

  // Optimality on small instances, makespan.
  for (int64_t index = 0; index < options.small_instances; ++index) {
    ScheduleRequest request = generate_instance(rng.seed_for_child(), options.small_jobs, options.small_gpus,
                                                2 + static_cast<int64_t>(rng.below(2)));
    request.ga = options.ga;
    request.ga.generations = options.small_generations;
    request.ga.seed = rng.seed_for_child();
    const Schedule schedule = decide::schedule(request, cache);
    const double optimum = sched::exact(schedule.problem, sched::Objective::Makespan).value;
    report.ga_over_exact.push_back(schedule.genetic.timeline.makespan_s / optimum);
    report.lpt_over_exact.push_back(sched::play(schedule.problem, sched::greedy_lpt(schedule.problem)).makespan_s /
                                    optimum);
  }

  // Generated instances: baselines, and the replay.
  report.solvers = {"lpt", "fifo", "agnostic", "random"};
  report.over_ga.assign(report.solvers.size(), {});
  for (int64_t index = 0; index < options.instances; ++index) {
    const int64_t jobs = rng.int_between(options.min_jobs, options.max_jobs);
    const int64_t gpus = rng.int_between(options.min_gpus, options.max_gpus);
    const int64_t types = rng.int_between(2, 4);
    ScheduleRequest request = generate_instance(rng.seed_for_child(), jobs, gpus, types);
    request.ga = options.ga;
    request.ga.seed = rng.seed_for_child();
    const Schedule schedule = decide::schedule(request, cache);
    const sched::Problem& problem = schedule.problem;
    report.instance_jobs.push_back(problem.jobs);
    report.instance_gpus.push_back(problem.gpus());
    report.instance_types.push_back(problem.types);
    report.ga_seconds.push_back(schedule.solve_s);
    const double ga = schedule.genetic.timeline.makespan_s;
    // The baselines' makespans as schedule() played them (LPT's too): none is played again here.
    const double bound = makespan_bound(problem);
    report.ga_over_bound.push_back(ga / bound);
    for (const SolverRow& row : schedule.solvers) {
      const auto found = std::find(report.solvers.begin(), report.solvers.end(), row.solver);
      if (found != report.solvers.end()) report.over_ga[found - report.solvers.begin()].push_back(row.makespan_s / ga);
      if (row.solver == "lpt") report.lpt_over_bound.push_back(row.makespan_s / bound);
    }
    for (int64_t job = 0; job < problem.jobs; ++job)
      report.misplaced += problem.fits(job, problem.gpu_type[schedule.genetic.plan.gpu[job]]) ? 0 : 1;

    // The roofline's plan, made once; the oracle's per draw.
    auto job_of = [&](int64_t index_in_problem) { return schedule.placed_jobs[index_in_problem]; };
    const sched::Problem roofline = with_durations(schedule, [&](int64_t job, int64_t type) {
      const JobOnType& on = schedule.forecasts[job_of(job)][type];
      return *on.roofline_ms / 1e3 * static_cast<double>(schedule.jobs[job_of(job)].iterations);
    });
    sched::GaOptions ga_options = request.ga;
    const sched::Plan roofline_plan = sched::genetic(roofline, sched::Objective::Makespan, ga_options).plan;
    for (int64_t draw = 0; draw < options.draws; ++draw) {
      std::map<std::string, double> ratio;  // per distinct (configuration, type)
      const sched::Problem truth = with_durations(schedule, [&](int64_t job, int64_t type) {
        const JobSpec& spec = schedule.jobs[job_of(job)];
        const JobOnType& on = schedule.forecasts[job_of(job)][type];
        const std::string key = spec.model + "|" + std::to_string(spec.spec.batch) + "|" + name(spec.precision) + "|" +
                                std::to_string(type);
        auto found = ratio.find(key);
        if (found == ratio.end()) {
          const std::vector<double>& pool = errors.for_basis(on.basis);
          found = ratio.emplace(key, std::exp(pool[rng.below(pool.size())])).first;
        }
        return *on.duration_s * found->second;
      });
      ga_options.seed = rng.seed_for_child();
      const sched::Timeline oracle = sched::genetic(truth, sched::Objective::Makespan, ga_options).timeline;
      const Replay forecast = replay(truth, schedule.genetic.plan), flops = replay(truth, roofline_plan);
      report.forecast_makespan.push_back(forecast.timeline.makespan_s / oracle.makespan_s);
      report.roofline_makespan.push_back(flops.timeline.makespan_s / oracle.makespan_s);
      report.forecast_jct.push_back(forecast.timeline.mean_jct_s / oracle.mean_jct_s);
      report.roofline_jct.push_back(flops.timeline.mean_jct_s / oracle.mean_jct_s);
      report.forecast_cost.push_back(forecast.timeline.cost_usd / oracle.cost_usd);
      report.roofline_cost.push_back(flops.timeline.cost_usd / oracle.cost_usd);
      report.oom_events += forecast.oom_events + flops.oom_events;
    }
  }
  measured_replay(errors, options, rng, report);
  return report;
}

std::string study_markdown(const StudyReport& report, const StudyOptions& options, const std::string& command) {
  std::ostringstream out;
  auto count_within = [](const std::vector<double>& ratios, double bound) {
    return std::count_if(ratios.begin(), ratios.end(), [&](double r) { return r <= bound + 1e-12; });
  };
  out << "Command: `" << command << "`\n\n";
  out << "**Optimality** (" << report.ga_over_exact.size() << " instances of " << options.small_jobs << " jobs on "
      << options.small_gpus << " GPUs of 2-3 types; makespan over the exact optimum):\n\n";
  out << "| solver | mean | max | within 1.05x |\n| --- | ---: | ---: | ---: |\n";
  out << "| genetic, " << options.small_generations << " generations | " << fixed(mean_of(report.ga_over_exact), 3)
      << " | " << fixed(max_of(report.ga_over_exact), 3) << " | " << count_within(report.ga_over_exact, 1.05) << " of "
      << report.ga_over_exact.size() << " |\n";
  out << "| greedy LPT | " << fixed(mean_of(report.lpt_over_exact), 3) << " | "
      << fixed(max_of(report.lpt_over_exact), 3) << " | " << count_within(report.lpt_over_exact, 1.05) << " of "
      << report.lpt_over_exact.size() << " |\n\n";
  const auto [min_jobs, max_jobs] = std::minmax_element(report.instance_jobs.begin(), report.instance_jobs.end());
  const auto [min_gpus, max_gpus] = std::minmax_element(report.instance_gpus.begin(), report.instance_gpus.end());
  out << "**Baselines** (" << report.instance_jobs.size() << " generated instances, " << *min_jobs << "-" << *max_jobs
      << " placeable jobs on " << *min_gpus << "-" << *max_gpus << " GPUs of 2-4 types; the genetic algorithm at "
      << options.ga.generations << " generations x " << options.ga.population
      << "; makespan over the GA's, planned with the forecasts):\n\n";
  out << "| solver | mean | min | max | GA better on |\n| --- | ---: | ---: | ---: | ---: |\n";
  for (size_t solver = 0; solver < report.solvers.size(); ++solver) {
    const std::vector<double>& ratios = report.over_ga[solver];
    const auto better = std::count_if(ratios.begin(), ratios.end(), [](double r) { return r > 1 + 1e-9; });
    out << "| " << report.solvers[solver] << " | " << fixed(mean_of(ratios), 3) << " | "
        << fixed(*std::min_element(ratios.begin(), ratios.end()), 3) << " | " << fixed(max_of(ratios), 3) << " | "
        << better << " of " << ratios.size() << " |\n";
  }
  out << "| (lower bound) over it: GA " << fixed(mean_of(report.ga_over_bound), 3) << " mean, "
      << fixed(max_of(report.ga_over_bound), 3) << " max; LPT " << fixed(mean_of(report.lpt_over_bound), 3) << " mean, "
      << fixed(max_of(report.lpt_over_bound), 3) << " max | | | | |\n";
  out << "\nGA placements where the job's forecast peak does not fit: " << report.misplaced
      << ". GA time per instance: median " << fixed(quantile(report.ga_seconds, 0.5), 3) << " s, max "
      << fixed(max_of(report.ga_seconds), 3) << " s.\n\n";
  out << "**Replay** (each instance x " << options.draws
      << " draws of the realised times from the forecasts' held-out error, " << report.calibrated_errors
      << " public rows, " << report.residuals_source.substr(report.residuals_source.rfind('/') + 1)
      << "; realised over the oracle's, which planned with the realised times; mean +- sd over "
      << report.forecast_makespan.size() << "):\n\n";
  out << "| planned with | makespan / oracle | median | mean JCT / oracle | median | cost / oracle |\n"
         "| --- | ---: | ---: | ---: | ---: | ---: |\n";
  auto line = [&](const char* label, const std::vector<double>& makespan, const std::vector<double>& jct,
                  const std::vector<double>* cost) {
    out << "| " << label << " | " << fixed(mean_of(makespan), 3) << " +- " << fixed(sd_of(makespan), 3) << " | "
        << fixed(quantile(makespan, 0.5), 3) << " | " << fixed(mean_of(jct), 3) << " +- " << fixed(sd_of(jct), 3)
        << " | " << fixed(quantile(jct, 0.5), 3);
    if (cost) out << " | " << fixed(mean_of(*cost), 3) << " +- " << fixed(sd_of(*cost), 3);
    out << " |\n";
  };
  line("dnncast's forecasts", report.forecast_makespan, report.forecast_jct, &report.forecast_cost);
  line("roofline (FLOPs and bytes over the peaks)", report.roofline_makespan, report.roofline_jct,
       &report.roofline_cost);
  int64_t closer = 0, farther = 0;
  for (size_t index = 0; index < report.forecast_makespan.size(); ++index) {
    closer += report.forecast_makespan[index] < report.roofline_makespan[index] * (1 - 1e-9);
    farther += report.forecast_makespan[index] > report.roofline_makespan[index] * (1 + 1e-9);
  }
  out << "\nThe forecasts' plan realised a shorter makespan than the roofline's in " << closer << " of "
      << report.forecast_makespan.size() << " replays, a longer one in " << farther
      << "; out-of-memory events in all replays: " << report.oom_events << ".\n";
  if (!report.measured_held_gpu.empty()) {
    std::string gpus;
    for (const std::string& gpu : report.measured_gpus) gpus += (gpus.empty() ? "" : ", ") + gpu;
    out << "\n**Measured replay** (" << report.measured_held_gpu.size()
        << " instances whose realised times are lambda_tf's own measurements; jobs of 200k-20M samples of "
        << report.measured_classes.size() << " classes (";
    for (size_t index = 0; index < report.measured_classes.size(); ++index)
      out << (index ? ", " : "") << report.measured_classes[index];
    out << "), each GPU at the batch the table ran; 2-4 types of " << gpus
        << "; realised over the oracle's, mean +- sd, and median. Left out as broken runs (more than " << kBrokenFactor
        << "x every estimate), with their class:";
    for (const std::string& row : report.broken_rows) out << " " << row << ";";
    out << "):\n\n";
    out << "| planned with | makespan / oracle | median | mean JCT / oracle | median |\n"
           "| --- | ---: | ---: | ---: | ---: |\n";
    line("forecasts, each GPU held out of the calibration", report.measured_held_gpu, report.measured_held_gpu_jct,
         nullptr);
    line("forecasts, each model held out of the calibration", report.measured_held_model,
         report.measured_held_model_jct, nullptr);
    line("roofline (FLOPs and bytes over the peaks)", report.measured_roofline, report.measured_roofline_jct, nullptr);
  }
  return out.str();
}

}  // namespace dnncast::decide
