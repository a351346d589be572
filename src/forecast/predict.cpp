#include "forecast/predict.h"

#include <functional>

#include "core/error.h"
#include "core/training_setup.h"
#include "forecast/forecast_json.h"

namespace dnncast::forecast {

gpu::GpuForecastRequest make_gpu_request(const import::ModelSource& model, const PredictOptions& options,
                                         OptionStyle style) {
  gpu::GpuForecastRequest request;
  request.model = model;
  request.optimizer = parse_optimizer(options.forecast.optimizer, option_name("optimizer", style));
  request.precision = gpu::parse_gpu_precision(options.forecast.precision, option_name("precision", style));
  request.memory_precision = gpu::memory_precision_of(options.forecast.precision, option_name("precision", style));
  request.framework = gpu::parse_framework(options.framework, option_name("framework", style));
  request.phase = gpu::parse_gpu_phase(options.phase, option_name("phase", style));
  request.epoch_samples = options.forecast.epoch_samples;
  request.max_batch = options.max_batch;
  request.catalogue_files = options.catalogue_files;
  request.calibration_file = options.calibration_file;
  check_grad_accum(options.forecast.grad_accum, option_name("grad_accum", style));
  if (options.forecast.grad_accum > 1 && request.phase != gpu::GpuPhase::Train)
    throw InputError(option_name("grad_accum", style) +
                     " applies only to the train phase (a full step with the optimizer)");
  request.grad_accum = options.forecast.grad_accum;
  const gpu::ParallelNames names{option_name("gpus", style), option_name("parallel", style),
                                 option_name("micro_batches", style), option_name("gpus_per_node", style)};
  if (options.parallel.empty() && (options.gpus != 1 || options.micro_batches != 1 || options.gpus_per_node != 8))
    throw InputError(names.gpus + ", " + names.micro_batches + " and " + names.gpus_per_node + " need " +
                     names.parallel + ": dp, tp, pp or degrees such as tp=2,pp=2");
  if (!options.parallel.empty())
    request.parallel =
        gpu::parse_parallel(options.parallel, options.gpus, options.micro_batches, options.gpus_per_node, names);
  return request;
}

// Tokens per epoch as sequences of --seq tokens (the last one partial counts whole): the epoch in samples.
static PredictOptions with_epoch_in_samples(const PredictOptions& given, const models::ModelSpec& spec,
                                            OptionStyle style) {
  PredictOptions options = given;
  if (given.epoch_tokens <= 0) return options;
  const std::string tokens = option_name("epoch_tokens", style);
  if (given.forecast.epoch_samples > 0)
    throw InputError("give " + tokens + " or " + option_name("epoch_samples", style) + ", not both");
  if (spec.seq_len <= 0)
    throw InputError(tokens + " counts the epoch in tokens: it needs " + option_name("seq", style) +
                     " (the tokens of one sample)");
  options.forecast.epoch_samples = (given.epoch_tokens + spec.seq_len - 1) / spec.seq_len;
  return options;
}

namespace {

bool parses(const std::function<void()>& parse) {
  try {
    parse();
    return true;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace

Prediction predict(const import::ModelSource& model, const PredictOptions& given, OptionStyle style) {
  const PredictOptions options = with_epoch_in_samples(given, model.spec, style);
  const std::string& typed = options.forecast.device;
  const std::string device_option = option_name("device", style);
  // The catalogue is read only where a device name may be a GPU's (the shipped one once per process).
  std::optional<hardware::Catalogue> loaded;
  const hardware::Catalogue* catalogue = nullptr;
  if (!typed.empty() && typed != "cpu") {
    if (!options.catalogue_files.empty()) loaded = hardware::Catalogue::load(options.catalogue_files);
    catalogue = loaded ? &*loaded : &hardware::shipped_catalogue();
  }
  Prediction prediction;
  prediction.device = catalogue
                          ? resolve_predict_device(typed, options.forecast.predictor_dir, *catalogue, device_option)
                          : ForecastDevice{ForecastDevice::Kind::ThisHost, typed, std::nullopt};
  if (prediction.device.catalogue_gpu()) {
    gpu::GpuForecastRequest request = make_gpu_request(model, options, style);
    request.gpu = *prediction.device.gpu;
    prediction.gpu = gpu::forecast_gpu(request);
    return prediction;
  }
  if (options.framework != "pytorch" || options.max_batch || !options.calibration_file.empty() ||
      options.phase != "train" || !options.parallel.empty() || options.gpus != 1 || options.micro_batches != 1 ||
      options.gpus_per_node != 8)
    throw InputError(option_name(options.max_batch                ? "max_batch"
                                 : options.framework != "pytorch" ? "framework"
                                 : options.phase != "train"       ? "phase"
                                 : !options.parallel.empty()      ? "parallel"
                                 : options.gpus != 1              ? "gpus"
                                 : options.micro_batches != 1     ? "micro_batches"
                                 : options.gpus_per_node != 8     ? "gpus_per_node"
                                                                  : "calibration",
                                 style) +
                     " applies only to a GPU of `dnncast devices` as " + device_option);
  if (!model.spec.quantize.empty())
    throw InputError(option_name("quantize", style) + " " + model.spec.quantize +
                     ": bitsandbytes' quantized layers run on CUDA; the CPU time model has no kernels for them (give " +
                     device_option + " a GPU of `dnncast devices`)");
  const std::string& precision = options.forecast.precision;
  if (!parses([&] { parse_precision(precision); }) && parses([&] { gpu::parse_gpu_precision(precision); })) {
    // A GPU's precision on a device that is no GPU: say which (an unknown name gets the GPU lookup's suggestions).
    std::string why = option_name("precision", style) + " " + quote(precision) + " applies only to a GPU of " +
                      "`dnncast devices` as " + device_option;
    if (catalogue != nullptr) try {
        catalogue->gpu(typed);
      } catch (const InputError& gpu_error) {
        why += ": " + std::string(gpu_error.what());
      }
    throw InputError(why);
  }
  ForecastRequest request = make_forecast_request(model, options.forecast, prediction.device, style);
  try {
    prediction.cpu = forecast(request);
  } catch (const UnknownDevice& error) {
    if (catalogue == nullptr) throw;
    try {
      catalogue->gpu(typed);
    } catch (const InputError& gpu_error) {
      throw InputError(std::string(error.what()) + "; nor is it a catalogued GPU: " + gpu_error.what());
    }
    throw;
  }
  return prediction;
}

std::string prediction_json(const Prediction& prediction) {
  constexpr auto replace = nlohmann::json::error_handler_t::replace;
  if (prediction.gpu) return to_json(*prediction.gpu).dump(2, ' ', false, replace) + "\n";
  DNNCAST_ASSERT(prediction.cpu.has_value());
  return to_json(*prediction.cpu).dump(2, ' ', false, replace) + "\n";
}

std::string prediction_note(const Prediction& prediction) {
  if (!prediction.cpu || !prediction.cpu->host_match) return "";
  const HostMatch& match = *prediction.cpu->host_match;
  if (!match.exact) return host_match_note(match) + (match.speed_note.empty() ? "" : "; " + match.speed_note);
  if (!match.speed_note.empty()) return match.speed_note + ". To adapt it: " + match.remedy;
  return "";
}

}  // namespace dnncast::forecast
