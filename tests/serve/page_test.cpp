// The page at serve's `/` (serve/page.h, issue 49) in a real headless Chromium (Debian's, installed by
// scripts/setup.sh): a question given as the page's link gets, in the rendered page, the numbers `dnncast predict
// --json` and `dnncast memory --json` give for it; a bad one shows the server's one-line error; the page names no
// other host and its Content-Security-Policy lets its requests go only to the server. And serve reads a Hub id
// from this host's Hugging Face cache as the CLI does.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "chromium_run.h"
#include "cli_run.h"
#include "serve_server.h"

namespace dnncast::serve_test {
namespace {

// The DOM Chromium built for URL once the page's own requests were answered.
std::string rendered_dom(const std::string& url, const std::string& dir) {
  const std::string command = "timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir=" +
                              cli_test::shell_quoted(dir + "/profile") + " --virtual-time-budget=30000 --dump-dom " +
                              cli_test::shell_quoted(url) + " >" + cli_test::shell_quoted(dir + "/dom.html") +
                              " 2>/dev/null";
  if (std::system(command.c_str()) != 0) return "";
  return cli_test::read_text(dir + "/dom.html");
}

// The text of the element with `id` in the dumped DOM ("" when absent).
std::string text_of(const std::string& dom, const std::string& id) {
  const std::regex element("id=\"" + id + "\"[^>]*>([^<]*)<");
  std::smatch found;
  return std::regex_search(dom, found, element) ? found[1].str() : "";
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string gib(int64_t bytes) {  // the page's rendering of a byte count
  const double value = static_cast<double>(bytes);
  return value >= 1073741824.0 ? fixed(value / 1073741824.0, 2) + " GiB" : fixed(value / 1048576.0, 1) + " MiB";
}

class ServePage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!chromium_test::have_chromium())
      GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it; under CI=true this skip fails)";
  }
};

TEST_F(ServePage, AQuestionInTheLinkGetsTheCliAnswers) {
  Server server;
  ASSERT_TRUE(server.ok()) << server.stderr_text();
  cli_test::ScratchDir dir("page");
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port()) + "/";
  const std::vector<std::string> question = {"resnet18", "--batch", "8", "--input", "3x64x64", "--device", "a100-40gb"};
  const std::string dom =
      rendered_dom(base + "?model=resnet18&batch=8&input=3x64x64&device=a100-40gb&epoch_samples=1000", dir.path());
  ASSERT_NE(dom.find("data-answered=\"1\""), std::string::npos) << dom.substr(0, 2000);
  std::vector<std::string> predict_args = question;
  for (const char* arg : {"--epoch-samples", "1000", "--json"}) predict_args.push_back(arg);
  const cli_test::Result time = cli_test::run("predict", predict_args, dir.path());
  ASSERT_EQ(time.exit_code, 0) << time.err;
  std::vector<std::string> memory_args = question;
  for (const char* arg : {"--fits", "gpu", "--max-batch", "gpu", "--json"}) memory_args.push_back(arg);
  const cli_test::Result memory = cli_test::run("memory", memory_args, dir.path());
  ASSERT_EQ(memory.exit_code, 0) << memory.err;
  const nlohmann::json forecast = nlohmann::json::parse(time.out), needs = nlohmann::json::parse(memory.out);
  EXPECT_EQ(text_of(dom, "time-ms"), fixed(forecast["time_ms"].get<double>(), 1));
  EXPECT_NE(text_of(dom, "time-interval").find(fixed(forecast["time_ms_low"].get<double>(), 1)), std::string::npos);
  EXPECT_EQ(text_of(dom, "epoch"), fixed(forecast["epoch_s"].get<double>(), 1) + " s");
  EXPECT_EQ(text_of(dom, "memory-total"), gib(needs["required_bytes"].get<int64_t>()));
  EXPECT_EQ(text_of(dom, "largest-batch"), std::to_string(needs["max_batch"]["batch"].get<int64_t>()));
  EXPECT_EQ(text_of(dom, "error"), "");
  // The bar's parts add up to what must fit, and the GPU's memory is drawn as a line.
  const std::regex part("data-bytes=\"([0-9]+)\"");
  int64_t parts = 0;
  for (std::sregex_iterator it(dom.begin(), dom.end(), part), end; it != end; ++it) parts += std::stoll((*it)[1]);
  EXPECT_EQ(parts, needs["required_bytes"].get<int64_t>());
  EXPECT_NE(dom.find("id=\"limit\""), std::string::npos);
  EXPECT_NE(text_of(dom, "command-memory").find("dnncast memory resnet18 --batch 8 --input 3x64x64 --device a100-40gb"),
            std::string::npos);
  // compare across the catalogue: a table row and a point of the scatter per instance, as `dnncast compare` lists.
  const cli_test::Result table = cli_test::run(
      "compare", {"resnet18", "--batch", "8", "--input", "3x64x64", "--epoch-samples", "1000", "--json"}, dir.path());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const size_t instances = nlohmann::json::parse(table.out)["rows"].size();
  ASSERT_GT(instances, 0u);
  auto count = [&](const std::string& needle) {
    size_t found = 0;
    for (size_t at = dom.find(needle); at != std::string::npos; at = dom.find(needle, at + 1)) ++found;
    return found;
  };
  EXPECT_NE(dom.find("data-compared=\"1\""), std::string::npos);  // drawn after the first answer
  EXPECT_EQ(text_of(dom, "compare-count"), std::to_string(instances));
  EXPECT_EQ(count("<tr class=\"instance\""), instances);
  EXPECT_EQ(count("<circle class=\"point"), instances);
  EXPECT_GE(count("<circle class=\"point front\""), 1u);
  // A bad question: the server's one line, nothing else answered.
  const std::string bad = rendered_dom(base + "?model=resnet5&batch=8", dir.path());
  EXPECT_NE(text_of(bad, "error").find("unknown model 'resnet5'"), std::string::npos) << text_of(bad, "error");
  EXPECT_EQ(text_of(bad, "time-ms"), "-");
  EXPECT_EQ(server.stop(), 0);
}

TEST(ServePageSource, NamesNoOtherHostAndAsksOnlyItsServer) {
  Server server;
  ASSERT_TRUE(server.ok()) << server.stderr_text();
  const httplib::Result reply = server.client().Get("/");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(reply->body.find("http://"), std::string::npos);
  EXPECT_EQ(reply->body.find("https://"), std::string::npos);
  EXPECT_EQ(reply->body.find("//cdn"), std::string::npos);
  EXPECT_NE(reply->body.find("connect-src 'self'"), std::string::npos);
  EXPECT_NE(reply->body.find("default-src 'none'"), std::string::npos);
}

// A Hugging Face cache laid out as the HF tools lay it out, with one model's config.
TEST(ServeHub, AHubIdIsReadFromThisHostsCache) {
  cli_test::ScratchDir cache("hub");
  const std::string model = cache.path() + "/models--test-org--tiny-llama";
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  std::filesystem::create_directories(model + "/refs");
  std::filesystem::create_directories(model + "/snapshots/" + commit);
  std::ofstream(model + "/refs/main") << commit;
  std::ofstream(model + "/snapshots/" + commit + "/config.json")
      << R"({"model_type": "qwen2", "vocab_size": 320, "hidden_size": 64, "intermediate_size": 172,
            "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "tie_word_embeddings": true})";
  setenv("HF_HUB_CACHE", cache.path().c_str(), 1);  // the server (a child) inherits it
  Server server;
  unsetenv("HF_HUB_CACHE");
  ASSERT_TRUE(server.ok()) << server.stderr_text();
  const httplib::Result found =
      server.client().Post("/v1/memory", R"({"model": "test-org/tiny-llama", "seq": 16})", "application/json");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->status, 200) << found->body;
  EXPECT_EQ(nlohmann::json::parse(found->body)["model"], "test-org/tiny-llama");
  const httplib::Result missing =
      server.client().Post("/v1/memory", R"({"model": "test-org/not-cached", "seq": 16})", "application/json");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("test-org/not-cached"), std::string::npos) << missing->body;
  EXPECT_EQ(server.stop(), 0);
}

// The page's upload of a config.json: serve's field "config" takes the document itself, as the CLI takes the file.
TEST(ServeHub, AConfigJsonIsAFieldOfItsOwn) {
  Server server;
  ASSERT_TRUE(server.ok()) << server.stderr_text();
  cli_test::ScratchDir dir("config_field");
  const std::string path = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/qwen2.5-0.5b.json";
  const nlohmann::json config = nlohmann::json::parse(cli_test::read_text(path));
  const nlohmann::json request = {{"config", config}, {"seq", 64}, {"batch", 2}};
  const httplib::Result reply = server.client().Post("/v1/memory", request.dump(), "application/json");
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->status, 200) << reply->body;
  const cli_test::Result cli = cli_test::run("memory", {path, "--seq", "64", "--batch", "2", "--json"}, dir.path());
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const nlohmann::json served = nlohmann::json::parse(reply->body), printed = nlohmann::json::parse(cli.out);
  EXPECT_EQ(served["model"], "Qwen/Qwen2.5-0.5B");  // its _name_or_path
  EXPECT_EQ(served["peak_bytes"], printed["peak_bytes"]);
  EXPECT_EQ(served["parameters"], printed["parameters"]);
  const httplib::Result bad =
      server.client().Post("/v1/memory", R"({"config": {"hidden_size": 8}, "seq": 4})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("expected a Hugging Face config.json object"), std::string::npos) << bad->body;
  const httplib::Result both = server.client().Post(
      "/v1/memory", R"({"config": {"model_type": "llama"}, "model": "resnet18"})", "application/json");
  ASSERT_TRUE(both);
  EXPECT_EQ(both->status, 400);
}

}  // namespace
}  // namespace dnncast::serve_test
