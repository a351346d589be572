// The scheduling problem's solvers (schedule.h): playing a plan, the genetic algorithm, the baselines
// and the exact solver.
#include "decide/schedule.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <set>

#include "core/error.h"
#include "core/rng.h"

namespace dnncast::decide::sched {

namespace {

constexpr std::array<const char*, 3> kObjectiveNames{"makespan", "mean-jct", "cost"};

// Per job, the first GPUs of the gangs it may run on (can_start), in cluster order: for a one-GPU job, the
// GPUs it fits.
std::vector<std::vector<int64_t>> placements(const Problem& problem) {
  std::vector<std::vector<int64_t>> places(static_cast<size_t>(problem.jobs));
  for (int64_t job = 0; job < problem.jobs; ++job)
    for (int64_t gpu = 0; gpu < problem.gpus(); ++gpu)
      if (problem.can_start(job, gpu)) places[job].push_back(gpu);
  return places;
}

// The jobs in starting order: ascending (key, index).
std::vector<int64_t> key_order(const Problem& problem, const Plan& plan) {
  std::vector<int64_t> order(static_cast<size_t>(problem.jobs));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return plan.key[a] != plan.key[b] ? plan.key[a] < plan.key[b] : a < b; });
  return order;
}

// When a job may start on the gang from `first`: its arrival, or the latest free time of the gang's GPUs.
double gang_start(const std::vector<double>& free_s, int64_t first, int64_t gpus, double arrival_s) {
  double start = arrival_s;
  for (int64_t gpu = first; gpu < first + gpus; ++gpu) start = std::max(free_s[gpu], start);
  return start;
}

// Whether the gangs of two jobs share a GPU.
bool overlap(const Problem& problem, const Plan& plan, int64_t a, int64_t b) {
  return plan.gpu[a] < plan.gpu[b] + problem.needs(b) && plan.gpu[b] < plan.gpu[a] + problem.needs(a);
}

// Greedy list scheduling: jobs in `order`, each appended to the place (a fitting GPU, or a gang's block)
// where it ends first (or, with by_start, where it starts first), ties to the lower GPU index, timed with
// `duration_on_type`; keys are the placement order, so play() reproduces the greedy's times.
template <typename Duration>
Plan list_schedule(const Problem& problem, const std::vector<int64_t>& order, Duration duration_on_type,
                   bool by_start = false) {
  Plan plan{std::vector<int64_t>(problem.jobs, -1), std::vector<double>(problem.jobs, 0)};
  const auto places = placements(problem);
  std::vector<double> free_s(static_cast<size_t>(problem.gpus()), 0);
  for (size_t position = 0; position < order.size(); ++position) {
    const int64_t job = order[position], gang = problem.needs(job);
    int64_t best_gpu = -1;
    double best = kNoFit, best_end = kNoFit;
    for (int64_t first : places[job]) {
      const int64_t type = problem.gpu_type[first];
      const double start = gang_start(free_s, first, gang, problem.arrival_s[job]);
      const double end = start + duration_on_type(job, type);
      if ((by_start ? start : end) < best) best = by_start ? start : end, best_end = end, best_gpu = first;
    }
    DNNCAST_ASSERT(best_gpu >= 0);
    plan.gpu[job] = best_gpu;
    plan.key[job] = static_cast<double>(position);
    std::fill(free_s.begin() + best_gpu, free_s.begin() + best_gpu + gang, best_end);
  }
  return plan;
}

double min_duration(const Problem& problem, int64_t job) {
  double best = kNoFit;
  for (int64_t type = 0; type < problem.types; ++type) best = std::min(best, problem.duration(job, type));
  return best;
}

}  // namespace

Objective parse_objective(const std::string& text, const std::string& what) {
  for (size_t index = 0; index < kObjectiveNames.size(); ++index)
    if (text == kObjectiveNames[index]) return static_cast<Objective>(index);
  throw InputError(what + " " + quote(text) + " is not an objective (makespan, mean-jct, cost)");
}

const std::string& name(Objective objective) {
  static const std::array<std::string, 3> names{kObjectiveNames[0], kObjectiveNames[1], kObjectiveNames[2]};
  return names[static_cast<size_t>(objective)];
}

bool Problem::can_start(int64_t job, int64_t first_gpu) const {
  const int64_t gang = needs(job);
  if (first_gpu < 0 || first_gpu + gang > gpus() || !fits(job, gpu_type[first_gpu])) return false;
  if (gang == 1) return true;
  const int64_t own = node_of(first_gpu);
  int64_t node_first = first_gpu;
  while (node_first > 0 && node_of(node_first - 1) == own) --node_first;
  if ((first_gpu - node_first) % gang != 0) return false;
  for (int64_t gpu = first_gpu + 1; gpu < first_gpu + gang; ++gpu)
    if (node_of(gpu) != own || gpu_type[gpu] != gpu_type[first_gpu]) return false;
  return true;
}

void Problem::check() const {
  DNNCAST_ASSERT(jobs >= 0 && types >= 1);
  DNNCAST_ASSERT(static_cast<int64_t>(duration_s.size()) == jobs * types);
  DNNCAST_ASSERT(static_cast<int64_t>(arrival_s.size()) == jobs && static_cast<int64_t>(weight.size()) == jobs);
  DNNCAST_ASSERT(static_cast<int64_t>(price_per_hour.size()) == types);
  DNNCAST_ASSERT(gpus_needed.empty() || static_cast<int64_t>(gpus_needed.size()) == jobs);
  DNNCAST_ASSERT(node.empty() || static_cast<int64_t>(node.size()) == gpus());
  for (int64_t type : gpu_type) DNNCAST_ASSERT(type >= 0 && type < types);
  // A node's GPUs are consecutive: a node index, once left, does not come back.
  std::set<int64_t> left;
  for (int64_t gpu = 1; gpu < static_cast<int64_t>(node.size()); ++gpu)
    if (node[gpu] != node[gpu - 1]) {
      left.insert(node[gpu - 1]);
      DNNCAST_ASSERT(left.count(node[gpu]) == 0);
    }
  for (int64_t job = 0; job < jobs; ++job) {
    DNNCAST_ASSERT(arrival_s[job] >= 0 && weight[job] > 0);
    DNNCAST_ASSERT(needs(job) >= 1 && needs(job) <= std::max<int64_t>(gpus(), 1));
    for (int64_t type = 0; type < types; ++type) DNNCAST_ASSERT(duration(job, type) >= 0);
    bool placeable = false;
    for (int64_t gpu = 0; gpu < gpus() && !placeable; ++gpu) placeable = can_start(job, gpu);
    DNNCAST_ASSERT(placeable);
  }
}

double Timeline::value(Objective objective) const {
  switch (objective) {
    case Objective::Makespan:
      return makespan_s;
    case Objective::MeanJct:
      return mean_jct_s;
    case Objective::Cost:
      return cost_usd;
  }
  return makespan_s;
}

Timeline play(const Problem& problem, const Plan& plan) { return play(problem, plan, problem.duration_s); }

Timeline play(const Problem& problem, const Plan& plan, const std::vector<double>& duration_s) {
  DNNCAST_ASSERT(static_cast<int64_t>(plan.gpu.size()) == problem.jobs &&
                 static_cast<int64_t>(plan.key.size()) == problem.jobs);
  DNNCAST_ASSERT(duration_s.size() == problem.duration_s.size());
  Timeline timeline;
  timeline.start_s.assign(problem.jobs, 0);
  timeline.end_s.assign(problem.jobs, 0);
  // The jobs start in key order, each on all the GPUs of its gang at once.
  const std::vector<int64_t> order = key_order(problem, plan);
  std::vector<double> free_s(static_cast<size_t>(problem.gpus()), 0);
  for (int64_t job : order) {
    const int64_t first = plan.gpu[job], gang = problem.needs(job);
    DNNCAST_ASSERT(first >= 0 && first + gang <= problem.gpus());
    const int64_t type = problem.gpu_type[first];
    for (int64_t gpu = first + 1; gpu < first + gang; ++gpu)
      DNNCAST_ASSERT(problem.gpu_type[gpu] == type && problem.node_of(gpu) == problem.node_of(first));
    const double duration = duration_s[job * problem.types + type];
    DNNCAST_ASSERT(duration < kNoFit);
    timeline.start_s[job] = gang_start(free_s, first, gang, problem.arrival_s[job]);
    timeline.end_s[job] = timeline.start_s[job] + duration;
    std::fill(free_s.begin() + first, free_s.begin() + first + gang, timeline.end_s[job]);
  }
  // The sums GPU by GPU (of each job's first GPU), in key order on each: the order one-GPU schedules have
  // always been summed in, so that their totals stay the same to the last bit.
  std::vector<std::vector<int64_t>> by_gpu(static_cast<size_t>(problem.gpus()));
  for (int64_t job : order) by_gpu[plan.gpu[job]].push_back(job);
  double weighted_jct = 0, weights = 0;
  for (const std::vector<int64_t>& queue : by_gpu)
    for (int64_t job : queue) {
      const int64_t type = problem.gpu_type[plan.gpu[job]];
      const double duration = duration_s[job * problem.types + type], end = timeline.end_s[job];
      timeline.makespan_s = std::max(timeline.makespan_s, end);
      weighted_jct += problem.weight[job] * (end - problem.arrival_s[job]);
      weights += problem.weight[job];
      timeline.cost_usd += duration / 3600 * problem.price_per_hour[type] * static_cast<double>(problem.needs(job));
    }
  timeline.mean_jct_s = weights > 0 ? weighted_jct / weights : 0;
  return timeline;
}

Score score(const Timeline& timeline, Objective objective) {
  switch (objective) {
    case Objective::Makespan:
      return {timeline.makespan_s, timeline.mean_jct_s};
    case Objective::MeanJct:
      return {timeline.mean_jct_s, timeline.makespan_s};
    case Objective::Cost:
      return {timeline.cost_usd, timeline.makespan_s};
  }
  return {timeline.makespan_s, timeline.mean_jct_s};
}

// ---------------------------------------------------------------------------------------------
// Baselines

Plan fifo_first_fit(const Problem& problem) {
  std::vector<int64_t> order(static_cast<size_t>(problem.jobs));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return problem.arrival_s[a] < problem.arrival_s[b]; });
  // The GPU that frees first among those the job fits: list scheduling by start, not by end.
  return list_schedule(
      problem, order, [&](int64_t job, int64_t type) { return problem.duration(job, type); }, true);
}

Plan greedy_lpt(const Problem& problem) {
  std::vector<int64_t> order(static_cast<size_t>(problem.jobs));
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> longest(static_cast<size_t>(problem.jobs));
  for (int64_t job = 0; job < problem.jobs; ++job) longest[job] = min_duration(problem, job);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return longest[a] > longest[b]; });
  return list_schedule(problem, order, [&](int64_t job, int64_t type) { return problem.duration(job, type); });
}

Plan heterogeneity_agnostic(const Problem& problem) {
  std::vector<double> mean_s(static_cast<size_t>(problem.jobs), 0);
  for (int64_t job = 0; job < problem.jobs; ++job) {
    int64_t count = 0;
    for (int64_t type = 0; type < problem.types; ++type)
      if (problem.fits(job, type)) mean_s[job] += problem.duration(job, type), ++count;
    mean_s[job] /= static_cast<double>(std::max<int64_t>(count, 1));
  }
  std::vector<int64_t> order(static_cast<size_t>(problem.jobs));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return mean_s[a] > mean_s[b]; });
  return list_schedule(problem, order, [&](int64_t job, int64_t) { return mean_s[job]; });
}

Plan random_plan(const Problem& problem, uint64_t seed) {
  SplitMix64 rng(seed);
  const auto places = placements(problem);
  Plan plan{std::vector<int64_t>(problem.jobs), std::vector<double>(problem.jobs)};
  for (int64_t job = 0; job < problem.jobs; ++job) {
    plan.gpu[job] = places[job][rng.below(places[job].size())];
    plan.key[job] = rng.unit();
  }
  return plan;
}

// ---------------------------------------------------------------------------------------------
// The genetic algorithm

namespace {

struct Individual {
  Plan plan;
  Score fit;
};

class Genetic {
 public:
  Genetic(const Problem& problem, Objective objective, const GaOptions& options)
      : problem_(problem), objective_(objective), options_(options), rng_(options.seed), places_(placements(problem)) {}

  GaResult run() {
    std::vector<Individual> population;
    if (options_.seed_with_heuristics) {
      for (Plan plan : {greedy_lpt(problem_), fifo_first_fit(problem_)}) population.push_back(evaluate(plan));
    }
    while (static_cast<int64_t>(population.size()) < options_.population)
      population.push_back(evaluate(random_plan(problem_, rng_.seed_for_child())));
    sort(population);
    GaResult result;
    for (int64_t generation = 0; generation < options_.generations; ++generation) {
      std::vector<Individual> next(population.begin(),
                                   population.begin() + std::min<int64_t>(options_.elite, population.size()));
      while (static_cast<int64_t>(next.size()) < options_.population) {
        const Individual& mother = select(population);
        Plan child = mother.plan;
        if (rng_.unit() < options_.crossover_rate) child = crossover(mother.plan, select(population).plan);
        if (rng_.unit() < options_.mutation_rate) mutate(child);
        next.push_back(evaluate(child));
      }
      sort(next);
      // A short descent from the best: moves off the job that sets the objective.
      if (generation % 10 == 9 || generation + 1 == options_.generations) next.front() = descend(next.front());
      population = std::move(next);
      result.best_by_generation.push_back(population.front().fit.first);
    }
    result.plan = population.front().plan;
    result.timeline = play(problem_, result.plan);
    result.evaluations = evaluations_;
    return result;
  }

 private:
  Individual evaluate(const Plan& plan) {
    ++evaluations_;
    return {plan, score(play(problem_, plan), objective_)};
  }

  static void sort(std::vector<Individual>& population) {
    std::stable_sort(population.begin(), population.end(),
                     [](const Individual& a, const Individual& b) { return a.fit < b.fit; });
  }

  const Individual& select(const std::vector<Individual>& population) {
    const Individual* best = &population[rng_.below(population.size())];
    for (int64_t round = 1; round < options_.tournament; ++round) {
      const Individual& other = population[rng_.below(population.size())];
      if (other.fit < best->fit) best = &other;
    }
    return *best;
  }

  // Uniform: each job's GPU and key from one parent or the other, together.
  Plan crossover(const Plan& mother, const Plan& father) {
    Plan child = mother;
    for (int64_t job = 0; job < problem_.jobs; ++job)
      if (rng_.below(2) == 1) child.gpu[job] = father.gpu[job], child.key[job] = father.key[job];
    return child;
  }

  // The place among those `job` may take (a GPU it fits, or a gang's block) whose queue (without the job)
  // ends first: the move a list scheduler would make.
  int64_t least_loaded(const Plan& plan, int64_t job) {
    std::vector<double> busy(static_cast<size_t>(problem_.gpus()), 0);
    for (int64_t other = 0; other < problem_.jobs; ++other) {
      if (other == job) continue;
      const double duration = problem_.duration(other, problem_.gpu_type[plan.gpu[other]]);
      for (int64_t gpu = plan.gpu[other]; gpu < plan.gpu[other] + problem_.needs(other); ++gpu) busy[gpu] += duration;
    }
    // Cost: the cheapest run first, then the earliest end.
    int64_t best = places_[job].front();
    Score best_score{kNoFit, kNoFit};
    for (int64_t first : places_[job]) {
      const int64_t type = problem_.gpu_type[first];
      const double duration = problem_.duration(job, type);
      const double end = gang_start(busy, first, problem_.needs(job), 0) + duration;
      const Score candidate =
          objective_ == Objective::Cost
              ? Score{duration * problem_.price_per_hour[type] * static_cast<double>(problem_.needs(job)), end}
              : Score{end, 0};
      if (candidate < best_score) best_score = candidate, best = first;
    }
    return best;
  }

  // Whether jobs `a` and `b` may exchange their places.
  bool swappable(const Plan& plan, int64_t a, int64_t b) const {
    return problem_.can_start(a, plan.gpu[b]) && problem_.can_start(b, plan.gpu[a]);
  }

  void mutate(Plan& plan) {
    if (problem_.jobs == 0) return;
    const int64_t moves = 1 + static_cast<int64_t>(rng_.below(3));
    for (int64_t move = 0; move < moves; ++move) {
      const int64_t job = static_cast<int64_t>(rng_.below(problem_.jobs));
      switch (rng_.below(4)) {
        case 0:  // another GPU it fits (a gang: another block)
          plan.gpu[job] = places_[job][rng_.below(places_[job].size())];
          break;
        case 1: {  // two jobs exchange places where each may take the other's
          const int64_t other = static_cast<int64_t>(rng_.below(problem_.jobs));
          if (swappable(plan, job, other)) std::swap(plan.gpu[job], plan.gpu[other]);
          break;
        }
        case 2:  // another place in its GPU's order
          plan.key[job] = rng_.unit() * static_cast<double>(problem_.jobs);
          break;
        default:  // to the GPU whose queue ends first
          plan.gpu[job] = least_loaded(plan, job);
      }
    }
  }

  // First-improvement descent over moves of one job to another GPU and swaps of two jobs' GPUs, tried
  // for the jobs that share a GPU with the job that ends last (makespan) or for jobs drawn at random (the other
  // objectives), swaps with partners drawn at random; at most kDescentEvaluations plays per call.
  Individual descend(Individual best) {
    constexpr int64_t kDescentEvaluations = 1500, kSampled = 16;
    const int64_t budget_end = evaluations_ + kDescentEvaluations;
    bool improved = true;
    while (improved && evaluations_ < budget_end) {
      improved = false;
      std::vector<int64_t> candidates;
      if (objective_ == Objective::Makespan) {
        const Timeline timeline = play(problem_, best.plan);
        int64_t critical = 0;
        for (int64_t job = 1; job < problem_.jobs; ++job)
          if (timeline.end_s[job] > timeline.end_s[critical]) critical = job;
        for (int64_t job = 0; job < problem_.jobs; ++job)
          if (overlap(problem_, best.plan, job, critical)) candidates.push_back(job);
      } else {
        for (int64_t draw = 0; draw < std::min(kSampled, problem_.jobs); ++draw)
          candidates.push_back(static_cast<int64_t>(rng_.below(problem_.jobs)));
      }
      for (size_t index = 0; index < candidates.size() && !improved && evaluations_ < budget_end; ++index) {
        const int64_t job = candidates[index];
        for (int64_t gpu : places_[job]) {
          if (gpu == best.plan.gpu[job]) continue;
          Plan trial = best.plan;
          trial.gpu[job] = gpu;
          if (try_replace(best, trial)) {
            improved = true;
            break;
          }
        }
        for (int64_t draw = 0; draw < kSampled && !improved; ++draw) {
          const int64_t other = static_cast<int64_t>(rng_.below(problem_.jobs));
          if (best.plan.gpu[other] == best.plan.gpu[job] || !swappable(best.plan, job, other)) continue;
          Plan trial = best.plan;
          std::swap(trial.gpu[job], trial.gpu[other]);
          improved = try_replace(best, trial);
        }
      }
    }
    return best;
  }

  bool try_replace(Individual& best, const Plan& trial) {
    Individual candidate = evaluate(trial);
    if (!(candidate.fit < best.fit)) return false;
    best = std::move(candidate);
    return true;
  }

  const Problem& problem_;
  Objective objective_;
  GaOptions options_;
  SplitMix64 rng_;
  std::vector<std::vector<int64_t>> places_;  // per job: placements()
  int64_t evaluations_ = 0;
};

}  // namespace

GaResult genetic(const Problem& problem, Objective objective, const GaOptions& options) {
  problem.check();
  DNNCAST_ASSERT(options.population >= 2 && options.generations >= 0 && options.tournament >= 1);
  if (problem.jobs == 0) return GaResult{Plan{}, Timeline{}, {}, 0};
  return Genetic(problem, objective, options).run();
}

// ---------------------------------------------------------------------------------------------
// The exact solver

namespace {

struct OnOneGpu {
  double value = kNoFit;       // makespan: the last end; mean JCT: sum of weighted JCTs; cost: USD
  std::vector<int64_t> order;  // the jobs in running order
};

// The best order of the jobs of `mask` on one GPU of `type`.
OnOneGpu best_on_one_gpu(const Problem& problem, Objective objective, int64_t type, uint32_t mask) {
  OnOneGpu best;
  std::vector<int64_t> jobs;
  for (int64_t job = 0; job < problem.jobs; ++job)
    if (mask & (1u << job)) {
      if (!problem.fits(job, type)) return best;
      jobs.push_back(job);
    }
  // Makespan: by arrival (earliest release first is optimal for the last end on one machine).
  std::stable_sort(jobs.begin(), jobs.end(),
                   [&](int64_t a, int64_t b) { return problem.arrival_s[a] < problem.arrival_s[b]; });
  auto run = [&](const std::vector<int64_t>& order, double& end_s) {
    double free_s = 0, weighted = 0;
    for (int64_t job : order) {
      free_s = std::max(free_s, problem.arrival_s[job]) + problem.duration(job, type);
      weighted += problem.weight[job] * (free_s - problem.arrival_s[job]);
    }
    end_s = free_s;
    return weighted;
  };
  double end_s = 0;
  if (objective == Objective::Makespan) {
    run(jobs, end_s);
    return {end_s, jobs};
  }
  if (objective == Objective::Cost) {
    double cost = 0;
    for (int64_t job : jobs) cost += problem.duration(job, type) / 3600 * problem.price_per_hour[type];
    return {cost, jobs};
  }
  std::sort(jobs.begin(), jobs.end());
  do {
    const double weighted = run(jobs, end_s);
    if (weighted < best.value) best = {weighted, jobs};
  } while (std::next_permutation(jobs.begin(), jobs.end()));
  return best;
}

}  // namespace

ExactResult exact(const Problem& problem, Objective objective) {
  problem.check();
  if (problem.jobs > kExactMaxJobs)
    throw InputError("the exact solver takes at most " + std::to_string(kExactMaxJobs) + " jobs, not " +
                     std::to_string(problem.jobs));
  for (int64_t job = 0; job < problem.jobs; ++job)
    if (problem.needs(job) > 1)
      throw InputError("the exact solver places one-GPU jobs only; job " + std::to_string(job + 1) + " needs " +
                       std::to_string(problem.needs(job)) + " GPUs");
  const uint32_t full = (1u << problem.jobs) - 1;
  const size_t subsets = size_t{1} << problem.jobs;
  // Per type and subset, the best single-GPU schedule.
  std::vector<std::vector<OnOneGpu>> single(static_cast<size_t>(problem.types), std::vector<OnOneGpu>(subsets));
  for (int64_t type = 0; type < problem.types; ++type)
    for (uint32_t mask = 1; mask <= full; ++mask) single[type][mask] = best_on_one_gpu(problem, objective, type, mask);
  const bool use_max = objective == Objective::Makespan;
  auto combine = [&](double a, double b) { return use_max ? std::max(a, b) : a + b; };
  // best[g][mask]: the jobs of mask on the first g GPUs; choice[g][mask]: those on GPU g-1.
  const int64_t gpus = problem.gpus();
  std::vector<std::vector<double>> best(static_cast<size_t>(gpus + 1), std::vector<double>(subsets, kNoFit));
  std::vector<std::vector<uint32_t>> choice(static_cast<size_t>(gpus + 1), std::vector<uint32_t>(subsets, 0));
  best[0][0] = 0;
  for (int64_t gpu = 0; gpu < gpus; ++gpu) {
    const auto& on_type = single[problem.gpu_type[gpu]];
    for (uint32_t mask = 0; mask <= full; ++mask) {
      double value = best[gpu][mask];  // nothing on this GPU
      uint32_t chosen = 0;
      for (uint32_t sub = mask; sub != 0; sub = (sub - 1) & mask) {
        const double rest = best[gpu][mask & ~sub];
        if (rest == kNoFit || on_type[sub].value == kNoFit) continue;
        const double total = combine(rest, on_type[sub].value);
        if (total < value) value = total, chosen = sub;
      }
      best[gpu + 1][mask] = value;
      choice[gpu + 1][mask] = chosen;
    }
  }
  ExactResult result;
  DNNCAST_ASSERT(best[gpus][full] < kNoFit);
  result.plan.gpu.assign(problem.jobs, -1);
  result.plan.key.assign(problem.jobs, 0);
  uint32_t mask = full;
  for (int64_t gpu = gpus; gpu >= 1; --gpu) {
    const uint32_t sub = choice[gpu][mask];
    if (sub == 0) continue;
    const OnOneGpu& on = single[problem.gpu_type[gpu - 1]][sub];
    for (size_t position = 0; position < on.order.size(); ++position) {
      result.plan.gpu[on.order[position]] = gpu - 1;
      result.plan.key[on.order[position]] = static_cast<double>(position);
    }
    mask &= ~sub;
  }
  result.timeline = play(problem, result.plan);
  result.value = result.timeline.value(objective);
  return result;
}

}  // namespace dnncast::decide::sched
