// The whole validation sweep of the memory simulator against the profiler (docs/MEMORY.md):
// every zoo CNN at two batch sizes (1 and 4; 3x64x64 inputs, inception_v3 3x96x96, vit_b_16
// 3x224x224) and 100 synthetic networks (seed s: batch s % 8 + 1, input 3x32x32 / 3x48x48 /
// 3x64x64 by s % 3), one profiled run each. Writes memory_sweep.csv next to the binary's build
// folder and prints the table docs/MEMORY.md summarises. Slow (tens of minutes on 2 cores):
//   build/tests/test_memory_slow   or   ctest -L slow -R memory
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "memory/simulator.h"
#include "models/synthetic.h"
#include "models/zoo.h"

#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast::memory {
namespace {

#ifdef DNNCAST_HAVE_TORCH

struct Row {
  std::string model;
  int64_t batch = 0;
  std::string input;
  int64_t measured = 0, simulated = 0;
  double error = 0;
  std::string status;
};

Row measure(const std::string& model, int64_t batch, std::vector<int64_t> input) {
  ModelSpec spec;
  spec.batch = batch;
  spec.input = input;
  Graph graph = model.rfind("synthetic:", 0) == 0 ? make_synthetic(std::stoull(model.substr(10)), spec)
                                                   : build_zoo_model(model, spec);
  profile::Limits limits;
  limits.time_budget_s = 0.01;
  limits.warmup_budget_s = 0.01;
  limits.min_iterations = 1;
  limits.timeout_s = 900;
  profile::Measurement measured = profile::measure_isolated(graph, profile::TrainConfig{}, limits);
  Row row;
  row.model = model;
  row.batch = batch;
  row.input = TensorShape(input).to_string();
  row.status = measured.status;
  row.measured = measured.peak_bytes;
  row.simulated = simulate_memory(graph, MemoryConfig{}).peak_bytes;
  if (measured.status == "ok" && measured.peak_bytes > 0)
    row.error = static_cast<double>(row.simulated - row.measured) / static_cast<double>(row.measured);
  return row;
}

void report(const std::vector<Row>& rows, const std::string& path) {
  std::ofstream csv(path);
  csv << "model,batch,input,status,measured_peak_bytes,simulated_peak_bytes,relative_error\n";
  int exact = 0, within = 0, ok = 0;
  double worst = 0;
  std::string worst_model;
  for (const Row& row : rows) {
    csv << row.model << ',' << row.batch << ',' << row.input << ',' << row.status << ',' << row.measured << ','
        << row.simulated << ',' << row.error << '\n';
    if (row.status != "ok") continue;
    ++ok;
    exact += row.measured == row.simulated;
    within += std::fabs(row.error) <= 0.01;
    if (std::fabs(row.error) > std::fabs(worst)) {
      worst = row.error;
      worst_model = row.model + " batch " + std::to_string(row.batch);
    }
  }
  std::printf("%d runs ok: %d exact, %d within 1%%; largest error %+.4f%% (%s); table: %s\n", ok, exact, within,
              100 * worst, worst_model.c_str(), path.c_str());
}

TEST(MemorySweep, ZooCnnsAtTwoBatches) {
  std::vector<Row> rows;
  for (const ZooEntry& entry : zoo()) {
    if (entry.kind != "cnn") continue;
    std::vector<int64_t> input{3, 64, 64};
    if (entry.name == "inception_v3") input = {3, 96, 96};
    if (entry.name == "vit_b_16") input = {3, 224, 224};
    for (int64_t batch : {1, 4}) {
      Row row = measure(entry.name, batch, input);
      std::printf("%-22s batch %lld  measured %12lld  simulated %12lld  error %+.4f%%\n", row.model.c_str(),
                  static_cast<long long>(batch), static_cast<long long>(row.measured),
                  static_cast<long long>(row.simulated), 100 * row.error);
      EXPECT_EQ(row.status, "ok") << row.model;
      EXPECT_LE(std::fabs(row.error), 0.01) << row.model << " batch " << batch;
      rows.push_back(row);
    }
  }
  report(rows, std::string(DNNCAST_BINARY_DIR) + "/memory_sweep_zoo.csv");
}

TEST(MemorySweep, HundredSyntheticNetworks) {
  std::vector<Row> rows;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    int64_t size = seed % 3 == 0 ? 32 : seed % 3 == 1 ? 48 : 64;
    Row row = measure("synthetic:" + std::to_string(seed), static_cast<int64_t>(seed % 8) + 1, {3, size, size});
    std::printf("%-16s batch %lld  %s  measured %12lld  simulated %12lld  error %+.4f%%\n", row.model.c_str(),
                static_cast<long long>(row.batch), row.input.c_str(), static_cast<long long>(row.measured),
                static_cast<long long>(row.simulated), 100 * row.error);
    EXPECT_EQ(row.status, "ok") << row.model;
    EXPECT_LE(std::fabs(row.error), 0.01) << row.model;
    rows.push_back(row);
  }
  report(rows, std::string(DNNCAST_BINARY_DIR) + "/memory_sweep_synthetic.csv");
}

#else

TEST(MemorySweep, NeedsLibtorch) { GTEST_SKIP() << "built without libtorch"; }

#endif

}  // namespace
}  // namespace dnncast::memory
