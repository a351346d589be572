#include "cli/print_profile.h"

#ifdef DNNCAST_HAVE_TORCH

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dnncast::cli {

double spread(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  double median =
      sorted.size() % 2 ? sorted[sorted.size() / 2] : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  return median > 0 ? (sorted.back() - sorted.front()) / median : 0;
}

void print_summary(const std::string& model, const Graph& graph, const profile::TrainConfig& config,
                   const profile::Measurement& m, const std::vector<profile::Measurement>& repeats) {
  std::printf("%s  input %s  optimizer %s  precision %s  threads %lld  device %s\n", model.c_str(),
              graph.node(graph.inputs().front()).shape.to_string().c_str(), name(config.optimizer).c_str(),
              name(config.precision).c_str(), static_cast<long long>(m.env.threads), name(config.device).c_str());
  std::printf("status       %s%s%s\n", m.status.c_str(), m.message.empty() ? "" : ": ", m.message.c_str());
  if (m.status != "ok") return;
  std::string ci = std::isfinite(m.time_ms.rel_ci) ? "CI +-" + std::to_string(100 * m.time_ms.rel_ci).substr(0, 4) + "%"
                                                   : "too few for a CI";
  std::printf("time/iter    median %.2f ms  (p10 %.2f, p90 %.2f, mean %.2f; %lld iterations, %s)\n", m.time_ms.median,
              m.time_ms.p10, m.time_ms.p90, m.time_ms.mean, static_cast<long long>(m.time_ms.n), ci.c_str());
  std::printf("normalised   %.2f ms  (probe %.1f / %.1f ms, reference %.1f ms)\n", m.time_ms_normalised,
              m.probe_before_ms, m.probe_after_ms, profile::reference_probe_ms());
  std::printf("peak memory  %.1f MiB above a baseline of %.1f MiB (tensors)\n", m.peak_bytes / 1048576.0,
              m.baseline_bytes / 1048576.0);
  std::printf("parameters   %lld  (params %lld B, grads %lld B, optimizer state %lld B)\n",
              static_cast<long long>(m.params), static_cast<long long>(m.param_bytes),
              static_cast<long long>(m.grad_bytes), static_cast<long long>(m.optimizer_state_bytes));
  if (m.energy_j)
    std::printf("energy       %.3f J/iteration (%s)\n", *m.energy_j, m.energy_note.c_str());
  else
    std::printf("energy       n/a (%s)\n", m.energy_note.c_str());
  std::printf(
      "other load   %.2f CPUs busy with other processes while timing; %.0f%% of its own runnable time waiting "
      "for a CPU another task held\n",
      m.load_other_cpus, 100 * m.cpu_wait_share);
  if (repeats.size() > 1) {
    std::printf("repeats     ");
    std::vector<double> medians;
    for (const profile::Measurement& r : repeats) {
      if (r.status == "ok") medians.push_back(r.time_ms.median);
      std::printf(
          " %s", r.status == "ok" ? (std::to_string(r.time_ms.median).substr(0, 7) + " ms").c_str() : r.status.c_str());
    }
    std::printf("  (spread %.1f%%)\n", 100 * spread(medians));
  }
  if (!m.layers.empty()) {
    std::printf("\n%-36s %-22s %12s %12s %14s %14s\n", "node", "op", "forward ms", "backward ms", "in-iter fwd",
                "in-iter bwd");
    double in_iteration = 0;
    for (const profile::LayerTime& layer : m.layers) {
      std::printf("%-36s %-22s %12.3f %12.3f %14.3f %14.3f\n", layer.node.c_str(), layer.op.c_str(), layer.forward_ms,
                  layer.backward_ms, layer.iteration_forward_ms, layer.iteration_backward_ms);
      in_iteration += layer.iteration_forward_ms + layer.iteration_backward_ms;
    }
    std::printf(
        "iteration %.2f ms = layers %.2f + optimizer step %.2f + zero_grad %.2f + gap %.2f ms (loss, gradient\n"
        "accumulation, dispatch between layers)\n",
        m.time_ms.median, m.layer_sum_ms, m.optimizer_step_ms, m.zero_grad_ms, m.layer_gap_ms);
    std::printf("inside iterations: layers %.2f + loss %.2f + optimizer step %.2f + zero_grad %.2f = %.2f ms\n",
                in_iteration, m.iteration_loss_ms, m.iteration_step_ms, m.iteration_zero_grad_ms,
                in_iteration + m.iteration_loss_ms + m.iteration_step_ms + m.iteration_zero_grad_ms);
  }
}

}  // namespace dnncast::cli

#endif
