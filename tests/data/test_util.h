// Shared helpers of the data tests: scratch folders and small records.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "data/store.h"

namespace dnncast::data::testing {

// A fresh folder under /tmp, removed when the object dies.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dnncast-data-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) ? pattern : "";
  }
  ~ScratchDir() {
    std::error_code error;
    if (!path_.empty()) std::filesystem::remove_all(path_, error);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline EnvironmentRecord test_environment(const std::string& cpu = "Test CPU 9000") {
  EnvironmentRecord environment;
  environment.cpu_model = cpu;
  environment.cores = 8;
  environment.threads = 8;
  environment.memory_bytes = int64_t{16} << 30;
  environment.torch_version = "1.13.0";
  environment.build_type = "release";
  environment.host = "node01";
  return environment;
}

}  // namespace dnncast::data::testing
