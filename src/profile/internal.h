// Internals of src/profile shared between its source files. Torch-free, like measure.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profile/measure.h"

namespace dnncast::profile::detail {

// --- Tracking CPU allocator (allocator.cpp) ---------------------------------------------------
// Installed into libtorch with c10::SetCPUAllocator: every CPU tensor's storage goes through it.
// It counts live bytes (as requested by libtorch) and their peak, and refuses an allocation that
// would take live bytes above the limit (c10::OutOfMemoryError). Buffers that oneDNN/MKL/OpenMP
// take from malloc directly (GEMM packing, convolution scratch) are not tensors and not counted.
void install_tracking_allocator();  // idempotent
int64_t tracked_live_bytes();
int64_t tracked_peak_bytes();
void reset_tracked_peak();              // peak := live
void set_tracked_limit(int64_t bytes);  // 0 = no limit
bool tracked_refused();                 // an allocation was refused since the limit was set
int64_t tracked_refused_request_bytes();

// --- Statistics (measure.cpp) -----------------------------------------------------------------
// Relative half-width of the distribution-free 95% confidence interval of the median
// (order statistics n/2 -+ 1.96 sqrt(n)/2); infinity below 6 samples.
double median_rel_ci(const std::vector<double>& values);
TimeStats summarize(const std::vector<double>& times_ms);

// --- The machine (environment.cpp) -------------------------------------------------------------
std::vector<int> allowed_cpus();                          // this process's affinity mask
std::string cpu_list_text(const std::vector<int>& cpus);  // {0,1,2,5} -> "0-2,5"
int64_t mem_available_bytes();                            // /proc/meminfo MemAvailable, 0 if unreadable
int64_t mem_total_bytes();

// CPU time of the whole machine (/proc/stat) and of this process, to tell how many CPUs other
// processes kept busy over an interval.
struct CpuSample {
  double machine_busy_s = 0;  // non-idle time summed over all CPUs
  double own_cpu_s = 0;       // this process (all threads)
  double own_run_s = 0;       // this process's threads on a CPU, and runnable but waiting for one
  double own_wait_s = 0;      // (/proc/self/task/*/schedstat; 0 where the kernel keeps none)
  double wall_s = 0;          // monotonic clock
};
CpuSample sample_cpu();
double other_busy_cpus(const CpuSample& before, const CpuSample& after);
// Of the time this process's threads were runnable over the interval, the share they waited for a CPU another task
// held: about 0.5 where one busy process shares the one CPU a measurement is pinned to, about 0 on an idle CPU.
double cpu_wait_share(const CpuSample& before, const CpuSample& after);
double loadavg_1min();

// Energy counter: RAPL package 0 on CPU (/sys/class/powercap/intel-rapl:0/energy_uj), NVML's total
// energy of GPU 0 on CUDA (libnvidia-ml loaded with dlopen, so nothing to link).
class EnergyMeter {
 public:
  explicit EnergyMeter(Device device);
  bool available() const { return available_; }
  const std::string& note() const { return note_; }  // the source, or why unavailable
  double read_j();  // cumulative joules (wrap-around handled between consecutive reads)

 private:
  bool available_ = false;
  std::string note_;
  Device device_ = Device::Cpu;
  double last_raw_ = 0, offset_j_ = 0, wrap_j_ = 0;
};

// GPU name and driver through NVML ("" when unavailable).
void nvml_gpu_info(std::string& name, std::string& driver);

// Whether libtorch sees a CUDA device (executor.cpp; false on a CPU-only libtorch).
bool cuda_available();

std::string build_type();     // CMAKE_BUILD_TYPE baked into the build
std::string torch_version();  // TORCH_VERSION of the headers built against

}  // namespace dnncast::profile::detail
