// Peak memory of training a graph, simulated allocation by allocation (no DL framework loaded).
//
// The allocation program of dnncast's training iterations (training_trace.h: what libtorch 1.13
// allocates and releases, and when) is replayed through an allocator model:
//   cpu  - the profiler's tracking allocator: live bytes as requested by libtorch. peak_bytes is
//          what `dnncast profile` reports: highest live bytes during the iterations minus the
//          live bytes before the first one (parameters, buffers, inputs, labels).
//   cuda - PyTorch's CUDA caching allocator (allocators.h): peak allocated and peak reserved,
//          plus a per-device CUDA context constant. Unverified: no GPU was available when it was
//          written (docs/MEMORY.md).
// Only fp32 is modelled.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "graph/graph.h"
#include "hardware/isa.h"
#include "memory/program.h"

namespace dnncast::memory {

// Optimizer (sgd has momentum 0.9), precision (fp32; bf16 and fp16 autocast, bf16-pure: docs/MEMORY.md "Mixed
// precision"; fp16 on cuda only) and device: TrainingSetup.
struct MemoryConfig : TrainingSetup {
  int64_t threads = 1;  // intra-op threads of the run (the profiler's default is 1)
  // The ISA oneDNN dispatches to (cpu): Unknown = this host's (hardware::host_dispatch(), which
  // honours ONEDNN_MAX_CPU_ISA as oneDNN does).
  hardware::CpuIsa isa = hardware::CpuIsa::Unknown;
  // cuda: what the caching allocator does not see, counted in required_bytes (gpu/gpu_memory.h): the
  // driver/runtime context, library workspaces, and extra reserve as a fraction of the peak allocated bytes.
  int64_t cuda_context_bytes = 0;
  int64_t cuda_workspace_bytes = 0;
  double cuda_reserve_fraction = 0;
  // cuda, a graph cuDNN runs (CudnnUse): the context cuDNN's kernels add, and its convolution workspaces as a
  // fraction of the largest dense convolution's input + output bytes (gpu/gpu_memory.h, fitted).
  int64_t cuda_cudnn_context_bytes = 0;
  double cuda_conv_workspace_fraction = 0;
  // cuda: required_bytes is the total times (1 + this): the upper bound fits and the largest batch are judged
  // on, its coverage measured on held-out runs (gpu/gpu_memory.h).
  double cuda_upper_margin = 0;
  bool python_defaults = false;  // the step as PyTorch 2's Python API runs it on CUDA (training_trace.h)
  // cuda: the optimizer states in CUDA unified memory, outside the caching allocator (bitsandbytes' paged optimizers:
  // cudaMallocManaged, evicted to host RAM when the GPU is short): not in required_bytes, reported beside it.
  bool paged_optimizer = false;
  int64_t grad_accum = 1;      // micro-batches of forward + backward per optimizer step (training_trace.h)
  bool keep_timeline = false;  // fill MemoryReport::timeline
  bool keep_events = false;    // fill MemoryReport::event_log
};

// Live bytes by category (requested sizes) at the peak.
struct MemoryBreakdown {
  int64_t parameter_bytes = 0;        // trainable parameters
  int64_t state_bytes = 0;            // buffers (BatchNorm running stats), inputs, labels
  int64_t gradient_bytes = 0;         // parameter gradients
  int64_t optimizer_state_bytes = 0;  // momentum / Adam moments
  int64_t activation_bytes = 0;       // forward tensors alive: saved for backward or not yet consumed
  int64_t transient_bytes = 0;        // activation gradients, kernel workspaces, temporaries
};

// Highest live bytes within one node's forward or backward (or a phase without a node).
struct TimelineEntry {
  int iteration = 0;
  Phase phase = Phase::Setup;
  int node = -1;            // IR node index, -1 for loss / optimizer / engine work
  int64_t start_bytes = 0;  // live bytes when it started
  int64_t max_bytes = 0;    // highest live bytes while it ran
  int64_t end_bytes = 0;
};

// One allocation or release of the simulated program, with the live bytes after it: the same
// quantities as the profiler's DNNCAST_ALLOC_TRACE lines, to diff the two (docs/MEMORY.md).
struct LoggedEvent {
  int iteration = 0;
  Phase phase = Phase::Setup;
  int node = -1;
  bool alloc = true;  // false: a release
  int64_t bytes = 0;
  int64_t live_bytes = 0;  // after the event, baseline included
  const char* what = "";
};

// What a graph runs through cuDNN on a GPU: its kernels are loaded into the context, and convolutions take
// workspaces through the caching allocator (cudnn.benchmark's trials and the chosen algorithms').
struct CudnnUse {
  bool loaded = false;                     // a convolution or BatchNorm
  int64_t conv_io_bytes = 0;               // the largest dense convolution's input + output bytes
  static CudnnUse of(const Graph& graph);  // dense: groups 1 and a kernel larger than 1 x 1
};

// cuda: the memory nvidia-smi would show, in parts that sum to total_bytes(); required_bytes is upper_bytes().
struct CudaMemoryParts {
  int64_t tensor_bytes = 0;           // peak allocated (blocks rounded to 512 B), baseline included
  int64_t reserve_bytes = 0;          // peak reserved - peak allocated, plus the configured extra fraction
  int64_t workspace_bytes = 0;        // cuBLAS's workspace, outside the simulated program
  int64_t cudnn_workspace_bytes = 0;  // cuDNN's convolution workspaces (0 without convolutions)
  int64_t context_bytes = 0;          // the CUDA context
  int64_t cudnn_context_bytes = 0;    // what cuDNN's kernels add to it (0 when cuDNN is not loaded)
  int64_t margin_bytes = 0;           // upper bound - total: the measured spread of the forecast
  int64_t paged_bytes = 0;            // paged optimizer states at their peak: unified memory, not in the total
  int64_t total_bytes() const {
    return tensor_bytes + reserve_bytes + workspace_bytes + cudnn_workspace_bytes + context_bytes + cudnn_context_bytes;
  }
  int64_t upper_bytes() const { return total_bytes() + margin_bytes; }
};
// The one rule for a cuda total (required_bytes): throws InputError for a negative part or fraction.
CudaMemoryParts cuda_memory_parts(int64_t peak_allocated_bytes, int64_t peak_reserved_bytes, const MemoryConfig& config,
                                  const CudnnUse& cudnn = {});

struct MemoryReport {
  Device device = Device::Cpu;
  int64_t baseline_bytes = 0;    // live before the first iteration
  int64_t peak_bytes = 0;        // highest live during the iterations minus baseline_bytes
  int64_t peak_total_bytes = 0;  // baseline_bytes + peak_bytes
  // cuda only: the caching allocator model (rounded blocks; segments), totals incl. the baseline
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t baseline_allocated_bytes = 0;  // allocated before the first iteration (the profiler's cuda baseline)
  int64_t cuda_context_bytes = 0;
  CudaMemoryParts cuda;  // cuda only
  CudnnUse cudnn;        // cuda only: what the graph runs through cuDNN (the parts above it shaped)
  // What must fit: cpu = peak_total_bytes (what the profiler's memory limit is checked against);
  // cuda = cuda.upper_bytes(): peak reserved, the extra reserve, workspaces, the context and the margin.
  int64_t required_bytes = 0;
  MemoryBreakdown at_peak;
  // The same at each phase's own highest point over the iterations (index: Phase), live bytes included
  // (baseline too; 0 for a phase that allocated nothing): where a multi-GPU plan may move the peak to.
  std::array<MemoryBreakdown, 5> phase_peaks{};
  std::array<int64_t, 5> phase_peak_bytes{};
  int peak_iteration = 0;
  Phase peak_phase = Phase::Setup;
  int peak_node = -1;                   // IR node running at the peak, -1 for none
  std::string peak_node_name;           // "" when none
  std::string peak_what;                // label of the allocation that reached the peak
  std::vector<TimelineEntry> timeline;  // keep_timeline only
  std::vector<LoggedEvent> event_log;   // keep_events only (relabels left out)
  int64_t events = 0;                   // allocations + releases simulated
};

// Throws InputError for an unsupported optimizer/precision/device or an op the executor lacks.
MemoryReport simulate_memory(const Graph& graph, const MemoryConfig& config);
// The ISA a simulation uses for `isa` (MemoryConfig::isa): itself, or this host's dispatch for Unknown.
hardware::CpuIsa resolve_isa(hardware::CpuIsa isa);

struct MaxBatchResult {
  int64_t batch = 0;                // largest batch that fits; 0 when batch 1 does not
  int64_t required_bytes = 0;       // at `batch` (0 when batch is 0)
  int64_t next_required_bytes = 0;  // at batch + 1
  int64_t simulations = 0;
};

// The largest batch that fits, searched along the line through the two nearest simulated batches (the bytes of a
// step grow almost linearly with the batch: batch 1, 2, the line's answer and the one past it, when it holds), each
// try strictly inside what is still open, every third try inside a bracket halving it; `build(batch)` returns the
// graph at that batch. A batch above `batch_cap` is not tried (the result is then batch_cap).
MaxBatchResult max_batch(const std::function<Graph(int64_t batch)>& build, const MemoryConfig& config,
                         int64_t limit_bytes, int64_t batch_cap = int64_t{1} << 20);
// The same search over any size whose `required` bytes do not fall as it grows (a batch, a sequence
// length; a sharded forecast's bytes per GPU): the largest value in [1, cap] that fits (batch = the value).
// `bytes_per_unit` > 0, what one more unit is expected to add (a simulated step's activations and temporaries
// per sample), draws the first line from value 1 alone: one simulation fewer where it holds. Where the bytes rise
// with the value the answer does not depend on it, only the number of simulations; where the caching allocator's
// segments make them dip (a batch that fits past one that does not), either answer is a value that fits with the
// next one failing.
MaxBatchResult largest_fitting(const std::function<int64_t(int64_t)>& required, int64_t limit_bytes, int64_t cap,
                               double bytes_per_unit = 0);
// What one more sample is expected to add to a step simulated at `batch`: its activations and temporaries live at
// the peak, per sample (the parameters, gradients and optimizer states do not grow with the batch); 0 for batch < 1.
// largest_fitting's `bytes_per_unit` for a batch search.
double bytes_per_sample(const MemoryReport& report, int64_t batch);

}  // namespace dnncast::memory
