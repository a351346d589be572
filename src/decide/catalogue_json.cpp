// The catalogue's answers as the CLI's --json prints them (catalogue_json.h).
#include "decide/catalogue_json.h"

#include <optional>

#include "gpu/kernel_model.h"

namespace dnncast::decide {

namespace {

using nlohmann::ordered_json;

template <typename T>
ordered_json or_null(const std::optional<T>& value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

ordered_json row_json(const CompareRow& row) {
  return {{"provider", row.provider},
          {"instance_type", row.instance_type},
          {"gpu", row.gpu},
          {"gpu_name", row.gpu_name},
          {"gpu_count", row.gpu_count},
          {"price_usd_per_hour", row.price_usd_per_hour},
          {"time_ms", row.time_ms},
          {"time_ms_low", row.time_ms_low},
          {"time_ms_high", row.time_ms_high},
          {"compute_ms", row.compute_ms},
          {"sharding", row.sharding.empty() ? ordered_json(nullptr) : ordered_json(row.sharding)},
          {"link", row.link.empty() ? ordered_json(nullptr) : ordered_json(row.link)},
          {"collective_bytes", row.collective_bytes},
          {"collective_ms", or_null(row.collective_ms)},
          {"epoch_s", or_null(row.epoch_s)},
          {"iterations", row.iterations},
          {"total_hours", row.total_hours},
          {"total_hours_low", row.total_hours_low},
          {"total_hours_high", row.total_hours_high},
          {"total_usd", row.total_usd},
          {"total_usd_low", row.total_usd_low},
          {"total_usd_high", row.total_usd_high},
          {"required_bytes", or_null(row.required_bytes)},
          {"gpu_memory_bytes", or_null(row.gpu_memory_bytes)},
          {"fits", or_null(row.fits)},
          {"max_batch", or_null(row.max_batch)},
          {"basis", row.basis},
          {"on_pareto_front", row.on_pareto_front}};
}

}  // namespace

ordered_json to_json(const Comparison& comparison) {
  ordered_json rows = ordered_json::array();
  for (const CompareRow& row : comparison.rows) rows.push_back(row_json(row));
  ordered_json left_out = ordered_json::array();
  for (const LeftOutInstance& left : comparison.left_out)
    left_out.push_back({{"provider", left.provider},
                        {"instance_type", left.instance_type},
                        {"gpu", left.gpu},
                        {"reason", left.reason}});
  return {{"model", comparison.model},
          {"graph", comparison.graph},
          {"batch", comparison.batch},
          {"input", comparison.input},
          {"optimizer", name(comparison.optimizer)},
          {"precision", name(comparison.precision)},
          {"framework", name(comparison.framework)},
          {"epochs", comparison.epochs},
          {"epoch_samples", comparison.epoch_samples},
          {"iterations_without_epochs", kIterationsWithoutEpochs},
          {"spot", comparison.spot},
          {"multi_gpu", comparison.multi_gpu},
          {"sharding", comparison.sharding.empty() ? ordered_json(nullptr) : ordered_json(comparison.sharding)},
          {"overlap",
           comparison.multi_gpu ? ordered_json("none: collectives after compute (a model)") : ordered_json(nullptr)},
          {"fits_nowhere", comparison.fits_nowhere},
          {"required_bytes", or_null(comparison.required_bytes)},
          {"largest_memory_bytes", or_null(comparison.largest_memory_bytes)},
          {"bases", comparison.bases},
          {"notes", comparison.notes},
          {"rows", rows},
          {"left_out", left_out}};
}

ordered_json to_json(const hardware::GpuSpec& gpu) {
  ordered_json references = ordered_json::array();
  for (const hardware::SpecsReference& reference : gpu.from_gpu_specs)
    references.push_back({{"gpu", reference.gpu}, {"source", reference.source}, {"fields", reference.fields}});
  return {{"name", gpu.name},
          {"aliases", gpu.aliases},
          {"vendor", gpu.vendor},
          {"full_name", gpu.full_name},
          {"architecture", gpu.architecture},
          {"fp32_tflops", or_null(gpu.fp32_tflops)},
          {"tf32_tensor_tflops", or_null(gpu.tf32_tensor_tflops)},
          {"fp16_tensor_tflops", or_null(gpu.fp16_tensor_tflops)},
          {"bf16_tensor_tflops", or_null(gpu.bf16_tensor_tflops)},
          {"memory_gib", or_null(gpu.memory_gib)},
          {"bandwidth_gbs", or_null(gpu.bandwidth_gbs)},
          {"sm_count", or_null(gpu.sm_count)},
          {"l2_mib", or_null(gpu.l2_mib)},
          {"tdp_w", or_null(gpu.tdp_w)},
          // A GPU of NeuSight's test set: no fit dnncast ships read a measurement of it, so its forecasts are blind.
          {"neusight_test_gpu", gpu::is_held_out_test_gpu(gpu.name)},
          {"from_gpu_specs", references},
          {"source_url", gpu.source_url},
          {"date", gpu.date},
          {"notes", gpu.notes},
          {"file", gpu.file},
          {"line", gpu.line}};
}

ordered_json to_json(const hardware::CloudInstance& instance) {
  return {{"provider", instance.provider},
          {"instance_type", instance.instance_type},
          {"gpu", instance.gpu},
          {"gpu_listed", instance.gpu_listed},
          {"gpu_count", instance.gpu_count},
          {"gpu_memory_gib", or_null(instance.gpu_memory_gib)},
          {"vcpus", or_null(instance.vcpus)},
          {"memory_gib", or_null(instance.memory_gib)},
          {"price_usd_per_hour", instance.price_usd_per_hour},
          {"spot_price_usd_per_hour", or_null(instance.spot_price_usd_per_hour)},
          {"region", instance.region},
          {"source_commit", instance.source_commit}};
}

ordered_json devices_json(const hardware::Catalogue& catalogue, bool instances) {
  ordered_json out{{"files", catalogue.files()}};
  ordered_json rows = ordered_json::array();
  if (instances) {
    for (const hardware::CloudInstance& instance : catalogue.instances()) rows.push_back(to_json(instance));
    out["instances"] = rows;
  } else {
    for (const hardware::GpuSpec& gpu : catalogue.gpus()) rows.push_back(to_json(gpu));
    out["gpus"] = rows;
  }
  return out;
}

}  // namespace dnncast::decide
