// Shared helpers of the data tests: scratch folders and small records.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "store/store.h"

namespace dnncast::store::testing {

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

inline records::EnvironmentRecord test_environment(const std::string& cpu = "Test CPU 9000") {
  records::EnvironmentRecord environment;
  environment.cpu_model = cpu;
  environment.cores = 8;
  environment.threads = 8;
  environment.memory_bytes = int64_t{16} << 30;
  environment.torch_version = "1.13.0";
  environment.build_type = "release";
  environment.host = "node01";
  return environment;
}

// Takes a schema-3 file's environments back to schema 2 (without the CPU fingerprint columns).
inline void drop_fingerprint_columns(store::Database& db) {
  for (const char* column : {"cpu_vendor", "cpu_family", "cpu_model_number", "cpu_stepping", "isa", "aten_capability",
                             "isa_cap", "l2_bytes", "l3_bytes", "base_mhz"})
    db.exec(std::string("ALTER TABLE environments DROP COLUMN ") + column);
}

// As schema 4 had runs: without cpu_wait_share (schema 5).
inline void drop_wait_share_column(store::Database& db) { db.exec("ALTER TABLE runs DROP COLUMN cpu_wait_share"); }

// An environment with every fingerprint field recorded (an AVX2-only Zen 3 EPYC).
inline records::EnvironmentRecord fingerprinted_environment() {
  records::EnvironmentRecord environment;
  environment.cpu_model = "AMD EPYC";
  environment.cores = 2;
  environment.threads = 2;
  environment.memory_bytes = int64_t{24} << 30;
  environment.torch_version = "1.13.0";
  environment.build_type = "Release";
  environment.host = "node01";
  environment.cpu_vendor = "AuthenticAMD";
  environment.cpu_family = 25;
  environment.cpu_model_number = 1;
  environment.cpu_stepping = 1;
  environment.isa = "avx2";
  environment.aten_capability = "avx2";
  environment.isa_cap = "";
  environment.l2_bytes = 512 << 10;
  environment.l3_bytes = 32 << 20;
  environment.base_mhz = 2445.43;
  return environment;
}

}  // namespace dnncast::store::testing
