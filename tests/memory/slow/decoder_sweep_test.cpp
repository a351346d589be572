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

#include "memory/simulator.h"
#include "models/decoder_sweep.h"
#include "rotation.h"

#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace {

#ifdef DNNCAST_HAVE_TORCH

// 20 of the 200 in a slice: about a minute on one busy core here.
constexpr size_t kSlices = 10;

struct Row {
  dnncast::DecoderCase decoder;
  std::string status;
  int64_t measured = 0, simulated = 0;
  double error_pct = 0;
};

Row measure(const dnncast::DecoderCase& decoder) {
  Row row;
  row.decoder = decoder;
  const dnncast::Graph graph = decoder.graph();
  dnncast::profile::TrainConfig train;
  train.set_setup(decoder);
  dnncast::profile::Limits limits;
  limits.time_budget_s = 0.01;  // the peak is reached by iteration 2
  limits.warmup_budget_s = 0.01;
  limits.min_iterations = 1;
  limits.timeout_s = 300;
  const dnncast::profile::Measurement measured = dnncast::profile::measure_isolated(graph, train, limits);
  row.status = measured.status;
  row.measured = measured.peak_bytes;
  dnncast::memory::MemoryConfig config;
  config.set_setup(decoder);
  row.simulated = dnncast::memory::simulate_memory(graph, config).peak_bytes;
  if (row.measured > 0)
    row.error_pct = 100.0 * static_cast<double>(row.simulated - row.measured) / static_cast<double>(row.measured);
  std::printf("%s  %-9s measured %10lld  simulated %10lld  %+.4f%%  %s\n", decoder.id.c_str(), row.status.c_str(),
              static_cast<long long>(row.measured), static_cast<long long>(row.simulated), row.error_pct,
              decoder.describe().c_str());
  std::fflush(stdout);
  return row;
}

TEST(DecoderMemorySweep, TwoHundredDecodersAgainstTheProfiler) {
  const std::vector<dnncast::DecoderCase> cases = dnncast::decoder_sweep();
  ASSERT_GE(cases.size(), 200u);
  const dnncast::rotation::Slice slice = dnncast::rotation::slice_of("DecoderMemorySweep", kSlices);
  std::vector<Row> rows;
  for (const dnncast::DecoderCase& decoder : dnncast::rotation::pick(slice, cases)) rows.push_back(measure(decoder));
  ASSERT_EQ(rows.size(), slice.size_of(cases.size()));

  std::ofstream csv(std::string(DNNCAST_BINARY_DIR) + "/decoder_sweep.csv");
  csv << "id,status,measured_peak_bytes,simulated_peak_bytes,error_pct,config\n";
  size_t exact = 0, within = 0;
  const Row* worst = nullptr;
  for (const Row& row : rows) {
    csv << row.decoder.id << "," << row.status << "," << row.measured << "," << row.simulated << "," << row.error_pct
        << ",\"" << row.decoder.describe() << "\"\n";
    exact += row.status == "ok" && row.simulated == row.measured;
    within += row.status == "ok" && std::fabs(row.error_pct) <= 1.0;
    if (worst == nullptr || std::fabs(row.error_pct) > std::fabs(worst->error_pct)) worst = &row;
    EXPECT_EQ(row.status, "ok") << row.decoder.id << " " << row.decoder.describe();
    EXPECT_LE(std::fabs(row.error_pct), 1.0) << row.decoder.id << " " << row.decoder.describe() << ": measured "
                                             << row.measured << ", simulated " << row.simulated;
  }
  std::printf("decoder sweep: %zu configurations, %zu byte-exact (%.1f%%), %zu within 1%%, largest error %+.4f%% (%s)\n",
              rows.size(), exact, 100.0 * static_cast<double>(exact) / static_cast<double>(rows.size()), within,
              worst->error_pct, worst->decoder.id.c_str());
  EXPECT_GE(static_cast<double>(exact), 0.95 * static_cast<double>(rows.size()));
}

#else

TEST(DecoderMemorySweep, NeedsLibtorch) { GTEST_SKIP() << "built without libtorch: no profiler to compare with"; }

#endif

}  // namespace
