#include "study/memory_check.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "features/featurizer.h"
#include "study/training.h"

namespace dnncast::study {

double MemoryCheckRow::relative_error() const {
  return measured_bytes > 0
             ? static_cast<double>(simulated_bytes - measured_bytes) / static_cast<double>(measured_bytes)
             : 0.0;
}

namespace {

TrainingTable simulated_table(const std::string& db_path, hardware::CpuIsa isa) {
  TableOptions options;
  options.simulate_memory = true;
  options.isa = isa;
  options.holdout = HoldoutRuns::Include;  // nothing is trained here: the simulator is checked on every run
  return load_training_table(db_path, options);
}

bool exact(const Sample& sample) {
  return !sample.peak_bytes.empty() && sample.simulated_peak_bytes > 0 &&
         std::llround(sample.simulated_peak_bytes) == std::llround(sample.peak());
}

}  // namespace

MemoryCheck check_memory_simulator(const std::string& db_path, hardware::CpuIsa isa) {
  TrainingTable table = simulated_table(db_path, isa);
  MemoryCheck check;
  check.dataset = db_path;
  std::map<std::string, size_t> environment_index;
  for (const auto& [hash, environment] : table.environments) {
    CheckedEnvironment checked;
    checked.hash = hash;
    checked.recorded_isa = environment.isa;
    checked.simulated = isa != hardware::CpuIsa::Unknown ? isa
                        : environment.isa.empty()        ? features::kUnrecordedIsa
                                                         : hardware::parse_isa(environment.isa);
    checked.inferred = isa == hardware::CpuIsa::Unknown && environment.isa.empty();
    environment_index[hash] = check.environments.size();
    check.environments.push_back(checked);
  }
  if (std::any_of(check.environments.begin(), check.environments.end(),
                  [](const CheckedEnvironment& e) { return e.inferred; })) {
    // The same configurations under the AVX2 rules (the same order: the table is deterministic).
    TrainingTable avx2 = simulated_table(db_path, hardware::CpuIsa::Avx2);
    DNNCAST_ASSERT(avx2.samples.size() == table.samples.size());
    for (size_t k = 0; k < table.samples.size(); ++k) {
      CheckedEnvironment& environment = check.environments[environment_index.at(table.samples[k].environment_hash)];
      if (!environment.inferred) continue;
      environment.exact_avx512 += exact(table.samples[k]) ? 1 : 0;
      environment.exact_avx2 += exact(avx2.samples[k]) ? 1 : 0;
    }
    for (size_t k = 0; k < table.samples.size(); ++k) {
      const CheckedEnvironment& environment =
          check.environments[environment_index.at(table.samples[k].environment_hash)];
      if (environment.inferred && environment.exact_avx2 > environment.exact_avx512)
        table.samples[k].simulated_peak_bytes = avx2.samples[k].simulated_peak_bytes;
    }
    for (CheckedEnvironment& environment : check.environments)
      if (environment.inferred && environment.exact_avx2 > environment.exact_avx512)
        environment.simulated = hardware::CpuIsa::Avx2;
  }
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

}  // namespace dnncast::study
