// How long the graph layer takes for one ResNet-50: build + shape inference (goal: under 1 ms),
// shape inference alone, every node's cost, the architecture hash, graph JSON write and read;
// and one synthetic network. Run:
//   build/graph_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "graph/op_registry.h"
#include "import/graph_json.h"
#include "models/synthetic.h"
#include "models/zoo.h"

namespace {

using namespace dnncast;

Graph resnet50() { return models::build_zoo_model("resnet50", models::ModelSpec{}); }

// GraphBuilder infers each node's shape as it is added, and finish() validates (infers again).
void BM_BuildAndInferResnet50(benchmark::State& state) {
  for (auto _ : state) {
    Graph graph = resnet50();
    benchmark::DoNotOptimize(graph.size());
  }
}
BENCHMARK(BM_BuildAndInferResnet50)->Unit(benchmark::kMicrosecond);

void BM_InferShapesResnet50(benchmark::State& state) {
  Graph graph = resnet50();
  for (auto _ : state) {
    graph.infer_shapes();
    benchmark::DoNotOptimize(graph.nodes().back().shape.dims.data());
  }
}
BENCHMARK(BM_InferShapesResnet50)->Unit(benchmark::kMicrosecond);

void BM_NodeCostsResnet50(benchmark::State& state) {
  Graph graph = resnet50();
  for (auto _ : state) {
    int64_t flops = 0;
    for (int index = 0; index < graph.size(); ++index) flops += node_cost(graph, index).flops_bwd;
    benchmark::DoNotOptimize(flops);
  }
}
BENCHMARK(BM_NodeCostsResnet50)->Unit(benchmark::kMicrosecond);

void BM_ArchitectureHashResnet50(benchmark::State& state) {
  Graph graph = resnet50();
  for (auto _ : state) benchmark::DoNotOptimize(graph.architecture_hash());
}
BENCHMARK(BM_ArchitectureHashResnet50)->Unit(benchmark::kMicrosecond);

void BM_WriteJsonResnet50(benchmark::State& state) {
  Graph graph = resnet50();
  for (auto _ : state) benchmark::DoNotOptimize(import::write_graph_json(graph));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * import::write_graph_json(graph).size()));
}
BENCHMARK(BM_WriteJsonResnet50)->Unit(benchmark::kMicrosecond);

// Parsing, topological sort, shape inference and the declared-shape check.
void BM_ReadJsonResnet50(benchmark::State& state) {
  std::string text = import::write_graph_json(resnet50());
  for (auto _ : state) {
    Graph graph = import::read_graph_json(text, "resnet50.json");
    benchmark::DoNotOptimize(graph.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ReadJsonResnet50)->Unit(benchmark::kMicrosecond);

// A different seed each iteration: plan, budget fitting (reference builds), final build.
void BM_MakeSynthetic(benchmark::State& state) {
  uint64_t seed = 0;
  models::ModelSpec spec;
  spec.input = std::vector<int64_t>{3, 64, 64};
  for (auto _ : state) {
    Graph graph = models::make_synthetic(seed++ % 1000, spec);
    benchmark::DoNotOptimize(graph.size());
  }
}
BENCHMARK(BM_MakeSynthetic)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
