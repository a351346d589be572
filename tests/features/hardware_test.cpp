// Host detection from /proc text fixtures and the device catalogue.
#include <gtest/gtest.h>

#include "core/error.h"
#include "hardware/hardware.h"

namespace dnncast::hardware {
namespace {

const char* kCpuinfo =
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\ncpu MHz\t\t: 2200.152\n"
    "flags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512dq\n\n"
    "processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\ncpu MHz\t\t: 2200.152\n"
    "flags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512dq\n";

TEST(Host, ParsesCpuinfoAndMeminfo) {
  HostInfo host = parse_host(kCpuinfo, "MemTotal:       16384 kB\nMemFree: 1 kB\n");
  EXPECT_EQ(host.cpu_model, "Intel(R) Xeon(R) CPU @ 2.20GHz");
  EXPECT_EQ(host.logical_cores, 2);
  EXPECT_EQ(host.memory_bytes, 16384 * 1024);
  EXPECT_DOUBLE_EQ(host.clock_mhz, 2200.152);
  EXPECT_EQ(host.flops_per_cycle_f32, 32);  // 16 lanes x FMA
  EXPECT_DOUBLE_EQ(host.peak_flops_f32, 2 * 2200.152e6 * 32);
}

TEST(Host, FlagsAndClockFromModelName) {
  EXPECT_EQ(flops_per_cycle_from_flags("sse sse2"), 4);
  EXPECT_EQ(flops_per_cycle_from_flags("sse2 avx avx2 fma"), 16);
  EXPECT_EQ(flops_per_cycle_from_flags(""), 1);
  EXPECT_DOUBLE_EQ(clock_mhz_from_model("Intel(R) Xeon(R) CPU @ 2.20GHz"), 2200);
  EXPECT_DOUBLE_EQ(clock_mhz_from_model("AMD EPYC 7B13"), 0);
  HostInfo empty = parse_host("", "");
  EXPECT_EQ(empty.logical_cores, 0);
  EXPECT_EQ(empty.peak_flops_f32, 0);
}

TEST(Host, DetectsThisMachine) {
  const HostInfo& host = detect_host();
  EXPECT_GE(host.logical_cores, 1);
  EXPECT_GT(host.memory_bytes, 0);
}

TEST(Catalogue, LookupAndMatching) {
  EXPECT_EQ(find_device("T4").name, "t4");
  EXPECT_GT(find_device("a100-40gb").peak_flops_f32, 1e13);
  try {
    find_device("tpu-v9");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("v100-16gb"), std::string::npos) << error.what();
  }
  ASSERT_NE(match_gpu_name("Tesla V100-SXM2-16GB"), nullptr);
  EXPECT_EQ(match_gpu_name("Tesla V100-SXM2-16GB")->name, "v100-16gb");
  EXPECT_EQ(match_gpu_name("NVIDIA A100-SXM4-40GB")->name, "a100-40gb");
  EXPECT_EQ(match_gpu_name("NVIDIA L4")->name, "l4");
  EXPECT_EQ(match_gpu_name("NVIDIA L40"), nullptr);  // tokens, not substrings
  EXPECT_EQ(match_gpu_name(""), nullptr);
  for (const DeviceSpec& device : device_catalogue()) {
    EXPECT_FALSE(device.source.empty()) << device.name;
    EXPECT_FALSE(device.date.empty()) << device.name;
  }
}

}  // namespace
}  // namespace dnncast::hardware
