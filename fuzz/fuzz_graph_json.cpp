// Graph JSON reader (src/import/graph_json) and what consumes a graph: per-node costs and kinds
// (inspect), the featurizer (predict) and the memory simulator (memory), under each optimizer.
#include <cstdint>

#include "features/featurizer.h"
#include "forecast/forecast.h"
#include "forecast/forecast_json.h"
#include "fuzz_common.h"
#include "graph/op_registry.h"
#include "import/graph_json.h"
#include "memory/simulator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return dnncast::fuzz::run_one([&] {
    dnncast::Graph graph = dnncast::import::read_graph_json(dnncast::fuzz::text_of(data, size), "fuzz.json");
    for (int index = 0; index < graph.size(); ++index) {
      dnncast::node_cost(graph, index);
      dnncast::node_kind(graph, index);
    }
    graph.architecture_hash();
    dnncast::import::write_graph_json(graph);
    dnncast::features::graph_features(graph);
    for (dnncast::Optimizer optimizer : {dnncast::Optimizer::Sgd, dnncast::Optimizer::Adam}) {
      dnncast::memory::MemoryConfig config;
      config.optimizer = optimizer;
      config.isa = dnncast::hardware::CpuIsa::Avx2;
      dnncast::memory::simulate_memory(graph, config);
    }
    // The CLI's path out (issue 37): `inspect --json` as it prints it.
    dnncast::forecast::to_json(dnncast::forecast::inspect(graph)).dump(1);
  });
}
