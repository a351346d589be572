// Requests filled from the options as the CLI and the Python module take them (forecast.h).
#include <string>

#include "apps/forecast.h"
#include "core/error.h"
#include "core/training_setup.h"
#include "core/units.h"

namespace dnncast::apps {

namespace {

// An option as messages name it: the Python keyword, or the CLI's flag.
std::string option_name(const std::string& keyword, OptionStyle style) {
  struct Spelling {
    const char* keyword;
    const char* flag;
  };
  static const Spelling kSpellings[] = {{"optimizer", "--optimizer"},   {"precision", "--precision"},
                                        {"device", "--device"},         {"cuda_context", "--cuda-context"},
                                        {"fits", "--fits"},             {"max_batch_bytes", "--max-batch"}};
  for (const Spelling& spelling : kSpellings)
    if (keyword == spelling.keyword) return style == OptionStyle::Flag ? spelling.flag : spelling.keyword;
  DNNCAST_ASSERT(false);  // every option this file names is in the table
  return keyword;
}

}  // namespace

ForecastRequest make_forecast_request(const std::string& model, const ModelSpec& spec,
                                      const ForecastOptions& options, OptionStyle style) {
  ForecastRequest request;
  request.model = model;
  request.spec = spec;
  request.optimizer = parse_optimizer(options.optimizer, option_name("optimizer", style));
  request.precision = parse_precision(options.precision, option_name("precision", style));
  request.threads = options.threads;
  request.device = options.device;
  request.epoch_samples = options.epoch_samples;
  request.predictor_dir = options.predictor_dir;
  request.host_isa = options.host_isa;
  return request;
}

MemoryRequest make_memory_request(const std::string& model, const ModelSpec& spec, const MemoryOptions& options,
                                  OptionStyle style) {
  MemoryRequest request;
  request.model = model;
  request.spec = spec;
  memory::MemoryConfig& config = request.config;
  config.optimizer = parse_optimizer(options.optimizer, option_name("optimizer", style));
  config.precision = parse_precision(options.precision, option_name("precision", style));
  config.device = parse_device(options.device, option_name("device", style));
  config.threads = options.threads;
  config.isa = options.isa;
  config.keep_timeline = options.timeline;
  config.keep_events = options.events;
  if (!options.cuda_context.empty())
    config.cuda_context_bytes = core::parse_bytes(options.cuda_context, option_name("cuda_context", style));
  if (!options.fits.empty()) request.fits_limit = core::parse_bytes(options.fits, option_name("fits", style));
  if (!options.max_batch.empty())
    request.batch_limit = core::parse_bytes(options.max_batch, option_name("max_batch_bytes", style));
  request.batch_cap = options.batch_cap;
  request.measure_command = options.measure_command;
  return request;
}

}  // namespace dnncast::apps
