// The Python module's C++ side: the calls of the forecast API (forecast/forecast.h, decide/compare.h) that
// `dnncast inspect`, `predict`, `memory` and `compare` make, with the options those commands take, answering the CLI's
// --json (forecast/forecast_json.h) as text that python/dnncast/__init__.py turns into objects. No
// forecast logic lives here: requests are filled by the functions the commands call
// (forecast::make_forecast_request, make_memory_request), and checked as the commands check them, with
// the Python keyword in place of the flag.
//
// Errors cross as Python exceptions with the same message (xgboost's API_BEGIN/API_END):
// InputError -> ValueError, anything else -> RuntimeError; nothing escapes as a crash.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "core/checked.h"
#include "core/error.h"
#include "core/text.h"
#include "core/training_setup.h"
#include "core/units.h"
#include "decide/catalogue_json.h"
#include "decide/compare.h"
#include "forecast/forecast.h"
#include "forecast/forecast_json.h"
#include "forecast/predict.h"
#include "hardware/isa.h"
#include "import/model_source.h"

namespace py = pybind11;

namespace dnncast::python {

namespace {

constexpr int64_t kMaxThreads = 1024;  // the CLI's (cli/parse_args.h)

// What sizes a model, as the Python keywords give it (None: not given), for import::make_model_source.
import::ModelArgs model_args(const std::string& model, std::optional<int64_t> batch, const std::vector<int64_t>& input,
                             std::optional<int64_t> seq, std::optional<int64_t> classes, bool allow_unknown,
                             const std::optional<std::string>& lora, bool checkpointing,
                             const std::optional<std::string>& attention, const std::optional<std::string>& quantize,
                             std::optional<double> expert_balance){import::ModelArgs args;
args.model = model;
args.batch = batch;
if (!input.empty()) args.input = input;
args.seq = seq;
args.classes = classes;
args.allow_unknown = allow_unknown;
args.lora = lora;
args.checkpointing = checkpointing;
args.attention = attention;
args.quantize = quantize;
args.expert_balance = expert_balance;
return args;
}  // namespace

import::ModelSource model_source(const import::ModelArgs& args){
    return import::make_model_source(args, OptionStyle::Keyword);
}  // namespace dnncast::python

void check_range(const std::string& keyword, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high)
    throw InputError(keyword + " must be an integer in [" + std::to_string(low) + ", " + std::to_string(high) +
                     "], got " + std::to_string(value));
}

hardware::CpuIsa isa_option(const std::string& text, const std::string& keyword) {
  if (text.empty()) return hardware::CpuIsa::Unknown;
  hardware::CpuIsa isa = hardware::parse_isa(text);
  if (isa == hardware::CpuIsa::Unknown) {
    std::string known;
    for (const std::string& name : hardware::isa_names()) known += (known.empty() ? "" : " | ") + name;
    throw InputError(keyword + " " + quote(text) + " is not an ISA; known: " + known);
  }
  return isa;
}

// `dnncast inspect MODEL [--batch N]`: no batch is the source's own.
std::string inspect_json(const import::ModelArgs& args, const std::string& device) {
  const Graph graph = model_source(args).build();
  return forecast::to_json(forecast::inspect(graph, forecast::resolve_inspect_device(device, {}))).dump(1);
}

// `dnncast predict MODEL --batch N ...`: device "" is this host's CPU set, threads 0 the environment's.
// A result as the CLI's --json text, and the note the CLI prints on stderr beside it ("" when none).
struct JsonAndNote {
  std::string json, note;
};

JsonAndNote predict_json(const import::ModelArgs& args, forecast::PredictOptions options, const std::string& host_isa) {
  options.forecast.host_isa = isa_option(host_isa, "host_isa");
  const import::ModelSource model = model_source(args);
  if (options.forecast.epoch_samples != 0)
    check_range("epoch_samples", options.forecast.epoch_samples, 1, kMaxTensorElements);
  if (options.forecast.threads != 0) check_range("threads", options.forecast.threads, 1, kMaxThreads);
  if (options.epoch_tokens != 0) check_range("epoch_tokens", options.epoch_tokens, 1, int64_t{1} << 50);
  // The CLI's answer and its stderr line (forecast/predict.h).
  const forecast::Prediction result = forecast::predict(model, options, OptionStyle::Keyword);
  return {forecast::prediction_json(result), forecast::prediction_note(result)};
}

// `dnncast memory MODEL --batch N ...` without --measure / --check-db; isa: a name, or "" (this host's).
JsonAndNote memory_json(const import::ModelArgs& args, forecast::MemoryOptions options, const std::string& isa) {
  options.isa = isa_option(isa, "isa");
  const import::ModelSource model = model_source(args);
  check_range("threads", options.threads, 1, kMaxThreads);
  if (options.batch_cap <= 0)
    throw InputError("batch_cap must be a positive integer, got " + std::to_string(options.batch_cap));
  const forecast::MemoryRequest request = forecast::make_memory_request(model, options, OptionStyle::Keyword);
  const forecast::MemoryForecast result = forecast::forecast_memory(request);
  // The line the CLI prints on stderr: the ISA simulated is not this host's, or its rules were not
  // checked against measured runs.
  std::string note;
  if (result.isa_match && !result.isa_match->exact)
    note = forecast::simulator_isa_note(*result.isa_match, result.isa_source);
  return {forecast::to_json(result).dump(2), note};
}

// `dnncast compare MODEL --batch N ...` (decide/compare.h): the request's filters and run as given, the GPU
// forecast's options as predict takes them.
std::string compare_json(const import::ModelArgs& args, const forecast::PredictOptions& options,
                         decide::CompareRequest request) {
  constexpr int64_t kMaxEpochs = 1000000;  // the CLI's and serve's
  const import::ModelSource model = model_source(args);
  if (options.forecast.epoch_samples != 0)
    check_range("epoch_samples", options.forecast.epoch_samples, 1, kMaxTensorElements);
  check_range("epochs", request.epochs, 1, kMaxEpochs);
  request.forecast = forecast::make_gpu_request(model, options, OptionStyle::Keyword);
  return decide::to_json(decide::compare(request)).dump(2);
}

// Runs `call` without the GIL (a forecast touches no Python object), side by side with other threads' calls (the
// library's process-wide state, predictor sets, layer row caches, the catalogue and the host's fingerprint, is
// loaded under its own locks and read-only after: serve's workers run it so, checked under ThreadSanitizer by
// `make tsan`), translating every C++ exception into the Python exception of its kind with the same message.
template <typename Call>
auto guarded(Call call) -> decltype(call()) {
  decltype(call()) result;
  std::string error;
  const ErrorAnswer* answer = nullptr;
  {
    py::gil_scoped_release release;
    try {
      result = call();
    } catch (const std::exception& caught) {
      answer = &error_answer(&caught);
      error = cut_for_message(caught.what(), kMessageLimit);
      if (error.empty()) error = "internal error";
    } catch (...) {
      answer = &error_answer(nullptr);
      error = "internal error: an exception of unknown type";
    }
  }
  if (answer == nullptr) return result;
  // The exception of the error's kind (core/error.h): ValueError, else RuntimeError (pybind11 maps std::runtime_error).
  if (std::string(answer->python_exception) == "ValueError") throw py::value_error(error);
  throw std::runtime_error(error);
}

}  // namespace

}  // namespace dnncast::python

PYBIND11_MODULE(_dnncast, module) {
  using namespace dnncast::python;
  module.doc() = "dnncast's forecast API (forecast/forecast.h); use the dnncast package, not this module";
  // The source tree whose data/predictors the package falls back on (the CLI finds it from its path).
  module.attr("source_dir") = DNNCAST_SOURCE_DIR;
  module.def(
      "optimizers",
      [] {
        std::vector<std::pair<std::string, std::string>> rows;
        for (dnncast::Optimizer optimizer : dnncast::all_optimizers())
          rows.emplace_back(dnncast::name(optimizer), dnncast::torch_class(optimizer));
        return rows;
      },
      "the optimizer table: (name, torch.optim class) per optimizer");
  module.def(
      "inspect",
      [](const std::string& model, std::optional<int64_t> batch, const std::vector<int64_t>& input,
         std::optional<int64_t> seq, std::optional<int64_t> classes, bool allow_unknown,
         const std::optional<std::string>& lora, bool checkpointing, const std::string& device,
         const std::optional<std::string>& attention, const std::optional<std::string>& quantize,
         std::optional<double> expert_balance) {
        return guarded([&] {
          return inspect_json(model_args(model, batch, input, seq, classes, allow_unknown, lora, checkpointing,
                                         attention, quantize, expert_balance),
                              device);
        });
      },
      py::arg("model"), py::arg("batch"), py::arg("input"), py::arg("seq"), py::arg("classes"),
      py::arg("allow_unknown"), py::arg("lora"), py::arg("checkpointing"), py::arg("device"), py::arg("attention"),
      py::arg("quantize"), py::arg("expert_balance"));
  module.def(
      "predict",
      [](const std::string& model, std::optional<int64_t> batch, const std::vector<int64_t>& input,
         std::optional<int64_t> seq, std::optional<int64_t> classes, bool allow_unknown,
         const std::optional<std::string>& lora, bool checkpointing, const std::string& optimizer,
         const std::string& precision, int64_t threads, const std::string& device, int64_t epoch_samples,
         const std::string& predictor_dir, const std::string& host_isa, const std::string& framework, bool max_batch,
         const std::string& phase, int64_t grad_accum, int64_t epoch_tokens,
         const std::optional<std::string>& attention, const std::optional<std::string>& quantize,
         std::optional<double> expert_balance, int64_t gpus, const std::string& parallel, int64_t micro_batches,
         int64_t gpus_per_node) {
        // host_isa is parsed inside the call, where its error becomes a ValueError
        dnncast::forecast::PredictOptions options;
        options.gpus = gpus, options.micro_batches = micro_batches, options.gpus_per_node = gpus_per_node;
        options.parallel = parallel;
        options.forecast = {
            optimizer, precision, threads, device, epoch_samples, predictor_dir, dnncast::hardware::CpuIsa::Unknown};
        options.framework = framework;
        options.phase = phase;
        options.max_batch = max_batch;
        options.forecast.grad_accum = grad_accum;
        options.epoch_tokens = epoch_tokens;
        JsonAndNote result = guarded([&] {
          return predict_json(model_args(model, batch, input, seq, classes, allow_unknown, lora, checkpointing,
                                         attention, quantize, expert_balance),
                              options, host_isa);
        });
        return py::make_tuple(result.json, result.note);
      },
      py::arg("model"), py::arg("batch"), py::arg("input"), py::arg("seq"), py::arg("classes"),
      py::arg("allow_unknown"), py::arg("lora"), py::arg("checkpointing"), py::arg("optimizer"), py::arg("precision"),
      py::arg("threads"), py::arg("device"), py::arg("epoch_samples"), py::arg("predictor_dir"), py::arg("host_isa"),
      py::arg("framework"), py::arg("max_batch"), py::arg("phase"), py::arg("grad_accum"), py::arg("epoch_tokens"),
      py::arg("attention"), py::arg("quantize"), py::arg("expert_balance"), py::arg("gpus"), py::arg("parallel"),
      py::arg("micro_batches"), py::arg("gpus_per_node"));
  module.def(
      "memory",
      [](const std::string& model, std::optional<int64_t> batch, const std::vector<int64_t>& input,
         std::optional<int64_t> seq, std::optional<int64_t> classes, bool allow_unknown,
         const std::optional<std::string>& lora, bool checkpointing, const std::string& optimizer,
         const std::string& precision, const std::string& device, int64_t threads, const std::string& fits,
         const std::string& max_batch_bytes, int64_t batch_cap, const std::string& cuda_context, const std::string& isa,
         bool timeline, const std::string& measure_command, const std::string& sharding, int64_t gpus,
         int64_t gpus_per_node, const std::string& max_seq_bytes, const std::optional<std::string>& attention,
         int64_t grad_accum, const std::optional<std::string>& quantize, std::optional<double> expert_balance,
         bool paged_optimizer, const std::string& parallel, int64_t micro_batches) {
        // isa is parsed inside the call, as host_isa above; no event log (the CLI's --events)
        dnncast::forecast::MemoryOptions options;
        options.optimizer = optimizer;
        options.precision = precision;
        options.device = device;
        options.threads = threads;
        options.timeline = timeline;
        options.cuda_context = cuda_context;
        options.fits = fits;
        options.max_batch = max_batch_bytes;
        options.batch_cap = batch_cap;
        options.measure_command = measure_command;
        options.sharding = sharding;
        options.gpus = gpus;
        options.gpus_per_node = gpus_per_node;
        options.max_seq = max_seq_bytes;
        options.grad_accum = grad_accum;
        options.paged_optimizer = paged_optimizer;
        options.parallel = parallel;
        options.micro_batches = micro_batches;
        JsonAndNote result = guarded([&] {
          return memory_json(model_args(model, batch, input, seq, classes, allow_unknown, lora, checkpointing,
                                        attention, quantize, expert_balance),
                             options, isa);
        });
        return py::make_tuple(result.json, result.note);
      },
      py::arg("model"), py::arg("batch"), py::arg("input"), py::arg("seq"), py::arg("classes"),
      py::arg("allow_unknown"), py::arg("lora"), py::arg("checkpointing"), py::arg("optimizer"), py::arg("precision"),
      py::arg("device"), py::arg("threads"), py::arg("fits"), py::arg("max_batch_bytes"), py::arg("batch_cap"),
      py::arg("cuda_context"), py::arg("isa"), py::arg("timeline"), py::arg("measure_command"), py::arg("sharding"),
      py::arg("gpus"), py::arg("gpus_per_node"), py::arg("max_seq_bytes"), py::arg("attention"), py::arg("grad_accum"),
      py::arg("quantize"), py::arg("expert_balance"), py::arg("paged_optimizer"), py::arg("parallel"),
      py::arg("micro_batches"));
  module.def(
      "compare",
      [](const std::string& model, std::optional<int64_t> batch, const std::vector<int64_t>& input,
         std::optional<int64_t> seq, std::optional<int64_t> classes, bool allow_unknown,
         const std::optional<std::string>& lora, bool checkpointing, const std::optional<std::string>& attention,
         const std::string& optimizer, const std::string& precision, const std::string& framework,
         const std::string& phase, int64_t epochs, int64_t epoch_samples, const std::vector<std::string>& providers,
         const std::vector<std::string>& gpus, bool spot, bool multi_gpu, const std::string& sharding,
         const std::optional<std::string>& quantize, std::optional<double> expert_balance,
         const std::string& parallel) {
        dnncast::forecast::PredictOptions options;
        options.forecast.optimizer = optimizer;
        options.forecast.precision = precision;
        options.forecast.epoch_samples = epoch_samples;
        options.framework = framework;
        options.phase = phase;
        dnncast::decide::CompareRequest request;
        request.epochs = epochs;
        request.providers = providers;
        request.gpus = gpus;
        request.spot = spot;
        request.multi_gpu = multi_gpu;
        request.sharding = sharding;
        request.parallel = parallel;
        return guarded([&] {
          return compare_json(model_args(model, batch, input, seq, classes, allow_unknown, lora, checkpointing,
                                         attention, quantize, expert_balance),
                              options, request);
        });
      },
      py::arg("model"), py::arg("batch"), py::arg("input"), py::arg("seq"), py::arg("classes"),
      py::arg("allow_unknown"), py::arg("lora"), py::arg("checkpointing"), py::arg("attention"), py::arg("optimizer"),
      py::arg("precision"), py::arg("framework"), py::arg("phase"), py::arg("epochs"), py::arg("epoch_samples"),
      py::arg("providers"), py::arg("gpus"), py::arg("spot"), py::arg("multi_gpu"), py::arg("sharding"),
      py::arg("quantize"), py::arg("expert_balance"), py::arg("parallel"));
}
