// Every model of the zoo trains in the executor (a few iterations at a small size, in a child):
// every op the zoo uses runs forward and backward, and the module's parameters equal the IR's.
// `make test` trains one seeded slice of the zoo (tests/rotation.h), `make test-slow` all of it.
#include <gtest/gtest.h>

#include "core/error.h"
#include "models/zoo.h"
#include "profile/measure.h"
#include "rotation.h"

namespace dnncast::profile {
namespace {

constexpr size_t kZooSlices = 8;

TEST(ZooTrains, EveryModelRunsATrainingStep) {
  Limits limits;
  limits.time_budget_s = 0.1;
  limits.warmup_budget_s = 0.1;
  limits.min_iterations = 1;
  limits.timeout_s = 300;
  // kZooSlices: 5-6 of the zoo's 47 models per slice (about 3 minutes on a loaded core here).
  const std::vector<models::ZooEntry> models =
      rotation::pick(rotation::slice_of("ZooTrains", kZooSlices), models::zoo());
  ASSERT_FALSE(models.empty());
  for (const models::ZooEntry& entry : models) {
    models::ModelSpec spec;
    spec.batch = 2;
    if (entry.kind == "cnn") {
      spec.input = {3, 64, 64};
      if (entry.name == "inception_v3") spec.input = {3, 96, 96};
    } else if (entry.default_input.size() == 1) {
      spec.seq_len = 16;
    }
    Graph graph;
    try {
      graph = models::build_zoo_model(entry.name, spec);
    } catch (const InputError&) {
      spec.input.clear();  // the model needs its default size
      graph = models::build_zoo_model(entry.name, spec);
    }
    Measurement m = measure_isolated(graph, TrainConfig{}, limits);
    EXPECT_EQ(m.status, "ok") << entry.name << ": " << m.message;
    EXPECT_EQ(m.params, graph_param_count(graph)) << entry.name;
    EXPECT_EQ(m.grad_bytes, m.param_bytes) << entry.name << ": a parameter got no gradient";
    std::printf("  %-22s %-12s %10.1f ms  peak %8.1f MiB\n", entry.name.c_str(),
                graph.node(graph.inputs().front()).shape.to_string().c_str(), m.time_ms.median,
                m.peak_bytes / 1048576.0);
  }
}

}  // namespace
}  // namespace dnncast::profile
