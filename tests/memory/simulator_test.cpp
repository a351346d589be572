// The memory simulator without a DL framework: allocator model rules, byte parsing, invariants of
// a simulation (breakdown, baseline, optimizer state), the batch search and the convolution
// backend rules. Agreement with real profiled runs is in profiled_test.cpp.
#include "memory/simulator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/op_registry.h"
#include "hardware/cpu_conv.h"
#include "memory/allocators.h"
#include "memory/training_trace.h"
#include "models/synthetic.h"
#include "models/zoo.h"

namespace dnncast::memory {
namespace {

using hardware::ConvRecipe;
using hardware::ConvShape;
using hardware::cpu_conv_recipe;
using hardware::Step;

constexpr int64_t kMiB = int64_t{1} << 20;

Graph zoo(const std::string& name, int64_t batch, std::vector<int64_t> input = {3, 32, 32}) {
  models::ModelSpec spec;
  spec.batch = batch;
  spec.input = std::move(input);
  return models::build_zoo_model(name, spec);
}

// --- CUDA caching allocator model: PyTorch 1.13's documented constants and policies ------------

TEST(CudaAllocatorModel, RoundsTo512AndPicksSegmentSizes) {
  EXPECT_EQ(CudaCachingAllocatorModel::round_size(1), 512);
  EXPECT_EQ(CudaCachingAllocatorModel::round_size(512), 512);
  EXPECT_EQ(CudaCachingAllocatorModel::round_size(513), 1024);
  EXPECT_EQ(CudaCachingAllocatorModel::segment_size(512), 2 * kMiB);  // small pool
  EXPECT_EQ(CudaCachingAllocatorModel::segment_size(kMiB), 2 * kMiB);
  EXPECT_EQ(CudaCachingAllocatorModel::segment_size(kMiB + 512), 20 * kMiB);  // large, under 10 MiB
  EXPECT_EQ(CudaCachingAllocatorModel::segment_size(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(CudaCachingAllocatorModel::segment_size(10 * kMiB), 10 * kMiB);  // rounded to 2 MiB
  EXPECT_EQ(CudaCachingAllocatorModel::segment_size(11 * kMiB), 12 * kMiB);
}

TEST(CudaAllocatorModel, SplitsReusesAndMergesBlocks) {
  CudaCachingAllocatorModel model;
  model.malloc(0, 100);
  model.malloc(1, 100);  // split from the same 2 MiB small segment
  EXPECT_EQ(model.allocated_bytes(), 1024);
  EXPECT_EQ(model.reserved_bytes(), 2 * kMiB);
  model.free(0);
  model.free(1);
  EXPECT_EQ(model.allocated_bytes(), 0);
  EXPECT_EQ(model.reserved_bytes(), 2 * kMiB);  // cached, not returned

  model.malloc(2, 3 * kMiB);   // new 20 MiB large segment, 17 MiB remainder split off
  model.malloc(3, 15 * kMiB);  // best fit: the 17 MiB remainder, 2 MiB split off
  model.malloc(4, 2 * kMiB);   // exactly the 2 MiB remainder
  EXPECT_EQ(model.reserved_bytes(), 22 * kMiB);
  EXPECT_EQ(model.allocated_bytes(), 20 * kMiB);
  model.malloc(5, 12 * kMiB);  // no free block: a 12 MiB segment
  EXPECT_EQ(model.reserved_bytes(), 34 * kMiB);
  model.free(2);
  model.free(3);               // merges with the freed 3 MiB block: one 18 MiB free block
  model.malloc(6, 17 * kMiB);  // 1 MiB left over is not split (it must exceed 1 MiB)
  EXPECT_EQ(model.allocated_bytes(), 18 * kMiB + 2 * kMiB + 12 * kMiB);
  EXPECT_EQ(model.reserved_bytes(), 34 * kMiB);
  EXPECT_EQ(model.segments(), 3);
}

// --- simulations -----------------------------------------------------------------------------------

TEST(Simulator, BaselineIsParametersBuffersInputsAndLabels) {
  for (const char* name : {"resnet18", "mobilenet_v2", "densenet121"}) {
    Graph graph = zoo(name, 3);
    int64_t expected = 0;
    for (int index = 0; index < graph.size(); ++index) {
      OpCost cost = node_cost(graph, index);
      expected += cost.params * 4;
      if (graph.node(index).op == "BatchNorm2d") expected += (cost.buffers - 1) * 4 + 8;  // num_batches_tracked: int64
    }
    expected += 3 * 3 * 32 * 32 * 4;  // the input
    expected += 3 * 8;                // int64 labels of the classifier output
    MemoryReport report = simulate_memory(graph, MemoryConfig{});
    EXPECT_EQ(report.baseline_bytes, expected) << name;
  }
}

TEST(Simulator, BreakdownAddsUpToThePeak) {
  for (Optimizer optimizer : all_optimizers()) {
    MemoryConfig config;
    config.optimizer = optimizer;
    Graph graph = zoo("resnet18", 4);
    MemoryReport report = simulate_memory(graph, config);
    const MemoryBreakdown& b = report.at_peak;
    EXPECT_EQ(b.parameter_bytes + b.state_bytes + b.gradient_bytes + b.optimizer_state_bytes + b.activation_bytes +
                  b.transient_bytes,
              report.peak_total_bytes)
        << name(optimizer);
    int64_t param_bytes = 0;
    for (int index = 0; index < graph.size(); ++index) param_bytes += node_cost(graph, index).params * 4;
    EXPECT_EQ(b.parameter_bytes, param_bytes);
    // From the second iteration on every parameter has its gradient and its optimizer state.
    ASSERT_EQ(report.peak_iteration, 2) << name(optimizer);
    EXPECT_EQ(b.gradient_bytes, param_bytes) << name(optimizer);
    EXPECT_EQ(b.optimizer_state_bytes, optimizer_state_per_param(optimizer) * param_bytes) << name(optimizer);
    EXPECT_EQ(report.required_bytes, report.peak_total_bytes);
  }
}

TEST(Simulator, PeakGrowsWithTheBatch) {
  int64_t previous = 0;
  for (int64_t batch : {1, 2, 4, 8, 16}) {
    MemoryReport report = simulate_memory(zoo("resnet18", batch), MemoryConfig{});
    EXPECT_GT(report.peak_bytes, previous) << batch;
    previous = report.peak_bytes;
  }
}

TEST(Simulator, CudaModelRoundsAndCaches) {
  MemoryConfig config;
  config.device = Device::Cuda;
  config.cuda_context_bytes = 300 * kMiB;
  MemoryReport report = simulate_memory(zoo("resnet18", 8), config);
  EXPECT_GE(report.peak_allocated_bytes, report.peak_total_bytes);  // blocks are rounded up
  EXPECT_GE(report.peak_reserved_bytes, report.peak_allocated_bytes);
  EXPECT_EQ(report.required_bytes, report.peak_reserved_bytes + 300 * kMiB);
}

// ATen's dropout in libtorch 1.13: CPU takes the unfused path (an fp32 noise tensor, kept by
// MulBackward0; checked against profiled runs in profiled_test.cpp), CUDA the fused native_dropout
// (a bool mask, kept by NativeDropoutBackward0, allocated before the output).
TEST(Simulator, DropoutKeepsFp32NoiseOnCpuAndABoolMaskOnCuda) {
  GraphBuilder b("dropout_probe", "probe");
  int x = b.input(TensorShape({2, 256}));
  x = b.linear("fc1", x, 512);
  x = b.dropout("drop", x, 0.25);
  b.linear("fc2", x, 10);
  Graph graph = b.finish();
  const int drop = 2;
  ASSERT_EQ(graph.node(drop).op, "Dropout");
  for (Device device : all_devices()) {
    TraceOptions options;
    options.device = device;
    Program program = trace_training(graph, options);
    std::vector<int64_t> kept;  // what the dropout node allocates in the first forward
    for (const Event& event : program.events())
      if (event.kind == Event::Alloc && event.iteration == 1 && event.phase == Phase::Forward && event.node == drop)
        kept.push_back(event.bytes);
    const int64_t elements = 2 * 512;
    if (device == Device::Cpu) {
      ASSERT_GE(kept.size(), 2u);
      EXPECT_EQ(kept.front(), elements * 4);  // the noise, then ATen's scalar temporaries, then the output
      EXPECT_EQ(kept.back(), elements * 4);
    } else {
      EXPECT_EQ(kept, (std::vector<int64_t>{elements, elements * 4}));  // mask, then output
    }
  }
}

TEST(Simulator, RejectsWhatItDoesNotModel) {
  Graph graph = zoo("resnet18", 1);
  // Unknown optimizers and devices cannot be expressed any more (parse_optimizer refuses them).
  for (Precision precision : {Precision::Bf16, Precision::Fp16, Precision::Bf16Pure}) {
    MemoryConfig config;
    config.precision = precision;
    try {
      simulate_memory(graph, config);
      ADD_FAILURE() << name(precision) << " simulated";
    } catch (const InputError& error) {
      // bf16, bf16-pure: convolutions in bf16 are not modelled; fp16: autocast to fp16 exists on cuda only.
      const std::string expected = precision == Precision::Fp16 ? "precision 'fp16': autocast to fp16 runs on cuda only"
                                                                : "precision '" + name(precision) +
                                                                      "': node 'conv1' (Conv2d): convolutions in bf16";
      EXPECT_EQ(std::string(error.what()).substr(0, expected.size()), expected) << error.what();
    }
    TraceOptions options;
    options.precision = precision;
    EXPECT_THROW(trace_training(graph, options), InputError);
  }
}

TEST(Simulator, TimelineCoversEveryConvolutionForwardAndBackward) {
  MemoryConfig config;
  config.keep_timeline = true;
  Graph graph = zoo("resnet18", 2);
  MemoryReport report = simulate_memory(graph, config);
  std::map<std::pair<int, int>, int> seen;  // (node, phase) -> entries
  int64_t highest = 0;
  for (const TimelineEntry& entry : report.timeline) {
    ++seen[{entry.node, static_cast<int>(entry.phase)}];
    highest = std::max(highest, entry.max_bytes);
  }
  EXPECT_EQ(highest, report.peak_total_bytes);
  for (int index = 0; index < graph.size(); ++index) {
    if (graph.node(index).op != "Conv2d" && graph.node(index).op != "BatchNorm2d") continue;
    EXPECT_EQ((seen[{index, static_cast<int>(Phase::Forward)}]), 2) << graph.node(index).name;
    EXPECT_EQ((seen[{index, static_cast<int>(Phase::Backward)}]), 2) << graph.node(index).name;
  }
}

TEST(MaxBatch, BracketsTheLimit) {
  MemoryConfig config;
  auto build = [](int64_t batch) { return zoo("resnet18", batch); };
  const int64_t limit = 400 * kMiB;
  MaxBatchResult result = max_batch(build, config, limit);
  ASSERT_GT(result.batch, 0);
  EXPECT_LE(result.required_bytes, limit);
  EXPECT_GT(result.next_required_bytes, limit);
  EXPECT_EQ(simulate_memory(build(result.batch), config).required_bytes, result.required_bytes);
  EXPECT_EQ(simulate_memory(build(result.batch + 1), config).required_bytes, result.next_required_bytes);
  EXPECT_EQ(max_batch(build, config, kMiB).batch, 0);                   // not even the parameters fit
  EXPECT_EQ(max_batch(build, config, int64_t{1} << 40, 16).batch, 16);  // capped
}

TEST(MaxBatch, AHintedSlopeSavesASimulationAndKeepsTheAnswer) {
  // Bytes exactly linear in the batch: 3 GiB fixed, 700 MiB per sample, 24 GiB available (batch 30 fits, 31 not).
  int64_t calls = 0;
  auto required = [&](int64_t batch) {
    ++calls;
    return 3 * 1024 * kMiB + batch * 700 * kMiB;
  };
  const int64_t limit = 24 * 1024 * kMiB;
  const MaxBatchResult plain = largest_fitting(required, limit, 1 << 20);
  const MaxBatchResult hinted = largest_fitting(required, limit, 1 << 20, 700.0 * kMiB);
  EXPECT_EQ(plain.batch, 30);
  EXPECT_EQ(hinted.batch, 30);
  EXPECT_EQ(hinted.simulations, 3);  // 1, the line's 30, then 31
  EXPECT_EQ(plain.simulations, 4);   // 1, 2, then the line through them: 30 and 31
  EXPECT_EQ(calls, plain.simulations + hinted.simulations);
  // A hint far off either way still brackets the same answer.
  EXPECT_EQ(largest_fitting(required, limit, 1 << 20, 7.0 * kMiB).batch, 30);
  EXPECT_EQ(largest_fitting(required, limit, 1 << 20, 70000.0 * kMiB).batch, 30);
}

// The caching allocator model against a plain reimplementation of the same policy (every block in a map by
// address, each pool's free blocks in an ordered set of (size, address)), over random sequences that free many
// blocks of one size: the reserved and allocated bytes after every step must agree, and so every best-fit choice.
class ReferenceAllocator {
 public:
  void malloc(int buffer, int64_t bytes) {
    const int64_t size = CudaCachingAllocatorModel::round_size(bytes);
    const bool small = size <= kMiB;
    std::set<std::pair<int64_t, int64_t>>& pool = small ? small_ : large_;
    auto best = pool.lower_bound({size, -1});
    int64_t address;
    if (best == pool.end()) {
      address = next_;
      const int64_t segment = CudaCachingAllocatorModel::segment_size(size);
      next_ += segment;
      reserved_ += segment;
      blocks_[address] = {segment, false, small, segment_id_++};
    } else {
      address = best->second;
      pool.erase(best);
    }
    Block& block = blocks_[address];
    const int64_t remaining = block.size - size;
    if (small ? remaining >= 512 : remaining > kMiB) {
      blocks_[address + size] = {remaining, false, small, block.segment};
      pool.insert({remaining, address + size});
      block.size = size;
    }
    block.allocated = true;
    allocated_ += block.size;
    address_of_[buffer] = address;
  }
  void free(int buffer) {
    auto at = blocks_.find(address_of_.at(buffer));
    at->second.allocated = false;
    allocated_ -= at->second.size;
    std::set<std::pair<int64_t, int64_t>>& pool = at->second.small ? small_ : large_;
    if (at != blocks_.begin()) {
      auto left = std::prev(at);
      if (!left->second.allocated && left->second.segment == at->second.segment) {
        pool.erase({left->second.size, left->first});
        left->second.size += at->second.size;
        blocks_.erase(at);
        at = left;
      }
    }
    auto right = std::next(at);
    if (right != blocks_.end() && !right->second.allocated && right->second.segment == at->second.segment) {
      pool.erase({right->second.size, right->first});
      at->second.size += right->second.size;
      blocks_.erase(right);
    }
    pool.insert({at->second.size, at->first});
  }
  int64_t allocated() const { return allocated_; }
  int64_t reserved() const { return reserved_; }

 private:
  struct Block {
    int64_t size = 0;
    bool allocated = false, small = false;
    int64_t segment = 0;
  };
  std::map<int64_t, Block> blocks_;
  std::set<std::pair<int64_t, int64_t>> small_, large_;
  std::map<int, int64_t> address_of_;
  int64_t next_ = 0, reserved_ = 0, allocated_ = 0, segment_id_ = 0;
};

TEST(CudaAllocatorModel, AgreesWithAPlainReimplementationOnRandomSteps) {
  const std::vector<int64_t> sizes = {100, 512, 4096, 128 * 1024, 600 * 1024, 3 * kMiB, 12 * kMiB, 40 * kMiB};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 random(seed);
    CudaCachingAllocatorModel model;
    ReferenceAllocator reference;
    std::vector<int> live;
    int next_buffer = 0;
    for (int step = 0; step < 4000; ++step) {
      const bool allocate = live.empty() || random() % 100 < 55;
      if (allocate) {
        int64_t bytes = sizes[random() % sizes.size()];
        if (random() % 4 == 0) bytes = 1 + static_cast<int64_t>(random() % static_cast<uint64_t>(bytes));
        model.malloc(next_buffer, bytes);
        reference.malloc(next_buffer, bytes);
        live.push_back(next_buffer++);
      } else {
        // Mostly the oldest or the newest live buffer (a step frees in order), sometimes any.
        const uint64_t pick = random() % 10;
        const size_t at = pick < 4 ? 0 : pick < 8 ? live.size() - 1 : random() % live.size();
        model.free(live[at]);
        reference.free(live[at]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
      }
      ASSERT_EQ(model.allocated_bytes(), reference.allocated()) << "seed " << seed << " step " << step;
      ASSERT_EQ(model.reserved_bytes(), reference.reserved()) << "seed " << seed << " step " << step;
    }
  }
}

// --- the convolution backend rules (ATen's use_mkldnn, oneDNN's blocked formats) -------------------

ConvShape conv(int64_t n, int64_t c, int64_t hw, int64_t o, int64_t k, int64_t stride, int64_t groups = 1) {
  ConvShape s;
  s.batch = n;
  s.in_channels = c;
  s.in_h = s.in_w = hw;
  s.out_channels = o;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = k / 2;
  s.groups = groups;
  s.out_h = s.out_w = (hw + 2 * (k / 2) - k) / stride + 1;
  return s;
}

int64_t peak_of(const std::vector<Step>& steps) {
  std::vector<int64_t> sizes(64, 0);
  int64_t live = 0, peak = 0;
  for (const Step& step : steps) {
    if (static_cast<size_t>(step.slot) >= sizes.size()) sizes.resize(static_cast<size_t>(step.slot) + 1, 0);
    if (step.kind == Step::Alloc) {
      sizes[static_cast<size_t>(step.slot)] = step.bytes;
      live += step.bytes;
    } else {
      live -= sizes[static_cast<size_t>(step.slot)];
    }
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(CpuConv, BackendFollowsAtenUseMkldnn) {
  EXPECT_EQ(cpu_conv_recipe(conv(1, 64, 8, 64, 3, 1), 1, hardware::CpuIsa::Avx512Core).backend,
            "slow");  // batch 1, small, 3x3
  EXPECT_EQ(cpu_conv_recipe(conv(8, 64, 8, 64, 1, 1), 1, hardware::CpuIsa::Avx512Core).backend,
            "slow");  // 1x1, one thread, batch < 16
  EXPECT_NE(cpu_conv_recipe(conv(16, 64, 8, 64, 1, 1), 1, hardware::CpuIsa::Avx512Core).backend.find("mkldnn"),
            std::string::npos);
  EXPECT_NE(cpu_conv_recipe(conv(8, 64, 8, 64, 1, 1), 2, hardware::CpuIsa::Avx512Core).backend.find("mkldnn"),
            std::string::npos);
  EXPECT_NE(cpu_conv_recipe(conv(2, 64, 8, 64, 3, 1), 1, hardware::CpuIsa::Avx512Core).backend.find("mkldnn"),
            std::string::npos);
  EXPECT_EQ(cpu_conv_recipe(conv(1, 64, 8, 64, 5, 1), 1, hardware::CpuIsa::Avx512Core).backend.substr(0, 6),
            "mkldnn");  // kernel > 3
}

TEST(CpuConv, SlowPathKeepsTheIm2colColumns) {
  ConvShape s = conv(1, 64, 8, 32, 3, 1);
  ConvRecipe recipe = cpu_conv_recipe(s, 1, hardware::CpuIsa::Avx512Core);
  const int64_t columns = 64 * 9 * 8 * 8 * 4, output = 32 * 8 * 8 * 4;
  EXPECT_EQ(peak_of(recipe.forward), columns + output);
}

TEST(CpuConv, BlockedFormatsPadChannelsTo16) {
  // 24 -> 40 channels, 3x3: the reordered input has 32 channels, the blocked output 48.
  ConvRecipe recipe = cpu_conv_recipe(conv(2, 24, 8, 40, 3, 1), 1, hardware::CpuIsa::Avx512Core);
  ASSERT_GE(recipe.forward.size(), 3u);
  EXPECT_EQ(recipe.forward[0].bytes, 2 * 32 * 8 * 8 * 4);   // src reorder
  EXPECT_EQ(recipe.forward[1].bytes, 48 * 32 * 3 * 3 * 4);  // weights OIhw16i16o
  EXPECT_EQ(recipe.forward[2].bytes, 2 * 48 * 8 * 8 * 4);   // dst
}

TEST(Synthetic, EverySeedSimulates) {
  for (uint64_t seed = 0; seed < 30; ++seed) {
    models::ModelSpec spec;
    spec.batch = 1 + static_cast<int64_t>(seed % 8);
    spec.input = {3, 32, 32};
    MemoryReport report = simulate_memory(models::make_synthetic(seed, spec), MemoryConfig{});
    EXPECT_GT(report.peak_bytes, 0) << seed;
  }
}

}  // namespace
}  // namespace dnncast::memory

namespace dnncast::memory {
namespace {

// PyTorch 2's Python step on CUDA (MemoryConfig::python_defaults, used for catalogued GPUs): foreach Adam takes
// the square roots of all second moments at once, so the step holds parameters, gradients, both moments and
// one more parameter-sized temporary (5 x the parameter bytes); libtorch 1.13's loop holds two temporaries of
// one parameter at a time. zero_grad frees the gradients, so the forward of iteration 2 runs without them.
TEST(CudaPythonDefaults, ForeachAdamHoldsOneTemporaryPerParameterAtOnce) {
  GraphBuilder b("two_linears", "mlp");
  int x = b.input(TensorShape({1, 1024}));
  x = b.linear("fc1", x, 1024);
  x = b.linear("fc2", x, 1024);
  const Graph graph = b.finish();
  const int64_t parameter_bytes = 2 * (1024 * 1024 + 1024) * 4;
  MemoryConfig config;
  config.optimizer = Optimizer::Adam;
  config.device = Device::Cuda;
  const MemoryReport libtorch = simulate_memory(graph, config);
  config.python_defaults = true;
  const MemoryReport python = simulate_memory(graph, config);
  EXPECT_GE(python.peak_allocated_bytes, 5 * parameter_bytes);
  EXPECT_LT(python.peak_allocated_bytes, 5 * parameter_bytes + (int64_t{1} << 20));
  EXPECT_LT(libtorch.peak_allocated_bytes, 5 * parameter_bytes);
  EXPECT_EQ(python.peak_phase, Phase::Optimizer);
  // The parts of a cuda total: reserve = reserved - allocated without a fraction, context and workspace as given.
  config.cuda_context_bytes = 100;
  config.cuda_workspace_bytes = 10;
  const MemoryReport parts = simulate_memory(graph, config);
  EXPECT_EQ(parts.cuda.reserve_bytes, parts.peak_reserved_bytes - parts.peak_allocated_bytes);
  EXPECT_EQ(parts.required_bytes, parts.peak_reserved_bytes + 110);
  config.cuda_reserve_fraction = -0.1;
  EXPECT_THROW(simulate_memory(graph, config), InputError);
}

}  // namespace
}  // namespace dnncast::memory
