#include "memory/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "core/checked.h"
#include "core/error.h"
#include "memory/allocators.h"
#include "memory/training_trace.h"

namespace dnncast::memory {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

namespace {

int64_t& category_slot(MemoryBreakdown& breakdown, Category category) {
  switch (category) {
    case Category::Parameter:
      return breakdown.parameter_bytes;
    case Category::State:
      return breakdown.state_bytes;
    case Category::Gradient:
      return breakdown.gradient_bytes;
    case Category::OptimizerState:
      return breakdown.optimizer_state_bytes;
    case Category::Activation:
      return breakdown.activation_bytes;
    case Category::Transient:
      return breakdown.transient_bytes;
  }
  return breakdown.transient_bytes;
}

}  // namespace

hardware::CpuIsa resolve_isa(hardware::CpuIsa isa) {
  if (isa != hardware::CpuIsa::Unknown) return isa;
  hardware::CpuIsa host = hardware::host_dispatch().onednn;
  // Off x86 there is no x64 oneDNN to follow; the AVX-512 rules are the best-checked ones.
  return host != hardware::CpuIsa::Unknown ? host : hardware::CpuIsa::Avx512Core;
}

CudnnUse CudnnUse::of(const Graph& graph) {
  CudnnUse use;
  for (const Node& node : graph.nodes()) {
    const bool conv = node.op == "Conv2d"sv || node.op == "ConvTranspose2d"sv;
    if (conv || node.op == "BatchNorm2d"sv) use.loaded = true;
    if (!conv || node.inputs.empty() || node.attr_int("groups", 1) != 1) continue;
    const std::vector<int64_t> kernel = node.attr_ints("kernel");
    if (std::all_of(kernel.begin(), kernel.end(), [](int64_t k) { return k == 1; })) continue;
    const Node& input = graph.node(node.inputs[0]);
    const int64_t io = checked_add(checked_mul(input.shape.numel(), dtype_bytes(input.dtype)),
                                   checked_mul(node.shape.numel(), dtype_bytes(node.dtype)));
    use.conv_io_bytes = std::max(use.conv_io_bytes, io);
  }
  return use;
}

CudaMemoryParts cuda_memory_parts(int64_t peak_allocated_bytes, int64_t peak_reserved_bytes, const MemoryConfig& config,
                                  const CudnnUse& cudnn) {
  if (config.cuda_context_bytes < 0 || config.cuda_cudnn_context_bytes < 0)
    throw InputError("the CUDA context size must not be negative");
  if (config.cuda_workspace_bytes < 0) throw InputError("the CUDA workspace size must not be negative");
  for (const double fraction :
       {config.cuda_reserve_fraction, config.cuda_conv_workspace_fraction, config.cuda_upper_margin})
    if (!(fraction >= 0 && fraction < 10))
      throw InputError("the allocator's reserve, workspace and margin fractions must be in [0, 10), got " +
                       std::to_string(fraction));
  DNNCAST_ASSERT(peak_reserved_bytes >= peak_allocated_bytes && peak_allocated_bytes >= 0);
  auto times = [](double fraction, int64_t bytes) {
    return static_cast<int64_t>(std::llround(fraction * static_cast<double>(bytes)));
  };
  CudaMemoryParts parts;
  parts.tensor_bytes = peak_allocated_bytes;
  parts.reserve_bytes =
      peak_reserved_bytes - peak_allocated_bytes + times(config.cuda_reserve_fraction, peak_allocated_bytes);
  parts.workspace_bytes = config.cuda_workspace_bytes;
  parts.context_bytes = config.cuda_context_bytes;
  if (cudnn.loaded) {
    parts.cudnn_context_bytes = config.cuda_cudnn_context_bytes;
    parts.cudnn_workspace_bytes = times(config.cuda_conv_workspace_fraction, cudnn.conv_io_bytes);
  }
  parts.margin_bytes = times(config.cuda_upper_margin, parts.total_bytes());
  return parts;
}

MemoryReport simulate_memory(const Graph& graph, const MemoryConfig& config) {
  TraceOptions options;
  options.set_setup(config);
  options.threads = config.threads;
  options.isa = resolve_isa(config.isa);
  options.iterations = 2;
  options.python_defaults = config.python_defaults;
  check_grad_accum(config.grad_accum);
  options.grad_accum = config.grad_accum;
  cuda_memory_parts(0, 0, config);  // checks the overheads before the work
  Program program = trace_training(graph, options);

  MemoryReport report;
  report.device = options.device;
  const bool cuda = options.device == Device::Cuda;
  const std::vector<Event>& events = program.events();
  report.events = static_cast<int64_t>(events.size());

  // One pass: live bytes (the CPU tracker's count), per-category live bytes, the CUDA model.
  CudaCachingAllocatorModel cuda_model;
  MemoryBreakdown live_by_category;
  std::vector<Category> category_of(program.buffer_count(), Category::Transient);
  int64_t live = 0, peak_live = -1, peak_allocated = 0, peak_reserved = 0;
  // Paged optimizer states (MemoryConfig::paged_optimizer): in unified memory, not the caching allocator's.
  const bool paged = cuda && config.paged_optimizer;
  std::vector<char> in_unified(paged ? program.buffer_count() : 0, 0);
  int64_t paged_live = 0, paged_peak = 0;
  bool baseline_taken = false;
  TimelineEntry current;
  bool have_current = false;
  auto flush_timeline = [&]() {
    if (have_current && config.keep_timeline) report.timeline.push_back(current);
    have_current = false;
  };
  for (const Event& event : events) {
    if (event.iteration > 0 && !baseline_taken) {
      baseline_taken = true;
      report.baseline_bytes = live;
      peak_live = live;
      if (cuda) {
        peak_allocated = cuda_model.allocated_bytes();
        report.baseline_allocated_bytes = peak_allocated;
        peak_reserved = cuda_model.reserved_bytes();
      }
    }
    if (config.keep_timeline && event.iteration > 0 &&
        (!have_current || current.iteration != event.iteration || current.phase != event.phase ||
         current.node != event.node)) {
      flush_timeline();
      current = TimelineEntry{event.iteration, event.phase, event.node, live, live, live};
      have_current = true;
    }
    const auto buffer = static_cast<size_t>(event.buffer);
    if (event.kind == Event::Alloc) {
      category_of[buffer] = event.category;
      live += event.bytes;
      category_slot(live_by_category, event.category) += event.bytes;
      if (paged && event.category == Category::OptimizerState) {
        in_unified[buffer] = 1;
        paged_live += event.bytes;
        paged_peak = std::max(paged_peak, paged_live);
      } else if (cuda) {
        cuda_model.malloc(event.buffer, event.bytes);
      }
    } else if (event.kind == Event::Free) {
      live -= event.bytes;
      category_slot(live_by_category, category_of[buffer]) -= event.bytes;
      if (paged && in_unified[buffer] != 0) {
        in_unified[buffer] = 0;
        paged_live -= event.bytes;
      } else if (cuda) {
        cuda_model.free(event.buffer);
      }
    } else {
      category_slot(live_by_category, category_of[buffer]) -= event.bytes;
      category_of[buffer] = event.category;
      category_slot(live_by_category, event.category) += event.bytes;
    }
    if (config.keep_events && event.kind != Event::Relabel)
      report.event_log.push_back(LoggedEvent{event.iteration, event.phase, event.node, event.kind == Event::Alloc,
                                             event.bytes, live, event.what});
    if (have_current) {
      current.max_bytes = std::max(current.max_bytes, live);
      current.end_bytes = live;
    }
    if (!baseline_taken) continue;
    if (cuda) {
      peak_allocated = std::max(peak_allocated, cuda_model.allocated_bytes());
      peak_reserved = std::max(peak_reserved, cuda_model.reserved_bytes());
    }
    const auto phase = static_cast<size_t>(event.phase);
    if (event.kind == Event::Alloc && phase < report.phase_peaks.size() && live > report.phase_peak_bytes[phase]) {
      report.phase_peak_bytes[phase] = live;
      report.phase_peaks[phase] = live_by_category;
    }
    if (event.kind == Event::Alloc && live > peak_live) {
      peak_live = live;
      report.at_peak = live_by_category;
      report.peak_iteration = event.iteration;
      report.peak_phase = event.phase;
      report.peak_node = event.node;
      report.peak_what = event.what;
    }
  }
  flush_timeline();
  if (!baseline_taken) report.baseline_bytes = live;
  report.peak_bytes = std::max<int64_t>(peak_live, report.baseline_bytes) - report.baseline_bytes;
  report.peak_total_bytes = report.baseline_bytes + report.peak_bytes;
  if (report.peak_node >= 0) report.peak_node_name = graph.node(report.peak_node).name;
  if (cuda) {
    report.peak_allocated_bytes = peak_allocated;
    report.peak_reserved_bytes = peak_reserved;
    report.cuda_context_bytes = config.cuda_context_bytes;
    report.cudnn = CudnnUse::of(graph);
    report.cuda = cuda_memory_parts(peak_allocated, peak_reserved, config, report.cudnn);
    report.cuda.paged_bytes = paged_peak;
    report.required_bytes = report.cuda.upper_bytes();
  } else {
    report.required_bytes = report.peak_total_bytes;
  }
  return report;
}

MaxBatchResult largest_fitting(const std::function<int64_t(int64_t)>& required, int64_t limit_bytes, int64_t cap,
                               double bytes_per_unit) {
  if (limit_bytes <= 0) throw InputError("memory limit must be positive");
  if (cap < 1) throw InputError("batch cap must be at least 1");
  MaxBatchResult result;
  int64_t fits = 0, fits_bytes = 0;      // largest value known to fit
  int64_t fails = 0, fails_bytes = 0;    // smallest value known not to fit (0 = none yet)
  int64_t before = 0, before_bytes = 0;  // the fitting value before `fits` (for the slope while nothing fails)
  auto probe = [&](int64_t value) {
    ++result.simulations;
    const int64_t bytes = required(value);
    if (bytes <= limit_bytes) {
      before = fits, before_bytes = fits_bytes;
      fits = value, fits_bytes = bytes;
    } else {
      fails = value, fails_bytes = bytes;
    }
  };
  // The next value to try: where the line through the two nearest known points crosses the limit (the bytes of
  // a training step grow almost linearly with the batch), kept strictly inside what is still open; doubling
  // where no line can be drawn.
  auto next = [&]() -> int64_t {
    const int64_t top = fails > 0 ? fails - 1 : cap;
    double guess;
    if (fails > 0 && fails_bytes > fits_bytes) {
      guess = static_cast<double>(fits) + static_cast<double>(fails - fits) *
                                              static_cast<double>(limit_bytes - fits_bytes) /
                                              static_cast<double>(fails_bytes - fits_bytes);
    } else if (fails == 0 && before == 0 && bytes_per_unit > 0) {
      guess = static_cast<double>(fits) + static_cast<double>(limit_bytes - fits_bytes) / bytes_per_unit;
    } else if (fails == 0 && before > 0 && fits_bytes > before_bytes) {
      guess = static_cast<double>(fits) + static_cast<double>(fits - before) *
                                              static_cast<double>(limit_bytes - fits_bytes) /
                                              static_cast<double>(fits_bytes - before_bytes);
    } else {
      guess = fails > 0 ? static_cast<double>(fits + (fails - fits) / 2) : 2.0 * static_cast<double>(fits);
    }
    const double bounded = std::min(static_cast<double>(top), std::max(static_cast<double>(fits + 1), guess));
    return static_cast<int64_t>(bounded);
  };
  probe(1);
  int bracketed = 0;  // probes since a value failed: every third one halves the bracket (regula falsi's guard)
  while (fits < cap && !(fails > 0 && fails - fits <= 1)) {
    bracketed += fails > 0;
    probe(fails > 0 && bracketed % 3 == 0 ? fits + (fails - fits) / 2 : next());
  }
  result.batch = fits;
  result.required_bytes = fits_bytes;
  result.next_required_bytes = fails > 0 ? fails_bytes : 0;
  return result;
}

double bytes_per_sample(const MemoryReport& report, int64_t batch) {
  if (batch < 1) return 0;
  return static_cast<double>(report.at_peak.activation_bytes + report.at_peak.transient_bytes) /
         static_cast<double>(batch);
}

MaxBatchResult max_batch(const std::function<Graph(int64_t batch)>& build, const MemoryConfig& config,
                         int64_t limit_bytes, int64_t batch_cap) {
  return largest_fitting([&](int64_t batch) { return simulate_memory(build(batch), config).required_bytes; },
                         limit_bytes, batch_cap);
}

}  // namespace dnncast::memory
