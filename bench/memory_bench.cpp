// Cost of the memory simulator: one full simulation (setup, two training iterations, allocator
// model) of a built graph. Goal: resnet50 under 1 ms, so that --max-batch (a few dozen
// simulations) and the scheduler's fit checks stay interactive. Run: build/memory_bench.
#include <benchmark/benchmark.h>

#include "memory/simulator.h"
#include "models/zoo.h"

namespace {

using dnncast::Graph;
using dnncast::models::ModelSpec;

Graph zoo_graph(const char* name, int64_t batch) {
  ModelSpec spec;
  spec.batch = batch;
  return dnncast::models::build_zoo_model(name, spec);
}

void simulate(benchmark::State& state, const char* model, const char* device) {
  Graph graph = zoo_graph(model, state.range(0));
  dnncast::memory::MemoryConfig config;
  config.device = dnncast::parse_device(device);
  int64_t peak = 0;
  for (auto _ : state) {
    dnncast::memory::MemoryReport report = dnncast::memory::simulate_memory(graph, config);
    peak = report.peak_bytes;
    benchmark::DoNotOptimize(peak);
  }
  state.counters["peak_MiB"] = static_cast<double>(peak) / (1 << 20);
}

void BM_SimulateResnet50Cpu(benchmark::State& state) { simulate(state, "resnet50", "cpu"); }
void BM_SimulateResnet50Cuda(benchmark::State& state) { simulate(state, "resnet50", "cuda"); }
void BM_SimulateDensenet121Cpu(benchmark::State& state) { simulate(state, "densenet121", "cpu"); }

// --max-batch as the CLI runs it: graph construction included, against 24 GiB.
void BM_MaxBatchResnet50(benchmark::State& state) {
  dnncast::memory::MemoryConfig config;
  int64_t best = 0;
  for (auto _ : state) {
    dnncast::memory::MaxBatchResult result = dnncast::memory::max_batch(
        [](int64_t batch) { return zoo_graph("resnet50", batch); }, config, int64_t{24} << 30);
    best = result.batch;
    benchmark::DoNotOptimize(best);
  }
  state.counters["batch"] = static_cast<double>(best);
}

}  // namespace

BENCHMARK(BM_SimulateResnet50Cpu)->Arg(1)->Arg(32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SimulateResnet50Cuda)->Arg(32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SimulateDensenet121Cpu)->Arg(32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaxBatchResnet50)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
