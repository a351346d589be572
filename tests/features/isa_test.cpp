// The ISA dispatch (src/hardware/isa): names, the caps as oneDNN and ATen read them, and the
// host's detection against two independent readers: the kernel's /proc/cpuinfo flags and oneDNN's
// own verbose report of the ISA it dispatches to (through Debian's PyTorch).
#include "hardware/isa.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace dnncast::hardware {
namespace {

CpuFeatures avx2_cpu() {
  CpuFeatures f;
  f.sse41 = f.avx = f.avx2 = f.fma = true;
  return f;
}

CpuFeatures avx512_vnni_cpu() {
  CpuFeatures f = avx2_cpu();
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512_vnni = true;
  return f;
}

TEST(Isa, NamesRoundTripInDispatchOrder) {
  std::vector<std::string> names = isa_names();
  ASSERT_EQ(names.size(), 8u);
  CpuIsa previous = CpuIsa::Unknown;
  for (const std::string& name : names) {
    CpuIsa isa = parse_isa(name);
    EXPECT_NE(isa, CpuIsa::Unknown) << name;
    EXPECT_EQ(isa_name(isa), name);
    EXPECT_GT(isa, previous) << name;
    previous = isa;
  }
  EXPECT_EQ(parse_isa("AVX512_CORE"), CpuIsa::Avx512Core);  // oneDNN's spelling
  EXPECT_EQ(parse_isa("avx3"), CpuIsa::Unknown);
  EXPECT_STREQ(isa_name(CpuIsa::Unknown), "");
}

TEST(Isa, HighestLevelFollowsTheFlags) {
  EXPECT_EQ(highest_isa(CpuFeatures{}), CpuIsa::Unknown);
  EXPECT_EQ(highest_isa(avx2_cpu()), CpuIsa::Avx2);
  EXPECT_EQ(highest_isa(avx512_vnni_cpu()), CpuIsa::Avx512CoreVnni);
  CpuFeatures no_dq = avx512_vnni_cpu();
  no_dq.avx512dq = false;  // avx512_core needs F, BW, VL and DQ
  EXPECT_EQ(highest_isa(no_dq), CpuIsa::Avx2);
  CpuFeatures bf16 = avx512_vnni_cpu();
  bf16.avx512_bf16 = true;
  EXPECT_EQ(highest_isa(bf16), CpuIsa::Avx512CoreBf16);
  bf16.amx_tile = bf16.amx_int8 = bf16.amx_bf16 = true;
  EXPECT_EQ(highest_isa(bf16), CpuIsa::Avx512CoreAmx);
  EXPECT_EQ(highest_aten_capability(avx2_cpu()), AtenCapability::Avx2);
  EXPECT_EQ(highest_aten_capability(avx512_vnni_cpu()), AtenCapability::Avx512);
}

TEST(Isa, CapsAreReadAsTheLibrariesReadThem) {
  IsaDispatch capped = resolve_dispatch(avx512_vnni_cpu(), "AVX2", "avx2");
  EXPECT_EQ(capped.cpu, CpuIsa::Avx512CoreVnni);
  EXPECT_EQ(capped.onednn, CpuIsa::Avx2);
  EXPECT_EQ(capped.aten, AtenCapability::Avx2);
  EXPECT_EQ(capped.aten_cpu, AtenCapability::Avx512);
  EXPECT_TRUE(capped.note.empty()) << capped.note;

  EXPECT_EQ(resolve_dispatch(avx512_vnni_cpu(), "avx2", "").onednn, CpuIsa::Avx2);  // oneDNN: any case
  EXPECT_EQ(resolve_dispatch(avx512_vnni_cpu(), "ALL", "").onednn, CpuIsa::Avx512CoreVnni);
  EXPECT_EQ(resolve_dispatch(avx2_cpu(), "AVX512_CORE_AMX", "").onednn, CpuIsa::Avx2);  // a cap is no lift

  IsaDispatch unknown = resolve_dispatch(avx2_cpu(), "AVX9", "AVX2");
  EXPECT_EQ(unknown.onednn, CpuIsa::Avx2);
  EXPECT_EQ(unknown.aten, AtenCapability::Avx2);  // "AVX2" is not ATen's "avx2": ignored
  EXPECT_NE(unknown.note.find("ONEDNN_MAX_CPU_ISA=AVX9"), std::string::npos) << unknown.note;
  EXPECT_NE(unknown.note.find("ATEN_CPU_CAPABILITY=AVX2"), std::string::npos) << unknown.note;
  EXPECT_EQ(resolve_dispatch(avx2_cpu(), "", "avx512").aten, AtenCapability::Avx2);
  EXPECT_EQ(resolve_dispatch(avx2_cpu(), "", "default").aten, AtenCapability::Default);
}

// The kernel's own reading of cpuid, independent of ours.
std::string proc_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) return " " + line.substr(line.find(':') + 1) + " ";
  return "";
}

TEST(Isa, HostDetectionAgreesWithProcCpuinfo) {
  const std::string flags = proc_flags();
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo (not x86)";
  auto has = [&](const char* flag) { return flags.find(std::string(" ") + flag + " ") != std::string::npos; };
  CpuFeatures f = detect_cpu_features();
  EXPECT_EQ(f.avx2, has("avx2"));
  EXPECT_EQ(f.fma, has("fma"));
  EXPECT_EQ(f.avx512f, has("avx512f"));
  EXPECT_EQ(f.avx512bw, has("avx512bw"));
  EXPECT_EQ(f.avx512vl, has("avx512vl"));
  EXPECT_EQ(f.avx512_vnni, has("avx512_vnni"));
  EXPECT_EQ(f.avx512_bf16, has("avx512_bf16"));
  EXPECT_EQ(f.amx_tile, has("amx_tile"));
  EXPECT_FALSE(f.vendor.empty());
  const bool avx512_core = has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq");
  EXPECT_EQ(is_avx512(highest_isa(f)), avx512_core);
  std::printf("host: %s family %d model %d stepping %d, oneDNN dispatch %s (cpu %s), ATen %s\n", f.vendor.c_str(),
              f.family, f.model, f.stepping, isa_name(host_dispatch().onednn), isa_name(host_dispatch().cpu),
              aten_capability_name(host_dispatch().aten));
}

// oneDNN's verbose log names the ISA it dispatches to; under each cap it must be ours.
TEST(Isa, OneDnnReportsTheDispatchWeResolve) {
  const CpuFeatures features = detect_cpu_features();
  if (highest_isa(features) == CpuIsa::Unknown) GTEST_SKIP() << "not an x86-64 CPU";
  int checked = 0;
  for (const char* cap : {"", "SSE41", "AVX2", "AVX512_CORE"}) {
    // env(1) sets the cap for the reference alone; DNNL_MAX_CPU_ISA is cleared so that it cannot win.
    const std::string command = std::string("env -u DNNL_MAX_CPU_ISA ONEDNN_MAX_CPU_ISA=") + cap + " " +
                                DNNCAST_PYTHON " " DNNCAST_SOURCE_DIR
                                               "/scripts/conv_impl_reference.py < /dev/null 2>&1";
    std::string output;
    if (FILE* pipe = popen(command.c_str(), "r")) {
      char buffer[4096];
      size_t count;
      while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, count);
      pclose(pipe);
    }
    std::istringstream lines(output);
    std::string line, reported;
    while (std::getline(lines, line))
      if (line.rfind("isa ", 0) == 0) reported = line.substr(4);
    ASSERT_FALSE(reported.empty()) << "no isa line from the reference under cap '" << cap << "':\n" << output;
    EXPECT_EQ(reported, isa_name(resolve_dispatch(features, cap, "").onednn)) << "cap '" << cap << "'";
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

}  // namespace
}  // namespace dnncast::hardware
