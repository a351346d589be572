// Host detection from /proc text fixtures (GPUs: tests/hardware/catalogue_test.cpp).
#include "hardware/hardware.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dnncast::hardware
