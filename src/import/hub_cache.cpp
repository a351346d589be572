// Hub ids from the local Hugging Face cache (hub_cache.h).
#include "import/hub_cache.h"

#include <httplib.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/text.h"

namespace dnncast::import {

namespace fs = std::filesystem;

namespace {

bool is_part(const std::string& part) {
  if (part.empty() || part.size() > 96 || part[0] == '.') return false;
  for (char c : part)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

struct HubParts {
  std::string org, name, revision;
};

HubParts parts_of(const std::string& id) {
  const size_t slash = id.find('/'), at = id.find('@');
  return {id.substr(0, slash), id.substr(slash + 1, at == std::string::npos ? std::string::npos : at - slash - 1),
          at == std::string::npos ? "main" : id.substr(at + 1)};
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

bool looks_like_hub_id(const std::string& source) {
  const size_t slash = source.find('/');
  if (slash == std::string::npos || source.find('/', slash + 1) != std::string::npos) return false;
  const size_t at = source.find('@', slash);
  const std::string org = source.substr(0, slash);
  const std::string name = source.substr(slash + 1, at == std::string::npos ? std::string::npos : at - slash - 1);
  if (!is_part(org) || !is_part(name) || ends_with(name, ".json") || ends_with(name, ".onnx")) return false;
  return at == std::string::npos || is_part(source.substr(at + 1));
}

std::vector<std::string> hub_cache_dirs() {
  std::vector<std::string> dirs;
  if (!env("HF_HUB_CACHE").empty()) dirs.push_back(env("HF_HUB_CACHE"));
  if (!env("HF_HOME").empty()) dirs.push_back((fs::path(env("HF_HOME")) / "hub").string());
  if (!env("XDG_CACHE_HOME").empty())
    dirs.push_back((fs::path(env("XDG_CACHE_HOME")) / "huggingface" / "hub").string());
  if (!env("HOME").empty()) dirs.push_back((fs::path(env("HOME")) / ".cache" / "huggingface" / "hub").string());
  return dirs;
}

std::optional<std::string> hub_cached_config(const std::string& id) {
  if (!looks_like_hub_id(id)) return std::nullopt;
  const HubParts parts = parts_of(id);
  std::error_code error;
  for (const std::string& dir : hub_cache_dirs()) {
    const fs::path repo = fs::path(dir) / ("models--" + parts.org + "--" + parts.name);
    std::string commit = parts.revision;
    std::ifstream ref(repo / "refs" / parts.revision);
    if (ref) std::getline(ref, commit);
    if (!is_part(commit)) continue;
    const fs::path config = repo / "snapshots" / commit / "config.json";
    if (fs::is_regular_file(config, error)) return config.string();
  }
  return std::nullopt;
}

std::string hub_not_cached_message(const std::string& id) {
  std::string searched;
  for (const std::string& dir : hub_cache_dirs()) searched += (searched.empty() ? "" : ", ") + dir;
  const std::string bare = id.substr(0, id.find('@'));
  return quote(id) + " is no file, and no Hugging Face cache holds its config.json (searched " +
         (searched.empty() ? std::string("nothing: set HF_HOME") : searched) + "); `huggingface-cli download " + bare +
         " config.json` fetches that one file, or pass a config.json path";
}

namespace {

constexpr size_t kMaxConfigBytes = size_t{1} << 20;

bool truthy(const std::string& value) { return value == "1" || value == "true" || value == "TRUE" || value == "yes"; }

// "https://huggingface.co" -> scheme + host + port for httplib's client, and the path prefix ("" here).
struct Endpoint {
  std::string origin, prefix;
};

Endpoint endpoint_of(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) throw InputError("HF_ENDPOINT " + quote(url) + ": expected http(s)://HOST[:PORT]");
  const size_t path = url.find('/', scheme + 3);
  Endpoint endpoint{url.substr(0, path), path == std::string::npos ? "" : url.substr(path)};
  while (!endpoint.prefix.empty() && endpoint.prefix.back() == '/') endpoint.prefix.pop_back();
  return endpoint;
}

std::string finish_refs(const fs::path& repo, const HubParts& parts, const std::string& commit, const fs::path& config);

// Writes the downloaded config where huggingface_hub would: the blob, the snapshot's link to it, the ref.
std::string cache_download(const HubParts& parts, const std::string& body, std::string commit, std::string etag) {
  const std::vector<std::string> dirs = hub_cache_dirs();
  if (dirs.empty()) throw InputError("no Hugging Face cache folder to write to: set HF_HOME or HOME");
  if (!is_part(commit)) commit = parts.revision;  // no X-Repo-Commit: the snapshot named by the revision
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  const fs::path repo = fs::path(dirs.front()) / ("models--" + parts.org + "--" + parts.name);
  const fs::path snapshot = repo / "snapshots" / commit;
  std::error_code error, ignored;
  fs::create_directories(snapshot, error);
  if (error) throw InputError("cannot create " + snapshot.string() + ": " + error.message());
  const fs::path config = snapshot / "config.json";
  // A name of this download's own: two processes (or two serve requests) fetching the same id do not meet.
  const fs::path temp = snapshot / (".config.json." + std::to_string(::getpid()) + "." +
                                    std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())));
  {
    std::ofstream out(temp, std::ios::binary);
    out << body;
    if (!out) throw InputError("cannot write " + temp.string());
  }
  if (is_part(etag)) {  // the HF layout: the bytes in blobs/, the snapshot's file a relative link to them
    fs::create_directories(repo / "blobs", error);
    const fs::path blob = repo / "blobs" / etag;
    fs::rename(temp, blob, error);
    fs::remove(config, error);
    if (!error) fs::create_symlink(fs::path("..") / ".." / "blobs" / etag, config, error);
  } else {
    fs::rename(temp, config, error);
  }
  fs::remove(temp, ignored);
  if (fs::is_regular_file(config)) return finish_refs(repo, parts, commit, config);  // ours, or a concurrent one's
  throw InputError("cannot write " + config.string() + (error ? ": " + error.message() : std::string()));
}

// refs/REVISION naming the commit (a branch or tag), as huggingface_hub writes it; the config's path.
std::string finish_refs(const fs::path& repo, const HubParts& parts, const std::string& commit,
                        const fs::path& config) {
  std::error_code error;
  if (parts.revision != commit) {
    fs::create_directories(repo / "refs", error);
    std::ofstream(repo / "refs" / parts.revision) << commit;
  }
  return config.string();
}

}  // namespace

std::string hub_config(const std::string& id) {
  if (std::optional<std::string> cached = hub_cached_config(id)) return *cached;
  if (truthy(env("HF_HUB_OFFLINE")))
    throw InputError(hub_not_cached_message(id) + " (HF_HUB_OFFLINE is set: nothing was downloaded)");
  const HubParts parts = parts_of(id);
  const std::string base = env("HF_ENDPOINT").empty() ? "https://huggingface.co" : env("HF_ENDPOINT");
  const Endpoint endpoint = endpoint_of(base);
  const std::string path =
      endpoint.prefix + "/" + parts.org + "/" + parts.name + "/resolve/" + parts.revision + "/config.json";
  int timeout = 10;
  if (!env("DNNCAST_HUB_TIMEOUT").empty()) timeout = std::max(1, std::atoi(env("DNNCAST_HUB_TIMEOUT").c_str()));
  httplib::Client client(endpoint.origin);
  if (!client.is_valid()) throw InputError("HF_ENDPOINT " + quote(base) + ": not a URL httplib can reach");
  client.set_follow_location(true);
  client.set_connection_timeout(timeout, 0);
  client.set_read_timeout(timeout, 0);
  client.set_write_timeout(timeout, 0);
  httplib::Headers headers = {{"User-Agent", "dnncast (config.json only)"}};
  std::string token = env("HF_TOKEN");
  if (token.empty()) token = env("HUGGING_FACE_HUB_TOKEN");
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  std::string body;
  bool too_large = false;
  const httplib::Result result = client.Get(path, headers, [&](const char* data, size_t length) {
    if (body.size() + length > kMaxConfigBytes) {
      too_large = true;
      return false;
    }
    body.append(data, length);
    return true;
  });
  const std::string where = quote(id) + " from " + base;
  if (too_large) throw InputError(where + ": config.json is larger than 1 MiB; not a model config");
  if (!result)
    throw InputError(where + ": no answer (" + httplib::to_string(result.error()) +
                     "); offline or blocked: pass the model's config.json path, or set HF_ENDPOINT to a mirror");
  const int status = result->status;
  if (status == 401 || status == 403)
    throw InputError(where + ": HTTP " + std::to_string(status) + ", a gated or private model: set HF_TOKEN to a " +
                     (token.empty() ? "token" : "different token") + " with access (or pass its config.json path)");
  if (status == 404) throw InputError(where + ": HTTP 404, no such model, revision or config.json on the Hub");
  if (status != 200) throw InputError(where + ": HTTP " + std::to_string(status));
  const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object())
    throw InputError(where + ": the config.json downloaded is not a JSON object; nothing was cached");
  return cache_download(parts, body, result->get_header_value("X-Repo-Commit"), result->get_header_value("ETag"));
}

}  // namespace dnncast::import
