// oneDNN's bf16 matmul scratchpads as memory/onednn_scratchpad.h asks them of libdnnl.so.2. Whether the sizes are
// right is checked against libtorch's own allocations by PrecisionMemoryVsProfiler and the decoder sweeps; here,
// what holds on any host.
#include "memory/onednn_scratchpad.h"

#include <gtest/gtest.h>

namespace dnncast::memory {
namespace {

TEST(OneDnnScratchpad, AtensOwnKernelBelowSixteenCubedBooksNone) {
  EXPECT_EQ(onednn_bf16_scratchpad(Bf16Matmul{1, 16, 16, 16, false, true, 1}), std::optional<int64_t>(0));
  EXPECT_EQ(onednn_bf16_scratchpad(Bf16Matmul{2, 8, 8, 32, false, false, 1}), std::optional<int64_t>(0));
}

TEST(OneDnnScratchpad, SaysWhichLibraryAnswers) {
  const std::optional<int64_t> bytes = onednn_bf16_scratchpad(Bf16Matmul{1, 256, 384, 256, false, true, 1});
  const std::string status = onednn_library_status();
  EXPECT_FALSE(status.empty());
  if (!bytes.has_value()) return;  // no libdnnl.so.2 (or no bf16 matmul) here: the simulation counts none
  EXPECT_NE(status.find("oneDNN"), std::string::npos) << status;
  EXPECT_GE(*bytes, 0);
  // The same question, asked again (cached), and with more threads: never less per-thread room.
  EXPECT_EQ(onednn_bf16_scratchpad(Bf16Matmul{1, 256, 384, 256, false, true, 1}), bytes);
  const std::optional<int64_t> two = onednn_bf16_scratchpad(Bf16Matmul{1, 256, 384, 256, false, true, 2});
  ASSERT_TRUE(two.has_value());
  EXPECT_GE(*two, *bytes);
}

// The line `memory` prints for a bf16 CPU simulation names the oneDNN that sized the scratchpads when it answers
// for this host, and says why none are counted otherwise (another ISA than the host's dispatch; no AVX-512 BW).
TEST(OneDnnScratchpad, TheMemoryNoteNamesTheLibraryOrWhyNone) {
  const hardware::CpuIsa here = hardware::host_dispatch().onednn;
  const std::string at_host = onednn_scratchpad_note(here);
  if (!aten_uses_onednn_for_bf16()) {
    EXPECT_NE(at_host.find("without oneDNN"), std::string::npos) << at_host;
    return;
  }
  const std::string status = onednn_library_status();
  EXPECT_NE(at_host.find(status), std::string::npos) << at_host;
  const hardware::CpuIsa other = here == hardware::CpuIsa::Avx2 ? hardware::CpuIsa::Avx512Core : hardware::CpuIsa::Avx2;
  const std::string elsewhere = onednn_scratchpad_note(other);
  EXPECT_NE(elsewhere.find("not counted"), std::string::npos) << elsewhere;
  EXPECT_NE(elsewhere.find(hardware::isa_name(other)), std::string::npos) << elsewhere;
}

}  // namespace
}  // namespace dnncast::memory
