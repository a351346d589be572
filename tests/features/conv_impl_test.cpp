// The conv.* features count FLOPs by the implementation libtorch runs for each convolution pass.
// Cross-check: every distinct convolution of nine zoo networks (32 px) and three synthetic ones, at
// batches on each side of ATen's thresholds (1, 8, 16) and at 1 and 2 threads, run forward and backward by
// Debian's PyTorch with oneDNN's verbose log (scripts/conv_impl_reference.py); the implementation
// oneDNN names (or none: ATen's slow path) must be the one the featurizer assumed.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "features/featurizer.h"
#include "hardware/isa.h"
#include "models/synthetic.h"
#include "models/zoo.h"
#include "python_run.h"

namespace dnncast::features {
namespace {

const char* name_of(hardware::ConvImpl impl) {
  switch (impl) {
    case hardware::ConvImpl::Slow:
      return "slow";
    case hardware::ConvImpl::Gemm:
      return "gemm";
    case hardware::ConvImpl::Jit:
      return "jit";
  }
  return "?";
}

std::string run_reference(const std::string& cases) {
  std::string path = python_test::write_temp(cases);
  if (path.empty()) return "FAILED\ncannot create a temporary file";
  std::string output = python_test::run_python_command(DNNCAST_SOURCE_DIR "/scripts/conv_impl_reference.py < " + path);
  std::remove(path.c_str());
  return output;
}

TEST(ConvImpl, MatchesWhatOneDnnReports) {
  std::vector<Graph> graphs;
  for (const char* name : {"resnet18", "resnext50_32x4d", "mobilenet_v2", "shufflenet_v2_x1_0", "densenet121",
                           "squeezenet1_1", "efficientnet_b0", "regnet_y_400mf", "googlenet"})
    graphs.push_back(models::build_zoo_model(name, {1, {3, 32, 32}, 0, 1000}));
  for (uint64_t seed : {1333, 1758, 2200}) graphs.push_back(models::make_synthetic(seed, {1, {3, 64, 64}, 0, 1000}));

  // The dispatch of this process is the dispatch of the reference's (it inherits ONEDNN_MAX_CPU_ISA).
  HardwareFeatures host;
  host.isa = hardware::host_dispatch().onednn;
  std::printf("oneDNN dispatch: %s\n", hardware::isa_name(host.isa));
  // Distinct (convolution, batch, threads) cases and what the featurizer assumes for them.
  std::map<std::string, std::string> expected;  // case line -> "fwd bwd_data bwd_weights"
  for (const Graph& graph : graphs)
    for (const ConvSite& site : conv_sites(graph))
      for (int64_t batch : {1, 8, 16})
        for (int64_t threads : {1, 2}) {
          TrainingConfig config;
          config.batch = batch;
          config.threads = threads;
          std::array<hardware::ConvImpl, 3> impls = conv_impls(site, config, host);
          const hardware::ConvShape& s = site.shape;
          std::ostringstream line;
          line << batch << ' ' << s.in_channels << ' ' << s.in_h << ' ' << s.in_w << ' ' << s.out_channels << ' '
               << s.kernel_h << ' ' << s.kernel_w << ' ' << s.stride_h << ' ' << s.stride_w << ' ' << s.pad_h << ' '
               << s.pad_w << ' ' << s.dilation_h << ' ' << s.dilation_w << ' ' << s.groups << ' ' << s.bias << ' '
               << site.input_grad << ' ' << threads;
          expected[line.str()] = std::string(name_of(impls[0])) + " " + (site.input_grad ? name_of(impls[1]) : "-") +
                                 " " + name_of(impls[2]);
        }
  ASSERT_GT(expected.size(), 300u);
  std::string cases;
  std::vector<std::string> order;
  for (const auto& [line, impls] : expected) {
    cases += "c" + std::to_string(order.size()) + " " + line + "\n";
    order.push_back(line);
  }
  std::string output = run_reference(cases);
  ASSERT_NE(output.rfind("FAILED", 0), 0u)
      << "PyTorch run failed (" DNNCAST_PYTHON " needs python3-torch; scripts/setup.sh installs it):\n"
      << output;

  std::istringstream lines(output);
  std::string line;
  size_t answered = 0, differing = 0;
  std::map<std::string, int> kinds;
  std::string reported_isa;
  while (std::getline(lines, line)) {
    if (line.rfind("isa ", 0) == 0) reported_isa = line.substr(4);
    std::istringstream fields(line);
    std::string label, fwd, bwd_data, bwd_weights;
    if (!(fields >> label >> fwd >> bwd_data >> bwd_weights) || label.size() < 2 || label[0] != 'c') continue;
    size_t index = std::stoul(label.substr(1));
    ASSERT_LT(index, order.size());
    ++answered;
    std::string measured = fwd + " " + bwd_data + " " + bwd_weights;
    ++kinds[measured];
    if (measured != expected[order[index]]) {
      ++differing;
      ADD_FAILURE() << "batch in_c h w out_c kh kw sh sw ph pw dh dw groups bias input_grad threads = " << order[index]
                    << ": oneDNN ran " << measured << ", the featurizer assumed " << expected[order[index]];
    }
  }
  EXPECT_EQ(answered, order.size()) << output.substr(0, 2000);
  EXPECT_EQ(reported_isa, hardware::isa_name(host.isa)) << "oneDNN's verbose log named another ISA than ours";
  // The cases cover every implementation class on some pass.
  bool slow = false, gemm = false, jit = false;
  for (const auto& [measured, count] : kinds) {
    slow = slow || measured.find("slow") != std::string::npos;
    gemm = gemm || measured.find("gemm") != std::string::npos;
    jit = jit || measured.find("jit") != std::string::npos;
  }
  EXPECT_TRUE(slow && gemm && jit);
  std::printf("conv implementations: %zu cases, %zu differ from the featurizer\n", answered, differing);
}

TEST(ConvImpl, FeaturesFollowTheBatchThreshold) {
  // densenet121 is mostly 1x1 convolutions: single-threaded, they run on the slow path below
  // batch 16 and on oneDNN's jit_1x1 from 16; with 2 threads always on oneDNN.
  Graph graph = models::build_zoo_model("densenet121", {1, {3, 64, 64}, 0, 1000});
  GraphFeatures features = graph_features(graph);
  HardwareFeatures cpu{2, false, 0, 0, 0};
  auto column = [&](const std::vector<double>& row, const char* name) {
    return row[static_cast<size_t>(feature_index(name))];
  };
  auto training = [](int64_t batch, int64_t threads) {  // sgd, fp32
    TrainingConfig config;
    config.batch = batch;
    config.threads = threads;
    return config;
  };
  TrainingConfig eight = training(8, 1), sixteen = training(16, 1), eight_two = training(8, 2);
  std::vector<double> at_eight = featurize(features, eight, cpu), at_sixteen = featurize(features, sixteen, cpu),
                      two_threads = featurize(features, eight_two, cpu);
  EXPECT_GT(column(at_eight, "conv.slow_flops_per_thread"), 0.4 * column(at_eight, "total.flops_train"));
  EXPECT_EQ(column(at_sixteen, "conv.slow_flops_per_thread"), 0);
  EXPECT_EQ(column(two_threads, "conv.slow_flops_per_thread"), 0);
  // The FLOPs move between classes; their sum grows with the batch.
  auto conv_flops = [&](const std::vector<double>& row) {
    return column(row, "conv.slow_flops_per_thread") + column(row, "conv.gemm_flops_per_thread") +
           column(row, "conv.jit_flops_per_thread");
  };
  EXPECT_NEAR(conv_flops(at_sixteen), 2 * conv_flops(at_eight), 1e-6 * conv_flops(at_sixteen));
  // The one-pass path computes the same columns.
  std::vector<double> one_pass =
      featurize_graph(models::build_zoo_model("densenet121", {8, {3, 64, 64}, 0, 1000}), eight, cpu);
  for (const char* name : {"conv.slow_flops_per_thread", "conv.gemm_flops_per_thread", "conv.jit_flops_per_thread",
                           "conv.slow_calls", "conv.gemm_calls", "conv.jit_calls", "conv.mkldnn_weight_bytes"})
    EXPECT_NEAR(column(one_pass, name), column(at_eight, name), 1e-9 * std::max(1.0, column(at_eight, name))) << name;
}

}  // namespace
}  // namespace dnncast::features
