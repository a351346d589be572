// oneDNN's scratchpad for a bf16 matrix product, asked of the oneDNN library libtorch itself loads (issue 35).
//
// On a CPU with AVX-512 (BW, VL, DQ), libtorch 1.13 hands every bf16 mm / addmm / bmm above 16^3 multiply-adds to
// oneDNN (ATen's mkldnn_bf16_gemm and mkldnn_matmul), and oneDNN asks the caller's allocator for a scratchpad for
// the call: per thread copies of blocks of A and B, an fp32 accumulator, AMX tile buffers. Its size depends on the
// shapes, the strides, the thread count and the kernel oneDNN picks for this host (AMX, AVX-512 BF16, ...), so it
// is not modelled but asked: libdnnl.so.2 is opened at the first bf16 simulation (dlopen, not linked: the
// forecast library stays free of it), a matmul primitive descriptor is created for the operands as ATen lays them
// out, and its scratchpad size is read (dnnl_query_scratchpad_md) - the figure oneDNN's own execution allocates.
// Sizes are cached per shape. Without the library (or off x86-64) nothing is counted and the caller says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hardware/isa.h"

namespace dnncast::memory {

// C[batch][m x n] = A[batch][m x k] * B[batch][k x n], bf16, row-major as oneDNN sees the call; `a_transposed`:
// A is stored as its transpose (k x m, contiguous), likewise `b_transposed` (B stored n x k).
struct Bf16Matmul {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool a_transposed = false, b_transposed = false;
  int64_t threads = 1;
};

// The scratchpad oneDNN books for `product` on this host (0: none, or below ATen's 16^3 threshold); nullopt when
// libdnnl.so.2 cannot be opened or does not create the primitive.
std::optional<int64_t> onednn_bf16_scratchpad(const Bf16Matmul& product);

// Whether ATen sends bf16 products to oneDNN on this CPU (mkldnn_bf16_device_check: AVX-512 BW, VL and DQ).
bool aten_uses_onednn_for_bf16();

// "oneDNN 2.6.3 (libdnnl.so.2)" when the library opened, else why not (one line).
std::string onednn_library_status();

// One line for a bf16 CPU simulation of ISA `simulated` (resolved): whose scratchpads its peak holds, or why none
// are counted (no AVX-512 BW/VL/DQ: ATen multiplies bf16 without oneDNN; another ISA than this host's dispatch; no
// libdnnl.so.2).
std::string onednn_scratchpad_note(hardware::CpuIsa simulated);

}  // namespace dnncast::memory
