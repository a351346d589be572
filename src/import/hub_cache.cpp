// Hub ids from the local Hugging Face cache (hub_cache.h).
#include "import/hub_cache.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace dnncast::import {

namespace fs = std::filesystem;

namespace {

bool is_part(const std::string& part) {
  if (part.empty() || part.size() > 96 || part[0] == '.') return false;
  for (char c : part)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
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
  const size_t slash = id.find('/'), at = id.find('@');
  const std::string org = id.substr(0, slash);
  const std::string name = id.substr(slash + 1, at == std::string::npos ? std::string::npos : at - slash - 1);
  const std::string revision = at == std::string::npos ? "main" : id.substr(at + 1);
  std::error_code error;
  for (const std::string& dir : hub_cache_dirs()) {
    const fs::path repo = fs::path(dir) / ("models--" + org + "--" + name);
    std::string commit = revision;
    std::ifstream ref(repo / "refs" / revision);
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

}  // namespace dnncast::import
