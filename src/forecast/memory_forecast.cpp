// Simulated memory of training one model (forecast.h): the simulation, the ISA it follows and
// whether measured runs checked it, whether it fits, and the largest batch that does.
#include <algorithm>
#include <limits>

#include "core/error.h"
#include "forecast/forecast.h"
#include "gpu/parallel.h"
#include "graph/op_registry.h"
#include "hardware/catalogue.h"
#include "import/model_source.h"
#include "memory/onednn_scratchpad.h"
#include "memory/simulator.h"

namespace dnncast::forecast {

MemoryForecast forecast_memory(const MemoryRequest& request) {
  MemoryForecast result;
  result.model = request.model.name;
  result.batch = request.model.spec.batch;
  result.config = request.config;
  const bool parallel = request.parallel.gpus() > 1;
  if (parallel && result.batch % request.parallel.micro_batches != 0)
    throw InputError("batch " + std::to_string(result.batch) + " is not a multiple of the micro-batches " +
                     std::to_string(request.parallel.micro_batches));
  // Several GPUs under a parallel plan: one micro-batch of one replica is simulated.
  result.graph =
      parallel ? request.model.build_at_batch(result.batch / request.parallel.micro_batches) : request.model.build();
  result.report = memory::simulate_memory(result.graph, request.config);
  if (request.config.device == Device::Cpu &&
      (request.config.precision == Precision::Bf16 || request.config.precision == Precision::Bf16Pure))
    result.simulation_notes.push_back(memory::onednn_scratchpad_note(memory::resolve_isa(request.config.isa)));
  for (int index = 0; index < result.graph.size(); ++index) result.parameters += node_cost(result.graph, index).params;
  result.trainable_parameters = trainable_parameter_count(result.graph);
  const bool sharded = request.sharding.strategy != memory::Sharding::None;
  // What must fit on one device: the simulated step's, or one GPU's share of a sharded one.
  auto required_of = [&](const Graph& graph, const memory::MemoryReport& report) {
    return sharded ? memory::shard_memory(report, graph, request.sharding, request.config).required_bytes
                   : report.required_bytes;
  };
  if (parallel) {
    result.parallel = gpu::parallel_memory(result.report, result.graph, request.parallel);
    result.parallel_plan = request.parallel;
  }
  if (sharded) {
    result.sharded = memory::shard_memory(result.report, result.graph, request.sharding, request.config);
    if (request.device.gpu)
      gpu::time_collectives(result.sharded->collectives, *request.device.gpu, request.sharding.gpus_per_node);
  }
  const int64_t required = parallel  ? result.parallel->required_bytes
                           : sharded ? result.sharded->required_bytes
                                     : result.report.required_bytes;
  result.fits_limit = request.fits_limit;
  result.fits = request.fits_limit > 0 && required <= request.fits_limit;
  result.batch_limit = request.batch_limit;
  if (request.device.gpu) {
    result.gpu = request.device.gpu->name;
    result.gpu_name = request.device.gpu->full_name;
    result.link = request.device.gpu->link;
    result.link_gbs = request.device.gpu->link_gbs.value_or(0);
  }
  result.gpu_memory = request.gpu_memory;
  result.context_measured = request.context_measured;
  if (request.gpu_memory)
    result.memory_notes =
        gpu::gpu_memory_notes(*request.gpu_memory, result.gpu, request.context_measured, result.report.cudnn.loaded);
  memory::MemoryConfig search = request.config;
  search.keep_timeline = false;
  search.keep_events = false;
  auto required_at = [&](const Graph& graph) {
    const memory::MemoryReport report = memory::simulate_memory(graph, search);
    return parallel ? gpu::parallel_memory(report, graph, request.parallel).required_bytes : required_of(graph, report);
  };
  if (request.batch_limit > 0) {
    // The requested batch was simulated above: the search takes its bytes rather than simulating it again. Each
    // other batch resizes one copy of the graph rather than building it anew (ModelSource::rebatch). Under a
    // parallel plan the search is over the micro-batch (the graph simulated), each replica's batch that many
    // micro-batches of it.
    const int64_t micro_batches = parallel ? request.parallel.micro_batches : 1;
    const int64_t simulated_batch = result.batch / micro_batches;
    Graph resized = result.graph;
    result.max_batch = memory::largest_fitting(
        [&](int64_t candidate) {
          if (candidate == simulated_batch) return required;
          request.model.rebatch(resized, candidate);
          return required_at(resized);
        },
        request.batch_limit, std::max<int64_t>(1, request.batch_cap / micro_batches),
        parallel ? 0 : memory::bytes_per_sample(result.report, result.batch));
    result.max_batch.batch *= micro_batches;
  }
  const bool sequence_model =
      !result.graph.inputs().empty() && result.graph.node(result.graph.inputs().front()).dtype == DType::I64;
  if (sequence_model) result.seq = result.graph.node(result.graph.inputs().front()).shape.dims.back();
  if (request.seq_limit > 0) {
    if (!sequence_model)
      throw InputError("the longest sequence that fits: " + request.model.name +
                       " is not a sequence model (its input is not token ids)");
    result.seq_limit = request.seq_limit;
    result.max_seq = memory::largest_fitting(
        [&](int64_t candidate) {
          models::ModelSpec candidate_spec = request.model.spec;
          candidate_spec.seq_len = candidate;
          try {
            return required_at(request.model.build(candidate_spec));
          } catch (const InputError& error) {  // past what the model takes (its learned positions)
            if (result.max_seq_refused.empty()) result.max_seq_refused = error.what();
            return std::numeric_limits<int64_t>::max();
          }
        },
        request.seq_limit, request.seq_cap);
  }

  // Which ISA's kernels and allocations were simulated, and whether measured runs check them.
  result.simulated_isa = memory::resolve_isa(request.config.isa);
  result.isa_source = request.config.isa != hardware::CpuIsa::Unknown
                          ? "as --isa asked"
                          : "this host's oneDNN dispatch, after ONEDNN_MAX_CPU_ISA";
  if (result.report.device == Device::Cpu)
    result.isa_match = simulator_isa_match(result.simulated_isa, request.measure_command);

  // The input's shape without the batch dimension (C x H x W, or the sequence length).
  if (!result.graph.inputs().empty()) {
    std::vector<int64_t> dims = result.graph.node(result.graph.inputs().front()).shape.dims;
    if (dims.size() > 1) dims.erase(dims.begin());
    result.input = TensorShape(dims).to_string();
  }
  return result;
}

}  // namespace dnncast::forecast
