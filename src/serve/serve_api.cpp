// `dnncast serve` without the sockets (serve_api.h): routes, bodies into requests, answers, caches, metrics.
#include "serve/serve_api.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/checked.h"
#include "core/error.h"
#include "core/json_limits.h"
#include "core/text.h"
#include "decide/catalogue_json.h"
#include "decide/compare.h"
#include "decide/schedule_jobs.h"
#include "forecast/forecast.h"
#include "forecast/forecast_json.h"
#include "forecast/predict.h"
#include "gpu/gpu_forecast.h"
#include "graph/tensor.h"
#include "hardware/catalogue.h"
#include "hardware/isa.h"
#include "import/hub_cache.h"
#include "import/model_source.h"
#include "models/zoo.h"
#include "serve/page.h"

namespace dnncast::serve {

namespace {

using nlohmann::json;

constexpr int64_t kMaxThreads = 1024;    // as the CLI's --threads
constexpr int64_t kMaxEpochs = 1000000;  // as compare's --epochs

// An unknown model: 404 rather than 400.

// FNV-1a, 64 bits: the identity of inline bytes in cache keys (with their length).
uint64_t fnv1a(const std::string& bytes) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char byte : bytes) hash = (hash ^ byte) * 1099511628211ull;
  return hash;
}

std::string hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// "application/json; charset=utf-8" -> "application/json".
std::string media_type(const std::string& content_type) {
  std::string type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return type;
}

bool is_onnx_body(const HttpRequest& request) {
  const std::string type = media_type(request.content_type);
  return type == "application/onnx" || type == "application/octet-stream";
}

// The fields of one request: the JSON body's object, or the query's parameters (GET, ONNX bodies), read by
// name with their types and ranges checked; a field nobody read is an error (a misspelt option must not
// be ignored).
class Fields {
 public:
  Fields(const HttpRequest& request, std::vector<std::string> known) : known_(std::move(known)) {
    if (request.method == "GET" || is_onnx_body(request)) {
      from_query_ = true;
      object_ = json::object();
      for (const auto& [name, value] : request.query) {
        if (object_.contains(name)) throw InputError("field " + quote(name) + " given twice");
        object_[name] = value;
      }
      check_known();
      return;
    }
    const std::string type = media_type(request.content_type);
    if (!type.empty() && type != "application/json")
      throw InputError("Content-Type " + quote(request.content_type) +
                       ": send application/json, or application/onnx for ONNX bytes");
    if (!request.query.empty())
      throw InputError("query parameter " + quote(request.query.front().first) +
                       ": a JSON request takes its fields in the body");
    check_json_nesting(request.body, "body");
    try {
      object_ = json::parse(request.body.empty() ? std::string("{}") : request.body);
    } catch (const json::exception& error) {
      throw InputError(std::string("body: not JSON: ") + error.what());
    }
    if (!object_.is_object()) throw InputError("body: expected a JSON object of fields, got " + type_name(object_));
    check_known();
  }

  bool has(const std::string& name) {
    mark(name);
    return object_.contains(name) && !object_.at(name).is_null();
  }

  std::string text(const std::string& name, const std::string& fallback) {
    if (!has(name)) return fallback;
    const json& value = object_.at(name);
    if (!value.is_string()) throw InputError("field " + quote(name) + ": expected a string, got " + type_name(value));
    if (value.get_ref<const std::string&>().empty())  // "lora": "" is not "no LoRA" (--lora '' is refused alike)
      throw InputError("field " + quote(name) + ": empty; leave the field out for its default");
    return value.get<std::string>();
  }

  int64_t integer(const std::string& name, std::optional<int64_t> fallback, int64_t min, int64_t max) {
    if (!has(name)) {
      if (!fallback) throw InputError("field " + quote(name) + " is required");
      return *fallback;
    }
    const json& value = object_.at(name);
    const std::string expected = "expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
    int64_t number = 0;
    if (value.is_number_integer() && !(value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX))) {
      number = value.get<int64_t>();
    } else if (from_query_ && value.is_string()) {
      const std::string digits = value.get<std::string>();
      bool ok = !digits.empty() && digits.size() <= 18 && digits.find_first_not_of("0123456789") == std::string::npos;
      if (!ok) throw InputError("field " + quote(name) + ": " + expected + ", got " + quote(digits));
      number = std::stoll(digits);
    } else if (value.is_number_unsigned()) {  // as the CLI says it (cli/parse_args.cpp)
      throw InputError("field " + quote(name) + ": " + std::to_string(value.get<uint64_t>()) +
                       " is past what a 64-bit integer holds");
    } else {
      throw InputError("field " + quote(name) + ": " + expected + ", got " + shown(value));
    }
    if (number < min || number > max)
      throw InputError("field " + quote(name) + ": " + expected + ", got " + std::to_string(number));
    return number;
  }

  // An integer as given, its range checked by the caller (import::make_model_source names it as the CLI does); none
  // when absent.
  std::optional<int64_t> any_integer(const std::string& name) {
    if (!has(name)) return std::nullopt;
    return integer(name, std::nullopt, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  }
  // A number as given (JSON, or a query's decimal text), its range checked by the caller; none when absent.
  std::optional<double> any_number(const std::string& name) {
    if (!has(name)) return std::nullopt;
    const json& value = object_.at(name);
    if (value.is_number()) return value.get<double>();
    if (from_query_ && value.is_string()) {
      const std::string text = value.get<std::string>();
      char* end = nullptr;
      const double number = text.size() <= 32 ? std::strtod(text.c_str(), &end) : 0.0;
      if (end != nullptr && end != text.c_str() && *end == '\0' && std::isfinite(number)) return number;
    }
    throw InputError("field " + quote(name) + ": expected a number, got " + shown(value));
  }
  int64_t required_integer(const std::string& name) {
    return integer(name, std::nullopt, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  }

  // A seed: a whole number from 0 to 2^64-1, as the CLI's --seed takes it (cli/parse_args.cpp), with its message.
  uint64_t seed(const std::string& name, uint64_t fallback) {
    if (!has(name)) return fallback;
    const json& value = object_.at(name);
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
    if (from_query_ && value.is_string()) {
      const std::string digits = value.get<std::string>();
      errno = 0;
      const bool ok =
          !digits.empty() && digits.size() <= 20 && digits.find_first_not_of("0123456789") == std::string::npos;
      const unsigned long long number = ok ? std::strtoull(digits.c_str(), nullptr, 10) : 0;
      if (ok && errno != ERANGE) return number;
    }
    throw InputError("field " + quote(name) + ": a seed is a whole number from 0 to 18446744073709551615, got " +
                     shown(value));
  }

  bool flag(const std::string& name) {
    if (!has(name)) return false;
    const json& value = object_.at(name);
    if (value.is_boolean()) return value.get<bool>();
    if (from_query_ && value.is_string()) {
      const std::string text = value.get<std::string>();
      if (text == "true" || text == "1") return true;
      if (text == "false" || text == "0") return false;
    }
    throw InputError("field " + quote(name) + ": expected true or false, got " + shown(value));
  }

  // An array of strings, or one string of comma-separated names (as the CLI's --gpus t4,a100).
  std::vector<std::string> names(const std::string& name) {
    if (!has(name)) return {};
    const json& value = object_.at(name);
    std::vector<std::string> out;
    if (value.is_string()) {
      std::string item;
      for (char c : value.get<std::string>() + ",") {
        if (c != ',') {
          item += c;
        } else if (!item.empty()) {
          out.push_back(item);
          item.clear();
        }
      }
      return out;
    }
    if (!value.is_array())
      throw InputError("field " + quote(name) + ": expected an array of strings, got " + type_name(value));
    for (const json& item : value) {
      if (!item.is_string())
        throw InputError("field " + quote(name) + ": expected an array of strings, got an element " + shown(item));
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  // The image input: "3x224x224" or [3, 224, 224].
  std::vector<int64_t> image_input(const std::string& name) {
    const json& value = object_.at(name);
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_array() && value.size() == 3) {
      for (const json& dim : value) {
        if (!dim.is_number_integer())
          throw InputError("field " + quote(name) + ": expected CxHxW, got " + shown(value));
        text += (text.empty() ? "" : "x") + std::to_string(dim.get<int64_t>());
      }
    } else {
      throw InputError("field " + quote(name) + ": expected CxHxW as \"3x224x224\" or [3, 224, 224], got " +
                       shown(value));
    }
    TensorShape shape;
    try {
      shape = parse_shape(text);
    } catch (const InputError& error) {
      throw error.with_context("field " + quote(name));
    }
    if (shape.rank() != 3)
      throw InputError("field " + quote(name) + ": expected CxHxW, three positive integers (e.g. \"3x224x224\"), got " +
                       quote(text));
    return shape.dims;
  }

  const json& raw(const std::string& name) { return object_.at(name); }

  // An ISA by name (hardware/isa.h); Unknown when the field is absent.
  hardware::CpuIsa isa(const std::string& name) {
    const std::string text = this->text(name, "");
    if (text.empty()) return hardware::CpuIsa::Unknown;
    const hardware::CpuIsa isa = hardware::parse_isa(text);
    if (isa == hardware::CpuIsa::Unknown) {
      std::string known;
      for (const std::string& isa_name : hardware::isa_names()) known += (known.empty() ? "" : ", ") + isa_name;
      throw InputError("field " + quote(name) + ": " + quote(text) + " is not an ISA; known: " + known);
    }
    return isa;
  }

  // Throws for a field no reader asked for (a known one that does not apply to the request is refused by
  // its reader).
  void finish() const {
    for (const auto& item : object_.items())
      if (read_.count(item.key()) == 0)
        throw InputError("field " + quote(item.key()) + " does not apply to this request");
  }

  bool from_query() const { return from_query_; }

 private:
  static std::string type_name(const json& value) { return std::string("a JSON ") + value.type_name(); }
  static std::string shown(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return escape_control(text);
  }
  // An unknown field first, before any other message: a misspelt option is the likeliest mistake.
  void check_known() const {
    for (const auto& item : object_.items()) {
      if (std::find(known_.begin(), known_.end(), item.key()) != known_.end()) continue;
      std::string list;
      for (const std::string& name : known_) list += (list.empty() ? "" : ", ") + name;
      throw InputError("unknown field " + quote(item.key()) + "; known: " + (list.empty() ? "none" : list));
    }
  }
  void mark(const std::string& name) {
    DNNCAST_ASSERT(std::find(known_.begin(), known_.end(), name) != known_.end());  // each route lists what it reads
    read_.insert(name);
  }

  json object_;
  bool from_query_ = false;
  std::vector<std::string> known_;
  std::set<std::string> read_;
};

// The model fields every forecast route shares.
const std::vector<std::string> kModelFields = {"model",         "graph",         "batch",  "input",         "seq",
                                               "classes",       "allow_unknown", "name",   "lora",          "attention",
                                               "checkpointing", "quantize",      "config", "expert_balance"};

std::vector<std::string> with_model_fields(std::vector<std::string> more) {
  std::vector<std::string> all = kModelFields;
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

std::string spec_key(const models::ModelSpec& spec) {
  std::string key = "|b" + std::to_string(spec.batch) + "|i";
  for (int64_t dim : spec.input) key += std::to_string(dim) + "x";
  return key + "|s" + std::to_string(spec.seq_len) + "|c" + std::to_string(spec.num_classes) + "|u" +
         (spec.allow_unknown_ops ? "1" : "0") + "|l" + spec.lora + "|q" + spec.quantize + "|a" + spec.attention + "|k" +
         (spec.checkpointing ? "1" : "0") + "|e" + std::to_string(spec.expert_balance);
}

// The model at `batch` (none: the source's own): field "model" (a zoo name or synthetic:SEED), "graph" (graph JSON
// inline) or ONNX bytes (the body), and what sizes it (input, seq, classes, allow_unknown, lora, attention,
// checkpointing), checked by import::make_model_source as the CLI's options and Python's keywords are. The builder
// answers from the api's graph cache.
import::ModelSource read_model(Api& api, Fields& fields, const HttpRequest& request,
                               std::optional<int64_t> batch){import::ModelArgs args;
args.batch = batch;
if (fields.has("input")) args.input = fields.image_input("input");
args.seq = fields.any_integer("seq");
args.classes = fields.any_integer("classes");
args.allow_unknown = fields.flag("allow_unknown");
if (fields.has("lora")) args.lora = fields.text("lora", "");              // LoRA fine-tuning, as --lora (graph/lora.h)
if (fields.has("quantize")) args.quantize = fields.text("quantize", "");  // nf4 | int8, as --quantize
if (fields.has("attention")) args.attention = fields.text("attention", "");  // eager | sdpa, as --attention
args.expert_balance = fields.any_number("expert_balance");                   // as --expert-balance
args.checkpointing = fields.flag("checkpointing");                           // as --checkpointing
const bool onnx = is_onnx_body(request), graph = fields.has("graph"), named = fields.has("model");
const bool config = fields.has("config");
if (int(onnx) + int(graph) + int(named) + int(config) != 1)
  throw InputError(onnx ? "an ONNX body is the model: no field 'model', 'graph' or 'config' with it"
                        : "give one of field 'model' (a zoo name, Hub id or synthetic:SEED), 'graph' (graph JSON) or "
                          "'config' (a Hugging Face config.json), or send ONNX bytes as Content-Type application/onnx");
if (!named) args.kind = onnx ? import::ModelSourceKind::Onnx : import::ModelSourceKind::File;
if (!onnx && fields.has("name")) throw InputError("field 'name' names an ONNX body's model; a graph has its own");
std::string& model_name = args.model;  // as results name it: the zoo name, synthetic:SEED, "graph" or "onnx"
std::string key;
std::function<Graph(const models::ModelSpec&)> build;
if (onnx) {
  if (request.body.empty()) throw InputError("body: empty; expected the bytes of an ONNX model");
  auto bytes = std::make_shared<const std::string>(request.body);
  model_name = fields.text("name", "onnx");  // as the CLI names a file's graph: its stem
  key = "onnx:" + hex(fnv1a(*bytes)) + ":" + std::to_string(bytes->size()) + ":" + model_name;
  const std::string name = model_name;
  build = [bytes, name](const models::ModelSpec& at) {
    Graph built = import::load_onnx_bytes(*bytes, "ONNX body", at);
    built.name = name;
    return built;
  };
} else if (config) {
  if (!fields.raw("config").is_object())
    throw InputError("field 'config': expected a Hugging Face config.json object (with \"model_type\")");
  auto text = std::make_shared<const std::string>(fields.raw("config").dump());
  const json& document = fields.raw("config");
  const auto named_as = document.find("_name_or_path");  // as the CLI names a config's graph
  model_name = named_as != document.end() && named_as->is_string() && !named_as->get<std::string>().empty()
                   ? named_as->get<std::string>()
                   : "config";
  key = "config:" + hex(fnv1a(*text)) + ":" + std::to_string(text->size());
  build = [text](const models::ModelSpec& at) { return import::load_hf_config_text(*text, "field 'config'", at); };
} else if (graph) {
  if (!fields.raw("graph").is_object())
    throw InputError("field 'graph': expected a graph JSON object (\"format\": \"dnncast-graph/1\")");
  auto text = std::make_shared<const std::string>(fields.raw("graph").dump());
  model_name = "graph";
  key = "graph:" + hex(fnv1a(*text)) + ":" + std::to_string(text->size());
  build = [text](const models::ModelSpec& at) { return import::load_graph_json_text(*text, "field 'graph'", at); };
} else {
  std::string name = fields.text("model", "");
  if (name.empty()) throw InputError("field 'model': empty; expected a zoo name or synthetic:SEED");
  std::optional<std::string> hub_config;  // a Hub id's config.json, cached on this host or downloaded (hub_cache.h)
  if (import::looks_like_hub_id(name)) {
    try {
      hub_config = import::hub_config(name);
    } catch (const InputError& error) {
      throw NotFound(std::string("field 'model': ") + error.what());
    }
  }
  if (hub_config) {
    model_name = name;
    key = "hub:" + name + ":" + *hub_config;
    // The config the id names, read by the builder (the CLI's Hub ids alike); the graph keeps the id as its name.
    build = [name, path = *hub_config](const models::ModelSpec& at) {
      Graph built = import::load_model(path, at);
      built.name = name;
      return built;
    };
  } else if (starts_with(name, "file:") || starts_with(name, "onnx:") || name.find('/') != std::string::npos ||
             ends_with(name, ".json") || ends_with(name, ".onnx")) {
    throw InputError("field 'model': " + quote(name) +
                     " names a file; the server reads none: send the graph JSON as field 'graph', or the ONNX bytes "
                     "as the body (Content-Type application/onnx)");
  } else if (starts_with(name, "synthetic:")) {
    model_name = name;
    key = name;
    build = [name](const models::ModelSpec& at) { return import::load_model(name, at); };
  } else {
    if (starts_with(name, "zoo:")) name = name.substr(4);
    try {
      models::zoo_entry(name);
    } catch (const InputError& error) {
      throw NotFound(std::string("field 'model': ") + error.what());
    }
    model_name = name;
    key = "zoo:" + name;
    build = [key](const models::ModelSpec& at) { return import::load_model(key, at); };
  }
}
Api* owner = &api;
return import::make_model_source(args, OptionStyle::Field, [owner, key, build](const models::ModelSpec& at) {
  return owner->graph(key, at, [&] { return build(at); });
});
}  // namespace

// A JSON answer as the CLI prints it (its indent), with a newline. Bytes that are not UTF-8 (an ONNX node's
// name, a query parameter, quoted into a message) are replaced, not thrown about.
template <typename Json>
std::string answer_text(const Json& document, int indent) {
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// ---------------------------------------------------------------------------------------------
// The routes

// The page (serve/page.h): its query is the question the page's script reads, not fields of this route.
HttpResponse page(Api&, const HttpRequest&) { return {200, std::string(serve_page()), "text/html; charset=utf-8"}; }

HttpResponse healthz(Api&, const HttpRequest& request) {
  Fields fields(request, {});
  fields.finish();
  return {200, "{\"status\": \"ok\"}\n", "application/json"};
}

HttpResponse metrics(Api& api, const HttpRequest& request) {
  Fields fields(request, {});
  fields.finish();
  return {200, api.metrics().text(), "text/plain; version=0.0.4"};
}

HttpResponse devices(Api&, const HttpRequest& request) {
  Fields fields(request, {"instances"});
  const bool instances = fields.flag("instances");
  fields.finish();
  return {200, answer_text(decide::devices_json(hardware::Catalogue::load({}), instances), 2), "application/json"};
}

HttpResponse inspect_route(Api& api, const HttpRequest& request) {
  Fields fields(request, with_model_fields({"device"}));
  const import::ModelSource model = read_model(api, fields, request, fields.any_integer("batch"));
  const std::string device = fields.text("device", "");
  fields.finish();
  const Graph graph = model.build();
  return {200, answer_text(to_json(forecast::inspect(graph, forecast::resolve_inspect_device(device, {}))), 1),
          "application/json"};
}

HttpResponse predict(Api& api, const HttpRequest& request) {
  Fields fields(request, with_model_fields({"optimizer", "precision", "threads", "device", "epoch_samples", "host_isa",
                                            "framework", "max_batch", "phase", "epoch_tokens", "grad_accum", "gpus",
                                            "parallel", "micro_batches", "gpus_per_node"}));
  const import::ModelSource model = read_model(api, fields, request, fields.required_integer("batch"));
  forecast::PredictOptions options;
  // Ranges checked by gpu::parse_parallel, with the message the CLI and Python give.
  constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
  options.gpus = fields.integer("gpus", 1, std::numeric_limits<int64_t>::min(), kAny);
  options.parallel = fields.text("parallel", "");
  options.micro_batches = fields.integer("micro_batches", 1, std::numeric_limits<int64_t>::min(), kAny);
  options.gpus_per_node = fields.integer("gpus_per_node", 8, std::numeric_limits<int64_t>::min(), kAny);
  // Checked by the request makers, with the message the CLI and Python give.
  options.forecast.grad_accum =
      fields.integer("grad_accum", 1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  options.forecast.optimizer = fields.text("optimizer", "sgd");
  options.forecast.precision = fields.text("precision", "fp32");
  options.forecast.threads = fields.integer("threads", 0, 1, kMaxThreads);
  options.forecast.device = fields.text("device", "");
  options.forecast.epoch_samples = fields.integer("epoch_samples", 0, 1, kMaxTensorElements);
  options.forecast.predictor_dir = api.options().predictor_dir;
  options.forecast.host_isa = fields.isa("host_isa");
  options.framework = fields.text("framework", "pytorch");
  options.phase = fields.text("phase", "train");
  options.max_batch = fields.flag("max_batch");
  options.epoch_tokens = fields.integer("epoch_tokens", 0, 1, int64_t{1} << 50);
  fields.finish();
  // The CLI's answer, byte for byte (forecast/predict.h).
  return {200, forecast::prediction_json(forecast::predict(model, options, OptionStyle::Field)), "application/json"};
}

HttpResponse memory_route(Api& api, const HttpRequest& request) {
  Fields fields(request,
                with_model_fields({"optimizer", "precision", "device", "threads", "isa", "fits", "max_batch_bytes",
                                   "batch_cap", "cuda_context", "timeline", "sharding", "gpus", "gpus_per_node",
                                   "max_seq_bytes", "grad_accum", "paged_optimizer", "parallel", "micro_batches"}));
  const import::ModelSource model = read_model(api, fields, request, fields.any_integer("batch").value_or(1));
  forecast::MemoryOptions options;
  options.optimizer = fields.text("optimizer", "sgd");
  options.precision = fields.text("precision", "fp32");
  options.device = fields.text("device", "cpu");
  options.threads = fields.integer("threads", 1, 1, kMaxThreads);
  options.isa = fields.isa("isa");
  options.fits = fields.text("fits", "");
  options.max_batch = fields.text("max_batch_bytes", "");
  options.batch_cap = fields.integer("batch_cap", int64_t{1} << 20, 1, kMaxTensorElements);
  options.cuda_context = fields.text("cuda_context", "");
  options.timeline = fields.flag("timeline");
  options.sharding = fields.text("sharding", "");
  options.gpus = fields.integer("gpus", 1, 1, 1'000'000);
  options.gpus_per_node = fields.integer("gpus_per_node", 8, 1, 1024);
  options.parallel = fields.text("parallel", "");
  // Checked by gpu::parse_parallel, with the message the CLI and Python give.
  options.micro_batches =
      fields.integer("micro_batches", 1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  options.max_seq = fields.text("max_seq_bytes", "");
  // Checked by make_memory_request, with the message the CLI and Python give.
  options.grad_accum =
      fields.integer("grad_accum", 1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  options.paged_optimizer = fields.flag("paged_optimizer");
  fields.finish();
  const forecast::MemoryRequest memory_request = forecast::make_memory_request(model, options, OptionStyle::Field);
  return {200, answer_text(to_json(forecast::forecast_memory(memory_request)), 2), "application/json"};
}

HttpResponse compare_route(Api& api, const HttpRequest& request) {
  Fields fields(request, with_model_fields({"precision", "framework", "optimizer", "epochs", "epoch_samples",
                                            "provider", "gpus", "spot", "multi_gpu", "sharding", "phase", "parallel"}));
  const import::ModelSource model = read_model(api, fields, request, fields.required_integer("batch"));
  forecast::PredictOptions options;
  options.forecast.precision = fields.text("precision", "fp32");
  options.framework = fields.text("framework", "pytorch");
  options.phase = fields.text("phase", "train");
  options.forecast.optimizer = fields.text("optimizer", "sgd");
  options.forecast.epoch_samples = fields.integer("epoch_samples", 0, 1, kMaxTensorElements);
  decide::CompareRequest compare_request;
  compare_request.forecast = forecast::make_gpu_request(model, options, OptionStyle::Field);
  compare_request.epochs = fields.integer("epochs", 1, 1, kMaxEpochs);
  compare_request.providers = fields.names("provider");
  compare_request.gpus = fields.names("gpus");
  compare_request.spot = fields.flag("spot");
  compare_request.multi_gpu = fields.flag("multi_gpu");
  compare_request.sharding = fields.text("sharding", "");
  compare_request.parallel = fields.text("parallel", "");
  fields.finish();
  return {200, answer_text(to_json(decide::compare(compare_request)), 2), "application/json"};
}

// `dnncast schedule` (schedule_jobs.h): the jobs and the cluster as the files hold them, fields "jobs" (the
// jobs file's list) and "cluster" (the cluster file's object), and the CLI's options. Models by zoo name
// or synthetic:SEED only (the server reads no file).
HttpResponse schedule_route(Api&, const HttpRequest& request) {
  constexpr int64_t kMaxGenerations = 10000, kMaxPopulation = 1000;
  Fields fields(request, {"jobs", "cluster", "objective", "generations", "population", "seed", "exact"});
  if (fields.from_query()) throw InputError("POST /v1/schedule takes a JSON body");
  if (!fields.has("jobs")) throw InputError("field 'jobs' is required");
  if (!fields.has("cluster")) throw InputError("field 'cluster' is required");
  decide::ScheduleRequest schedule_request;
  schedule_request.jobs = decide::parse_jobs(json{{"jobs", fields.raw("jobs")}}, "field 'jobs'");
  schedule_request.nodes = decide::parse_cluster(fields.raw("cluster"), "field 'cluster'");
  for (size_t index = 0; index < schedule_request.jobs.size(); ++index) {
    const std::string& name = schedule_request.jobs[index].model;
    const std::string where = "field 'jobs': job " + std::to_string(index + 1) + ": model " + quote(name);
    if (import::model_source_kind(name) == import::ModelSourceKind::File ||
        import::model_source_kind(name) == import::ModelSourceKind::Onnx)
      throw InputError(where + " names a file; the server takes zoo names and synthetic:SEED");
    if (import::model_source_kind(name) == import::ModelSourceKind::Zoo) {
      try {
        models::zoo_entry(starts_with(name, "zoo:") ? name.substr(4) : name);
      } catch (const InputError& error) {
        throw NotFound("field 'jobs': job " + std::to_string(index + 1) + ": " + error.what());
      }
    }
  }
  schedule_request.objective =
      decide::sched::parse_objective(fields.text("objective", "makespan"), "field 'objective'");
  schedule_request.ga.generations = fields.integer("generations", 100, 1, kMaxGenerations);
  schedule_request.ga.population = fields.integer("population", 64, 2, kMaxPopulation);
  schedule_request.ga.seed = fields.seed("seed", 1);
  schedule_request.exact = fields.flag("exact");
  fields.finish();
  static const gpu::GpuCalibration calibration = gpu::load_gpu_calibration();
  decide::ForecastCache cache(hardware::shipped_catalogue(), calibration);
  return {200, answer_text(to_json(decide::schedule(schedule_request, cache)), 2), "application/json"};
}

}  // namespace dnncast::serve

// ---------------------------------------------------------------------------------------------

const std::vector<Route>& routes() {
  static const std::vector<Route> table{
      // method, path, cached, inline, handler
      {"POST", "/v1/predict", true, false, predict},
      {"POST", "/v1/memory", true, false, memory_route},
      {"POST", "/v1/compare", true, false, compare_route},
      {"POST", "/v1/inspect", true, false, inspect_route},
      {"POST", "/v1/schedule", true, false, schedule_route},
      {"GET", "/v1/devices", true, false, devices},
      {"GET", "/", false, true, page},
      {"GET", "/healthz", false, true, healthz},
      {"GET", "/metrics", false, true, metrics},
  };
  return table;
}

HttpResponse error_response(int status, const std::string& message) {
  return {status, answer_text(json{{"error", message}}, -1), "application/json"};
}

const Route* Api::route_of(const std::string& path) {
  for (const Route& route : routes())
    if (path == route.path) return &route;
  return nullptr;
}

std::string cache_key(const Route& route, const HttpRequest& request) {
  if (!route.cached || request.method != route.method) return "";
  std::vector<std::pair<std::string, std::string>> query = request.query;
  std::sort(query.begin(), query.end());
  std::string key = std::string(route.path) + "\n";
  for (const auto& [name, value] : query) key += name + "=" + value + "&";
  key += "\n";
  if (request.method == "GET") return key;
  if (is_onnx_body(request))
    return key + "onnx " + hex(fnv1a(request.body)) + " " + std::to_string(request.body.size());
  if (!request.query.empty()) return "";
  const std::string type = media_type(request.content_type);
  if (!type.empty() && type != "application/json") return "";
  if (json_nesting(request.body) > kMaxJsonNesting) return "";  // refused when answered, never cached
  json body = json::parse(request.body, nullptr, false);        // no exceptions: malformed is simply not cached
  if (body.is_discarded() || !body.is_object()) return "";
  return key + body.dump(-1, ' ', false,
                         json::error_handler_t::replace);  // object keys sorted: one key for one set of fields
}

Api::Api(ApiOptions options)
    : options_(std::move(options)),
      graphs_(options_.graph_cache_entries, options_.graph_cache_nodes),
      responses_(options_.response_cache_entries, options_.response_cache_bytes) {}

Graph Api::graph(const std::string& source_key, const models::ModelSpec& spec, const std::function<Graph()>& build) {
  const std::string key = source_key + spec_key(spec);
  if (std::shared_ptr<const Graph> hit = graphs_.get(key)) {
    ++metrics_.graph_hits;
    return *hit;
  }
  ++metrics_.graph_misses;
  auto built = std::make_shared<const Graph>(build());
  graphs_.put(key, built, static_cast<size_t>(built->size()));
  return *built;
}

std::shared_ptr<const HttpResponse> Api::cached(const HttpRequest& request) {
  try {
    const Route* route = route_of(request.path);
    if (route == nullptr) return nullptr;
    const std::string key = cache_key(*route, request);
    if (key.empty()) return nullptr;
    std::shared_ptr<const HttpResponse> hit = responses_.get(key);
    if (hit) ++metrics_.response_hits;
    return hit;
  } catch (...) {
    return nullptr;  // handle() reports whatever this met
  }
}

HttpResponse Api::handle(const HttpRequest& request) {
  try {
    const Route* route = route_of(request.path);
    if (route == nullptr) {
      std::string list;
      for (const Route& known : routes())
        list += (list.empty() ? "" : ", ") + std::string(known.method) + " " + known.path;
      return error_response(404, "no route " + quote(request.path) + "; routes: " + list);
    }
    if (request.method != route->method)
      return error_response(405,
                            std::string(route->path) + " takes " + route->method + ", not " + quote(request.method));
    const int64_t cap = is_onnx_body(request) ? kMaxOnnxBodyBytes : kMaxJsonBodyBytes;
    if (static_cast<int64_t>(request.body.size()) > cap)
      return error_response(413, "body of " + std::to_string(request.body.size()) + " bytes is over the cap of " +
                                     std::to_string(cap) + " bytes for " +
                                     (is_onnx_body(request) ? "ONNX bytes" : "a JSON body"));
    const std::string key = cache_key(*route, request);
    if (!key.empty()) {
      if (std::shared_ptr<const HttpResponse> hit = responses_.get(key)) {
        ++metrics_.response_hits;
        return *hit;
      }
      ++metrics_.response_misses;
    }
    // Forecasts run side by side on the server's workers: the library's process-wide state (predictor sets, layer
    // row caches, the catalogue, oneDNN's answers) is loaded under its own locks and read-only after (checked under
    // ThreadSanitizer: ServeApi.ConcurrentRequestsAnswerAsOneAtATime, `make tsan`).
    HttpResponse response = route->handle(*this, request);
    if (!key.empty() && response.status == 200)
      responses_.put(key, std::make_shared<const HttpResponse>(response), response.body.size());
    return response;
  } catch (const std::exception& error) {
    const ErrorAnswer& answer = error_answer(&error);
    // Cut to a readable length: a 52 MB value once came back whole inside its error.
    const std::string message = cut_for_message(error.what(), kMessageLimit);
    return error_response(answer.http_status,
                          answer.kind == ErrorKind::Internal ? "internal error: " + message : message);
  } catch (...) {
    return error_response(error_answer(nullptr).http_status, "internal error: an exception of unknown type");
  }
}

// ---------------------------------------------------------------------------------------------
// Metrics

void Metrics::record(const std::string& route, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  Series& series = series_[route];
  ++series.by_status[status];
  for (size_t index = 0; index < kBucketsS.size(); ++index)
    if (seconds <= kBucketsS[index]) ++series.buckets[index];
  ++series.count;
  series.sum_s += seconds;
}

std::string Metrics::text() const {
  auto number = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", value);
    return std::string(text);
  };
  std::string out =
      "# HELP dnncast_requests_total Requests answered, by route and HTTP status.\n"
      "# TYPE dnncast_requests_total counter\n";
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [route, series] : series_)
    for (const auto& [status, count] : series.by_status)
      out += "dnncast_requests_total{route=\"" + route + "\",status=\"" + std::to_string(status) + "\"} " +
             std::to_string(count) + "\n";
  out +=
      "# HELP dnncast_request_duration_seconds Time from the request read to the answer written, by route.\n"
      "# TYPE dnncast_request_duration_seconds histogram\n";
  for (const auto& [route, series] : series_) {
    const std::string label = "{route=\"" + route + "\"";
    for (size_t index = 0; index < kBucketsS.size(); ++index)
      out += "dnncast_request_duration_seconds_bucket" + label + ",le=\"" + number(kBucketsS[index]) + "\"} " +
             std::to_string(series.buckets[index]) + "\n";
    out += "dnncast_request_duration_seconds_bucket" + label + ",le=\"+Inf\"} " + std::to_string(series.count) + "\n";
    out += "dnncast_request_duration_seconds_sum" + label + "} " + number(series.sum_s) + "\n";
    out += "dnncast_request_duration_seconds_count" + label + "} " + std::to_string(series.count) + "\n";
  }
  out +=
      "# HELP dnncast_cache_hits_total Lookups answered from a cache: graph (built models), response (whole "
      "answers).\n# TYPE dnncast_cache_hits_total counter\n";
  out += "dnncast_cache_hits_total{cache=\"graph\"} " + std::to_string(graph_hits.load()) + "\n";
  out += "dnncast_cache_hits_total{cache=\"response\"} " + std::to_string(response_hits.load()) + "\n";
  out +=
      "# HELP dnncast_cache_misses_total Lookups a cache could not answer.\n"
      "# TYPE dnncast_cache_misses_total counter\n";
  out += "dnncast_cache_misses_total{cache=\"graph\"} " + std::to_string(graph_misses.load()) + "\n";
  out += "dnncast_cache_misses_total{cache=\"response\"} " + std::to_string(response_misses.load()) + "\n";
  if (extra) out += extra();
  return out;
}

}  // namespace dnncast::serve
