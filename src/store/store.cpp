#include "store/store.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "core/error.h"

namespace dnncast::store {

namespace {

// 'DNNC': marks the file as a dnncast dataset (PRAGMA application_id).
constexpr int64_t kApplicationId = 0x444e4e43;

// kMigrations[v] takes a database from schema version v to v + 1. Append, never edit.
const std::vector<std::string>& migrations() {
  static const std::vector<std::string> steps{
      // 0 -> 1: the first schema.
      R"sql(
CREATE TABLE environments (
  id            INTEGER PRIMARY KEY,
  hash          TEXT NOT NULL UNIQUE,
  cpu_model     TEXT NOT NULL,
  cores         INTEGER NOT NULL,
  threads       INTEGER NOT NULL,
  memory_bytes  INTEGER NOT NULL,
  gpu_name      TEXT NOT NULL,
  gpu_driver    TEXT NOT NULL,
  torch_version TEXT NOT NULL,
  build_type    TEXT NOT NULL,
  host          TEXT NOT NULL
);
CREATE TABLE networks (
  id          INTEGER PRIMARY KEY,
  hash        TEXT NOT NULL UNIQUE,
  name        TEXT NOT NULL,
  family      TEXT NOT NULL,
  source      TEXT NOT NULL,
  graph_json  TEXT NOT NULL
);
CREATE TABLE runs (
  id                 INTEGER PRIMARY KEY,
  network_id         INTEGER NOT NULL REFERENCES networks(id),
  environment_id     INTEGER NOT NULL REFERENCES environments(id),
  batch              INTEGER NOT NULL CHECK (batch > 0),
  input              TEXT NOT NULL,
  seq_len            INTEGER NOT NULL,
  optimizer          TEXT NOT NULL,
  precision          TEXT NOT NULL,
  threads            INTEGER NOT NULL CHECK (threads > 0),
  device             TEXT NOT NULL,
  repeat_index       INTEGER NOT NULL CHECK (repeat_index >= 0),
  status             TEXT NOT NULL CHECK (status IN ('ok', 'oom', 'error', 'timeout')),
  message            TEXT NOT NULL,
  time_ms_median     REAL,
  time_ms_p10        REAL,
  time_ms_p90        REAL,
  time_ms_mean       REAL,
  iterations         INTEGER NOT NULL,
  time_rel_ci        REAL,
  warmup_iterations  INTEGER NOT NULL,
  time_ms_normalised REAL,
  probe_ms_before    REAL,
  probe_ms_after     REAL,
  peak_bytes         INTEGER,
  baseline_bytes     INTEGER,
  energy_j           REAL,
  load_other_cpus   REAL,
  wall_s             REAL,
  cpus               TEXT NOT NULL,
  host               TEXT NOT NULL,
  plan               TEXT NOT NULL,
  measured_at        TEXT NOT NULL,
  UNIQUE (network_id, environment_id, batch, input, seq_len, optimizer, precision, threads, device, repeat_index)
);
CREATE INDEX runs_by_environment ON runs (environment_id);
)sql",
      // 1 -> 2: per-layer timings of runs measured with "per_layer" (RunResult::layers).
      R"sql(
CREATE TABLE layer_times (
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  position    INTEGER NOT NULL CHECK (position >= 0),
  node        TEXT NOT NULL,
  op          TEXT NOT NULL,
  forward_ms  REAL NOT NULL,
  backward_ms REAL NOT NULL,
  iteration_forward_ms  REAL,
  iteration_backward_ms REAL,
  PRIMARY KEY (run_id, position)
);
)sql",
      // 2 -> 3: the CPU fingerprint of environments (EnvironmentRecord); '' and 0 = not recorded.
      R"sql(
ALTER TABLE environments ADD COLUMN cpu_vendor       TEXT    NOT NULL DEFAULT '';
ALTER TABLE environments ADD COLUMN cpu_family       INTEGER NOT NULL DEFAULT 0;
ALTER TABLE environments ADD COLUMN cpu_model_number INTEGER NOT NULL DEFAULT 0;
ALTER TABLE environments ADD COLUMN cpu_stepping     INTEGER NOT NULL DEFAULT 0;
ALTER TABLE environments ADD COLUMN isa              TEXT    NOT NULL DEFAULT '';
ALTER TABLE environments ADD COLUMN aten_capability  TEXT    NOT NULL DEFAULT '';
ALTER TABLE environments ADD COLUMN isa_cap          TEXT    NOT NULL DEFAULT '';
ALTER TABLE environments ADD COLUMN l2_bytes         INTEGER NOT NULL DEFAULT 0;
ALTER TABLE environments ADD COLUMN l3_bytes         INTEGER NOT NULL DEFAULT 0;
ALTER TABLE environments ADD COLUMN base_mhz         REAL    NOT NULL DEFAULT 0;
)sql",
      // 3 -> 4: single-layer benchmarks (LayerBenchRecord, `dnncast bench-layers`).
      R"sql(
CREATE TABLE layer_benchmarks (
  id                 INTEGER PRIMARY KEY,
  environment_id     INTEGER NOT NULL REFERENCES environments(id),
  kind               TEXT NOT NULL,
  op                 TEXT NOT NULL,
  key                TEXT NOT NULL,
  origin             TEXT NOT NULL,
  graph_json         TEXT NOT NULL,
  batch              INTEGER NOT NULL CHECK (batch > 0),
  threads            INTEGER NOT NULL CHECK (threads > 0),
  flops_forward      REAL NOT NULL,
  status             TEXT NOT NULL CHECK (status IN ('ok', 'oom', 'error', 'timeout')),
  message            TEXT NOT NULL,
  forward_ms         REAL,
  backward_ms        REAL,
  backward_data_ms   REAL,
  backward_weight_ms REAL,
  cold_forward_ms    REAL,
  cold_backward_ms   REAL,
  reps               INTEGER NOT NULL,
  peak_bytes         INTEGER,
  wall_s             REAL,
  cpus               TEXT NOT NULL,
  host               TEXT NOT NULL,
  plan               TEXT NOT NULL,
  measured_at        TEXT NOT NULL,
  UNIQUE (environment_id, key, threads)
);
)sql",
      // 4 -> 5: of a run's runnable time while timing, the share its threads waited for a CPU another task held
      // (profile::Measurement::cpu_wait_share); NULL = not recorded (runs stored before it).
      R"sql(
ALTER TABLE runs ADD COLUMN cpu_wait_share REAL;
)sql",
  };
  return steps;
}

const char* kRunColumns =
    "r.id, r.network_id, r.environment_id, n.hash, e.hash, r.batch, r.input, r.seq_len, r.optimizer, r.precision, "
    "r.threads, r.device, r.repeat_index, r.status, r.message, r.time_ms_median, r.time_ms_p10, r.time_ms_p90, "
    "r.time_ms_mean, r.iterations, r.time_rel_ci, r.warmup_iterations, r.time_ms_normalised, r.probe_ms_before, "
    "r.probe_ms_after, r.peak_bytes, r.baseline_bytes, r.energy_j, r.load_other_cpus, r.wall_s, r.cpus, r.host, "
    "r.plan, r.measured_at, r.cpu_wait_share";

records::RunRecord read_run(const Statement& row) {
  records::RunRecord run;
  int col = 0;
  run.id = row.get_int(col++);
  run.network_id = row.get_int(col++);
  run.environment_id = row.get_int(col++);
  run.network_hash = row.get_text(col++);
  run.environment_hash = row.get_text(col++);
  run.config.batch = row.get_int(col++);
  run.config.input = records::parse_input_text(row.get_text(col++));
  run.config.seq_len = row.get_int(col++);
  run.config.optimizer = parse_optimizer(row.get_text(col++), "runs.optimizer");
  run.config.precision = parse_precision(row.get_text(col++), "runs.precision");
  run.config.threads = row.get_int(col++);
  run.config.device = parse_device(row.get_text(col++), "runs.device");
  run.repeat_index = row.get_int(col++);
  records::RunResult& result = run.result;
  result.status = row.get_text(col++);
  result.message = row.get_text(col++);
  result.time_ms_median = row.get_optional_double(col++);
  result.time_ms_p10 = row.get_optional_double(col++);
  result.time_ms_p90 = row.get_optional_double(col++);
  result.time_ms_mean = row.get_optional_double(col++);
  result.iterations = row.get_int(col++);
  result.time_rel_ci = row.get_optional_double(col++);
  result.warmup_iterations = row.get_int(col++);
  result.time_ms_normalised = row.get_optional_double(col++);
  result.probe_ms_before = row.get_optional_double(col++);
  result.probe_ms_after = row.get_optional_double(col++);
  result.peak_bytes = row.get_optional_int(col++);
  result.baseline_bytes = row.get_optional_int(col++);
  result.energy_j = row.get_optional_double(col++);
  result.load_other_cpus = row.get_optional_double(col++);
  result.wall_s = row.get_optional_double(col++);
  run.cpus = row.get_text(col++);
  run.host = row.get_text(col++);
  run.plan = row.get_text(col++);
  run.measured_at = row.get_text(col++);
  result.cpu_wait_share = row.get_optional_double(col++);
  return run;
}

}  // namespace

Store Store::open(const std::string& path, Database::Mode mode) {
  Store store(Database(path, mode));
  if (mode == Database::Mode::ReadOnly && store.schema_version() < kSchemaVersion && store.schema_version() > 0) {
    // A reader must not write the file: it reads a copy in memory, migrated there (a shipped
    // dataset of an older schema stays usable by every command that only reads it).
    store.migrate(true, /*check_only=*/true);
    Store copy(store.db_.copy_in_memory());
    copy.migrate(false);
    copy.check_graphs();
    return copy;
  }
  store.migrate(mode == Database::Mode::ReadOnly);
  store.check_graphs();
  return store;
}

void Store::check_graphs() {
  // SQLite's json_valid reads every row at C speed; a damaged row is never read as a graph nor
  // copied by merge into another dataset.
  Statement query = db_.prepare(
      "SELECT name, hash FROM networks WHERE graph_json <> '' AND NOT json_valid(graph_json) ORDER BY id LIMIT 1");
  if (query.step())
    throw InputError(db_.path() + ": network " + quote(query.get_text(0)) + " (hash " + quote(query.get_text(1)) +
                     ") has a graph_json that is not valid JSON: the dataset is damaged");
}

int Store::schema_version() {
  Statement query = db_.prepare("PRAGMA user_version");
  query.step();
  return static_cast<int>(query.get_int(0));
}

void Store::migrate(bool read_only, bool check_only) {
  int version = schema_version();  // the first read: fails here when the file is not SQLite at all
  if (version > kSchemaVersion)
    throw InputError(db_.path() + ": dataset schema version " + std::to_string(version) +
                     " is newer than this dnncast understands (" + std::to_string(kSchemaVersion) +
                     "); use a newer dnncast to read it");
  // Each query is finished before the journal mode changes (it cannot change inside a read).
  auto single_int = [this](const char* sql) {
    Statement query = db_.prepare(sql);
    query.step();
    return query.get_int(0);
  };
  int64_t application_id = single_int("PRAGMA application_id");
  if (version == 0) {
    if (single_int("SELECT count(*) FROM sqlite_master") != 0 ||
        (application_id != 0 && application_id != kApplicationId))
      throw InputError(db_.path() + ": an SQLite file that is not a dnncast dataset");
  } else if (application_id != kApplicationId) {
    throw InputError(db_.path() + ": an SQLite file that is not a dnncast dataset");
  }
  if (check_only) return;
  if (read_only) {
    if (version < kSchemaVersion)
      throw InputError(db_.path() + ": dataset schema version " + std::to_string(version) + " is older than " +
                       std::to_string(kSchemaVersion) + "; open it once for writing to migrate it");
    db_.exec("PRAGMA foreign_keys = ON");
    return;
  }
  // WAL: readers never block the writer, and a killed writer leaves the file consistent.
  db_.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON");
  if (version == kSchemaVersion) return;
  Transaction transaction(db_);
  // Re-read inside the write lock: another process may have migrated meanwhile.
  version = schema_version();
  for (int step = version; step < kSchemaVersion; ++step) db_.exec(migrations().at(static_cast<size_t>(step)));
  db_.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  db_.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
  transaction.commit();
}

int64_t Store::environment_id(const records::EnvironmentRecord& environment, bool read_only) {
  if (!read_only) return ensure_environment(environment);
  const std::string hash = environment.hash();
  for (const records::EnvironmentRecord& known : environments())
    if (known.hash() == hash) return known.id;
  return 0;
}

int64_t Store::ensure_environment(const records::EnvironmentRecord& environment) {
  std::string hash = environment.hash();
  Statement find = db_.prepare("SELECT id FROM environments WHERE hash = ?");
  find.bind(1, hash);
  if (find.step()) return find.get_int(0);
  Statement insert = db_.prepare(
      "INSERT INTO environments (hash, cpu_model, cores, threads, memory_bytes, gpu_name, gpu_driver, torch_version, "
      "build_type, host, cpu_vendor, cpu_family, cpu_model_number, cpu_stepping, isa, aten_capability, isa_cap, "
      "l2_bytes, l3_bytes, base_mhz) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (hash) DO NOTHING");
  insert.bind(1, hash)
      .bind(2, environment.cpu_model)
      .bind(3, environment.cores)
      .bind(4, environment.threads)
      .bind(5, environment.memory_bytes)
      .bind(6, environment.gpu_name)
      .bind(7, environment.gpu_driver)
      .bind(8, environment.torch_version)
      .bind(9, environment.build_type)
      .bind(10, environment.host)
      .bind(11, environment.cpu_vendor)
      .bind(12, environment.cpu_family)
      .bind(13, environment.cpu_model_number)
      .bind(14, environment.cpu_stepping)
      .bind(15, environment.isa)
      .bind(16, environment.aten_capability)
      .bind(17, environment.isa_cap)
      .bind(18, environment.l2_bytes)
      .bind(19, environment.l3_bytes)
      .bind(20, environment.base_mhz);
  insert.run();
  find.reset();
  find.bind(1, hash);
  DNNCAST_ASSERT(find.step());
  return find.get_int(0);
}

int64_t Store::ensure_network(const records::NetworkRecord& network) {
  if (network.hash.empty()) throw InputError("network " + quote(network.name) + " has no hash");
  Statement find = db_.prepare("SELECT id FROM networks WHERE hash = ?");
  find.bind(1, network.hash);
  if (find.step()) return find.get_int(0);
  Statement insert = db_.prepare(
      "INSERT INTO networks (hash, name, family, source, graph_json) VALUES (?, ?, ?, ?, ?) "
      "ON CONFLICT (hash) DO NOTHING");
  insert.bind(1, network.hash)
      .bind(2, network.name)
      .bind(3, network.family)
      .bind(4, network.source)
      .bind(5, network.graph_json);
  insert.run();
  find.reset();
  find.bind(1, network.hash);
  DNNCAST_ASSERT(find.step());
  return find.get_int(0);
}

bool Store::insert_run(const records::NetworkRecord& network, const records::RunRecord& run) {
  const records::RunResult& result = run.result;
  if (std::find(records::run_statuses().begin(), records::run_statuses().end(), result.status) ==
      records::run_statuses().end())
    throw InputError("run status " + quote(result.status) + " is not one of ok, oom, error, timeout");
  // One transaction per run; a caller that batches many (import, merge) holds an outer one.
  std::optional<Transaction> transaction;
  if (db_.in_autocommit()) transaction.emplace(db_);
  int64_t network_id = ensure_network(network);
  Statement insert = db_.prepare(
      "INSERT INTO runs (network_id, environment_id, batch, input, seq_len, optimizer, precision, threads, device, "
      "repeat_index, status, message, time_ms_median, time_ms_p10, time_ms_p90, time_ms_mean, iterations, "
      "time_rel_ci, warmup_iterations, time_ms_normalised, probe_ms_before, probe_ms_after, peak_bytes, "
      "baseline_bytes, energy_j, load_other_cpus, wall_s, cpus, host, plan, measured_at, cpu_wait_share) VALUES (?, ?, "
      "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT "
      "(network_id, "
      "environment_id, batch, input, seq_len, optimizer, precision, threads, "
      "device, repeat_index) DO NOTHING");
  int col = 1;
  insert.bind(col++, network_id);
  insert.bind(col++, run.environment_id);
  insert.bind(col++, run.config.batch);
  insert.bind(col++, run.config.input_text());
  insert.bind(col++, run.config.seq_len);
  insert.bind(col++, name(run.config.optimizer));
  insert.bind(col++, name(run.config.precision));
  insert.bind(col++, run.config.threads);
  insert.bind(col++, name(run.config.device));
  insert.bind(col++, run.repeat_index);
  insert.bind(col++, result.status);
  insert.bind(col++, result.message);
  insert.bind(col++, result.time_ms_median);
  insert.bind(col++, result.time_ms_p10);
  insert.bind(col++, result.time_ms_p90);
  insert.bind(col++, result.time_ms_mean);
  insert.bind(col++, result.iterations);
  insert.bind(col++, result.time_rel_ci);
  insert.bind(col++, result.warmup_iterations);
  insert.bind(col++, result.time_ms_normalised);
  insert.bind(col++, result.probe_ms_before);
  insert.bind(col++, result.probe_ms_after);
  insert.bind(col++, result.peak_bytes);
  insert.bind(col++, result.baseline_bytes);
  insert.bind(col++, result.energy_j);
  insert.bind(col++, result.load_other_cpus);
  insert.bind(col++, result.wall_s);
  insert.bind(col++, run.cpus);
  insert.bind(col++, run.host);
  insert.bind(col++, run.plan);
  insert.bind(col++, run.measured_at.empty() ? records::utc_now() : run.measured_at);
  insert.bind(col++, result.cpu_wait_share);
  DNNCAST_ASSERT(col == 33);
  insert.run();
  bool inserted = db_.changes() > 0;
  if (inserted && !result.layers.empty()) {
    int64_t run_id = db_.last_insert_rowid();
    Statement layer = db_.prepare(
        "INSERT INTO layer_times (run_id, position, node, op, forward_ms, backward_ms, iteration_forward_ms, "
        "iteration_backward_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (size_t position = 0; position < result.layers.size(); ++position) {
      const records::LayerTiming& timing = result.layers[position];
      layer.reset();
      layer.bind(1, run_id);
      layer.bind(2, static_cast<int64_t>(position));
      layer.bind(3, timing.node);
      layer.bind(4, timing.op);
      layer.bind(5, timing.forward_ms);
      layer.bind(6, timing.backward_ms);
      layer.bind(7, timing.iteration_forward_ms);
      layer.bind(8, timing.iteration_backward_ms);
      layer.run();
    }
  }
  if (transaction) transaction->commit();
  return inserted;
}

std::set<records::RunKey> Store::run_keys(int64_t environment_id) {
  std::set<records::RunKey> keys;
  Statement query = db_.prepare(
      "SELECT n.hash, r.batch, r.input, r.seq_len, r.optimizer, r.precision, r.threads, r.device, r.repeat_index "
      "FROM runs r JOIN networks n ON n.id = r.network_id WHERE r.environment_id = ?");
  query.bind(1, environment_id);
  while (query.step()) {
    records::RunConfig config;
    config.batch = query.get_int(1);
    config.input = records::parse_input_text(query.get_text(2));
    config.seq_len = query.get_int(3);
    config.optimizer = parse_optimizer(query.get_text(4), "runs.optimizer");
    config.precision = parse_precision(query.get_text(5), "runs.precision");
    config.threads = query.get_int(6);
    config.device = parse_device(query.get_text(7), "runs.device");
    keys.emplace(query.get_text(0), config, query.get_int(8));
  }
  return keys;
}

bool Store::has_run(int64_t environment_id, const std::string& network_hash, const records::RunConfig& config,
                    int64_t repeat_index) {
  Statement query = db_.prepare(
      "SELECT 1 FROM runs r JOIN networks n ON n.id = r.network_id WHERE r.environment_id = ? AND n.hash = ? AND "
      "r.batch = ? AND r.input = ? AND r.seq_len = ? AND r.optimizer = ? AND r.precision = ? AND r.threads = ? AND "
      "r.device = ? AND r.repeat_index = ?");
  query.bind(1, environment_id)
      .bind(2, network_hash)
      .bind(3, config.batch)
      .bind(4, config.input_text())
      .bind(5, config.seq_len)
      .bind(6, name(config.optimizer))
      .bind(7, name(config.precision))
      .bind(8, config.threads)
      .bind(9, name(config.device))
      .bind(10, repeat_index);
  return query.step();
}

std::vector<records::EnvironmentRecord> Store::environments() {
  std::vector<records::EnvironmentRecord> result;
  Statement query = db_.prepare(
      "SELECT id, cpu_model, cores, threads, memory_bytes, gpu_name, gpu_driver, torch_version, build_type, host, "
      "cpu_vendor, cpu_family, cpu_model_number, cpu_stepping, isa, aten_capability, isa_cap, l2_bytes, l3_bytes, "
      "base_mhz FROM environments ORDER BY id");
  while (query.step()) {
    records::EnvironmentRecord environment;
    environment.id = query.get_int(0);
    environment.cpu_model = query.get_text(1);
    environment.cores = query.get_int(2);
    environment.threads = query.get_int(3);
    environment.memory_bytes = query.get_int(4);
    environment.gpu_name = query.get_text(5);
    environment.gpu_driver = query.get_text(6);
    environment.torch_version = query.get_text(7);
    environment.build_type = query.get_text(8);
    environment.host = query.get_text(9);
    environment.cpu_vendor = query.get_text(10);
    environment.cpu_family = query.get_int(11);
    environment.cpu_model_number = query.get_int(12);
    environment.cpu_stepping = query.get_int(13);
    environment.isa = query.get_text(14);
    environment.aten_capability = query.get_text(15);
    environment.isa_cap = query.get_text(16);
    environment.l2_bytes = query.get_int(17);
    environment.l3_bytes = query.get_int(18);
    environment.base_mhz = query.get_double(19);
    result.push_back(environment);
  }
  return result;
}

std::vector<records::NetworkRecord> Store::networks(bool with_graphs) {
  std::vector<records::NetworkRecord> result;
  Statement query = db_.prepare(std::string("SELECT id, hash, name, family, source, ") +
                                (with_graphs ? "graph_json" : "''") + " FROM networks ORDER BY id");
  while (query.step()) {
    result.push_back({query.get_int(0), query.get_text(1), query.get_text(2), query.get_text(3), query.get_text(4),
                      query.get_text(5)});
  }
  return result;
}

std::optional<records::NetworkRecord> Store::network_by_hash(const std::string& hash) {
  Statement query = db_.prepare("SELECT id, hash, name, family, source, graph_json FROM networks WHERE hash = ?");
  query.bind(1, hash);
  if (!query.step()) return std::nullopt;
  return records::NetworkRecord{query.get_int(0),  query.get_text(1), query.get_text(2),
                                query.get_text(3), query.get_text(4), query.get_text(5)};
}

std::vector<records::RunRecord> Store::runs() {
  std::vector<records::RunRecord> result;
  Statement query = db_.prepare(std::string("SELECT ") + kRunColumns +
                                " FROM runs r JOIN networks n ON n.id = r.network_id JOIN environments e ON "
                                "e.id = r.environment_id ORDER BY r.id");
  while (query.step()) result.push_back(read_run(query));
  return result;
}

std::map<int64_t, std::vector<records::LayerTiming>> Store::layer_times() {
  std::map<int64_t, std::vector<records::LayerTiming>> result;
  Statement query = db_.prepare(
      "SELECT run_id, node, op, forward_ms, backward_ms, iteration_forward_ms, iteration_backward_ms FROM layer_times "
      "ORDER BY run_id, position");
  while (query.step())
    result[query.get_int(0)].push_back({query.get_text(1), query.get_text(2), query.get_double(3), query.get_double(4),
                                        query.get_optional_double(5), query.get_optional_double(6)});
  return result;
}

int64_t Store::run_count() {
  Statement query = db_.prepare("SELECT count(*) FROM runs");
  query.step();
  return query.get_int(0);
}

std::string Store::integrity_check() {
  Statement query = db_.prepare("PRAGMA integrity_check");
  std::string report;
  while (query.step()) report += (report.empty() ? "" : "; ") + query.get_text(0);
  return report;
}

}  // namespace dnncast::store

namespace dnncast::store {

bool Store::insert_layer_bench(const records::LayerBenchRecord& r) {
  DNNCAST_ASSERT(r.environment_id > 0);
  std::optional<Transaction> transaction;  // inside the caller's when there is one (merge)
  if (db_.in_autocommit()) transaction.emplace(db_);
  Statement insert = db_.prepare(
      "INSERT OR IGNORE INTO layer_benchmarks (environment_id, kind, op, key, origin, graph_json, batch, threads, "
      "flops_forward, status, message, forward_ms, backward_ms, backward_data_ms, backward_weight_ms, cold_forward_ms, "
      "cold_backward_ms, reps, peak_bytes, wall_s, cpus, host, plan, measured_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  int col = 1;
  insert.bind(col++, r.environment_id);
  insert.bind(col++, r.kind);
  insert.bind(col++, r.op);
  insert.bind(col++, r.key);
  insert.bind(col++, r.origin);
  insert.bind(col++, r.graph_json);
  insert.bind(col++, r.batch);
  insert.bind(col++, r.threads);
  insert.bind(col++, r.flops_forward);
  insert.bind(col++, r.status);
  insert.bind(col++, r.message);
  for (const std::optional<double>* value : {&r.forward_ms, &r.backward_ms, &r.backward_data_ms, &r.backward_weight_ms,
                                             &r.cold_forward_ms, &r.cold_backward_ms})
    insert.bind(col++, *value);
  insert.bind(col++, r.reps);
  insert.bind(col++, r.peak_bytes);
  insert.bind(col++, r.wall_s);
  insert.bind(col++, r.cpus);
  insert.bind(col++, r.host);
  insert.bind(col++, r.plan);
  insert.bind(col++, r.measured_at.empty() ? records::utc_now() : r.measured_at);
  DNNCAST_ASSERT(col == 25);
  insert.run();
  bool inserted = db_.changes() > 0;
  if (transaction) transaction->commit();
  return inserted;
}

std::set<std::string> Store::layer_bench_keys(int64_t environment_id, int64_t threads) {
  std::set<std::string> keys;
  Statement query = db_.prepare("SELECT key FROM layer_benchmarks WHERE environment_id = ? AND threads = ?");
  query.bind(1, environment_id);
  query.bind(2, threads);
  while (query.step()) keys.insert(query.get_text(0));
  return keys;
}

std::vector<records::LayerBenchRecord> Store::layer_benchmarks(bool with_graphs) {
  std::vector<records::LayerBenchRecord> records;
  Statement query = db_.prepare(std::string("SELECT id, environment_id, kind, op, key, origin, ") +
                                (with_graphs ? "graph_json" : "''") +
                                ", batch, threads, flops_forward, status, message, forward_ms, backward_ms, "
                                "backward_data_ms, backward_weight_ms, "
                                "cold_forward_ms, cold_backward_ms, reps, peak_bytes, wall_s, cpus, host, plan, "
                                "measured_at FROM layer_benchmarks "
                                "ORDER BY id");
  while (query.step()) {
    records::LayerBenchRecord r;
    int col = 0;
    r.id = query.get_int(col++);
    r.environment_id = query.get_int(col++);
    r.kind = query.get_text(col++);
    r.op = query.get_text(col++);
    r.key = query.get_text(col++);
    r.origin = query.get_text(col++);
    r.graph_json = query.get_text(col++);
    r.batch = query.get_int(col++);
    r.threads = query.get_int(col++);
    r.flops_forward = query.get_double(col++);
    r.status = query.get_text(col++);
    r.message = query.get_text(col++);
    for (std::optional<double>* value : {&r.forward_ms, &r.backward_ms, &r.backward_data_ms, &r.backward_weight_ms,
                                         &r.cold_forward_ms, &r.cold_backward_ms})
      *value = query.get_optional_double(col++);
    r.reps = query.get_int(col++);
    r.peak_bytes = query.get_optional_int(col++);
    r.wall_s = query.get_optional_double(col++);
    r.cpus = query.get_text(col++);
    r.host = query.get_text(col++);
    r.plan = query.get_text(col++);
    r.measured_at = query.get_text(col++);
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace dnncast::store
