// The instruction set the CPU kernels dispatch to: what the CPU has (cpuid and the OS's saved
// register state), capped the way oneDNN and ATen cap it from the environment. The convolution
// implementation rules (hardware/cpu_conv.h) and the environment fingerprint follow it: the same
// network allocates and runs differently under AVX2 and AVX-512 (docs/MEMORY.md "By ISA").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dnncast::hardware {

// oneDNN 2.6's x64 ISA levels (dnnl::cpu_isa, oneDNN doc "CPU Dispatcher Control"), in dispatch
// order: each level includes the ones before it. Avx2Vnni sits between Avx2 and Avx512Core as in
// oneDNN's own ordering. Unknown means "not recorded" (datasets written before the fingerprint had it).
enum class CpuIsa : uint8_t {
  Unknown,
  Sse41,
  Avx,
  Avx2,
  Avx2Vnni,
  Avx512Core,
  Avx512CoreVnni,
  Avx512CoreBf16,
  Avx512CoreAmx
};

// Lower-case name ("avx2", "avx512_core_vnni"); "" for Unknown.
const char* isa_name(CpuIsa isa);
// By name, case-insensitive, as our names or oneDNN's variable values ("AVX512_CORE"); Unknown if none.
CpuIsa parse_isa(const std::string& name);
// Every known name, in dispatch order (for error messages).
std::vector<std::string> isa_names();
bool is_avx512(CpuIsa isa);

// ATen's CPU capability (aten/src/ATen/native/DispatchStub.cpp): which vectorised ATen kernels run.
enum class AtenCapability : uint8_t { Unknown, Default, Avx2, Avx512 };
const char* aten_capability_name(AtenCapability capability);  // "default", "avx2", "avx512"; "" Unknown
AtenCapability parse_aten_capability(const std::string& name);

// CPU features from cpuid, with the register state the OS saves (XCR0) taken into account.
struct CpuFeatures {
  std::string vendor;                       // "AuthenticAMD", "GenuineIntel" ("" off x86)
  int family = 0, model = 0, stepping = 0;  // displayed family / model (extended fields folded in)
  bool sse41 = false, avx = false, avx2 = false, fma = false, avx_vnni = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512_vnni = false, avx512_bf16 = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
};

CpuFeatures detect_cpu_features();  // cpuid of the running CPU (all false off x86-64)

// The highest level the features support (oneDNN's mayiuse()).
CpuIsa highest_isa(const CpuFeatures& features);
// ATen's own choice for these features (no environment override).
AtenCapability highest_aten_capability(const CpuFeatures& features);

// What the kernels dispatch to, and why.
struct IsaDispatch {
  CpuIsa cpu = CpuIsa::Unknown;                       // what the CPU supports
  CpuIsa onednn = CpuIsa::Unknown;                    // what oneDNN dispatches to: min(cpu, cap)
  std::string onednn_cap;                             // the cap's text as given ("" when none)
  AtenCapability aten_cpu = AtenCapability::Unknown;  // what ATen would pick unhindered
  AtenCapability aten = AtenCapability::Unknown;      // what ATen dispatches to
  std::string aten_cap;                               // ATEN_CPU_CAPABILITY as given ("" when none)
  std::string note;                                   // a cap that was not understood, and what was done with it
};

// onednn_cap: the value of ONEDNN_MAX_CPU_ISA, else of DNNL_MAX_CPU_ISA ("" when neither is set);
// aten_cap: ATEN_CPU_CAPABILITY. Follows the libraries: oneDNN ignores a value it does not know (and
// "ALL" means no cap); a cap above the CPU is the CPU; ATen ignores an unknown value or one the CPU
// cannot run.
IsaDispatch resolve_dispatch(const CpuFeatures& features, const std::string& onednn_cap, const std::string& aten_cap);
// This process: detect_cpu_features() and the variables of its environment (cached).
const IsaDispatch& host_dispatch();

}  // namespace dnncast::hardware
