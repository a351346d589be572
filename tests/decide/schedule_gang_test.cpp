// Jobs of several GPUs in the scheduling core (decide/schedule.h, issue 48): a gang holds a block of GPUs of one
// node and one type from its start to its end. Checked here: a hand-timed timeline; every solver's plans on random
// clusters of mixed node sizes against a validity check written here (not Problem::can_start); and one-GPU problems
// played exactly as the per-GPU play that came before gangs (kept below as the reference).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "decide/schedule.h"

namespace dnncast::decide::sched {
namespace {

// The play of one-GPU plans before gangs: each GPU's jobs in (key, index) order, one after another, summed GPU by
// GPU.
Timeline reference_play(const Problem& problem, const Plan& plan) {
  std::vector<int64_t> order(static_cast<size_t>(problem.jobs));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return plan.key[a] != plan.key[b] ? plan.key[a] < plan.key[b] : a < b; });
  std::vector<std::vector<int64_t>> by_gpu(static_cast<size_t>(problem.gpus()));
  for (int64_t job : order) by_gpu[plan.gpu[job]].push_back(job);
  Timeline timeline;
  timeline.start_s.assign(problem.jobs, 0);
  timeline.end_s.assign(problem.jobs, 0);
  double weighted_jct = 0, weights = 0;
  for (const std::vector<int64_t>& queue : by_gpu) {
    double free_s = 0;
    for (int64_t job : queue) {
      const int64_t type = problem.gpu_type[plan.gpu[job]];
      const double duration = problem.duration(job, type);
      timeline.start_s[job] = std::max(free_s, problem.arrival_s[job]);
      timeline.end_s[job] = free_s = timeline.start_s[job] + duration;
      timeline.makespan_s = std::max(timeline.makespan_s, free_s);
      weighted_jct += problem.weight[job] * (free_s - problem.arrival_s[job]);
      weights += problem.weight[job];
      timeline.cost_usd += duration / 3600 * problem.price_per_hour[type];
    }
  }
  timeline.mean_jct_s = weights > 0 ? weighted_jct / weights : 0;
  return timeline;
}

// A random cluster: per type one node of 4 GPUs, then nodes of 1, 2, 3, 4 or 8 GPUs of random types (each node one
// type); jobs of 1, 2, 3 or 4 GPUs (`gangs` false: 1 each), durations 1-100 s, a share of (job, type) pairs that do
// not fit (each job fits one type for sure, and every type has a node of 4).
Problem random_cluster(uint64_t seed, int64_t jobs, int64_t extra_nodes, int64_t types, bool gangs) {
  SplitMix64 rng(seed);
  Problem problem;
  problem.jobs = jobs;
  problem.types = types;
  auto add_node = [&](int64_t type, int64_t count) {
    const int64_t node = problem.node.empty() ? 0 : problem.node.back() + 1;
    for (int64_t gpu = 0; gpu < count; ++gpu) problem.gpu_type.push_back(type), problem.node.push_back(node);
  };
  for (int64_t type = 0; type < types; ++type) add_node(type, 4);
  const int64_t sizes[] = {1, 2, 3, 4, 8};
  for (int64_t node = 0; node < extra_nodes; ++node)
    add_node(static_cast<int64_t>(rng.below(types)), sizes[rng.below(5)]);
  std::vector<double> speed(static_cast<size_t>(types));
  for (int64_t type = 0; type < types; ++type) {
    speed[type] = rng.log_uniform(0.3, 3);
    problem.price_per_hour.push_back(1 + 3 * rng.unit());
  }
  const int64_t needs[] = {1, 1, 2, 3, 4};
  for (int64_t job = 0; job < jobs; ++job) {
    const double work = rng.log_uniform(1, 100);
    const int64_t always = static_cast<int64_t>(rng.below(types));
    for (int64_t type = 0; type < types; ++type)
      problem.duration_s.push_back(
          type != always && rng.unit() < 0.3 ? kNoFit : work / speed[type] * rng.log_uniform(0.8, 1.25));
    problem.arrival_s.push_back(rng.unit() < 0.4 ? 50 * rng.unit() : 0);
    problem.weight.push_back(1 + static_cast<double>(rng.below(3)));
    problem.gpus_needed.push_back(gangs ? needs[rng.below(5)] : 1);
  }
  problem.check();
  return problem;
}

// The plan's gangs are valid (one node, one type that fits, aligned in the node) and its timeline sound: no job
// before its arrival, each for its duration, no two jobs at once on a GPU, each GPU's jobs in key order. Written
// from the definition, apart from Problem::can_start.
void expect_valid(const Problem& problem, const Plan& plan, const std::string& what) {
  for (int64_t job = 0; job < problem.jobs; ++job) {
    const int64_t first = plan.gpu[job], gang = problem.needs(job);
    ASSERT_GE(first, 0) << what;
    ASSERT_LE(first + gang, problem.gpus()) << what << " job " << job;
    int64_t node_first = 0;
    while (problem.node[node_first] != problem.node[first]) ++node_first;
    EXPECT_EQ((first - node_first) % gang, 0) << what << " job " << job << ": not aligned in its node";
    for (int64_t gpu = first; gpu < first + gang; ++gpu) {
      EXPECT_EQ(problem.node[gpu], problem.node[first]) << what << " job " << job << ": crosses a node";
      EXPECT_EQ(problem.gpu_type[gpu], problem.gpu_type[first]) << what << " job " << job;
    }
    EXPECT_TRUE(problem.fits(job, problem.gpu_type[first])) << what << " job " << job;
  }
  const Timeline timeline = play(problem, plan);
  for (int64_t job = 0; job < problem.jobs; ++job) {
    EXPECT_GE(timeline.start_s[job], problem.arrival_s[job]) << what;
    // end - start rounds: equal to the duration up to the end's last bits.
    EXPECT_NEAR(timeline.end_s[job] - timeline.start_s[job], problem.duration(job, problem.gpu_type[plan.gpu[job]]),
                1e-12 * timeline.end_s[job])
        << what;
    for (int64_t other = 0; other < problem.jobs; ++other) {
      if (other == job) continue;
      const bool share = plan.gpu[job] < plan.gpu[other] + problem.needs(other) &&
                         plan.gpu[other] < plan.gpu[job] + problem.needs(job);
      if (!share) continue;
      EXPECT_TRUE(timeline.end_s[job] <= timeline.start_s[other] || timeline.end_s[other] <= timeline.start_s[job])
          << what << ": jobs " << job << " and " << other << " at once on a GPU";
      const bool job_first = plan.key[job] != plan.key[other] ? plan.key[job] < plan.key[other] : job < other;
      if (job_first) EXPECT_LE(timeline.end_s[job], timeline.start_s[other]) << what;
    }
  }
}

TEST(ScheduleGang, AGangWaitsForAllItsGpus) {
  // One node of four GPUs of one type at $1 per GPU-second. Job 0: 1 GPU, 10 s on GPU 1; job 1: 1 GPU, 30 s on
  // GPU 2; job 2: all four GPUs, 20 s; job 3: 1 GPU, 5 s on GPU 3, its key after the gang's.
  Problem problem;
  problem.jobs = 4;
  problem.types = 1;
  problem.duration_s = {10, 30, 20, 5};
  problem.arrival_s = {0, 0, 0, 0};
  problem.weight = {1, 1, 1, 1};
  problem.gpu_type = {0, 0, 0, 0};
  problem.node = {0, 0, 0, 0};
  problem.price_per_hour = {3600};
  problem.gpus_needed = {1, 1, 4, 1};
  problem.check();
  // By hand: job 0 runs 0-10 on GPU 1 and job 1 0-30 on GPU 2; the gang starts when the last of its GPUs frees
  // (GPU 2 at 30 s) and runs 30-50 on all four; job 3 comes after it in key order: 50-55 on GPU 3, though GPU 3 was
  // idle until 30 s. Makespan 55 s; mean JCT (10 + 30 + 50 + 55) / 4; cost 10 + 30 + 4 x 20 + 5 GPU-seconds.
  const Timeline timeline = play(problem, Plan{{1, 2, 0, 3}, {0, 1, 2, 3}});
  EXPECT_DOUBLE_EQ(timeline.start_s[0], 0);
  EXPECT_DOUBLE_EQ(timeline.end_s[0], 10);
  EXPECT_DOUBLE_EQ(timeline.end_s[1], 30);
  EXPECT_DOUBLE_EQ(timeline.start_s[2], 30);
  EXPECT_DOUBLE_EQ(timeline.end_s[2], 50);
  EXPECT_DOUBLE_EQ(timeline.start_s[3], 50);
  EXPECT_DOUBLE_EQ(timeline.end_s[3], 55);
  EXPECT_DOUBLE_EQ(timeline.makespan_s, 55);
  EXPECT_DOUBLE_EQ(timeline.mean_jct_s, (10.0 + 30 + 50 + 55) / 4);
  EXPECT_DOUBLE_EQ(timeline.cost_usd, 10 + 30 + 4 * 20 + 5);
  // With job 3's key first it runs 0-5 on GPU 3; the gang still waits for GPU 2 (30 s).
  const Timeline before = play(problem, Plan{{1, 2, 0, 3}, {0, 1, 2, -1}});
  EXPECT_DOUBLE_EQ(before.start_s[3], 0);
  EXPECT_DOUBLE_EQ(before.end_s[3], 5);
  EXPECT_DOUBLE_EQ(before.start_s[2], 30);
  EXPECT_DOUBLE_EQ(before.makespan_s, 50);
  // Only the block at GPU 0 holds the gang; a one-GPU job may go anywhere.
  for (int64_t gpu = 0; gpu < 4; ++gpu) {
    EXPECT_EQ(problem.can_start(2, gpu), gpu == 0) << gpu;
    EXPECT_TRUE(problem.can_start(0, gpu));
  }
  // The best makespan runs the three one-GPU jobs side by side (30 s) and the gang after (or before) them: 50 s;
  // the genetic algorithm finds it. LPT, longest first, puts job 1 on GPU 0 (0-30 s), the gang after it (30-50 s)
  // and jobs 0 and 3 after the gang (50-60 s, 50-55 s): 60 s, for appending never fills the idle GPUs before a gang.
  EXPECT_DOUBLE_EQ(play(problem, greedy_lpt(problem)).makespan_s, 60);
  EXPECT_DOUBLE_EQ(genetic(problem, Objective::Makespan, GaOptions{}).timeline.makespan_s, 50);
}

TEST(ScheduleGang, BlocksAreAlignedWithinOneNodeOfOneType) {
  Problem problem;
  problem.jobs = 1;
  problem.types = 2;
  problem.duration_s = {10, 10};
  problem.arrival_s = {0};
  problem.weight = {1};
  problem.price_per_hour = {1, 1};
  problem.gpus_needed = {2};
  // Node 0: three GPUs of type 0; node 1: two of type 0, then node 2: two GPUs, one of each type.
  problem.gpu_type = {0, 0, 0, 0, 0, 0, 1};
  problem.node = {0, 0, 0, 1, 1, 2, 2};
  problem.check();
  const std::vector<bool> expected{true, false, false, true, false, false, false};
  for (int64_t gpu = 0; gpu < problem.gpus(); ++gpu) EXPECT_EQ(problem.can_start(0, gpu), expected[gpu]) << gpu;
  EXPECT_FALSE(problem.can_start(0, -1));
  // A caller's bugs, asserted: a gang that no node holds, a node whose GPUs are not consecutive.
  Problem no_place = problem;
  no_place.gpus_needed = {4};
  EXPECT_THROW(no_place.check(), InternalError);
  Problem scattered = problem;
  scattered.node = {0, 0, 0, 1, 1, 0, 2};
  EXPECT_THROW(scattered.check(), InternalError);
}

TEST(ScheduleGang, EverySolverPlacesGangsOnValidBlocks) {
  GaOptions options;
  options.generations = 25;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const Problem problem = random_cluster(seed, 30, 4, 3, true);
    options.seed = seed;
    for (Objective objective : {Objective::Makespan, Objective::MeanJct, Objective::Cost}) {
      const GaResult result = genetic(problem, objective, options);
      expect_valid(problem, result.plan, "genetic, seed " + std::to_string(seed) + " " + name(objective));
      EXPECT_LE(score(result.timeline, objective), score(play(problem, greedy_lpt(problem)), objective));
    }
    expect_valid(problem, greedy_lpt(problem), "lpt, seed " + std::to_string(seed));
    expect_valid(problem, fifo_first_fit(problem), "fifo, seed " + std::to_string(seed));
    expect_valid(problem, heterogeneity_agnostic(problem), "agnostic, seed " + std::to_string(seed));
    expect_valid(problem, random_plan(problem, seed), "random, seed " + std::to_string(seed));
  }
}

TEST(ScheduleGang, CostCountsEveryGpuOfAGang) {
  const Problem problem = random_cluster(5, 20, 3, 2, true);
  const Plan plan = greedy_lpt(problem);
  const Timeline timeline = play(problem, plan);
  double cost = 0;
  for (int64_t job = 0; job < problem.jobs; ++job) {
    const int64_t type = problem.gpu_type[plan.gpu[job]];
    cost += (timeline.end_s[job] - timeline.start_s[job]) * static_cast<double>(problem.needs(job)) *
            problem.price_per_hour[type] / 3600;
  }
  EXPECT_NEAR(timeline.cost_usd, cost, 1e-9 * cost);
}

TEST(ScheduleGang, OneGpuProblemsPlayExactlyAsBeforeGangs) {
  GaOptions options;
  options.generations = 10;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Problem problem = random_cluster(seed, 25, 5, 3, false);
    if (seed % 2 == 0) problem.node.clear(), problem.gpus_needed.clear();  // the defaults: as problems were made
    SplitMix64 rng(seed * 7919);
    std::vector<Plan> plans{greedy_lpt(problem), fifo_first_fit(problem), heterogeneity_agnostic(problem),
                            random_plan(problem, seed), genetic(problem, Objective::MeanJct, options).plan};
    // Ties of keys too: the index breaks them.
    Plan tied = random_plan(problem, seed + 100);
    for (double& key : tied.key) key = static_cast<double>(rng.below(3));
    plans.push_back(tied);
    for (const Plan& plan : plans) {
      const Timeline now = play(problem, plan), before = reference_play(problem, plan);
      EXPECT_EQ(now.start_s, before.start_s) << "seed " << seed;
      EXPECT_EQ(now.end_s, before.end_s) << "seed " << seed;
      EXPECT_EQ(now.makespan_s, before.makespan_s) << "seed " << seed;
      EXPECT_EQ(now.mean_jct_s, before.mean_jct_s) << "seed " << seed;
      EXPECT_EQ(now.cost_usd, before.cost_usd) << "seed " << seed;
    }
  }
}

TEST(ScheduleGang, TheExactSolverRefusesGangs) {
  Problem problem = random_cluster(3, 5, 1, 2, false);
  problem.gpus_needed[2] = 2;
  try {
    exact(problem, Objective::Makespan);
    FAIL();
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "the exact solver places one-GPU jobs only; job 3 needs 2 GPUs");
  }
}

}  // namespace
}  // namespace dnncast::decide::sched
