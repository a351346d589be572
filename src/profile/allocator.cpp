// The tracking CPU allocator (see internal.h). Each block carries a 64-byte header holding its
// size, so the data pointer stays 64-byte aligned, data == context (raw_allocate works) and the
// deleter needs no lookup table.
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "profile/internal.h"

namespace dnncast::profile::detail {

namespace {

constexpr size_t kHeaderBytes = 64;

std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};
std::atomic<int64_t> g_limit_bytes{0};
std::atomic<bool> g_refused{false};
std::atomic<int64_t> g_refused_request{0};
// DNNCAST_ALLOC_TRACE=FILE: every allocation and free of the measured child, one line each
// ("+ BYTES LIVE" / "- BYTES LIVE"), to set beside `dnncast memory --events` when the simulator
// and the profiler disagree (docs/MEMORY.md). Off (null) in normal runs.
std::FILE* g_trace = nullptr;

void tracked_delete(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeaderBytes;
  int64_t size = *reinterpret_cast<int64_t*>(base);
  int64_t live = g_live_bytes.fetch_sub(size, std::memory_order_relaxed) - size;
  if (g_trace != nullptr)
    std::fprintf(g_trace, "- %lld %lld\n", static_cast<long long>(size), static_cast<long long>(live));
  c10::free_cpu(base);
}

class TrackingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) const override {
    auto size = static_cast<int64_t>(nbytes);
    int64_t limit = g_limit_bytes.load(std::memory_order_relaxed);
    int64_t live = g_live_bytes.fetch_add(size, std::memory_order_relaxed) + size;
    if (limit > 0 && live > limit) {
      g_live_bytes.fetch_sub(size, std::memory_order_relaxed);
      g_refused_request.store(size);
      g_refused.store(true);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "dnncast memory limit: allocating ", nbytes,
                       " bytes would take live tensor memory to ", live, " bytes, above the limit of ", limit);
    }
    int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
    while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
    if (g_trace != nullptr)
      std::fprintf(g_trace, "+ %lld %lld\n", static_cast<long long>(size), static_cast<long long>(live));
    char* base = static_cast<char*>(c10::alloc_cpu(nbytes + kHeaderBytes));
    *reinterpret_cast<int64_t*>(base) = size;
    void* data = base + kHeaderBytes;
    return {data, data, &tracked_delete, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &tracked_delete; }
};

}  // namespace

void install_tracking_allocator() {
  static TrackingAllocator* allocator = [] {
    if (const char* path = std::getenv("DNNCAST_ALLOC_TRACE"); path != nullptr && *path != '\0') {
      g_trace = std::fopen(path, "w");  // closed by the process's exit
    }
    auto* created = new TrackingAllocator();  // owned by c10 from here on
    c10::SetCPUAllocator(created, /*priority=*/100);
    return created;
  }();
  (void)allocator;
}

int64_t tracked_live_bytes() { return g_live_bytes.load(); }
int64_t tracked_peak_bytes() { return g_peak_bytes.load(); }
void reset_tracked_peak() { g_peak_bytes.store(g_live_bytes.load()); }
void set_tracked_limit(int64_t bytes) {
  g_limit_bytes.store(bytes);
  g_refused.store(false);
}
bool tracked_refused() { return g_refused.load(); }
int64_t tracked_refused_request_bytes() { return g_refused_request.load(); }

}  // namespace dnncast::profile::detail
