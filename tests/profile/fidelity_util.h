// Shared by the fidelity tests: run the torchvision reference (tests/profile/torchvision_step.py)
// and compare with the executor, interleaved, in one run.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "models/zoo.h"
#include "profile/measure.h"

namespace dnncast::profile::test {

struct Reference {
  double median_ms = 0;
  double probe_ms = 0;  // mean of the drift probe before and after
  int64_t params = 0, param_bytes = 0, grad_bytes = 0, optimizer_state_bytes = 0;
  std::string error;
};

inline Reference run_torchvision(const std::string& model, int64_t batch, const std::string& input,
                                 const std::string& optimizer, double budget_s) {
  std::string command = std::string(DNNCAST_PYTHON) + " " + DNNCAST_SOURCE_DIR + "/tests/profile/torchvision_step.py " +
                        model + " --batch " + std::to_string(batch) + " --input " + input + " --optimizer " +
                        optimizer + " --threads 1 --budget " + std::to_string(budget_s) + " 2>&1";
  Reference reference;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    reference.error = "cannot run " + command;
    return reference;
  }
  std::string output;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  int status = pclose(pipe);
  try {
    nlohmann::json doc = nlohmann::json::parse(output.substr(output.find('{')));
    reference.median_ms = doc.at("time_ms").at("median").get<double>();
    reference.probe_ms =
        (doc.at("probe_ms").at("before").get<double>() + doc.at("probe_ms").at("after").get<double>()) / 2;
    reference.params = doc.at("params").get<int64_t>();
    reference.param_bytes = doc.at("param_bytes").get<int64_t>();
    reference.grad_bytes = doc.at("grad_bytes").get<int64_t>();
    reference.optimizer_state_bytes = doc.at("optimizer_state_bytes").get<int64_t>();
  } catch (const std::exception& error) {
    reference.error = "exit " + std::to_string(status) + ": " + output.substr(0, 2000);
  }
  return reference;
}

// (max - min) / median of a list of medians.
inline double relative_spread(std::vector<double> values) {
  if (values.size() < 2) return 0;
  std::sort(values.begin(), values.end());
  double median =
      values.size() % 2 ? values[values.size() / 2] : (values[values.size() / 2 - 1] + values[values.size() / 2]) / 2;
  return (values.back() - values.front()) / median;
}

inline double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.size() % 2 ? values[values.size() / 2]
                           : (values[values.size() / 2 - 1] + values[values.size() / 2]) / 2;
}

struct Comparison {
  std::vector<double> ours_ms, theirs_ms;
  std::vector<double> ours_normalised, theirs_normalised;  // median * reference probe / probe
  Measurement ours;                                        // the last repeat
  Reference theirs;                                        // the last repeat
  double ratio = 0;                                        // median(ours) / median(theirs)
  double spread = 0;                                       // the larger relative spread between repeats of either side
  double ratio_normalised = 0, spread_normalised = 0;      // the same with drift-normalised times
  // Per round (one pair): ours / theirs; their median and its distribution-free 95% CI (the same
  // order statistics as scripts/timing-fidelity.py and the executor's stopping rule).
  std::vector<double> round_ratios;
  double round_ratio_median = 0, round_ratio_low = 0, round_ratio_high = 0;
  // Fastest process of each side: min(ours) / min(theirs). Interference only adds time, and this
  // machine has slow spells that last a whole process (one side's median jumps 40% for one process
  // and not the next, the drift probe unmoved), so the fastest process of each side is the figure
  // least moved by whatever else the machine runs; the rounds interleave, so both sides get the same
  // chances at a quiet spell.
  double best_ratio = 0;
};

// Distribution-free 95% CI of the median of `values` (order statistics n/2 -+ 1.96 sqrt(n)/2);
// (-inf, inf) below 6 values.
inline std::pair<double, double> median_ci(std::vector<double> values) {
  const size_t n = values.size();
  if (n < 6) return {-1e300, 1e300};
  std::sort(values.begin(), values.end());
  const double spread = 1.96 * std::sqrt(static_cast<double>(n)) / 2;
  const size_t low = static_cast<size_t>(std::max(std::floor(static_cast<double>(n) / 2 - spread), 1.0));
  const size_t high = std::min(static_cast<size_t>(std::ceil(static_cast<double>(n) / 2 + spread)) + 1, n);
  return {values[low - 1], values[high - 1]};
}

// `repeats` interleaved pairs (ours, torchvision; the order alternates between rounds), each in a
// fresh process.
inline Comparison compare(const std::string& model, int64_t batch, std::vector<int64_t> input,
                          const std::string& optimizer, int repeats, double budget_s) {
  models::ModelSpec spec;
  spec.batch = batch;
  spec.input = input;
  Graph graph = models::build_zoo_model(model, spec);
  TrainConfig config;
  config.optimizer = parse_optimizer(optimizer);
  Limits limits;
  limits.time_budget_s = budget_s;
  limits.warmup_budget_s = budget_s;
  std::string input_text = std::to_string(input[0]) + "x" + std::to_string(input[1]) + "x" + std::to_string(input[2]);
  Comparison result;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    if (repeat % 2 == 0) {
      result.ours = measure_isolated(graph, config, limits);
      result.theirs = run_torchvision(model, batch, input_text, optimizer, budget_s);
    } else {
      result.theirs = run_torchvision(model, batch, input_text, optimizer, budget_s);
      result.ours = measure_isolated(graph, config, limits);
    }
    if (result.ours.status != "ok" || !result.theirs.error.empty()) return result;
    result.ours_ms.push_back(result.ours.time_ms.median);
    result.theirs_ms.push_back(result.theirs.median_ms);
    result.ours_normalised.push_back(result.ours.time_ms_normalised);
    result.theirs_normalised.push_back(result.theirs.median_ms * reference_probe_ms() / result.theirs.probe_ms);
    result.round_ratios.push_back(result.ours.time_ms.median / result.theirs.median_ms);
    std::printf(
        "  %s repeat %d: executor %.2f ms (normalised %.2f), torchvision %.2f ms (normalised %.2f); "
        "other load %.2f CPUs\n",
        model.c_str(), repeat, result.ours.time_ms.median, result.ours_normalised.back(), result.theirs.median_ms,
        result.theirs_normalised.back(), result.ours.load_other_cpus);
  }
  result.ratio = median_of(result.ours_ms) / median_of(result.theirs_ms);
  result.round_ratio_median = median_of(result.round_ratios);
  std::tie(result.round_ratio_low, result.round_ratio_high) = median_ci(result.round_ratios);
  result.best_ratio = *std::min_element(result.ours_ms.begin(), result.ours_ms.end()) /
                      *std::min_element(result.theirs_ms.begin(), result.theirs_ms.end());
  std::printf("  %s: median of %zu round ratios %.3f, 95%% CI %.3f-%.3f; fastest process of each side: ratio %.3f\n",
              model.c_str(), result.round_ratios.size(), result.round_ratio_median, result.round_ratio_low,
              result.round_ratio_high, result.best_ratio);
  result.spread = std::max(relative_spread(result.ours_ms), relative_spread(result.theirs_ms));
  std::printf(
      "  %s bytes: params %lld / %lld, grads %lld / %lld, optimizer state %lld / %lld (executor / torchvision)\n",
      model.c_str(), static_cast<long long>(result.ours.param_bytes), static_cast<long long>(result.theirs.param_bytes),
      static_cast<long long>(result.ours.grad_bytes), static_cast<long long>(result.theirs.grad_bytes),
      static_cast<long long>(result.ours.optimizer_state_bytes),
      static_cast<long long>(result.theirs.optimizer_state_bytes));
  result.ratio_normalised = median_of(result.ours_normalised) / median_of(result.theirs_normalised);
  result.spread_normalised =
      std::max(relative_spread(result.ours_normalised), relative_spread(result.theirs_normalised));
  std::printf("  %s: ratio %.3f, spread between repeats %.3f; drift-normalised: ratio %.3f, spread %.3f\n",
              model.c_str(), result.ratio, result.spread, result.ratio_normalised, result.spread_normalised);
  return result;
}

}  // namespace dnncast::profile::test
