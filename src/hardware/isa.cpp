#include "hardware/isa.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define DNNCAST_X86 1
#endif

namespace dnncast::hardware {

namespace {

struct IsaRow {
  CpuIsa isa;
  const char* name;  // ours, lower case; oneDNN's variable value is the same in upper case
};

// One name table (a registry with one source of truth), in dispatch order.
constexpr IsaRow kIsaRows[] = {
    {CpuIsa::Sse41, "sse41"},
    {CpuIsa::Avx, "avx"},
    {CpuIsa::Avx2, "avx2"},
    {CpuIsa::Avx2Vnni, "avx2_vnni"},
    {CpuIsa::Avx512Core, "avx512_core"},
    {CpuIsa::Avx512CoreVnni, "avx512_core_vnni"},
    {CpuIsa::Avx512CoreBf16, "avx512_core_bf16"},
    {CpuIsa::Avx512CoreAmx, "avx512_core_amx"},
};
static_assert(sizeof(kIsaRows) / sizeof(kIsaRows[0]) == static_cast<size_t>(CpuIsa::Avx512CoreAmx),
              "every CpuIsa but Unknown has a name");

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

#ifdef DNNCAST_X86
uint64_t xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}
#endif

}  // namespace

const char* isa_name(CpuIsa isa) {
  for (const IsaRow& row : kIsaRows)
    if (row.isa == isa) return row.name;
  return "";
}

CpuIsa parse_isa(const std::string& name) {
  std::string key = lower(name);
  for (const IsaRow& row : kIsaRows)
    if (key == row.name) return row.isa;
  return CpuIsa::Unknown;
}

std::vector<std::string> isa_names() {
  std::vector<std::string> names;
  for (const IsaRow& row : kIsaRows) names.emplace_back(row.name);
  return names;
}

bool is_avx512(CpuIsa isa) { return isa >= CpuIsa::Avx512Core; }

const char* aten_capability_name(AtenCapability capability) {
  switch (capability) {
    case AtenCapability::Default:
      return "default";
    case AtenCapability::Avx2:
      return "avx2";
    case AtenCapability::Avx512:
      return "avx512";
    case AtenCapability::Unknown:
      break;
  }
  return "";
}

AtenCapability parse_aten_capability(const std::string& name) {
  // ATen compares the variable with strcmp: case matters.
  if (name == "default") return AtenCapability::Default;
  if (name == "avx2") return AtenCapability::Avx2;
  if (name == "avx512") return AtenCapability::Avx512;
  return AtenCapability::Unknown;
}

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#ifdef DNNCAST_X86
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return f;
  const unsigned max_leaf = eax;
  char vendor[13] = {0};
  std::copy_n(reinterpret_cast<const char*>(&ebx), 4, vendor);
  std::copy_n(reinterpret_cast<const char*>(&edx), 4, vendor + 4);
  std::copy_n(reinterpret_cast<const char*>(&ecx), 4, vendor + 8);
  f.vendor = vendor;

  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  const int base_family = static_cast<int>((eax >> 8) & 0xf);
  const int base_model = static_cast<int>((eax >> 4) & 0xf);
  f.stepping = static_cast<int>(eax & 0xf);
  f.family = base_family == 0xf ? base_family + static_cast<int>((eax >> 20) & 0xff) : base_family;
  f.model =
      (base_family == 0x6 || base_family == 0xf) ? base_model + (static_cast<int>((eax >> 16) & 0xf) << 4) : base_model;
  const bool osxsave = (ecx >> 27) & 1;
  const uint64_t saved = osxsave ? xcr0() : 0;
  const bool ymm_state = (saved & 0x6) == 0x6;                 // SSE and AVX state
  const bool zmm_state = ymm_state && (saved & 0xe0) == 0xe0;  // opmask, ZMM0-15 upper, ZMM16-31
  const bool tile_state = (saved & 0x60000) == 0x60000;        // XTILECFG, XTILEDATA
  f.sse41 = (ecx >> 19) & 1;
  f.avx = ((ecx >> 28) & 1) && ymm_state;
  f.fma = ((ecx >> 12) & 1) && ymm_state;
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx);
    f.avx2 = f.avx && ((ebx >> 5) & 1);
    f.avx512f = zmm_state && ((ebx >> 16) & 1);
    f.avx512dq = zmm_state && ((ebx >> 17) & 1);
    f.avx512bw = zmm_state && ((ebx >> 30) & 1);
    f.avx512vl = zmm_state && ((ebx >> 31) & 1);
    f.avx512_vnni = zmm_state && ((ecx >> 11) & 1);
    f.amx_bf16 = tile_state && ((edx >> 22) & 1);
    f.amx_tile = tile_state && ((edx >> 24) & 1);
    f.amx_int8 = tile_state && ((edx >> 25) & 1);
    unsigned subleaves = eax;
    if (subleaves >= 1) {
      __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx);
      f.avx_vnni = f.avx2 && ((eax >> 4) & 1);
      f.avx512_bf16 = zmm_state && ((eax >> 5) & 1);
    }
  }
#endif
  return f;
}

CpuIsa highest_isa(const CpuFeatures& f) {
  // oneDNN 2.6 src/cpu/x64/cpu_isa_traits.hpp mayiuse(): avx512_core = F+BW+VL+DQ; vnni, bf16 and
  // amx on top of it (amx: tile + int8 + bf16).
  const bool core = f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  if (core && f.avx512_vnni && f.avx512_bf16 && f.amx_tile && f.amx_int8 && f.amx_bf16) return CpuIsa::Avx512CoreAmx;
  if (core && f.avx512_vnni && f.avx512_bf16) return CpuIsa::Avx512CoreBf16;
  if (core && f.avx512_vnni) return CpuIsa::Avx512CoreVnni;
  if (core) return CpuIsa::Avx512Core;
  if (f.avx2 && f.avx_vnni) return CpuIsa::Avx2Vnni;
  if (f.avx2) return CpuIsa::Avx2;
  if (f.avx) return CpuIsa::Avx;
  if (f.sse41) return CpuIsa::Sse41;
  return CpuIsa::Unknown;
}

AtenCapability highest_aten_capability(const CpuFeatures& f) {
  // ATen 1.13 DispatchStub.cpp compute_cpu_capability(): AVX512 needs VL+BW+DQ+FMA, AVX2 needs AVX2+FMA.
  if (f.avx512vl && f.avx512bw && f.avx512dq && f.fma) return AtenCapability::Avx512;
  if (f.avx2 && f.fma) return AtenCapability::Avx2;
  return AtenCapability::Default;
}

IsaDispatch resolve_dispatch(const CpuFeatures& features, const std::string& onednn_cap, const std::string& aten_cap) {
  IsaDispatch dispatch;
  dispatch.cpu = highest_isa(features);
  dispatch.onednn = dispatch.cpu;
  dispatch.onednn_cap = onednn_cap;
  if (!onednn_cap.empty() && lower(onednn_cap) != "all") {
    CpuIsa cap = parse_isa(onednn_cap);
    if (cap == CpuIsa::Unknown)
      dispatch.note = "ONEDNN_MAX_CPU_ISA=" + onednn_cap + " is not an ISA oneDNN knows; ignored, as oneDNN does";
    else if (dispatch.cpu != CpuIsa::Unknown)
      dispatch.onednn = std::min(dispatch.cpu, cap);
  }
  dispatch.aten_cpu = highest_aten_capability(features);
  dispatch.aten = dispatch.aten_cpu;
  dispatch.aten_cap = aten_cap;
  if (!aten_cap.empty()) {
    AtenCapability cap = parse_aten_capability(aten_cap);
    std::string& note = dispatch.note;
    if (cap == AtenCapability::Unknown) {
      if (!note.empty()) note += "; ";
      note += "ATEN_CPU_CAPABILITY=" + aten_cap + " is not default, avx2 or avx512; ignored, as ATen does";
    } else {
      dispatch.aten = std::min(dispatch.aten_cpu, cap);
    }
  }
  return dispatch;
}

const IsaDispatch& host_dispatch() {
  static const IsaDispatch dispatch = [] {
    auto variable = [](const char* name) {
      const char* value = std::getenv(name);
      return value == nullptr ? std::string() : std::string(value);
    };
    // oneDNN 2.x reads ONEDNN_<name> first, then the older DNNL_<name> (src/common/utils.cpp getenv).
    std::string onednn_cap = variable("ONEDNN_MAX_CPU_ISA");
    if (onednn_cap.empty()) onednn_cap = variable("DNNL_MAX_CPU_ISA");
    return resolve_dispatch(detect_cpu_features(), onednn_cap, variable("ATEN_CPU_CAPABILITY"));
  }();
  return dispatch;
}

}  // namespace dnncast::hardware
