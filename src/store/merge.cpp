#include "store/merge.h"

#include <map>

#include "core/error.h"

namespace dnncast::store {

MergeSummary merge_datasets(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) throw InputError("merge: no input databases");
  MergeSummary summary;
  Store target = Store::open(output, Database::Mode::Create);
  for (const std::string& path : inputs) {
    Store source = Store::open(path, Database::Mode::ReadOnly);
    std::map<int64_t, records::NetworkRecord> networks;
    for (records::NetworkRecord& network : source.networks()) networks.emplace(network.id, std::move(network));
    Transaction transaction(target.db());
    std::map<int64_t, std::vector<records::LayerTiming>> layers = source.layer_times();
    std::map<int64_t, int64_t> environment_ids;  // source id -> target id
    for (const records::EnvironmentRecord& environment : source.environments())
      environment_ids[environment.id] = target.ensure_environment(environment);
    for (records::RunRecord run : source.runs()) {
      ++summary.runs_read;
      run.environment_id = environment_ids.at(run.environment_id);
      auto timed = layers.find(run.id);
      if (timed != layers.end()) run.result.layers = std::move(timed->second);
      if (target.insert_run(networks.at(run.network_id), run))
        ++summary.inserted;
      else
        ++summary.duplicates;
    }
    for (records::LayerBenchRecord record : source.layer_benchmarks()) {
      ++summary.layer_benchmarks_read;
      record.environment_id = environment_ids.at(record.environment_id);
      if (target.insert_layer_bench(record)) ++summary.layer_benchmarks_inserted;
    }
    transaction.commit();
  }
  return summary;
}

}  // namespace dnncast::store
