// The dataset: one SQLite file (WAL mode) of environments, networks and measured runs
// (the schema is printed in docs/DATASET.md). Each run is committed in its
// own transaction, so a process killed at any moment loses at most the run it was measuring.
// A run is identified by network hash + configuration + environment hash + repeat index; a second
// insert of the same identity is ignored (resume, merge).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "records/records.h"
#include "store/sqlite.h"

namespace dnncast::store {

// Version of the schema this build writes; older files are migrated on open, newer ones refused.
inline constexpr int kSchemaVersion = 5;

class Store {
 public:
  // Opens (or creates) a dataset; sets WAL mode; migrates an older schema; refuses a newer one
  // with InputError naming both versions. ReadOnly never creates nor writes the file: an older
  // schema is migrated in a copy in memory.
  static Store open(const std::string& path, Database::Mode mode = Database::Mode::Create);

  int schema_version();
  const std::string& path() const { return db_.path(); }

  // Returns the row id of this environment, inserting it when new (matched by hash).
  int64_t ensure_environment(const records::EnvironmentRecord& environment);
  // The row id of this environment (matched by hash): inserted when new unless `read_only`, where a
  // new one is 0 (a dry run against an existing dataset).
  int64_t environment_id(const records::EnvironmentRecord& environment, bool read_only);
  // Returns the row id of this network, inserting it when new (matched by hash).
  int64_t ensure_network(const records::NetworkRecord& network);
  // Inserts the network (if new) and the run in one transaction. False when a run with the same
  // identity already exists (nothing changes then).
  bool insert_run(const records::NetworkRecord& network, const records::RunRecord& run);

  // The identities of all runs stored for one environment (to skip them on resume).
  std::set<records::RunKey> run_keys(int64_t environment_id);
  bool has_run(int64_t environment_id, const std::string& network_hash, const records::RunConfig& config,
               int64_t repeat_index);

  std::vector<records::EnvironmentRecord> environments();
  std::vector<records::NetworkRecord> networks(bool with_graphs = true);
  std::optional<records::NetworkRecord> network_by_hash(const std::string& hash);
  std::vector<records::RunRecord> runs();  // ordered by id (without their layers)
  // Inserts a layer benchmark (in its own transaction unless one is open); false when its identity is stored already.
  bool insert_layer_bench(const records::LayerBenchRecord& record);
  // Keys of the layer benchmarks stored for an environment at a thread count (to skip them on resume).
  std::set<std::string> layer_bench_keys(int64_t environment_id, int64_t threads);
  std::vector<records::LayerBenchRecord> layer_benchmarks(bool with_graphs = true);  // ordered by id
  // The layer timings of every run that has them, by run id, each in position order.
  std::map<int64_t, std::vector<records::LayerTiming>> layer_times();
  int64_t run_count();

  // "ok" or SQLite's list of problems.
  std::string integrity_check();
  Database& db() { return db_; }

 private:
  explicit Store(Database db) : db_(std::move(db)) {}
  // check_only: refuse what is not a dataset or too new, change nothing.
  void migrate(bool read_only, bool check_only = false);
  // Refuses a dataset with a network whose graph_json is not JSON (InputError naming it).
  void check_graphs();
  Database db_;
};

}  // namespace dnncast::store
