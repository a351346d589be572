// Scheduling speed (issue 21's goal: 200 jobs on 32 GPUs in under 2 s). ScheduleEndToEnd is what
// `dnncast schedule` does after reading its files: every distinct (model, configuration, GPU type)
// forecast once (a fresh cache each iteration), then the genetic algorithm (100 generations x 64) and
// the baselines. Genetic times the genetic algorithm alone on the same problem.
#include <benchmark/benchmark.h>

#include "decide/schedule.h"
#include "decide/schedule_jobs.h"
#include "decide/schedule_study.h"
#include "hardware/catalogue.h"

namespace {

using namespace dnncast;

void ScheduleEndToEnd(benchmark::State& state) {
  const decide::ScheduleRequest request = decide::generate_instance(2026, state.range(0), state.range(1), 4);
  const hardware::Catalogue& catalogue = hardware::shipped_catalogue();
  const gpu::GpuCalibration calibration = gpu::load_gpu_calibration();
  for (auto _ : state) {
    decide::ForecastCache cache(catalogue, calibration);
    const decide::Schedule schedule = decide::schedule(request, cache);
    benchmark::DoNotOptimize(schedule.genetic.timeline.makespan_s);
    state.counters["forecast_s"] = schedule.forecast_s;
    state.counters["ga_s"] = schedule.solve_s;
    state.counters["forecasts"] = static_cast<double>(schedule.cache_misses);
  }
}
BENCHMARK(ScheduleEndToEnd)->Args({200, 32})->Args({20, 4})->Unit(benchmark::kMillisecond)->UseRealTime();

void Genetic(benchmark::State& state) {
  const decide::ScheduleRequest request = decide::generate_instance(2026, state.range(0), state.range(1), 4);
  decide::ForecastCache cache(hardware::shipped_catalogue(), gpu::load_gpu_calibration());
  const decide::Schedule schedule = decide::schedule(request, cache);
  for (auto _ : state) {
    const decide::sched::GaResult result =
        decide::sched::genetic(schedule.problem, decide::sched::Objective::Makespan, decide::sched::GaOptions{});
    benchmark::DoNotOptimize(result.timeline.makespan_s);
  }
}
BENCHMARK(Genetic)->Args({200, 32})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
