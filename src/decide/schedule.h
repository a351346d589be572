// Placing training jobs on a heterogeneous GPU cluster (`dnncast schedule`, issue 21, docs/SCHEDULE.md).
//
// The problem, once every job's time on every GPU type is known (schedule_jobs.h forecasts it): each job
// runs alone on its GPUs, start to end, no preemption; a job of several GPUs (a gang: data, tensor or
// pipeline parallel training) holds a block of GPUs of one node and one type, all from its start to its
// end; a GPU runs its jobs one after another, each no earlier than its arrival. A job may only go to a GPU
// type where its peak memory (per GPU) fits. A schedule is an assignment (job -> its first GPU) plus an
// order (a key per job: lower keys start first); the objectives: makespan (the last end), mean JCT
// (priority-weighted mean of end - arrival) or cost (GPU time paid for: each job's run time times its
// GPUs' price times their number; idle time is not paid).
//
// Solvers on the same problem: a genetic algorithm (the forecasts' use in DNNAbacus), the baselines
// FIFO first-fit, greedy longest-processing-time first, random, and heterogeneity-agnostic (every GPU
// assumed as fast as the mean), and an exact solver for small instances (dynamic programming over
// subsets of jobs, independent of the GA) that measures the GA's optimality gap.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace dnncast::decide::sched {

inline constexpr double kNoFit = std::numeric_limits<double>::infinity();

enum class Objective { Makespan, MeanJct, Cost };
// "makespan", "mean-jct", "cost"; throws InputError naming `what` and the choices.
Objective parse_objective(const std::string& text, const std::string& what = "--objective");
const std::string& name(Objective objective);

// Jobs x GPU types, and the GPUs. Times in seconds; a job's duration on a type is kNoFit where its peak
// memory does not fit that type (or is unknown there).
struct Problem {
  int64_t jobs = 0, types = 0;
  std::vector<double> duration_s;      // [job * types + type]
  std::vector<double> arrival_s;       // per job, >= 0
  std::vector<double> weight;          // per job, > 0 (priority): mean JCT is weighted by it
  std::vector<int64_t> gpu_type;       // per GPU: its type, 0 .. types-1
  std::vector<double> price_per_hour;  // per type, USD per GPU (0: unknown or free)
  std::vector<int64_t> gpus_needed;    // per job, >= 1: the GPUs of its gang (empty: 1 each)
  std::vector<int64_t> node;           // per GPU: its node, a node's GPUs consecutive (empty: one node per GPU)

  int64_t gpus() const { return static_cast<int64_t>(gpu_type.size()); }
  double duration(int64_t job, int64_t type) const { return duration_s[job * types + type]; }
  bool fits(int64_t job, int64_t type) const { return duration(job, type) < kNoFit; }
  int64_t needs(int64_t job) const { return gpus_needed.empty() ? 1 : gpus_needed[job]; }
  int64_t node_of(int64_t gpu) const { return node.empty() ? gpu : node[gpu]; }
  // Whether `job` may run on the gang first_gpu .. first_gpu + needs(job) - 1: GPUs of one node and one
  // type that the job fits, the first at a multiple of needs(job) from the node's first GPU (aligned
  // blocks). For a one-GPU job: whether it fits the GPU's type.
  bool can_start(int64_t job, int64_t first_gpu) const;
  // Every job has a place (can_start somewhere), sizes agree, arrivals, weights and gang sizes are sane,
  // nodes are runs of consecutive GPUs: a violation is a bug of the caller (DNNCAST_ASSERT), never user
  // input.
  void check() const;
};

// An assignment and an order: job j runs on the GPUs gpu[j] .. gpu[j] + needs(j) - 1 (one GPU for most
// jobs); the jobs start in ascending (key, index) order, each when its arrival has passed and every GPU of
// its gang is free, so that on each GPU its jobs run by ascending (key, index).
struct Plan {
  std::vector<int64_t> gpu;
  std::vector<double> key;
};

// The plan played out with the given durations (default: the problem's own).
struct Timeline {
  std::vector<double> start_s, end_s;  // per job
  double makespan_s = 0, mean_jct_s = 0, cost_usd = 0;
  double value(Objective objective) const;
};
Timeline play(const Problem& problem, const Plan& plan);
// With other durations than those the plan was made with ([job * types + type], as Problem::duration_s).
Timeline play(const Problem& problem, const Plan& plan, const std::vector<double>& duration_s);

// What a solver minimises, compared in order: the objective, then a tie-breaker (makespan: mean JCT;
// mean JCT and cost: makespan), so that among equal makespans the shorter mean JCT wins.
using Score = std::pair<double, double>;
Score score(const Timeline& timeline, Objective objective);

struct GaOptions {
  int64_t generations = 100, population = 64;
  uint64_t seed = 1;
  int64_t elite = 2, tournament = 3;
  double crossover_rate = 0.9, mutation_rate = 0.3;
  bool seed_with_heuristics = true;  // FIFO and LPT plans in the first generation
};

struct GaResult {
  Plan plan;
  Timeline timeline;
  std::vector<double> best_by_generation;  // the objective's value of the best plan after each generation
  int64_t evaluations = 0;
};

// Seeded and reproducible: the same problem and options give the same plan. Never assigns a job to a
// GPU it does not fit, nor a gang to a block that can_start refuses.
GaResult genetic(const Problem& problem, Objective objective, const GaOptions& options);

// Baselines. FIFO first-fit: in arrival order, each job on the GPU (gang: the block) that frees first among
// those it fits. LPT: longest job first (by its shortest time on any fitting type), each on the GPU (block)
// where it ends earliest. Random: a fitting GPU and an order drawn at random. Heterogeneity-agnostic: LPT planned as
// if every GPU ran a job in its mean time over the types it fits (the plan is then played with the real
// times).
Plan fifo_first_fit(const Problem& problem);
Plan greedy_lpt(const Problem& problem);
Plan random_plan(const Problem& problem, uint64_t seed);
Plan heterogeneity_agnostic(const Problem& problem);

inline constexpr int64_t kExactMaxJobs = 10;

// The exact optimum of `objective` for up to kExactMaxJobs jobs: for each GPU and set of jobs the best
// order on that GPU (makespan: by arrival; mean JCT: every permutation; cost: any), then the best
// partition of the jobs among the GPUs by dynamic programming over subsets. Throws InputError above
// kExactMaxJobs jobs, and for a job of several GPUs (gangs are not solved exactly).
struct ExactResult {
  Plan plan;
  Timeline timeline;
  double value = 0;  // the objective's optimum
};
ExactResult exact(const Problem& problem, Objective objective);

}  // namespace dnncast::decide::sched
