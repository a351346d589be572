// `dnncast serve` without the sockets (issue 22, docs/SERVE.md): the route table, a request's JSON body
// (or ONNX bytes) read into the forecast API's request, the answer as the CLI's --json prints it or
// {"error": "..."} with its HTTP status, the graph and response caches, and the Prometheus metrics.
// The HTTP server (src/cli/serve_http.cpp) adds the sockets, the worker pool, the queue and the timeout;
// everything here is callable, testable and fuzzable without them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "models/zoo.h"

namespace dnncast::serve {

inline constexpr int64_t kMaxJsonBodyBytes = int64_t{1} << 20;   // a JSON body, graph JSON inline included
inline constexpr int64_t kMaxOnnxBodyBytes = int64_t{64} << 20;  // ONNX bytes (Content-Type application/onnx)

struct HttpRequest {
  std::string method, path;  // "POST", "/v1/predict"
  std::string content_type;  // "application/json" (or empty), "application/onnx" / "application/octet-stream"
  std::string body;
  std::vector<std::pair<std::string, std::string>> query;  // ?batch=32&input=3x224x224 (GET, ONNX bodies)
};

struct HttpResponse {
  int status = 200;
  std::string body;  // JSON, except /metrics (Prometheus text)
  std::string content_type = "application/json";
};

// {"error": message} with `status`.
HttpResponse error_response(int status, const std::string& message);

class Api;

// One route of the server. The table below (routes()) is the one source of truth: the HTTP server
// serves it, docs/openapi.yaml lists it (tests/serve checks both ways).
struct Route {
  const char* method;  // "GET" or "POST"
  const char* path;
  bool cached;   // answers kept in the response cache (same request, same answer)
  bool inline_;  // answered on the connection's thread, never queued (health and metrics under load)
  HttpResponse (*handle)(Api& api, const HttpRequest& request);
};
const std::vector<Route>& routes();

struct ApiOptions {
  std::string predictor_dir;         // --predictors; "": the shipped sets (data/predictors)
  size_t graph_cache_entries = 256;  // built graphs kept (each model x input x batch one entry)
  // Their nodes together: about 1 GB (core/checked.h's kMaxGraphNodes is a quarter of it).
  size_t graph_cache_nodes = size_t{1} << 20;
  size_t response_cache_entries = 4096;
  size_t response_cache_bytes = size_t{256} << 20;  // the answers' bytes together
};

// Request counts by route and status, latency histograms, cache hits: the /metrics text.
class Metrics {
 public:
  static constexpr std::array<double, 12> kBucketsS = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                       0.01,   0.025,   0.05,   0.1,   0.5,    2.5};
  // `route`: a path of the table, or "other" (an unknown path, so that the label set stays bounded).
  void record(const std::string& route, int status, double seconds);
  // Prometheus text exposition format, version 0.0.4.
  std::string text() const;
  std::function<std::string()> extra;  // more lines (the server's queue and pool gauges)
  std::atomic<int64_t> graph_hits{0}, graph_misses{0}, response_hits{0}, response_misses{0};

 private:
  struct Series {
    std::map<int, int64_t> by_status;
    std::array<int64_t, kBucketsS.size()> buckets{};
    int64_t count = 0;
    double sum_s = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Series> series_;
};

// A bounded map with least-recently-used eviction; thread-safe. Bounded in entries and in their total weight (a
// graph's nodes, an answer's bytes): one entry heavier than the whole budget is not kept.
template <typename Value>
class LruCache {
 public:
  explicit LruCache(size_t capacity, size_t weight_capacity = SIZE_MAX)
      : capacity_(capacity), weight_capacity_(weight_capacity) {}
  std::shared_ptr<const Value> get(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = index_.find(key);
    if (found == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, found->second);
    return found->second->value;
  }
  void put(const std::string& key, std::shared_ptr<const Value> value, size_t weight = 1) {
    if (capacity_ == 0 || weight > weight_capacity_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = index_.find(key);
    if (found != index_.end()) {
      weight_ -= found->second->weight;
      order_.erase(found->second);
      index_.erase(found);
    }
    order_.push_front({key, std::move(value), weight});
    index_[key] = order_.begin();
    weight_ += weight;
    while (order_.size() > capacity_ || weight_ > weight_capacity_) {
      weight_ -= order_.back().weight;
      index_.erase(order_.back().key);
      order_.pop_back();
    }
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return order_.size();
  }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const Value> value;
    size_t weight = 1;
  };
  size_t capacity_, weight_capacity_, weight_ = 0;
  mutable std::mutex mutex_;
  std::list<Entry> order_;
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
};

class Api {
 public:
  explicit Api(ApiOptions options);

  // The whole answer: the route's, or 404 (no such path), 405 (wrong method), 413 (body over its cap),
  // 400 (bad body, naming the field), 404 (unknown model), 500 (a bug). Never throws.
  HttpResponse handle(const HttpRequest& request);
  // The answer when the response cache holds it (a cached route, a well-formed request); else nullptr.
  // Never throws.
  std::shared_ptr<const HttpResponse> cached(const HttpRequest& request);
  // The route `request` asks for, or nullptr (unknown path).
  static const Route* route_of(const std::string& path);

  Metrics& metrics() { return metrics_; }
  const ApiOptions& options() const { return options_; }
  // The graph of a model source for one spec, from the graph cache (key: the source's identity, e.g.
  // "zoo:resnet50" or the hash of inline bytes, and the spec), built with `build` on a miss.
  Graph graph(const std::string& source_key, const models::ModelSpec& spec, const std::function<Graph()>& build);

 private:
  ApiOptions options_;
  Metrics metrics_;
  LruCache<Graph> graphs_;
  LruCache<HttpResponse> responses_;
};

// The response cache's key of a request: route, canonical parameters, body hash; "" when the request
// cannot be cached (not a cached route, or malformed). Exposed for the tests.
std::string cache_key(const Route& route, const HttpRequest& request);

}  // namespace dnncast::serve
