// Requests filled from the options as the CLI and the Python module take them (forecast.h).
#include <string>

#include "core/error.h"
#include "core/text.h"
#include "core/training_setup.h"
#include "core/units.h"
#include "forecast/device.h"
#include "forecast/forecast.h"
#include "gpu/gpu_forecast.h"
#include "gpu/gpu_memory.h"

namespace dnncast::forecast {

ForecastRequest make_forecast_request(const import::ModelSource& model, const ForecastOptions& options,
                                      const ForecastDevice& device, OptionStyle style) {
  ForecastRequest request;
  request.model = model;
  request.optimizer = parse_optimizer(options.optimizer, option_name("optimizer", style));
  request.precision = parse_precision(options.precision, option_name("precision", style));
  request.threads = options.threads;
  request.device = device;
  request.epoch_samples = options.epoch_samples;
  request.predictor_dir = options.predictor_dir;
  request.host_isa = options.host_isa;
  check_grad_accum(options.grad_accum, option_name("grad_accum", style));
  request.grad_accum = options.grad_accum;
  request.host_check = options.host_check;
  return request;
}

std::string memory_measure_command(const import::ModelSource& model, const MemoryOptions& options) {
  const models::ModelSpec& spec = model.spec;
  std::string command = "dnncast memory " + shell_word(model.name) + " --batch " + std::to_string(spec.batch);
  auto add = [&](const char* flag, const std::string& value) {
    command += std::string(" ") + flag + " " + shell_word(value);
  };
  if (!spec.input.empty()) add("--input", TensorShape(spec.input).to_string());
  if (spec.seq_len > 0) add("--seq", std::to_string(spec.seq_len));
  if (spec.num_classes != models::ModelSpec{}.num_classes) add("--classes", std::to_string(spec.num_classes));
  const MemoryOptions defaults;
  if (options.optimizer != defaults.optimizer) add("--optimizer", options.optimizer);
  if (options.precision != defaults.precision) add("--precision", options.precision);
  if (options.device != defaults.device) add("--device", options.device);
  if (options.threads != defaults.threads) add("--threads", std::to_string(options.threads));
  if (!options.fits.empty()) add("--fits", options.fits);
  if (!options.max_batch.empty()) add("--max-batch", options.max_batch);
  if (options.batch_cap != defaults.batch_cap) add("--batch-cap", std::to_string(options.batch_cap));
  if (!options.cuda_context.empty()) add("--cuda-context", options.cuda_context);
  if (!options.sharding.empty()) add("--sharding", options.sharding);
  if (options.gpus != defaults.gpus) add("--gpus", std::to_string(options.gpus));
  if (options.gpus_per_node != defaults.gpus_per_node) add("--gpus-per-node", std::to_string(options.gpus_per_node));
  if (!options.max_seq.empty()) add("--max-seq", options.max_seq);
  if (options.isa != hardware::CpuIsa::Unknown) add("--isa", hardware::isa_name(options.isa));
  if (options.timeline) command += " --timeline";
  if (spec.allow_unknown_ops) command += " --allow-unknown";
  if (!spec.lora.empty()) add("--lora", spec.lora);
  if (!spec.quantize.empty()) add("--quantize", spec.quantize);
  if (!spec.attention.empty()) add("--attention", spec.attention);
  if (spec.checkpointing) command += " --checkpointing";
  if (options.grad_accum != defaults.grad_accum) add("--grad-accum", std::to_string(options.grad_accum));
  if (options.paged_optimizer) command += " --paged-optimizer";
  return command + " --measure";
}

MemoryRequest make_memory_request(const import::ModelSource& model, const MemoryOptions& options, OptionStyle style) {
  MemoryRequest request;
  request.model = model;
  memory::MemoryConfig& config = request.config;
  config.optimizer = parse_optimizer(options.optimizer, option_name("optimizer", style));
  config.precision = parse_precision(options.precision, option_name("precision", style));
  check_grad_accum(options.grad_accum, option_name("grad_accum", style));
  config.grad_accum = options.grad_accum;
  // cpu, cuda, or a catalogued GPU: the CUDA allocator model with the calibrated overheads and the GPU's memory
  // size (as `predict --device GPU` simulates it, gpu/gpu_memory.h), unless --cuda-context or --fits say otherwise.
  request.device = resolve_memory_device(options.device, option_name("device", style));
  const ForecastDevice& device = request.device;
  config.device = device.kind == ForecastDevice::Kind::ThisHost ? Device::Cpu : Device::Cuda;
  if (options.paged_optimizer && config.device != Device::Cuda)
    throw InputError(option_name("paged_optimizer", style) +
                     ": paged optimizer states live in CUDA unified memory; give a GPU device (" +
                     option_name("device", style) + ")");
  config.paged_optimizer = options.paged_optimizer;
  if (device.gpu) {
    request.gpu_memory = gpu::load_gpu_memory_calibration();
    gpu::apply_gpu_memory_calibration(*request.gpu_memory, config);
    if (std::optional<int64_t> bytes = gpu::gpu_memory_bytes(*device.gpu)) request.fits_limit = *bytes;
  }
  config.threads = options.threads;
  config.isa = options.isa;
  config.keep_timeline = options.timeline;
  config.keep_events = options.events;
  if (!options.cuda_context.empty()) {
    config.cuda_context_bytes = parse_bytes(options.cuda_context, option_name("cuda_context", style));
    request.context_measured = true;
  }
  // A byte size, or "gpu": the catalogued GPU's memory.
  auto limit_bytes = [&](const std::string& text, const std::string& keyword) -> int64_t {
    if (text != "gpu") return parse_bytes(text, option_name(keyword, style));
    if (!request.gpu_memory || request.fits_limit <= 0)
      throw InputError(option_name(keyword, style) + " gpu: needs " + option_name("device", style) +
                       " naming a catalogued GPU with a memory size (`dnncast devices`)");
    return request.fits_limit;
  };
  if (!options.fits.empty()) request.fits_limit = limit_bytes(options.fits, "fits");
  if (!options.max_batch.empty()) request.batch_limit = limit_bytes(options.max_batch, "max_batch_bytes");
  if (!options.max_seq.empty()) request.seq_limit = limit_bytes(options.max_seq, "max_seq_bytes");
  request.batch_cap = options.batch_cap;
  if (!options.parallel.empty()) {
    if (!options.sharding.empty())
      throw InputError("give " + option_name("sharding", style) + " or " + option_name("parallel", style) +
                       ", not both (ZeRO and FSDP with tensor or pipeline parallelism are not modelled)");
    if (config.device != Device::Cuda)
      throw InputError(option_name("parallel", style) + " " + options.parallel + ": multi-GPU memory needs " +
                       option_name("device", style) + " cuda or a catalogued GPU");
    if (request.seq_limit > 0)
      throw InputError(option_name("max_seq_bytes", style) + " is not searched under " +
                       option_name("parallel", style));
    request.parallel = gpu::parse_parallel(options.parallel, options.gpus, options.micro_batches, options.gpus_per_node,
                                           {option_name("gpus", style), option_name("parallel", style),
                                            option_name("micro_batches", style), option_name("gpus_per_node", style)});
  } else {
    if (options.micro_batches != 1)
      throw InputError(option_name("micro_batches", style) + " needs " + option_name("parallel", style) + " pp");
    request.sharding.gpus = options.gpus;
    request.sharding.gpus_per_node = options.gpus_per_node;
    if (!options.sharding.empty())
      request.sharding.strategy = memory::parse_sharding(options.sharding, option_name("sharding", style));
    memory::check_sharding_plan(request.sharding, {option_name("sharding", style), option_name("gpus", style),
                                                   option_name("gpus_per_node", style)});
    if (request.sharding.strategy != memory::Sharding::None && config.device != Device::Cuda)
      throw InputError(option_name("sharding", style) + " " + options.sharding + ": multi-GPU memory needs " +
                       option_name("device", style) + " cuda or a catalogued GPU");
  }
  request.measure_command =
      options.measure_command.empty() ? memory_measure_command(model, options) : options.measure_command;
  return request;
}

}  // namespace dnncast::forecast
