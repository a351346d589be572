// `dnncast serve`'s request parser (serve/serve_api.h): the first byte picks the route and the body's kind
// (JSON, or ONNX bytes with a query), the rest is the body. The server answers every input with a status
// and {"error"} at worst: a 500 (an exception that is not an InputError) is a finding, as a crash is.
// Predictor sets are looked for in a folder that does not exist, so /v1/predict stops after parsing.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "serve/serve_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dnncast::serve;
  static Api api([] {
    ApiOptions options;
    options.predictor_dir = "/nonexistent-fuzz-dir";
    options.response_cache_entries = 16;
    options.graph_cache_entries = 16;
    return options;
  }());
  if (size == 0) return 0;
  const std::vector<Route>& table = routes();
  const Route& route = table[data[0] % table.size()];
  HttpRequest request;
  request.method = (data[0] & 0x80) ? "POST" : route.method;
  request.path = route.path;
  request.body = dnncast::fuzz::text_of(data + 1, size - 1);
  if (data[0] & 0x40) {  // ONNX bytes, with a small query
    request.content_type = "application/onnx";
    request.query = {{"batch", "2"}, {"input", "3x32x32"}};
  } else {
    request.content_type = "application/json";
  }
  (void)cache_key(route, request);
  const HttpResponse response = api.handle(request);
  if (response.status == 500 || response.status < 200) {
    std::fprintf(stderr, "fuzz: status %d: %s\n", response.status, response.body.c_str());
    std::abort();
  }
  if (response.status != 200 && !nlohmann::json::parse(response.body, nullptr, false).contains("error")) {
    std::fprintf(stderr, "fuzz: status %d without {\"error\"}: %s\n", response.status, response.body.c_str());
    std::abort();
  }
  return 0;
}
