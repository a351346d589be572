// Simulated memory of training one model (forecast.h): the simulation, the ISA it follows and
// whether measured runs checked it, whether it fits, and the largest batch that does.
#include "forecast/forecast.h"

#include "import/model_source.h"
#include "core/error.h"

namespace dnncast::apps {

MemoryForecast forecast_memory(const MemoryRequest& request) {
  MemoryForecast result;
  result.model = request.model;
  result.batch = request.spec.batch;
  result.config = request.config;
  result.graph = build_model(request.builder, request.model, request.spec);
  result.report = memory::simulate_memory(result.graph, request.config);
  result.fits_limit = request.fits_limit;
  result.fits = request.fits_limit > 0 && result.report.required_bytes <= request.fits_limit;
  result.batch_limit = request.batch_limit;
  result.gpu = request.gpu;
  result.gpu_name = request.gpu_name;
  result.gpu_memory = request.gpu_memory;
  result.context_measured = request.context_measured;
  if (request.gpu_memory) result.memory_notes = gpu_memory_notes(*request.gpu_memory, request.gpu, request.context_measured);
  if (request.batch_limit > 0) {
    memory::MemoryConfig search = request.config;
    search.keep_timeline = false;
    search.keep_events = false;
    result.max_batch = memory::max_batch(
        [&](int64_t candidate) {
          ModelSpec candidate_spec = request.spec;
          candidate_spec.batch = candidate;
          return build_model(request.builder, request.model, candidate_spec);
        },
        search, request.batch_limit, request.batch_cap);
  }

  // Which ISA's kernels and allocations were simulated, and whether measured runs check them.
  result.simulated_isa = memory::resolve_isa(request.config.isa);
  result.isa_source = request.config.isa != hardware::CpuIsa::Unknown
                          ? "as --isa asked"
                          : "this host's oneDNN dispatch, after ONEDNN_MAX_CPU_ISA";
  if (result.report.device == Device::Cpu) result.isa_match = simulator_isa_match(result.simulated_isa, request.measure_command);

  // The input's shape without the batch dimension (C x H x W, or the sequence length).
  if (!result.graph.inputs().empty()) {
    std::vector<int64_t> dims = result.graph.node(result.graph.inputs().front()).shape.dims;
    if (dims.size() > 1) dims.erase(dims.begin());
    result.input = TensorShape(dims).to_string();
  }
  return result;
}

}  // namespace dnncast::apps
