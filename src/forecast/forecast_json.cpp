#include "forecast/forecast_json.h"

#include <limits>

#include "graph/checkpoint.h"
#include "hardware/cpu_conv.h"

namespace dnncast::forecast {

using nlohmann::json;

json to_json(const Forecast& forecast) {
  json result{{"model", forecast.model},
              {"graph", forecast.graph},
              {"batch", forecast.batch},
              {"input", forecast.input},
              {"optimizer", name(forecast.optimizer)},
              {"precision", name(forecast.precision)},
              {"threads", forecast.threads},
              {"time_ms", forecast.time_ms},
              {"time_ms_low", forecast.time_ms_low},
              {"time_ms_high", forecast.time_ms_high},
              {"epoch_s", nullptr},
              {"peak_bytes", nullptr},
              {"predictor", forecast.predictor},
              {"learner", forecast.learner},
              {"env", forecast.env},
              {"env_hash", forecast.env_hash},
              {"feature_version", forecast.feature_version}};
  if (forecast.host_match) result["host_match"] = forecast.host_match->to_json();
  if (forecast.extrapolated_from > 0) result["extrapolated_from_batch"] = forecast.extrapolated_from;
  if (!forecast.time_model.empty()) result["time_model"] = forecast.time_model;
  if (!forecast.calibration.empty()) result["calibration"] = forecast.calibration;
  if (forecast.epoch_s) {
    result["epoch_s"] = *forecast.epoch_s;
    result["epoch_iterations"] = forecast.epoch_iterations;
  }
  if (!forecast.memory_isa.empty()) result["memory_isa"] = forecast.memory_isa;
  if (forecast.peak_bytes) {
    result["peak_bytes"] = *forecast.peak_bytes;
    result["peak_bytes_low"] = *forecast.peak_bytes_low;
    result["peak_bytes_high"] = *forecast.peak_bytes_high;
    result["memory_source"] = forecast.memory_source;
  }
  if (forecast.peak_total_bytes) result["peak_total_bytes"] = *forecast.peak_total_bytes;
  result["notes"] = forecast.notes;
  return result;
}

json to_json(const memory::MemoryBreakdown& b) {
  return {{"parameter_bytes", b.parameter_bytes},   {"buffer_and_input_bytes", b.state_bytes},
          {"gradient_bytes", b.gradient_bytes},     {"optimizer_state_bytes", b.optimizer_state_bytes},
          {"activation_bytes", b.activation_bytes}, {"transient_bytes", b.transient_bytes}};
}

namespace {

json timeline_json(const MemoryForecast& forecast) {
  const memory::MemoryReport& report = forecast.report;
  json entries = json::array();
  for (const memory::TimelineEntry& entry : report.timeline)
    entries.push_back({{"iteration", entry.iteration},
                       {"phase", memory::phase_name(entry.phase)},
                       {"node", entry.node >= 0 ? json(forecast.graph.node(entry.node).name) : json(nullptr)},
                       {"start_bytes", entry.start_bytes - report.baseline_bytes},
                       {"max_bytes", entry.max_bytes - report.baseline_bytes},
                       {"end_bytes", entry.end_bytes - report.baseline_bytes}});
  return entries;
}

nlohmann::ordered_json memory_json(const gpu::ParallelMemory& memory) {
  return {{"stage", memory.stage},
          {"in_flight", memory.in_flight},
          {"parameter_bytes", memory.parameter_bytes},
          {"gradient_bytes", memory.gradient_bytes},
          {"optimizer_state_bytes", memory.optimizer_state_bytes},
          {"activation_bytes", memory.activation_bytes},
          {"bucket_bytes", memory.bucket_bytes},
          {"tensor_bytes", memory.tensor_bytes},
          {"required_bytes", memory.required_bytes}};
}

}  // namespace

json to_json(const MemoryForecast& forecast) {
  const memory::MemoryReport& report = forecast.report;
  json doc = {{"model", forecast.model},
              {"graph_hash", forecast.graph.architecture_hash()},
              {"config",
               {{"batch", forecast.batch},
                {"input", forecast.input},
                {"optimizer", name(forecast.config.optimizer)},
                {"precision", name(forecast.config.precision)},
                {"device", name(report.device)},
                {"threads", forecast.config.threads}}},
              {"baseline_bytes", report.baseline_bytes},
              {"peak_bytes", report.peak_bytes},
              {"peak_total_bytes", report.peak_total_bytes},
              {"required_bytes", report.required_bytes},
              {"parameters", forecast.parameters},
              {"trainable_parameters", forecast.trainable_parameters},
              {"breakdown", to_json(report.at_peak)},
              {"peak",
               {{"iteration", report.peak_iteration},
                {"phase", memory::phase_name(report.peak_phase)},
                {"node", report.peak_node_name.empty() ? json(nullptr) : json(report.peak_node_name)},
                {"allocation", report.peak_what}}}};
  // Issue 35's training options, only where given (the answers without them stay as they were).
  if (!checkpoint_segments(forecast.graph).empty()) doc["config"]["checkpointing"] = true;
  if (forecast.config.grad_accum > 1) doc["config"]["grad_accum"] = forecast.config.grad_accum;
  if (report.device == Device::Cpu) {
    doc["isa"] = {{"simulated", hardware::isa_name(forecast.simulated_isa)},
                  {"source", forecast.isa_source},
                  {"rules_checked_on", hardware::conv_rules_evidence(forecast.simulated_isa)}};
    doc["host_match"] = forecast.isa_match->to_json();
  }
  if (report.device == Device::Cuda)
    doc["cuda"] = {{"peak_allocated_bytes", report.peak_allocated_bytes},
                   {"baseline_allocated_bytes", report.baseline_allocated_bytes},
                   {"peak_reserved_bytes", report.peak_reserved_bytes},
                   {"context_bytes", report.cuda_context_bytes},
                   {"verified", false}};
  if (report.device == Device::Cuda)  // what nvidia-smi would show: the parts of required_bytes
    doc["cuda"]["parts"] = {
        {"tensor_bytes", report.cuda.tensor_bytes},       {"allocator_reserve_bytes", report.cuda.reserve_bytes},
        {"workspace_bytes", report.cuda.workspace_bytes}, {"cudnn_workspace_bytes", report.cuda.cudnn_workspace_bytes},
        {"context_bytes", report.cuda.context_bytes},     {"cudnn_context_bytes", report.cuda.cudnn_context_bytes},
        {"total_bytes", report.cuda.total_bytes()},       {"margin_bytes", report.cuda.margin_bytes},
        {"upper_bytes", report.cuda.upper_bytes()},       {"paged_optimizer_bytes", report.cuda.paged_bytes}};
  if (forecast.gpu_memory)
    doc["cuda"]["calibration"] = {{"file", forecast.gpu_memory->source},
                                  {"fitted_context_bytes", forecast.gpu_memory->context_bytes},
                                  {"reserve_fraction", forecast.gpu_memory->reserve_fraction},
                                  {"workspace_bytes", forecast.gpu_memory->workspace_bytes},
                                  {"cudnn_context_bytes", forecast.gpu_memory->cudnn_context_bytes},
                                  {"conv_workspace_fraction", forecast.gpu_memory->conv_workspace_fraction},
                                  {"upper_margin", forecast.gpu_memory->upper_margin},
                                  {"upper_quantile", forecast.gpu_memory->upper_quantile},
                                  {"fitted_on", forecast.gpu_memory->fitted_on},
                                  {"context", forecast.context_measured ? "measured (given)" : "fitted"},
                                  {"notes", forecast.memory_notes}};
  if (!forecast.gpu.empty()) doc["gpu"] = {{"name", forecast.gpu}, {"full_name", forecast.gpu_name}};
  if (forecast.fits_limit > 0) doc["fits"] = {{"limit_bytes", forecast.fits_limit}, {"fits", forecast.fits}};
  if (forecast.batch_limit > 0)
    doc["max_batch"] = {{"limit_bytes", forecast.batch_limit},
                        {"batch", forecast.max_batch.batch},
                        {"required_bytes", forecast.max_batch.required_bytes},
                        {"next_required_bytes", forecast.max_batch.next_required_bytes},
                        {"simulations", forecast.max_batch.simulations}};
  if (forecast.seq_limit > 0) {
    doc["max_seq"] = {{"limit_bytes", forecast.seq_limit},
                      {"seq", forecast.max_seq.batch},
                      {"required_bytes", forecast.max_seq.required_bytes},
                      {"simulations", forecast.max_seq.simulations}};
    const bool refused = !forecast.max_seq_refused.empty() &&
                         forecast.max_seq.next_required_bytes == std::numeric_limits<int64_t>::max();
    doc["max_seq"]["next_required_bytes"] = refused ? json(nullptr) : json(forecast.max_seq.next_required_bytes);
    if (refused) doc["max_seq"]["longer_refused"] = forecast.max_seq_refused;
  }
  if (forecast.sharded) doc["sharding"] = to_json(*forecast.sharded, forecast.link, forecast.link_gbs);
  if (forecast.parallel) {
    doc["parallel"] = memory_json(*forecast.parallel);
    doc["parallel"]["plan"] = {{"gpus", forecast.parallel_plan.gpus()},
                               {"dp", forecast.parallel_plan.dp},
                               {"tp", forecast.parallel_plan.tp},
                               {"pp", forecast.parallel_plan.pp},
                               {"micro_batches", forecast.parallel_plan.micro_batches}};
  }
  if (forecast.config.keep_timeline) doc["timeline"] = timeline_json(forecast);
  if (!forecast.graph.notes.empty()) doc["import_notes"] = forecast.graph.notes;
  if (!forecast.simulation_notes.empty()) doc["simulation_notes"] = forecast.simulation_notes;
  return doc;
}

json to_json(const memory::ShardedMemory& sharded, const std::string& link, double link_gbs) {
  json collectives = json::array();
  double seconds = 0;
  bool all_timed = true;
  for (const memory::Collective& collective : sharded.collectives) {
    seconds += collective.seconds.value_or(0);
    all_timed = all_timed && collective.seconds.has_value();
    collectives.push_back({{"what", collective.what},
                           {"bytes_per_gpu", collective.bytes},
                           {"buffer_bytes", collective.buffer_bytes},
                           {"gpus", collective.gpus},
                           {"crosses_nodes", collective.crosses_nodes},
                           {"ms", collective.seconds ? json(1e3 * *collective.seconds) : json(nullptr)}});
  }
  return {
      {"strategy", memory::sharding_name(sharded.plan.strategy)},
      {"gpus", sharded.plan.gpus},
      {"gpus_per_node", sharded.plan.gpus_per_node},
      {"shard_degree", sharded.shard_degree},
      {"per_gpu",
       {{"parameter_bytes", sharded.parameter_bytes},
        {"gradient_bytes", sharded.gradient_bytes},
        {"optimizer_state_bytes", sharded.optimizer_state_bytes},
        {"activation_and_other_bytes", sharded.other_bytes},
        {"gathered_bytes", sharded.gathered_bytes},
        {"bucket_bytes", sharded.bucket_bytes},
        {"tensor_bytes", sharded.tensor_bytes},
        {"required_bytes", sharded.required_bytes}}},
      {"link", link.empty() ? json(nullptr) : json(link)},
      {"link_gbs_per_direction", link_gbs > 0 ? json(link_gbs) : json(nullptr)},
      {"collectives", collectives},
      {"collectives_ms", all_timed && !collectives.empty() ? json(1e3 * seconds) : json(nullptr)},
      {"collective_model", "data/hardware/collectives.csv (gpu/collectives.h): NCCL's ring, no overlap with compute"},
      {"model", "a model, not a measurement (memory/sharding.h)"},
      {"notes", sharded.notes}};
}

namespace {

json layer_json(const LayerRow& row, bool gpu) {
  json doc = {{"name", row.name},
              {"op", row.op},
              {"kind", row.kind},
              {"shape", row.shape.dims},
              {"params", row.params},
              {"macs", row.macs},
              {"flops_fwd", row.flops_fwd},
              {"flops_bwd", row.flops_bwd},
              {"activation_bytes", row.activation_bytes},
              {"saved_bytes", row.saved_bytes}};
  if (gpu) {
    doc["gpu_forward_ms"] = row.gpu_forward_ms;
    doc["gpu_backward_ms"] = row.gpu_backward_ms;
    doc["gpu_recompute_ms"] = row.gpu_recompute_ms;
    doc["gpu_kind"] = row.gpu_kind;
    json kernels = {{"forward", json::array()}, {"backward", json::array()}};
    for (const auto& [phase, list] :
         {std::pair{"forward", &row.gpu_forward_kernels}, std::pair{"backward", &row.gpu_backward_kernels}})
      for (const LayerRow::Kernel& kernel : *list)
        kernels[phase].push_back(
            {{"family", kernel.family}, {"flops", kernel.flops}, {"bytes", kernel.bytes}, {"ms", kernel.ms}});
    doc["gpu_kernels"] = kernels;
  }
  return doc;
}

}  // namespace

json to_json(const Inspection& inspection) {
  json layers = json::array();
  const bool gpu = !inspection.gpu.empty();
  for (const LayerRow& row : inspection.layers) layers.push_back(layer_json(row, gpu));
  const LayerRow& total = inspection.total;
  json doc = {{"model", inspection.model},
              {"family", inspection.family},
              {"hash", inspection.hash},
              {"batch", inspection.batch},
              {"input", inspection.input},
              {"params", total.params},
              {"active_params", inspection.active_params},
              {"param_bytes", total.param_bytes},
              {"buffers", total.buffers},
              {"macs", total.macs},
              {"flops_fwd", total.flops_fwd},
              {"flops_bwd", total.flops_bwd},
              {"activation_bytes", total.activation_bytes},
              {"saved_bytes", total.saved_bytes},
              {"saved_bytes_distinct", inspection.saved_bytes_distinct},
              {"layers", layers}};
  if (gpu) {
    doc["gpu"] = inspection.gpu;
    doc["gpu_forward_ms"] = total.gpu_forward_ms;
    doc["gpu_backward_ms"] = total.gpu_backward_ms;
    doc["gpu_recompute_ms"] = total.gpu_recompute_ms;
    for (const auto& [kind, ms] : inspection.gpu_by_kind)
      doc["gpu_by_kind_ms"][kind] = {{"forward", ms[0]}, {"backward", ms[1]}};
    doc["gpu_time_note"] =
        "fp32 kernels timed by the per-kernel model (docs/GPU.md), each at least the launch cost; the optimizer step "
        "and the per-iteration overhead are not layers (predict --device GPU adds them); gpu_backward_ms includes "
        "gpu_recompute_ms, the forward that activation checkpointing runs again";
  }
  if (!inspection.import_notes.empty()) doc["import_notes"] = inspection.import_notes;
  return doc;
}

namespace {

nlohmann::ordered_json to_json(const gpu::ParallelTiming& timing) {
  nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
  for (const gpu::CollectiveCost& collective : timing.collectives)
    collectives.push_back({{"what", collective.what},
                           {"kind", gpu::name(collective.kind)},
                           {"bytes", collective.bytes},
                           {"gpus", collective.gpus},
                           {"count", collective.count},
                           {"ms", collective.ms}});
  return {{"gpus", timing.plan.gpus()},
          {"dp", timing.plan.dp},
          {"tp", timing.plan.tp},
          {"pp", timing.plan.pp},
          {"micro_batches", timing.plan.micro_batches},
          {"gpus_per_node", timing.plan.gpus_per_node},
          {"micro_batch", timing.micro_batch},
          {"global_batch", timing.global_batch},
          {"compute_ms", timing.compute_ms},
          {"bubble_ms", timing.bubble_ms},
          {"exposed_comm_ms", timing.exposed_comm_ms},
          {"optimizer_ms", timing.optimizer_ms},
          {"links_known", timing.links_known},
          {"collectives", collectives},
          {"memory", timing.memory ? memory_json(*timing.memory) : nlohmann::ordered_json(nullptr)}};
}

}  // namespace

nlohmann::ordered_json to_json(const gpu::GpuForecast& forecast) {
  using nlohmann::ordered_json;
  auto optional = [](const auto& value) { return value ? ordered_json(*value) : ordered_json(nullptr); };
  ordered_json doc = {
      {"model", forecast.model},
      {"graph", forecast.graph},
      {"device", forecast.device},
      {"device_name", forecast.device_name},
      {"batch", forecast.batch},
      {"input", forecast.input},
      {"optimizer", name(forecast.optimizer)},
      {"precision", name(forecast.precision)},
      {"framework", name(forecast.framework)},
      {"phase", name(forecast.phase)},
      {"time_model", forecast.time_model},
      {"time_ms", forecast.time_ms},
      {"time_ms_low", forecast.time_ms_low},
      {"time_ms_high", forecast.time_ms_high},
      {"roofline_ms", forecast.roofline_ms},
      {"epoch_s", optional(forecast.epoch_s)},
      {"epoch_samples", forecast.epoch_samples},
      {"epoch_iterations", forecast.epoch_iterations},
      {"memory_forecast_bytes", optional(forecast.memory_forecast_bytes)},
      {"required_bytes", optional(forecast.required_bytes)},
      {"device_memory_bytes", optional(forecast.device_memory_bytes)},
      {"fits", optional(forecast.fits)},
      {"max_batch", optional(forecast.max_batch)},
      {"memory_source", forecast.required_bytes
                            ? "simulator (cuda caching allocator) + fitted contexts, workspaces and reserve (as "
                              "nvidia-smi shows it: memory_forecast_bytes) + the measured margin (required_bytes, "
                              "what fits is judged on; data/hardware/gpu_memory_calibration.csv)"
                            : ""},
      {"basis", forecast.basis},
      {"basis_detail", forecast.basis_detail},
      {"notes", forecast.notes}};
  if (forecast.parallel) {
    doc["roofline_ms"] = nullptr;
    doc["parallel"] = to_json(*forecast.parallel);
  }
  return doc;
}

}  // namespace dnncast::forecast
