// The CPU fingerprint's readers of sysfs, on fixture folders shaped like /sys/devices/system/cpu/cpu0.
#include "hardware/fingerprint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace dnncast::hardware {
namespace {

namespace fs = std::filesystem;

class SysfsDir {
 public:
  SysfsDir() {
    std::string pattern = (fs::temp_directory_path() / "dnncast-sysfs-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) ? pattern : "";
  }
  ~SysfsDir() {
    std::error_code error;
    fs::remove_all(path_, error);
  }
  void write(const std::string& file, const std::string& text) const {
    fs::create_directories(fs::path(path_ + "/" + file).parent_path());
    std::ofstream(path_ + "/" + file) << text << "\n";
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Fingerprint, CacheSizes) {
  EXPECT_EQ(parse_cache_size("512K"), 512 << 10);
  EXPECT_EQ(parse_cache_size("32768K"), int64_t{32} << 20);
  EXPECT_EQ(parse_cache_size("32M"), int64_t{32} << 20);
  EXPECT_EQ(parse_cache_size("1024"), 1024);
  EXPECT_EQ(parse_cache_size(""), 0);
  EXPECT_EQ(parse_cache_size("big"), 0);
  EXPECT_EQ(parse_cache_size("12Q"), 0);
}

TEST(Fingerprint, CachesOfCpuZero) {
  // This Zen 3 EPYC's: L1d, L1i, L2 512K per core, L3 32M.
  SysfsDir cache;
  const char* rows[][4] = {{"index0", "1", "Data", "32K"},
                           {"index1", "1", "Instruction", "32K"},
                           {"index2", "2", "Unified", "512K"},
                           {"index3", "3", "Unified", "32768K"}};
  for (const auto& row : rows) {
    cache.write(std::string(row[0]) + "/level", row[1]);
    cache.write(std::string(row[0]) + "/type", row[2]);
    cache.write(std::string(row[0]) + "/size", row[3]);
  }
  CpuCaches caches = read_cpu_caches(cache.path());
  EXPECT_EQ(caches.l2_bytes, 512 << 10);
  EXPECT_EQ(caches.l3_bytes, int64_t{32} << 20);
  CpuCaches none = read_cpu_caches(cache.path() + "/absent");
  EXPECT_EQ(none.l2_bytes, 0);
  EXPECT_EQ(none.l3_bytes, 0);
}

TEST(Fingerprint, BaseClockPrefersCpufreq) {
  SysfsDir cpufreq;
  EXPECT_EQ(read_base_clock(cpufreq.path(), 2445.43).source, "cpu MHz");  // no cpufreq (a VM)
  EXPECT_EQ(read_base_clock(cpufreq.path(), 2445.43).mhz, 2445.43);
  EXPECT_EQ(read_base_clock(cpufreq.path(), 0).mhz, 0);
  cpufreq.write("cpuinfo_max_freq", "3500000");  // kHz
  EXPECT_EQ(read_base_clock(cpufreq.path(), 2445.43).source, "cpuinfo_max_freq");
  EXPECT_EQ(read_base_clock(cpufreq.path(), 2445.43).mhz, 3500);
  cpufreq.write("base_frequency", "2100000");
  EXPECT_EQ(read_base_clock(cpufreq.path(), 2445.43).source, "base_frequency");
  EXPECT_EQ(read_base_clock(cpufreq.path(), 2445.43).mhz, 2100);
}

TEST(Fingerprint, FollowsTheDispatch) {
  CpuFeatures zen3;
  zen3.vendor = "AuthenticAMD";
  zen3.family = 25;
  zen3.model = 1;
  zen3.stepping = 1;
  zen3.sse41 = zen3.avx = zen3.avx2 = zen3.fma = true;
  CpuFingerprint plain = cpu_fingerprint(zen3, resolve_dispatch(zen3, "", ""));
  EXPECT_EQ(plain.vendor, "AuthenticAMD");
  EXPECT_EQ(plain.family, 25);
  EXPECT_EQ(plain.model, 1);
  EXPECT_EQ(plain.isa, "avx2");
  EXPECT_EQ(plain.aten_capability, "avx2");
  EXPECT_EQ(plain.isa_cap, "");
  CpuFingerprint capped = cpu_fingerprint(zen3, resolve_dispatch(zen3, "AVX", "default"));
  EXPECT_EQ(capped.isa, "avx");
  EXPECT_EQ(capped.aten_capability, "default");
  EXPECT_EQ(capped.isa_cap, "AVX");
}

}  // namespace
}  // namespace dnncast::hardware
