// The scheduling solvers (decide/schedule.h) on problems given as numbers: the exact solver against a
// brute force written here (every assignment, every order), LPT against Graham's published bound on
// identical machines, and the genetic algorithm against the exact optimum, its seeds and the memory
// constraint.
#include "decide/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "core/csv.h"
#include "core/error.h"
#include "core/rng.h"
#include "decide/schedule_study.h"
#include "gpu/kernel_model.h"

namespace dnncast::decide::sched {
namespace {

// A random problem: `jobs` jobs on `gpus` GPUs of `types` types, durations 1-100 s with the types'
// speeds differing, a share `no_fit` of (job, type) pairs that do not fit (each job fits at least one
// type present), arrivals in [0, 50) s for a share of the jobs, weights 1-3, prices 1-4 $/h.
Problem random_problem(uint64_t seed, int64_t jobs, int64_t gpus, int64_t types, double no_fit = 0.25,
                       bool arrivals = true) {
  SplitMix64 rng(seed);
  Problem problem;
  problem.jobs = jobs;
  problem.types = types;
  for (int64_t gpu = 0; gpu < gpus; ++gpu) problem.gpu_type.push_back(gpu < types ? gpu : rng.below(types));
  std::vector<double> speed(static_cast<size_t>(types));
  for (int64_t type = 0; type < types; ++type) {
    speed[type] = rng.log_uniform(0.3, 3);
    problem.price_per_hour.push_back(1 + 3 * rng.unit());
  }
  for (int64_t job = 0; job < jobs; ++job) {
    const double work = rng.log_uniform(1, 100);
    const int64_t always = static_cast<int64_t>(rng.below(types));
    for (int64_t type = 0; type < types; ++type)
      problem.duration_s.push_back(
          type != always && rng.unit() < no_fit ? kNoFit : work / speed[type] * rng.log_uniform(0.8, 1.25));
    problem.arrival_s.push_back(arrivals && rng.unit() < 0.4 ? 50 * rng.unit() : 0);
    problem.weight.push_back(1 + static_cast<double>(rng.below(3)));
  }
  return problem;
}

// The brute force: every assignment of jobs to GPUs and, for each, every global order of the jobs
// (the order on each GPU is the global order restricted to it); the timeline computed here.
double brute_force(const Problem& problem, Objective objective) {
  const int64_t n = problem.jobs, m = problem.gpus();
  std::vector<int64_t> order(static_cast<size_t>(n));
  double best = kNoFit;
  std::vector<int64_t> assignment(static_cast<size_t>(n), 0);
  while (true) {
    bool feasible = true;
    for (int64_t job = 0; job < n; ++job) feasible = feasible && problem.fits(job, problem.gpu_type[assignment[job]]);
    if (feasible) {
      std::iota(order.begin(), order.end(), 0);
      do {
        std::vector<double> free_s(static_cast<size_t>(m), 0);
        double makespan = 0, weighted = 0, weights = 0, cost = 0;
        for (int64_t job : order) {
          const int64_t gpu = assignment[job], type = problem.gpu_type[gpu];
          const double end = std::max(free_s[gpu], problem.arrival_s[job]) + problem.duration(job, type);
          free_s[gpu] = end;
          makespan = std::max(makespan, end);
          weighted += problem.weight[job] * (end - problem.arrival_s[job]);
          weights += problem.weight[job];
          cost += problem.duration(job, type) / 3600 * problem.price_per_hour[type];
        }
        const double value = objective == Objective::Makespan  ? makespan
                             : objective == Objective::MeanJct ? weighted / weights
                                                               : cost;
        best = std::min(best, value);
      } while (std::next_permutation(order.begin(), order.end()));
    }
    int64_t digit = 0;
    while (digit < n && ++assignment[digit] == m) assignment[digit++] = 0;
    if (digit == n) break;
  }
  return best;
}

TEST(Schedule, PlayRunsEachGpusJobsInKeyOrderFromTheirArrival) {
  Problem problem;
  problem.jobs = 3;
  problem.types = 2;
  problem.duration_s = {10, 5, 20, kNoFit, 4, 8};  // job 0: 10 s / 5 s; job 1: 20 s / no fit; job 2: 4 s / 8 s
  problem.arrival_s = {0, 3, 30};
  problem.weight = {1, 1, 2};
  problem.gpu_type = {0, 1};
  problem.price_per_hour = {3600, 7200};  // $1 and $2 per second
  const Timeline timeline = play(problem, Plan{{0, 0, 1}, {1, 0, 0}});
  // GPU 0: job 1 (key 0) from its arrival 3 s to 23 s, then job 0 to 33 s; GPU 1: job 2 from 30 to 38 s.
  EXPECT_DOUBLE_EQ(timeline.start_s[1], 3);
  EXPECT_DOUBLE_EQ(timeline.end_s[1], 23);
  EXPECT_DOUBLE_EQ(timeline.start_s[0], 23);
  EXPECT_DOUBLE_EQ(timeline.end_s[0], 33);
  EXPECT_DOUBLE_EQ(timeline.start_s[2], 30);
  EXPECT_DOUBLE_EQ(timeline.end_s[2], 38);
  EXPECT_DOUBLE_EQ(timeline.makespan_s, 38);
  EXPECT_DOUBLE_EQ(timeline.mean_jct_s, (33.0 + 20 + 2 * 8) / 4);
  EXPECT_DOUBLE_EQ(timeline.cost_usd, 10 + 20 + 2 * 8);
}

TEST(Schedule, ExactEqualsTheBruteForceOnEveryObjective) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const Problem problem = random_problem(seed, 5, 3, 2);
    for (Objective objective : {Objective::Makespan, Objective::MeanJct, Objective::Cost}) {
      const ExactResult result = exact(problem, objective);
      EXPECT_NEAR(result.value, brute_force(problem, objective), 1e-9 * result.value)
          << "seed " << seed << " " << name(objective);
      EXPECT_DOUBLE_EQ(play(problem, result.plan).value(objective), result.value);
    }
  }
}

TEST(Schedule, ExactRefusesMoreJobsThanItsLimit) {
  const Problem problem = random_problem(3, kExactMaxJobs + 1, 2, 2);
  EXPECT_THROW(exact(problem, Objective::Makespan), InputError);
}

// Graham (1969): on m identical machines, LPT's makespan is at most (4/3 - 1/(3m)) times the optimum,
// and any list schedule's (FIFO) at most 2 - 1/m times.
TEST(Schedule, LptAndFifoKeepGrahamsBoundsOnIdenticalGpus) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const int64_t m = 2 + static_cast<int64_t>(seed % 3);
    const Problem problem = random_problem(seed, 8, m, 1, 0, false);
    const double optimum = exact(problem, Objective::Makespan).value;
    const double lpt = play(problem, greedy_lpt(problem)).makespan_s;
    const double fifo = play(problem, fifo_first_fit(problem)).makespan_s;
    EXPECT_LE(lpt, (4.0 / 3 - 1.0 / (3.0 * static_cast<double>(m))) * optimum * (1 + 1e-12)) << "seed " << seed;
    EXPECT_LE(fifo, (2 - 1.0 / static_cast<double>(m)) * optimum * (1 + 1e-12)) << "seed " << seed;
    EXPECT_GE(lpt, optimum * (1 - 1e-12));
  }
}

TEST(Schedule, TheGeneticAlgorithmComesWithin5PercentOfTheOptimumIn20Generations) {
  GaOptions options;
  options.generations = 20;
  int within = 0, instances = 0;
  double worst = 1;
  for (uint64_t seed = 100; seed < 120; ++seed) {
    const Problem problem = random_problem(seed, 8, 4, 2 + static_cast<int64_t>(seed % 2));
    options.seed = seed;
    const double optimum = exact(problem, Objective::Makespan).value;
    const double found = genetic(problem, Objective::Makespan, options).timeline.makespan_s;
    EXPECT_GE(found, optimum * (1 - 1e-12));
    worst = std::max(worst, found / optimum);
    within += found <= 1.05 * optimum;
    ++instances;
  }
  EXPECT_GE(within, instances * 9 / 10) << "worst " << worst;
}

TEST(Schedule, TheGeneticAlgorithmIsNoWorseThanItsSeedsAndReproducible) {
  GaOptions options;
  options.generations = 30;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const Problem problem = random_problem(seed, 60, 12, 3, 0.4);
    for (Objective objective : {Objective::Makespan, Objective::MeanJct, Objective::Cost}) {
      options.seed = seed;
      const GaResult first = genetic(problem, objective, options), second = genetic(problem, objective, options);
      EXPECT_EQ(first.plan.gpu, second.plan.gpu);
      EXPECT_EQ(first.plan.key, second.plan.key);
      const Score best = score(first.timeline, objective);
      EXPECT_LE(best, score(play(problem, greedy_lpt(problem)), objective)) << name(objective);
      EXPECT_LE(best, score(play(problem, fifo_first_fit(problem)), objective)) << name(objective);
      // The best never gets worse from one generation to the next (elitism).
      for (size_t generation = 1; generation < first.best_by_generation.size(); ++generation)
        EXPECT_LE(first.best_by_generation[generation], first.best_by_generation[generation - 1]);
    }
  }
}

TEST(Schedule, NoSolverPlacesAJobWhereItDoesNotFit) {
  GaOptions options;
  options.generations = 25;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const Problem problem = random_problem(seed, 40, 8, 4, 0.6);
    options.seed = seed;
    for (const Plan& plan : {genetic(problem, Objective::Makespan, options).plan, greedy_lpt(problem),
                             fifo_first_fit(problem), heterogeneity_agnostic(problem), random_plan(problem, seed)})
      for (int64_t job = 0; job < problem.jobs; ++job)
        EXPECT_TRUE(problem.fits(job, problem.gpu_type[plan.gpu[job]])) << "seed " << seed << " job " << job;
  }
}

TEST(Schedule, CostIsTheCheapestTypePerJob) {
  const Problem problem = random_problem(7, 30, 6, 3);
  double cheapest = 0;
  for (int64_t job = 0; job < problem.jobs; ++job) {
    double best = kNoFit;
    for (int64_t type = 0; type < problem.types; ++type)
      if (problem.fits(job, type))
        best = std::min(best, problem.duration(job, type) / 3600 * problem.price_per_hour[type]);
    cheapest += best;
  }
  GaOptions options;
  options.generations = 60;
  EXPECT_NEAR(genetic(problem, Objective::Cost, options).timeline.cost_usd, cheapest, 1e-9 * cheapest);
}

TEST(Schedule, ObjectiveNamesRoundTripAndUnknownOnesAreRefused) {
  for (Objective objective : {Objective::Makespan, Objective::MeanJct, Objective::Cost})
    EXPECT_EQ(parse_objective(name(objective)), objective);
  try {
    parse_objective("fastest");
    FAIL();
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "--objective 'fastest' is not an objective (makespan, mean-jct, cost)");
  }
}

TEST(ScheduleStudy, DrawsNoErrorFromATestGpusRow) {
  // NeuSight's test GPUs (the H100 and its family, L4, A100 80GB) are in no fit and no error distribution: the
  // replay's draws are the shipped residuals' other rows, broken runs left out. The shipped file lists the test
  // GPUs' rows without their forecasts (a score asked for once, `calibrate-gpus --score-test-gpus`).
  const ForecastErrors errors = load_forecast_errors();
  size_t drawn = 0;
  for (const ResidualRow& row : errors.rows) {
    EXPECT_FALSE(gpu::is_held_out_test_gpu(row.gpu)) << row.gpu;
    if (!row.broken()) ++drawn;
  }
  EXPECT_EQ(errors.calibrated.size(), drawn);
  EXPECT_EQ(errors.specs.size(), drawn);
  // The file's rows as text: table,line,gpu,...,measured_ms,fit_ms,held_gpu_ms,held_model_ms,roofline_ms.
  std::ifstream in(errors.source);
  size_t test_rows = 0;
  std::vector<std::string> cells;
  int64_t line = 0;
  while (read_csv_record(in, cells, line)) {
    if (cells.size() != 12 || !gpu::is_held_out_test_gpu(cells[2])) continue;
    ++test_rows;
    EXPECT_EQ(cells[8] + cells[9] + cells[10], "") << errors.source << " line " << line;
  }
  EXPECT_GT(test_rows, 0u);
}

}  // namespace

}  // namespace dnncast::decide::sched
