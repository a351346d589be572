#include "store/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "import/graph_json.h"
#include "records/network_source.h"
#include "store/merge.h"
#include "store/test_util.h"

namespace dnncast::store {
namespace {

using testing::ScratchDir;
using testing::test_environment;

records::ModelRef zoo_model(const std::string& name) {
  records::ModelRef model;
  model.name = name;
  return model;
}

records::NetworkRecord resnet18_at_32() {
  records::RunConfig config;
  config.input = {3, 32, 32};
  return records::network_record(zoo_model("resnet18"), config);
}

records::RunRecord sample_run(int64_t environment_id, int64_t batch, int64_t repeat) {
  records::RunRecord run;
  run.environment_id = environment_id;
  run.config.batch = batch;
  run.config.input = {3, 32, 32};
  run.config.optimizer = Optimizer::Adam;
  run.config.threads = 2;
  run.repeat_index = repeat;
  run.result.status = "ok";
  run.result.message = "note, with \"quotes\"\nand a newline";
  run.result.time_ms_median = 12.5 + static_cast<double>(batch) / 3;  // not exactly representable in decimal
  run.result.time_ms_p10 = 11.0;
  run.result.time_ms_p90 = 14.25;
  run.result.time_ms_mean = 12.75;
  run.result.iterations = 17;
  run.result.peak_bytes = int64_t{123456789} * batch;
  run.result.load_other_cpus = 0.03;
  run.result.cpu_wait_share = 0.0123;
  run.cpus = "0-1";
  run.host = "node01";
  run.plan = "unit";
  run.measured_at = "2024-05-01T12:00:00Z";
  return run;
}

TEST(Store, RoundTripsEveryField) {
  ScratchDir dir;
  std::string path = dir.file("a.db");
  records::NetworkRecord network = resnet18_at_32();
  std::vector<records::RunRecord> written;
  {
    Store store = Store::open(path);
    EXPECT_EQ(store.schema_version(), kSchemaVersion);
    int64_t environment_id = store.ensure_environment(test_environment());
    EXPECT_EQ(store.ensure_environment(test_environment()), environment_id);  // matched by hash
    for (int64_t batch : {1, 4}) {
      records::RunRecord run = sample_run(environment_id, batch, 0);
      EXPECT_TRUE(store.insert_run(network, run));
      written.push_back(run);
    }
    records::RunRecord failed = sample_run(environment_id, 64, 0);
    failed.result = records::RunResult{};
    failed.result.status = "oom";
    failed.result.message = "out of memory at 3 GiB";
    EXPECT_TRUE(store.insert_run(network, failed));
    written.push_back(failed);
    EXPECT_FALSE(store.insert_run(network, written[0]));  // same identity: ignored
    EXPECT_EQ(store.run_count(), 3);
  }
  Store store = Store::open(path, Database::Mode::ReadOnly);
  std::vector<records::RunRecord> read = store.runs();
  ASSERT_EQ(read.size(), written.size());
  for (size_t index = 0; index < read.size(); ++index) {
    const records::RunRecord& a = written[index];
    const records::RunRecord& b = read[index];
    EXPECT_EQ(b.network_hash, network.hash);
    EXPECT_EQ(b.environment_hash, test_environment().hash());
    EXPECT_EQ(b.config, a.config);
    EXPECT_EQ(b.config.input, (std::vector<int64_t>{3, 32, 32}));
    EXPECT_EQ(b.repeat_index, a.repeat_index);
    EXPECT_EQ(b.result.status, a.result.status);
    EXPECT_EQ(b.result.message, a.result.message);
    EXPECT_EQ(b.result.time_ms_median, a.result.time_ms_median);  // bit-exact through REAL
    EXPECT_EQ(b.result.time_ms_p10, a.result.time_ms_p10);
    EXPECT_EQ(b.result.time_ms_p90, a.result.time_ms_p90);
    EXPECT_EQ(b.result.iterations, a.result.iterations);
    EXPECT_EQ(b.result.peak_bytes, a.result.peak_bytes);
    EXPECT_EQ(b.result.energy_j.has_value(), false);
    EXPECT_EQ(b.result.load_other_cpus, a.result.load_other_cpus);
    EXPECT_EQ(b.result.cpu_wait_share, a.result.cpu_wait_share);
    EXPECT_EQ(b.cpus, a.cpus);
    EXPECT_EQ(b.plan, a.plan);
    EXPECT_EQ(b.measured_at, a.measured_at);
  }
  // The stored graph is the network itself: it reads back with the same architecture hash.
  std::optional<records::NetworkRecord> stored = store.network_by_hash(network.hash);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->source, "zoo:resnet18");
  EXPECT_EQ(stored->family, "resnet");
  EXPECT_EQ(import::read_graph_json(stored->graph_json, "stored").architecture_hash(), network.hash);
  EXPECT_EQ(store.environments().at(0).cpu_model, "Test CPU 9000");
  EXPECT_EQ(store.integrity_check(), "ok");
}

TEST(Store, UsesWalJournal) {
  ScratchDir dir;
  Store store = Store::open(dir.file("w.db"));
  Statement mode = store.db().prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.step());
  EXPECT_EQ(mode.get_text(0), "wal");
}

TEST(Store, RefusesNewerSchema) {
  ScratchDir dir;
  std::string path = dir.file("future.db");
  { Store::open(path); }
  {
    Database raw(path, Database::Mode::ReadWrite);
    raw.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  }
  for (Database::Mode mode : {Database::Mode::ReadOnly, Database::Mode::Create}) {
    try {
      Store::open(path, mode);
      FAIL() << "a newer schema was accepted";
    } catch (const InputError& error) {
      std::string text = error.what();
      EXPECT_NE(text.find("schema version " + std::to_string(kSchemaVersion + 1)), std::string::npos) << text;
      EXPECT_NE(text.find("newer"), std::string::npos) << text;
    }
  }
}

TEST(Store, RefusesForeignFiles) {
  ScratchDir dir;
  std::string path = dir.file("other.db");
  {
    Database raw(path, Database::Mode::Create);
    raw.exec("CREATE TABLE t (x INTEGER)");
  }
  EXPECT_THROW(Store::open(path), InputError);
  std::string text_file = dir.file("notes.db");
  FILE* file = std::fopen(text_file.c_str(), "w");
  std::fputs("this is not a database, just some text long enough to fill a header......................", file);
  std::fclose(file);
  EXPECT_THROW(Store::open(text_file), InputError);
  EXPECT_THROW(Store::open(dir.file("missing.db"), Database::Mode::ReadOnly), InputError);
}

TEST(Store, MigratesFromEmptyAndKeepsVersionOnReopen) {
  ScratchDir dir;
  std::string path = dir.file("m.db");
  { Store::open(path); }
  Database raw(path, Database::Mode::ReadOnly);
  Statement version = raw.prepare("PRAGMA user_version");
  ASSERT_TRUE(version.step());
  EXPECT_EQ(version.get_int(0), kSchemaVersion);
  Statement tables =
      raw.prepare("SELECT group_concat(name) FROM (SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name)");
  ASSERT_TRUE(tables.step());
  EXPECT_EQ(tables.get_text(0), "environments,layer_benchmarks,layer_times,networks,runs");
}

// Layer timings travel with their run: written in its transaction, read back by run id in order;
// a duplicate run adds none; merge copies them.
TEST(Store, LayerTimesRoundTripAndMerge) {
  ScratchDir dir;
  records::NetworkRecord network = resnet18_at_32();
  records::RunRecord timed = sample_run(0, 8, 0);
  timed.result.layers = {{"conv1", "Conv2d", 1.25, 2.5, 1.5, 3.0},
                         {"fc", "Linear", 0.125, 0.25, std::nullopt, 0.5},
                         {"optimizer.step", records::kOptimizerStepOp, 0.5, 0, std::nullopt, std::nullopt},
                         {"optimizer.zero_grad", records::kZeroGradOp, 0.0625, 0, std::nullopt, std::nullopt}};
  {
    Store store = Store::open(dir.file("a.db"));
    int64_t environment_id = store.ensure_environment(test_environment());
    timed.environment_id = environment_id;
    records::RunRecord plain = sample_run(environment_id, 1, 0);
    EXPECT_TRUE(store.insert_run(network, plain));
    EXPECT_TRUE(store.insert_run(network, timed));
    records::RunRecord again = timed;
    again.result.layers.push_back({"extra", "ReLU", 9, 9, std::nullopt, std::nullopt});
    EXPECT_FALSE(store.insert_run(network, again));
  }
  merge_datasets({dir.file("a.db")}, dir.file("merged.db"));
  for (const char* file : {"a.db", "merged.db"}) {
    Store store = Store::open(dir.file(file), Database::Mode::ReadOnly);
    std::map<int64_t, std::vector<records::LayerTiming>> layers = store.layer_times();
    ASSERT_EQ(layers.size(), 1u) << file;
    int64_t run_id = layers.begin()->first;
    std::vector<records::RunRecord> runs = store.runs();
    auto run = std::find_if(runs.begin(), runs.end(), [&](const records::RunRecord& r) { return r.id == run_id; });
    ASSERT_NE(run, runs.end());
    EXPECT_EQ(run->config.batch, 8) << file;
    const std::vector<records::LayerTiming>& read = layers.begin()->second;
    ASSERT_EQ(read.size(), timed.result.layers.size()) << file;
    for (size_t index = 0; index < read.size(); ++index) {
      EXPECT_EQ(read[index].node, timed.result.layers[index].node);
      EXPECT_EQ(read[index].op, timed.result.layers[index].op);
      EXPECT_EQ(read[index].forward_ms, timed.result.layers[index].forward_ms);
      EXPECT_EQ(read[index].backward_ms, timed.result.layers[index].backward_ms);
      EXPECT_EQ(read[index].iteration_forward_ms, timed.result.layers[index].iteration_forward_ms);  // NULL stays unset
      EXPECT_EQ(read[index].iteration_backward_ms, timed.result.layers[index].iteration_backward_ms);
    }
  }
}

// A file holding one run (batch 2) as schema VERSION had it: the tables and columns added after it dropped.
std::string file_of_schema(ScratchDir& dir, const std::string& name, int version) {
  const std::string path = dir.file(name);
  Store store = Store::open(path);
  store.insert_run(resnet18_at_32(), sample_run(store.ensure_environment(test_environment()), 2, 0));
  if (version < 5) testing::drop_wait_share_column(store.db());
  if (version < 4) store.db().exec("DROP TABLE layer_benchmarks");
  if (version < 3) testing::drop_fingerprint_columns(store.db());
  if (version < 2) store.db().exec("DROP TABLE layer_times");
  store.db().exec("PRAGMA user_version = " + std::to_string(version));
  return path;
}

// A file of schema 1 (before layer_times) is migrated on open for writing, its runs kept.
TEST(Store, MigratesSchemaOneToTwo) {
  ScratchDir dir;
  const std::string path = file_of_schema(dir, "v1.db", 1);
  {
    Store reader = Store::open(path, Database::Mode::ReadOnly);  // migrates a copy in memory only
    EXPECT_EQ(reader.schema_version(), kSchemaVersion);
    EXPECT_EQ(reader.run_count(), 1);
  }
  EXPECT_EQ(Store::open(path, Database::Mode::ReadWrite).schema_version(), kSchemaVersion);  // now the file
  Store store = Store::open(path);
  EXPECT_EQ(store.schema_version(), kSchemaVersion);
  EXPECT_EQ(store.run_count(), 1);
  EXPECT_TRUE(store.layer_times().empty());
}

// A file of schema 4 (before runs.cpu_wait_share): read through an in-memory copy, migrated on open for writing, its
// runs kept with the share not recorded; a run stored after keeps its own.
TEST(Store, MigratesSchemaFourToFiveAsNotRecorded) {
  ScratchDir dir;
  const std::string path = file_of_schema(dir, "v4.db", 4);
  {
    Store reader = Store::open(path, Database::Mode::ReadOnly);
    ASSERT_EQ(reader.runs().size(), 1u);
    EXPECT_FALSE(reader.runs()[0].result.cpu_wait_share.has_value());
    EXPECT_EQ(reader.runs()[0].result.load_other_cpus, 0.03);
  }
  Store store = Store::open(path);
  EXPECT_EQ(store.schema_version(), kSchemaVersion);
  store.insert_run(resnet18_at_32(), sample_run(store.ensure_environment(test_environment()), 4, 0));
  std::vector<records::RunRecord> runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].result.cpu_wait_share.has_value());
  EXPECT_EQ(runs[1].result.cpu_wait_share, 0.0123);
}

// Layer benchmarks (schema 4): every field back, one row per environment + key + threads, keys for resume.
TEST(Store, LayerBenchmarksRoundTripAndResume) {
  ScratchDir dir;
  Store store = Store::open(dir.file("lb.db"));
  records::LayerBenchRecord record;
  record.environment_id = store.ensure_environment(test_environment());
  record.kind = "conv";
  record.op = "Conv2d";
  record.key = "0123456789abcdef:8x64x56x56";
  record.origin = "zoo:resnet18";
  record.graph_json = "{}";
  record.batch = 8;
  record.threads = 1;
  record.flops_forward = 1.5e9;
  record.forward_ms = 1.0 / 3;
  record.backward_ms = 2.5;
  record.backward_weight_ms = 1.25;  // backward_data_ms left NULL
  record.cold_forward_ms = 0.5;
  record.cold_backward_ms = 3;
  record.reps = 7;
  record.peak_bytes = 12345;
  record.wall_s = 0.2;
  record.cpus = "1 of 1";
  record.host = "node01";
  record.plan = "unit";
  record.measured_at = "2026-12-02T00:00:00Z";
  EXPECT_TRUE(store.insert_layer_bench(record));
  EXPECT_FALSE(store.insert_layer_bench(record));  // the same identity again: ignored
  record.threads = 2;
  EXPECT_TRUE(store.insert_layer_bench(record));
  std::vector<records::LayerBenchRecord> rows = store.layer_benchmarks();
  ASSERT_EQ(rows.size(), 2u);
  const records::LayerBenchRecord& back = rows[0];
  EXPECT_EQ(back.kind, "conv");
  EXPECT_EQ(back.key, record.key);
  EXPECT_EQ(back.origin, "zoo:resnet18");
  EXPECT_EQ(back.batch, 8);
  EXPECT_EQ(back.threads, 1);
  EXPECT_DOUBLE_EQ(*back.forward_ms, 1.0 / 3);
  EXPECT_FALSE(back.backward_data_ms.has_value());
  EXPECT_DOUBLE_EQ(*back.backward_weight_ms, 1.25);
  EXPECT_EQ(*back.peak_bytes, 12345);
  EXPECT_EQ(back.measured_at, "2026-12-02T00:00:00Z");
  EXPECT_EQ(store.layer_bench_keys(record.environment_id, 1), (std::set<std::string>{record.key}));
  EXPECT_TRUE(store.layer_bench_keys(record.environment_id, 4).empty());
  // merge copies them with their environment; a second merge adds none.
  MergeSummary merged = merge_datasets({dir.file("lb.db"), dir.file("lb.db")}, dir.file("merged.db"));
  EXPECT_EQ(merged.layer_benchmarks_read, 4);
  EXPECT_EQ(merged.layer_benchmarks_inserted, 2);
  std::vector<records::LayerBenchRecord> copied = Store::open(dir.file("merged.db")).layer_benchmarks();
  ASSERT_EQ(copied.size(), 2u);
  EXPECT_EQ(copied[1].key, record.key);
  EXPECT_EQ(copied[1].threads, 2);
  EXPECT_DOUBLE_EQ(*copied[1].cold_backward_ms, 3);
}

TEST(Store, RejectsUnknownStatusAndBadConfigs) {
  ScratchDir dir;
  Store store = Store::open(dir.file("s.db"));
  int64_t environment_id = store.ensure_environment(test_environment());
  records::RunConfig config;
  config.input = {3, 32, 32};
  records::NetworkRecord network = records::network_record(zoo_model("resnet18"), config);
  records::RunRecord run = sample_run(environment_id, 1, 0);
  run.result.status = "crashed";
  EXPECT_THROW(store.insert_run(network, run), InputError);
  run.result.status = "ok";
  run.config.batch = 0;  // CHECK (batch > 0) in the schema
  EXPECT_THROW(store.insert_run(network, run), InputError);
  EXPECT_EQ(store.run_count(), 0);
  // A failed insert left no half-written network behind (the run's transaction rolled back).
  EXPECT_TRUE(store.networks().empty());
}

TEST(Store, EnvironmentHashIgnoresHostAndMemoryNoise) {
  records::EnvironmentRecord a = test_environment(), b = test_environment();
  b.host = "node02";
  b.memory_bytes -= 3 << 20;  // a few MiB reserved differently
  EXPECT_EQ(a.hash(), b.hash());
  b.cores = 4;
  EXPECT_NE(a.hash(), b.hash());
}

TEST(Store, InputText) {
  records::RunConfig config;
  config.input = {3, 64, 48};
  EXPECT_EQ(config.input_text(), "3x64x48");
  EXPECT_EQ(records::parse_input_text("3x64x48"), config.input);
  EXPECT_TRUE(records::parse_input_text("").empty());
  for (const char* bad : {"3x", "x3", "3xx4", "3x-4", "3x4.5", "abc"})
    EXPECT_THROW(records::parse_input_text(bad), InputError) << bad;
}

}  // namespace
}  // namespace dnncast::store
