// ONNX reader (src/import/onnx*.cpp): bytes as a ModelProto, with and without --allow-unknown, and
// what consumes the graph (per-node costs, features, the memory simulator), through to the JSON `inspect` and
// `memory` print.
#include <cstdint>

#include "features/featurizer.h"
#include "forecast/forecast.h"
#include "forecast/forecast_json.h"
#include "fuzz_common.h"
#include "graph/op_registry.h"
#include "import/onnx.h"
#include "memory/simulator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes = dnncast::fuzz::text_of(data, size);
  for (bool allow_unknown : {false, true}) {
    dnncast::fuzz::run_one([&] {
      dnncast::import::OnnxOptions options;
      options.allow_unknown = allow_unknown;
      options.batch = 2;
      dnncast::Graph graph = dnncast::import::read_onnx(bytes, "fuzz.onnx", options);
      for (int index = 0; index < graph.size(); ++index) {
        dnncast::node_cost(graph, index);
        dnncast::node_kind(graph, index);
      }
      dnncast::features::graph_features(graph);
      dnncast::memory::MemoryConfig config;
      config.isa = dnncast::hardware::CpuIsa::Avx2;
      dnncast::memory::simulate_memory(graph, config);
      // The CLI's path out (issue 37): `inspect --json` and `memory --json` of the graph, printed as they print
      // it (an invalid UTF-8 name once made that an internal error).
      dnncast::forecast::to_json(dnncast::forecast::inspect(graph)).dump(1);
      dnncast::forecast::MemoryRequest request;
      request.model.name = "fuzz.onnx";
      request.model.spec.batch = 2;
      request.config = config;
      request.model.builder = [&](const dnncast::models::ModelSpec&) { return graph; };
      dnncast::forecast::to_json(dnncast::forecast::forecast_memory(request)).dump(1);
    });
  }
  return 0;
}
