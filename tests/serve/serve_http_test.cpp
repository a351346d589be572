// `dnncast serve` over real HTTP (issue 22): every route answers what the CLI's --json prints; bad requests
// get 400/404/405/413 with {"error"} naming the field; a full queue 429; a slow answer 504; the caches
// show in /metrics; SIGTERM finishes the request in flight and exits 0; bad flags exit 2.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli_run.h"
#include "serve_server.h"

namespace dnncast::serve_test {
namespace {

using nlohmann::json;

// The CLI's --json for `command args...`, parsed.
json cli_json(const std::string& command, const std::vector<std::string>& args) {
  cli_test::ScratchDir dir("serve_cli");
  const cli_test::Result result = cli_test::run(command, args, dir.path());
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return json::parse(result.out, nullptr, false);
}

json post(const Server& server, const std::string& path, const json& body, int expected_status) {
  httplib::Client client = server.client();
  httplib::Result result = client.Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(result) << path << " " << body.dump();
  if (!result) return json();
  EXPECT_EQ(result->status, expected_status) << path << " " << body.dump() << "\n" << result->body;
  EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
  return json::parse(result->body, nullptr, false);
}

// The error of a `status` answer, which must name `field`.
void expect_error(const Server& server, const std::string& path, const json& body, int status,
                  const std::string& field) {
  const json answer = post(server, path, body, status);
  ASSERT_TRUE(answer.is_object() && answer.contains("error")) << answer.dump();
  EXPECT_NE(answer["error"].get<std::string>().find(field), std::string::npos) << answer.dump();
}

// POST /v1/schedule answers what `dnncast schedule JOBS --cluster C --json` prints for the same jobs and cluster
// files; models are zoo names (a file is refused, an unknown model is 404).
TEST(ServeHttp, ScheduleAnswersAsTheCli) {
  Server server;
  ASSERT_TRUE(server.ok());
  const json jobs = json::parse(R"([
    {"name": "a", "model": "resnet50", "batch": 64, "input": "3x224x224", "precision": "amp", "iterations": 1000},
    {"name": "b", "model": "resnet18", "batch": 128, "input": "3x224x224", "iterations": 3000, "arrival_s": 60},
    {"name": "c", "model": "vgg16", "batch": 4096, "input": "3x224x224", "iterations": 10}])");
  const json cluster = {{"nodes", {{{"gpu", "t4"}, {"count", 2}}, {{"gpu", "a100-80gb"}, {"price_per_hour", 3.5}}}}};
  cli_test::ScratchDir dir("serve_schedule");
  std::ofstream(dir.path() + "/jobs.json") << json{{"jobs", jobs}}.dump();
  std::ofstream(dir.path() + "/cluster.json") << cluster.dump();
  const json answer =
      post(server, "/v1/schedule", {{"jobs", jobs}, {"cluster", cluster}, {"seed", 3}, {"exact", true}}, 200);
  EXPECT_EQ(answer, cli_json("schedule", {dir.path() + "/jobs.json", "--cluster", dir.path() + "/cluster.json",
                                          "--seed", "3", "--exact", "--json"}));
  EXPECT_EQ(answer["unplaceable"].size(), 1u);
  json with_file = jobs;
  with_file[0]["model"] = "/etc/passwd.json";
  expect_error(server, "/v1/schedule", {{"jobs", with_file}, {"cluster", cluster}}, 400, "names a file");
  json unknown = jobs;
  unknown[1]["model"] = "resnet5o";
  expect_error(server, "/v1/schedule", {{"jobs", unknown}, {"cluster", cluster}}, 404, "job 2");
  expect_error(server, "/v1/schedule", {{"jobs", jobs}}, 400, "cluster");
  expect_error(server, "/v1/schedule", {{"jobs", jobs}, {"cluster", {{"nodes", json::array()}}}}, 400,
               "'nodes' is empty");
  expect_error(server, "/v1/schedule", {{"jobs", jobs}, {"cluster", cluster}, {"objective", "fast"}}, 400, "objective");
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(ServeHttp, EveryRouteAnswersAsTheCli) {
  Server server;
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(post(server, "/v1/predict", {{"model", "resnet50"}, {"batch", 32}}, 200),
            cli_json("predict", {"resnet50", "--batch", "32", "--json"}));
  EXPECT_EQ(post(server, "/v1/memory", {{"model", "resnet50"}, {"batch", 8}, {"max_batch_bytes", "8GiB"}}, 200),
            cli_json("memory", {"resnet50", "--batch", "8", "--max-batch", "8GiB", "--json"}));
  // LoRA (graph/lora.h): the same graph from the field as from the flag.
  EXPECT_EQ(post(server, "/v1/memory", {{"model", "bert_base"}, {"seq", 32}, {"lora", "r=8,targets=query,value"}}, 200),
            cli_json("memory", {"bert_base", "--seq", "32", "--lora", "r=8,targets=query,value", "--json"}));
  EXPECT_EQ(
      post(server, "/v1/predict",
           {{"model", "gpt2_small"}, {"batch", 4}, {"seq", 32}, {"device", "t4"}, {"lora", "r=4,targets=c_attn"}}, 200),
      cli_json("predict", {"gpt2_small", "--batch", "4", "--seq", "32", "--device", "t4", "--lora",
                           "r=4,targets=c_attn", "--json"}));
  EXPECT_EQ(post(server, "/v1/inspect", {{"model", "resnet18"}, {"batch", 4}}, 200),
            cli_json("inspect", {"resnet18", "--batch", "4", "--json"}));
  EXPECT_EQ(post(server, "/v1/compare", {{"model", "resnet50"}, {"batch", 32}, {"gpus", "t4,a100-80gb"}}, 200),
            cli_json("compare", {"resnet50", "--batch", "32", "--gpus", "t4,a100-80gb", "--json"}));
  EXPECT_EQ(post(server, "/v1/predict", {{"model", "resnet50"}, {"batch", 32}, {"device", "a100-80gb"}}, 200),
            cli_json("predict", {"resnet50", "--batch", "32", "--device", "a100-80gb", "--json"}));

  httplib::Client client = server.client();
  httplib::Result devices = client.Get("/v1/devices");
  ASSERT_TRUE(devices);
  EXPECT_EQ(devices->status, 200);
  EXPECT_EQ(json::parse(devices->body), cli_json("devices", {"--json"}));
  httplib::Result instances = client.Get("/v1/devices?instances=true");
  ASSERT_TRUE(instances);
  EXPECT_EQ(json::parse(instances->body), cli_json("devices", {"--instances", "--json"}));
  // curl -d's Content-Type: the body is JSON all the same.
  httplib::Result form =
      client.Post("/v1/inspect", R"({"model": "resnet18", "batch": 4})", "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 200) << form->body;
  httplib::Result health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(ServeHttp, GraphJsonInlineAndOnnxBytes) {
  Server server;
  ASSERT_TRUE(server.ok());
  const std::string graph_file =
      std::string(DNNCAST_SOURCE_DIR) + "/tests/cli/forecast_fixture/graph_squeezenet1_1.json";
  const json graph = json::parse(cli_test::read_text(graph_file));
  json from_server = post(server, "/v1/inspect", {{"graph", graph}, {"batch", 2}}, 200);
  json from_cli = cli_json("inspect", {graph_file, "--batch", "2", "--json"});
  EXPECT_EQ(from_server, from_cli);
  expect_error(server, "/v1/inspect", {{"graph", graph}, {"classes", 10}}, 400, "classes");
  expect_error(server, "/v1/inspect", {{"graph", {{"format", "dnncast-graph/1"}}}}, 400, "graph");

  // A small ONNX model made with onnx.helper: Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm.
  cli_test::ScratchDir dir("serve_onnx");
  const std::string onnx_path = dir.path() + "/small.onnx";
  const std::string script =
      "import numpy as np, onnx\n"
      "from onnx import helper, TensorProto, numpy_helper\n"
      "w = numpy_helper.from_array(np.zeros((8, 3, 3, 3), np.float32), 'w')\n"
      "fc = numpy_helper.from_array(np.zeros((10, 8), np.float32), 'fc')\n"
      "fb = numpy_helper.from_array(np.zeros((10,), np.float32), 'fb')\n"
      "nodes = [helper.make_node('Conv', ['x', 'w'], ['c'], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),\n"
      "         helper.make_node('Relu', ['c'], ['r']), helper.make_node('GlobalAveragePool', ['r'], ['p']),\n"
      "         helper.make_node('Flatten', ['p'], ['f']), helper.make_node('Gemm', ['f', 'fc', 'fb'], ['y'], "
      "transB=1)]\n"
      "g = helper.make_graph(nodes, 'small', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 3, 32, "
      "32])],\n"
      "                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 10])], [w, fc, fb])\n"
      "onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), '" +
      onnx_path + "')\n";
  const std::string script_path = dir.path() + "/make.py";
  FILE* file = std::fopen(script_path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs(script.c_str(), file);
  std::fclose(file);
  ASSERT_EQ(std::system((std::string(DNNCAST_PYTHON) + " " + script_path).c_str()), 0);
  const std::string bytes = cli_test::read_text(onnx_path);
  httplib::Client client = server.client();
  httplib::Result answer = client.Post("/v1/inspect?batch=4&name=small", bytes, "application/onnx");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 200) << answer->body;
  EXPECT_EQ(json::parse(answer->body), cli_json("inspect", {onnx_path, "--batch", "4", "--json"}));
  httplib::Result memory = client.Post("/v1/memory?batch=4&optimizer=adam", bytes, "application/onnx");
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->status, 200) << memory->body;
  httplib::Result bad = client.Post("/v1/inspect?batch=four", bytes, "application/onnx");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("batch"), std::string::npos) << bad->body;
  httplib::Result garbage = client.Post("/v1/inspect", std::string("not onnx at all"), "application/onnx");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 400) << garbage->body;
  EXPECT_EQ(server.stop(), 0);
}

TEST(ServeHttp, BadRequestsNameTheField) {
  Server server;
  ASSERT_TRUE(server.ok());
  expect_error(server, "/v1/predict", {{"model", "resnet50"}}, 400, "batch");
  expect_error(server, "/v1/predict", {{"model", "resnet50"}, {"batch", "32"}}, 400, "batch");
  expect_error(server, "/v1/predict", {{"model", "resnet50"}, {"batch", 0}}, 400, "batch");
  expect_error(server, "/v1/predict", {{"model", "resnet50"}, {"batch", 8}, {"optimiser", "adam"}}, 400, "optimiser");
  expect_error(server, "/v1/predict", {{"model", "resnet50"}, {"batch", 8}, {"optimizer", "rmsprop"}}, 400,
               "optimizer");
  expect_error(server, "/v1/predict", {{"model", "resnet50"}, {"batch", 8}, {"device", "h900"}}, 400, "device");
  expect_error(server, "/v1/memory", {{"model", "resnet50"}, {"input", "3x224"}}, 400, "input");
  expect_error(server, "/v1/memory", {{"model", "resnet50"}, {"fits", "lots"}}, 400, "fits");
  expect_error(server, "/v1/memory", {{"model", "/etc/passwd"}}, 400, "model");
  expect_error(server, "/v1/compare", {{"model", "resnet50"}, {"batch", 8}, {"gpus", "nosuchgpu"}}, 400, "nosuchgpu");
  expect_error(server, "/v1/inspect", json::object(), 400, "model");
  expect_error(server, "/v1/inspect", {{"model", "resnet5o"}}, 404, "resnet50");  // unknown model: 404, did you mean

  httplib::Client client = server.client();
  httplib::Result not_json = client.Post("/v1/predict", std::string("{\"model\": "), "application/json");
  ASSERT_TRUE(not_json);
  EXPECT_EQ(not_json->status, 400);
  EXPECT_NE(json::parse(not_json->body)["error"].get<std::string>().find("body"), std::string::npos);
  httplib::Result no_route = client.Get("/v2/predict");
  ASSERT_TRUE(no_route);
  EXPECT_EQ(no_route->status, 404);
  EXPECT_NE(no_route->body.find("/v1/predict"), std::string::npos) << no_route->body;
  httplib::Result wrong_method = client.Get("/v1/predict");
  ASSERT_TRUE(wrong_method);
  EXPECT_EQ(wrong_method->status, 405);
  httplib::Result bad_query = client.Get("/v1/devices?instances=maybe");
  ASSERT_TRUE(bad_query);
  EXPECT_EQ(bad_query->status, 400);
  EXPECT_NE(bad_query->body.find("instances"), std::string::npos);

  // Over the caps: 1 MiB for JSON (the server's own check), 64 MiB for ONNX bytes (httplib's, answered as JSON).
  const std::string big_json = "{\"model\": \"resnet50\", \"pad\": \"" + std::string(size_t{1} << 20, 'x') + "\"}";
  httplib::Result too_big = client.Post("/v1/predict", big_json, "application/json");
  ASSERT_TRUE(too_big);
  EXPECT_EQ(too_big->status, 413);
  EXPECT_TRUE(json::parse(too_big->body).contains("error"));
  httplib::Result too_big_onnx =
      client.Post("/v1/inspect", std::string((size_t{64} << 20) + 1, '\0'), "application/onnx");
  ASSERT_TRUE(too_big_onnx);
  EXPECT_EQ(too_big_onnx->status, 413);
  EXPECT_TRUE(json::parse(too_big_onnx->body, nullptr, false).contains("error")) << too_big_onnx->body;

  // Still serving after all of that.
  EXPECT_EQ(post(server, "/v1/inspect", {{"model", "alexnet"}}, 200)["model"], "alexnet");
  EXPECT_EQ(server.stop(), 0);
  EXPECT_EQ(server.stderr_text().find("internal error"), std::string::npos);
}

TEST(ServeHttp, CachesShowInMetrics) {
  Server server;
  ASSERT_TRUE(server.ok());
  const json body = {{"model", "resnet50"}, {"batch", 16}};
  const json first = post(server, "/v1/predict", body, 200);
  for (int repeat = 0; repeat < 5; ++repeat) EXPECT_EQ(post(server, "/v1/predict", body, 200), first);
  // Another optimizer: a new answer from the graph already built.
  post(server, "/v1/memory", {{"model", "resnet50"}, {"batch", 16}}, 200);
  post(server, "/v1/memory", {{"model", "resnet50"}, {"batch", 16}, {"optimizer", "adam"}}, 200);
  post(server, "/v1/predict", {{"model", "nosuch"}, {"batch", 1}}, 404);

  httplib::Client client = server.client();
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type").rfind("text/plain", 0), 0u);
  const std::string& text = metrics->body;
  EXPECT_NE(text.find("dnncast_requests_total{route=\"/v1/predict\",status=\"200\"} 6\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dnncast_requests_total{route=\"/v1/predict\",status=\"404\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dnncast_requests_total{route=\"/v1/memory\",status=\"200\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dnncast_cache_hits_total{cache=\"response\"} 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dnncast_cache_hits_total{cache=\"graph\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dnncast_request_duration_seconds_bucket{route=\"/v1/predict\",le=\"+Inf\"} 7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("dnncast_request_duration_seconds_count{route=\"/v1/predict\"} 7\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE dnncast_request_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("dnncast_queue_depth 0\n"), std::string::npos);
  EXPECT_EQ(server.stop(), 0);
}

TEST(ServeHttp, FullQueueAnswers429AndSlowAnswers504) {
  // One worker, no queue, every task held 1.5 s: of three different requests at once, one or two are refused.
  Server server({"--threads", "1", "--queue", "0"}, 1500);
  ASSERT_TRUE(server.ok());
  std::vector<std::future<int>> answers;
  for (int batch = 1; batch <= 3; ++batch)
    answers.push_back(std::async(std::launch::async, [&server, batch] {
      httplib::Client client = server.client();
      httplib::Result result =
          client.Post("/v1/inspect", json{{"model", "alexnet"}, {"batch", batch}}.dump(), "application/json");
      if (result && result->status == 429) {
        EXPECT_NE(result->body.find("busy"), std::string::npos);
      }
      return result ? result->status : -1;
    }));
  int ok = 0, refused = 0;
  for (std::future<int>& answer : answers) {
    const int status = answer.get();
    ok += status == 200;
    refused += status == 429;
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(refused, 1);
  EXPECT_EQ(ok + refused, 3);
  // Health is answered on the connection's thread, never queued.
  EXPECT_EQ(server.client().Get("/healthz")->status, 200);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();

  Server slow({"--timeout", "0.2"}, 1500);
  ASSERT_TRUE(slow.ok());
  expect_error(slow, "/v1/inspect", {{"model", "alexnet"}}, 504, "--timeout");
  EXPECT_EQ(slow.stop(), 0);
}

TEST(ServeHttp, SigtermFinishesTheRequestInFlight) {
  Server server({}, 1000);
  ASSERT_TRUE(server.ok());
  std::future<int> in_flight = std::async(std::launch::async, [&server] {
    httplib::Client client = server.client();
    httplib::Result result = client.Post("/v1/inspect", json{{"model", "alexnet"}}.dump(), "application/json");
    return result ? result->status : -1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the request is with a worker
  kill(server.pid(), SIGTERM);
  EXPECT_EQ(in_flight.get(), 200);
  EXPECT_EQ(server.wait(), 0);
  EXPECT_NE(server.stderr_text().find("SIGTERM"), std::string::npos) << server.stderr_text();
}

TEST(ServeCli, BadFlagsExit2) {
  cli_test::ScratchDir dir("serve_flags");
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--listen", "nonsense"},
                                             {"--listen", "127.0.0.1:99999"},
                                             {"--listen", "127.0.0.1:"},
                                             {"--listen", "0.0.0.0:0"},  // not loopback without --allow-remote
                                             {"--threads", "0"},
                                             {"--timeout", "-1"}}) {
    const cli_test::Result result = cli_test::run("serve", args, dir.path());
    EXPECT_EQ(result.exit_code, 2) << args[0] << " " << args[1] << "\n" << result.err;
    EXPECT_NE(result.err.find(args[0]), std::string::npos) << result.err;
  }
}

}  // namespace
}  // namespace dnncast::serve_test
