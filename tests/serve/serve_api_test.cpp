// serve/serve_api.h without sockets: the response cache's key, field errors, and that nothing a client sends
// becomes a 500.
#include "serve/serve_api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

namespace dnncast::serve {
namespace {

HttpRequest post(const std::string& path, const std::string& body) {
  return {"POST", path, "application/json", body, {}};
}

TEST(ServeApi, CacheKeyIsCanonical) {
  const Route& predict = *Api::route_of("/v1/predict");
  EXPECT_EQ(cache_key(predict, post("/v1/predict", R"({"model": "resnet50", "batch": 8})")),
            cache_key(predict, post("/v1/predict", R"({"batch":8,"model":"resnet50"})")));
  EXPECT_NE(cache_key(predict, post("/v1/predict", R"({"model": "resnet50", "batch": 8})")),
            cache_key(predict, post("/v1/predict", R"({"model": "resnet50", "batch": 9})")));
  EXPECT_EQ(cache_key(predict, post("/v1/predict", "{not json")), "");
  EXPECT_EQ(cache_key(*Api::route_of("/healthz"), {"GET", "/healthz", "", "", {}}), "");
  EXPECT_EQ(Api::route_of("/v1/nothing"), nullptr);
}

// The caches are bounded in entries and in weight (graph nodes, answer bytes), least recently used out first, so that
// a stream of large models cannot take the server's memory (issue 51).
TEST(ServeApi, CachesAreBoundedByWeightToo) {
  LruCache<int> cache(10, 100);
  cache.put("a", std::make_shared<const int>(1), 60);
  cache.put("b", std::make_shared<const int>(2), 30);
  EXPECT_EQ(cache.size(), 2u);
  ASSERT_NE(cache.get("a"), nullptr);                  // a is now the most recently used
  cache.put("c", std::make_shared<const int>(3), 20);  // 110 > 100: b goes
  EXPECT_EQ(cache.get("b"), nullptr);
  EXPECT_NE(cache.get("a"), nullptr);
  EXPECT_NE(cache.get("c"), nullptr);
  cache.put("d", std::make_shared<const int>(4), 101);  // heavier than the whole budget: not kept
  EXPECT_EQ(cache.get("d"), nullptr);
  EXPECT_EQ(cache.size(), 2u);
  cache.put("c", std::make_shared<const int>(5), 90);  // replaced and heavier: a (60) goes
  EXPECT_EQ(cache.get("a"), nullptr);
  ASSERT_NE(cache.get("c"), nullptr);
  EXPECT_EQ(*cache.get("c"), 5);
  LruCache<int> counted(2);  // entries alone
  for (const char* key : {"x", "y", "z"}) counted.put(key, std::make_shared<const int>(0));
  EXPECT_EQ(counted.size(), 2u);
  EXPECT_EQ(counted.get("x"), nullptr);
}

TEST(ServeApi, AnswersErrorsWithStatusAndField) {
  Api api({});
  struct Case {
    HttpRequest request;
    int status;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {post("/v1/inspect", R"({"model": "resnet18", "batch": -1})"), 400, "batch"},
      {post("/v1/inspect", R"({"model": "resnet18", "input": [3, 0, 4]})"), 400, "input"},
      {post("/v1/inspect", R"({"model": "resnet18", "seq": 5, "input": "3x32x32"})"), 400, "seq"},
      {post("/v1/inspect", R"({"model": "resnet18", "graph": {}})"), 400, "graph"},
      {post("/v1/inspect", R"({"model": 5})"), 400, "model"},
      {post("/v1/inspect", R"([1, 2])"), 400, "body"},
      {post("/v1/inspect", R"({"model": "zoo:nosuchnet"})"), 404, "nosuchnet"},
      {post("/v1/memory", R"({"model": "resnet18", "batch_cap": 0})"), 400, "batch_cap"},
      {post("/v1/memory", R"({"model": "resnet18", "lora": ""})"), 400, "field 'lora': empty"},
      {post("/v1/memory", R"({"model": "resnet18", "isa": "avx9"})"), 400, "isa"},
      {post("/v1/schedule", R"({"jobs": [{"model": "resnet18", "batch": 8, "iterations": 10}],
          "cluster": {"nodes": [{"gpu": "t4"}]}, "seed": -1})"),
       400, "a seed is a whole number from 0 to 18446744073709551615, got -1"},  // as the CLI's --seed -1
      {post("/v1/memory", R"({"model": "resnet18", "grad_accum": 9223372036854775808})"), 400,
       "9223372036854775808 is past what a 64-bit integer holds"},
      {post("/v1/compare", R"({"model": "resnet18", "batch": 1, "spot": "yes"})"), 400, "spot"},
      {post("/v1/compare", R"({"model": "resnet18", "batch": 1, "gpus": [1]})"), 400, "gpus"},
      {{"POST", "/v1/inspect", "text/plain", "{}", {}}, 400, "Content-Type"},
      {{"POST", "/v1/inspect", "application/json", "{}", {{"batch", "2"}}}, 400, "batch"},
      {{"POST", "/v1/inspect", "application/onnx", "", {}}, 400, "ONNX"},
      {{"DELETE", "/v1/inspect", "", "", {}}, 405, "POST"},
      {{"GET", "/nothing", "", "", {}}, 404, "/v1/predict"},
      // Not UTF-8, quoted into the message: replaced in the answer, never a crash (found by fuzz_serve_request).
      {post("/v1/predict",
            "{\"model\": \"resnet\xce"
            "0\", \"batch\": 8}"),
       400, "body"},
      {post("/v1/predict", "{\"model}}}}\": \"resnet\", \"batch\": 8}"), 400, "model}}}}"},
      {{"POST",
        "/v1/inspect",
        "application/onnx",
        "x",
        {{"batch",
          "\xce"
          "0"}}},
       400,
       "batch"},
  };
  for (const Case& item : cases) {
    const HttpResponse response = api.handle(item.request);
    EXPECT_EQ(response.status, item.status) << item.request.path << " " << item.request.body << "\n" << response.body;
    const nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
    ASSERT_TRUE(body.contains("error")) << response.body;
    EXPECT_NE(body["error"].get<std::string>().find(item.mentions), std::string::npos) << response.body;
  }
}

// A body nested 100,000 deep (issue 51: it killed the server with SIGSEGV, in any field, known or not) is one 400
// naming the limit, on every route and cache path, and the server answers the next request as before.
TEST(ServeApi, DeeplyNestedBodiesAreRefusedAndTheServerGoesOn) {
  Api api({});
  const int depth = 100000;
  const std::string nested = std::string(depth, '[') + std::string(depth, ']');
  for (const char* path : {"/v1/predict", "/v1/memory", "/v1/inspect", "/v1/compare", "/v1/schedule"}) {
    for (const std::string& body : {R"({"model": "resnet18", "batch": 2, "seed": )" + nested + "}",
                                    R"({"unknown_field": )" + nested + R"(, "model": "resnet18"})", nested}) {
      const HttpResponse response = api.handle(post(path, body));
      EXPECT_EQ(response.status, 400) << path;
      EXPECT_NE(response.body.find("JSON nested deeper than 256 levels"), std::string::npos) << response.body;
      EXPECT_EQ(cache_key(*Api::route_of(path), post(path, body)), "") << path;
    }
  }
  // 256 levels are a document like any other: refused for what its fields say, not for their depth.
  const std::string deep_ok =
      R"({"model": "resnet18", "batch": 2, "x": )" + std::string(255, '[') + std::string(255, ']') + "}";
  const HttpResponse at_limit = api.handle(post("/v1/inspect", deep_ok));
  EXPECT_EQ(at_limit.status, 400);
  EXPECT_EQ(at_limit.body.find("nested deeper"), std::string::npos) << at_limit.body;
  EXPECT_NE(at_limit.body.find("'x'"), std::string::npos) << at_limit.body;
  const HttpResponse after = api.handle(post("/v1/inspect", R"({"model": "resnet18", "batch": 2})"));
  EXPECT_EQ(after.status, 200) << after.body;
}

// Forecasts run side by side on the server's workers (no lock around them): every route that computes, asked by
// four threads at once from a cold process (predictor sets, layer models, the GPU calibration and the catalogue
// loaded while the others wait for them), answers byte for byte what one thread asking alone gets. Under
// ThreadSanitizer (`make tsan`) this is also the race check of the whole forecast path.
TEST(ServeApi, ConcurrentRequestsAnswerAsOneAtATime) {
  std::vector<HttpRequest> requests;
  const char* models[] = {"resnet50", "resnet18", "mobilenet_v2", "vgg11", "bert_base"};
  for (int index = 0; index < 5; ++index) {
    const std::string model = models[index];
    const std::string batch = std::to_string(3 + 5 * index);
    requests.push_back(post("/v1/predict", R"({"model": ")" + model + R"(", "batch": )" + batch + "}"));
    requests.push_back(post("/v1/predict", R"({"model": ")" + model + R"(", "batch": )" + batch +
                                               R"(, "device": "a100-40gb", "precision": "amp"})"));
    requests.push_back(post("/v1/memory", R"({"model": ")" + model + R"(", "batch": )" + batch + "}"));
    requests.push_back(post("/v1/inspect", R"({"model": ")" + model + R"(", "batch": )" + batch + "}"));
  }
  requests.push_back(post("/v1/predict", R"({"model": "resnet50", "batch": 700, "input": "3x96x96"})"));
  requests.push_back(post("/v1/compare", R"({"model": "resnet18", "batch": 64})"));
  requests.push_back(post("/v1/schedule", R"({"jobs": [{"model": "resnet50", "batch": 64, "iterations": 1000},
      {"model": "resnet18", "batch": 128, "iterations": 2000}], "cluster": {"nodes": [{"gpu": "t4", "count": 2},
      {"gpu": "a100-80gb"}]}, "seed": 3, "generations": 5})"));
  requests.push_back({"GET", "/v1/devices", "", "", {}});

  ApiOptions uncached;
  uncached.response_cache_entries = 0;  // every request computed, by every thread
  uncached.graph_cache_entries = 4;     // graphs evicted and rebuilt while other threads read them
  Api together(uncached);
  constexpr int kThreads = 4;
  std::vector<std::vector<HttpResponse>> answers(kThreads, std::vector<HttpResponse>(requests.size()));
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread)
    threads.emplace_back([&, thread] {
      std::vector<size_t> order(requests.size());
      for (size_t index = 0; index < order.size(); ++index) order[index] = index;
      std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(thread)));
      for (size_t index : order) answers[thread][index] = together.handle(requests[index]);
    });
  for (std::thread& thread : threads) thread.join();

  Api alone(uncached);
  for (size_t index = 0; index < requests.size(); ++index) {
    const HttpResponse expected = alone.handle(requests[index]);
    ASSERT_EQ(expected.status, 200) << requests[index].path << " " << requests[index].body << "\n" << expected.body;
    for (int thread = 0; thread < kThreads; ++thread) {
      EXPECT_EQ(answers[thread][index].status, 200) << requests[index].body;
      EXPECT_EQ(answers[thread][index].body, expected.body)
          << "thread " << thread << ": " << requests[index].path << " " << requests[index].body;
    }
  }
}

TEST(ServeApi, GraphCacheAnswersRepeatedBuilds) {
  Api api({});
  EXPECT_EQ(api.handle(post("/v1/inspect", R"({"model": "alexnet", "batch": 2})")).status, 200);
  EXPECT_EQ(api.handle(post("/v1/memory", R"({"model": "alexnet", "batch": 2})")).status, 200);
  EXPECT_EQ(api.metrics().graph_misses.load(), 1);
  EXPECT_EQ(api.metrics().graph_hits.load(), 1);
  EXPECT_EQ(api.handle(post("/v1/inspect", R"({"batch": 2, "model": "alexnet"})")).status, 200);
  EXPECT_EQ(api.metrics().response_hits.load(), 1);
}

}  // namespace
}  // namespace dnncast::serve
