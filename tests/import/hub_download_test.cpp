// A Hub id whose config.json no cache holds is downloaded (import/hub_cache.h, issue 49) from a Hub served here on
// 127.0.0.1 (HF_ENDPOINT), never from the internet: the file lands where huggingface_hub puts it and the next
// forecast reads it without a request; a gated model needs HF_TOKEN; a slow Hub times out; a missing model, a
// malformed config and HF_HUB_OFFLINE each give one line and cache nothing; a redirect is followed.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "cli_run.h"
#include "core/error.h"
#include "import/hub_cache.h"
#include "import/model_source.h"

namespace dnncast::import {
namespace {

namespace fs = std::filesystem;

const char* const kConfig = R"({"model_type": "llama", "vocab_size": 320, "hidden_size": 64, "intermediate_size": 172,
  "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2})";
const char* const kCommit = "aaaabbbbccccddddeeeeffff0000111122223333";

// The Hub's resolve route for a few fixture models, counting the requests it answers.
class LocalHub {
 public:
  LocalHub() {
    server_.Get("/acme/tiny/resolve/main/config.json", [this](const httplib::Request&, httplib::Response& reply) {
      ++requests_;
      reply.set_header("X-Repo-Commit", kCommit);
      reply.set_header("ETag", "\"0123456789abcdef0123456789abcdef01234567\"");
      reply.set_content(kConfig, "application/json");
    });
    server_.Get("/acme/gated/resolve/main/config.json",
                [this](const httplib::Request& request, httplib::Response& reply) {
                  ++requests_;
                  if (request.get_header_value("Authorization") != "Bearer secret-token") {
                    reply.status = 401;
                    return;
                  }
                  reply.set_content(kConfig, "application/json");
                });
    server_.Get("/acme/slow/resolve/main/config.json", [this](const httplib::Request&, httplib::Response& reply) {
      ++requests_;
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      reply.set_content(kConfig, "application/json");
    });
    server_.Get("/acme/broken/resolve/main/config.json", [this](const httplib::Request&, httplib::Response& reply) {
      ++requests_;
      reply.set_content("<html>not a config</html>", "text/html");
    });
    server_.Get("/acme/renamed/resolve/main/config.json", [this](const httplib::Request&, httplib::Response& reply) {
      ++requests_;
      reply.set_redirect("/acme/tiny/resolve/main/config.json", 307);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LocalHub() {
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> requests_{0};
};

// HF_ENDPOINT at the local Hub, an empty cache, online; the environment restored after.
class HubDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cache_.ok());
    for (const char* name : {"HF_ENDPOINT", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN", "DNNCAST_HUB_TIMEOUT"}) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
    }
    setenv("HF_ENDPOINT", hub_.endpoint().c_str(), 1);
    setenv("HF_HUB_CACHE", cache_.path().c_str(), 1);
    setenv("HF_HUB_OFFLINE", "0", 1);
    unsetenv("HF_TOKEN");
    unsetenv("DNNCAST_HUB_TIMEOUT");
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }
  std::string refused(const std::string& id) {
    try {
      hub_config(id);
    } catch (const InputError& error) {
      return error.what();
    }
    return "no error";
  }
  cli_test::ScratchDir cache_{"hub_cache"};
  LocalHub hub_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(HubDownload, AConfigIsDownloadedOnceAndCachedAsTheHubToolsCacheIt) {
  const std::string path = hub_config("acme/tiny");
  EXPECT_EQ(hub_.requests(), 1);
  const fs::path repo = fs::path(cache_.path()) / "models--acme--tiny";
  EXPECT_EQ(fs::path(path), repo / "snapshots" / kCommit / "config.json");
  EXPECT_TRUE(fs::is_symlink(path));
  EXPECT_TRUE(fs::is_regular_file(repo / "blobs" / "0123456789abcdef0123456789abcdef01234567"));
  EXPECT_EQ(cli_test::read_text((repo / "refs" / "main").string()), kCommit);
  // The next read, and a forecast's graph, come from the cache: no request.
  models::ModelSpec spec;
  spec.seq_len = 8;
  const Graph graph = load_model("acme/tiny", spec);
  EXPECT_EQ(graph.name, "acme/tiny");
  EXPECT_EQ(hub_.requests(), 1);
  // A redirect is followed (a renamed repository).
  EXPECT_NO_THROW(hub_config("acme/renamed"));
  EXPECT_EQ(hub_.requests(), 3);
}

TEST_F(HubDownload, EachFailureIsOneLineAndCachesNothing) {
  EXPECT_NE(refused("acme/gated").find("HTTP 401, a gated or private model: set HF_TOKEN"), std::string::npos)
      << refused("acme/gated");
  setenv("HF_TOKEN", "secret-token", 1);
  EXPECT_NO_THROW(hub_config("acme/gated"));
  unsetenv("HF_TOKEN");
  EXPECT_NE(refused("acme/missing").find("HTTP 404, no such model"), std::string::npos) << refused("acme/missing");
  EXPECT_NE(refused("acme/broken").find("not a JSON object; nothing was cached"), std::string::npos);
  EXPECT_FALSE(fs::exists(fs::path(cache_.path()) / "models--acme--broken" / "snapshots"));
  setenv("DNNCAST_HUB_TIMEOUT", "1", 1);
  const auto started = std::chrono::steady_clock::now();
  const std::string slow = refused("acme/slow");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2)) << slow;
  EXPECT_NE(slow.find("'acme/slow' from " + hub_.endpoint()), std::string::npos) << slow;
  EXPECT_NE(slow.find("pass the model's config.json path"), std::string::npos) << slow;
  const int before = hub_.requests();
  setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_NE(refused("acme/other").find("HF_HUB_OFFLINE is set: nothing was downloaded"), std::string::npos);
  EXPECT_EQ(hub_.requests(), before);
  for (const std::string& message : {refused("acme/missing"), slow})
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace
}  // namespace dnncast::import
