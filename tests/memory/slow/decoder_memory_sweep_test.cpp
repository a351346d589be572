// Issue 35's goal, checked: the simulated peak equals the measured one to the byte for at least 95% of a sweep of
// 200 small Hugging Face decoders (models/decoder_sweep.h: llama, mistral, gpt_neox; 1-3 layers; grouped and
// multi-query attention; tied heads; SGD, Adam, AdamW; LoRA off and on), and is within 1% on all. Each
// configuration is trained for real by the profiler (a child process: 2 warm-up iterations, 1 timed) beside the
// simulation of the same graph. The whole sweep (docs/MEMORY.md, "Decoders from config.json"):
//   build/tests/test_memory_slow --gtest_filter='DecoderMemorySweep.*'
// `make test` runs one seeded slice (tests/rotation.h). The rows go to build/decoder_sweep.csv.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "hardware/isa.h"
#include "memory/simulator.h"
#include "models/decoder_sweep.h"
#include "rotation.h"

#ifdef DNNCAST_HAVE_TORCH
#include "memory/profiled_limits.h"
#include "profile/measure.h"
#endif

namespace {

#ifdef DNNCAST_HAVE_TORCH

// 20 of the 200 in a slice: about a minute on one busy core here.
constexpr size_t kSlices = 10;

struct Row {
  dnncast::models::DecoderCase decoder;
  std::string status, message;
  int64_t measured = 0, simulated = 0;
  double error_pct = 0;
};

Row measure(const dnncast::models::DecoderCase& decoder) {
  Row row;
  row.decoder = decoder;
  const dnncast::Graph graph = decoder.graph();
  dnncast::profile::TrainConfig train;
  train.set_setup(decoder);
  train.grad_accum = decoder.grad_accum;
  const dnncast::profile::Measurement measured =
      dnncast::profile::measure_isolated(graph, train, dnncast::memory_test::quick_limits(300));
  row.status = measured.status;
  row.message = measured.message;
  row.measured = measured.peak_bytes;
  dnncast::memory::MemoryConfig config;
  config.set_setup(decoder);
  config.grad_accum = decoder.grad_accum;
  row.simulated = dnncast::memory::simulate_memory(graph, config).peak_bytes;
  if (row.measured > 0)
    row.error_pct = 100.0 * static_cast<double>(row.simulated - row.measured) / static_cast<double>(row.measured);
  std::printf("%s  %-9s measured %10lld  simulated %10lld  %+.4f%%  %s\n", decoder.id.c_str(), row.status.c_str(),
              static_cast<long long>(row.measured), static_cast<long long>(row.simulated), row.error_pct,
              decoder.describe().c_str());
  std::fflush(stdout);
  return row;
}

// libtorch 1.13 with Debian's oneDNN 2.6.3 dies with SIGILL in some bf16 products on an AMX CPU (found by this
// sweep: mm 20x63 by 63x80, the weight gradient of a Linear of 80 inputs and 20 outputs over 63 tokens, crashes
// alone in Python; under ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 it runs). No peak is measured for such a run.
bool amx_bf16_crash(const Row& row) {
  return row.status == "error" && row.decoder.precision != dnncast::Precision::Fp32 &&
         row.message.find("signal 4") != std::string::npos &&
         dnncast::hardware::host_dispatch().onednn == dnncast::hardware::CpuIsa::Avx512CoreAmx;
}

// Measures the rotation's slice of `cases` (all of them with DNNCAST_ROTATION_SEED=all, tests/rotation.h), writes
// the rows to build/CSV_NAME, prints the summary, and checks the goal: >= 95% byte-exact, every one within 1%.
void check_sweep(const std::vector<dnncast::models::DecoderCase>& cases, const std::string& slice_name,
                 const std::string& csv_name) {
  ASSERT_GE(cases.size(), 200u);
  const dnncast::rotation::Slice slice = dnncast::rotation::slice_of(slice_name, kSlices);
  std::vector<Row> rows;
  for (const dnncast::models::DecoderCase& decoder : dnncast::rotation::pick(slice, cases))
    rows.push_back(measure(decoder));
  ASSERT_EQ(rows.size(), slice.size_of(cases.size()));

  std::ofstream csv(std::string(DNNCAST_BINARY_DIR) + "/" + csv_name);
  csv << "id,status,measured_peak_bytes,simulated_peak_bytes,error_pct,config\n";
  size_t exact = 0, within = 0, crashed = 0;
  const Row* worst = nullptr;
  for (const Row& row : rows) {
    csv << row.decoder.id << "," << row.status << "," << row.measured << "," << row.simulated << "," << row.error_pct
        << ",\"" << row.decoder.describe() << "\"\n";
    if (amx_bf16_crash(row)) {  // libtorch's own defect on this host, not the simulator's: counted, left out
      ++crashed;
      std::printf("%s: libtorch died with SIGILL in a bf16 product on AMX (oneDNN 2.6.3; docs/MEMORY.md)\n",
                  row.decoder.id.c_str());
      continue;
    }
    exact += row.status == "ok" && row.simulated == row.measured;
    within += row.status == "ok" && std::fabs(row.error_pct) <= 1.0;
    if (worst == nullptr || std::fabs(row.error_pct) > std::fabs(worst->error_pct)) worst = &row;
    EXPECT_EQ(row.status, "ok") << row.decoder.id << " " << row.decoder.describe() << ": " << row.message;
    EXPECT_LE(std::fabs(row.error_pct), 1.0) << row.decoder.id << " " << row.decoder.describe() << ": measured "
                                             << row.measured << ", simulated " << row.simulated;
  }
  const size_t compared = rows.size() - crashed;
  ASSERT_GT(compared, 0u);
  std::printf(
      "%s: %zu configurations, %zu compared (%zu crashed in libtorch), %zu byte-exact (%.1f%%), %zu within 1%%, "
      "largest error %+.4f%% (%s)\n",
      slice_name.c_str(), rows.size(), compared, crashed, exact,
      100.0 * static_cast<double>(exact) / static_cast<double>(compared), within, worst->error_pct,
      worst->decoder.id.c_str());
  EXPECT_GE(static_cast<double>(exact), 0.95 * static_cast<double>(compared));
  EXPECT_LE(crashed * 10, rows.size()) << "more than 10% of the sweep crashed in libtorch";
}

TEST(DecoderMemorySweep, TwoHundredDecodersAgainstTheProfiler) {
  check_sweep(dnncast::models::decoder_sweep(), "DecoderMemorySweep", "decoder_sweep.csv");
}

// Every training mode (models/decoder_sweep.h, decoder_mode_sweep): fp32, bf16 autocast and bf16-pure, activation
// checkpointing and gradient accumulation, over 200 more decoders.
TEST(DecoderMemorySweep, EveryTrainingModeAgainstTheProfiler) {
  check_sweep(dnncast::models::decoder_mode_sweep(), "DecoderModeSweep", "decoder_mode_sweep.csv");
}

// Issue 47's families (models/decoder_sweep.h, family_sweep): qwen2, qwen3, gemma, gemma2 and phi3 with their own
// parts (q/k/v biases, per-head norms, RMSNorm by 1 + weight, soft-capped scores and logits, sliding windows, fused
// projections, partial rotary), LoRA and every training mode, 200 more decoders.
TEST(DecoderMemorySweep, IssueFortySevenFamiliesAgainstTheProfiler) {
  check_sweep(dnncast::models::family_sweep(), "FamilySweep", "family_sweep.csv");
}

// Issue 47's mixtures of experts (models/decoder_sweep.h, moe_sweep): mixtral, qwen2_moe, qwen3_moe and deepseek_v2
// with routers, experts on their balanced (or skewed) tokens, shared experts, latent attention, LoRA and every
// training mode, 200 more decoders.
TEST(DecoderMemorySweep, MixturesOfExpertsAgainstTheProfiler) {
  check_sweep(dnncast::models::moe_sweep(), "MoeSweep", "moe_sweep.csv");
}

#else

TEST(DecoderMemorySweep, NeedsLibtorch) { GTEST_SKIP() << "built without libtorch: no profiler to compare with"; }

#endif

}  // namespace
