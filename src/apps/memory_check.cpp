#include "apps/memory_check.h"

#include <algorithm>
#include <cmath>

#include "apps/predictor.h"
#include "graph/error.h"

namespace dnncast::apps {

double MemoryCheckRow::relative_error() const {
  return measured_bytes > 0
             ? static_cast<double>(simulated_bytes - measured_bytes) / static_cast<double>(measured_bytes)
             : 0.0;
}

MemoryCheck check_memory_simulator(const std::string& db_path, hardware::CpuIsa isa) {
  TableOptions options;
  options.simulate_memory = true;
  options.isa = isa;
  TrainingTable table = load_training_table(db_path, options);
  MemoryCheck check;
  check.dataset = db_path;
  for (const Sample& sample : table.samples) {
    if (sample.peak_bytes.empty()) continue;
    if (!(sample.simulated_peak_bytes > 0)) {
      ++check.not_modelled;
      continue;
    }
    MemoryCheckRow row;
    row.network = sample.network_name;
    row.family = sample.family;
    row.environment_hash = sample.environment_hash;
    row.config = sample.config;
    row.measured_bytes = std::llround(sample.peak());
    row.simulated_bytes = std::llround(sample.simulated_peak_bytes);
    ++check.configurations;
    if (row.simulated_bytes == row.measured_bytes) ++check.exact;
    if (std::abs(row.relative_error()) <= 0.01) ++check.within_1pct;
    check.rows.push_back(std::move(row));
  }
  if (check.configurations == 0 && check.not_modelled == 0)
    throw InputError("dataset " + db_path + " has no successful run with a measured peak");
  std::stable_sort(check.rows.begin(), check.rows.end(), [](const MemoryCheckRow& a, const MemoryCheckRow& b) {
    return std::abs(a.relative_error()) > std::abs(b.relative_error());
  });
  return check;
}

}  // namespace dnncast::apps
