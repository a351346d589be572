#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "graph/builder.h"
#include "import/graph_json.h"
#include "records/network_source.h"
#include "store/dataset_csv.h"
#include "store/dataset_stats.h"
#include "store/merge.h"
#include "store/store.h"
#include "store/test_util.h"

namespace dnncast::store {
namespace {

using testing::ScratchDir;
using testing::test_environment;

records::RunConfig image_config(int64_t batch, int64_t side, const std::string& optimizer = "sgd") {
  records::RunConfig config;
  config.batch = batch;
  config.input = {3, side, side};
  config.optimizer = parse_optimizer(optimizer);
  return config;
}

records::ModelRef synthetic(int64_t seed) {
  records::ModelRef model;
  model.kind = records::ModelRef::Kind::Synthetic;
  model.seed = seed;
  return model;
}

records::RunRecord make_run(int64_t environment_id, const records::RunConfig& config, int64_t repeat, double time_ms) {
  records::RunRecord run;
  run.environment_id = environment_id;
  run.config = config;
  run.repeat_index = repeat;
  run.result.time_ms_median = time_ms;
  run.result.time_ms_p10 = time_ms * 0.9;
  run.result.time_ms_p90 = time_ms * 1.1;
  run.result.time_ms_mean = time_ms * 1.01;
  run.result.iterations = 9;
  run.result.peak_bytes = 1000 * config.batch;
  run.result.message = "a, \"quoted\"\nmessage";
  run.cpus = "0";
  run.plan = "test";
  run.host = "h";
  run.measured_at = "2024-01-02T03:04:05Z";
  return run;
}

// Key of a run as the dataset identifies it, plus its measured values, for comparing files.
std::multiset<std::string> run_texts(Store& store) {
  std::multiset<std::string> texts;
  for (const records::RunRecord& run : store.runs()) {
    std::ostringstream text;
    text << run.network_hash << '|' << run.environment_hash << '|' << run.config.batch << '|' << run.config.input_text()
         << '|' << name(run.config.optimizer) << '|' << run.repeat_index << '|' << run.result.status << '|'
         << run.result.message << '|' << *run.result.time_ms_median << '|' << run.result.peak_bytes.value_or(-1) << '|'
         << run.result.energy_j.has_value() << '|' << run.plan << '|' << run.measured_at;
    texts.insert(text.str());
  }
  return texts;
}

// A dataset with runs of two synthetic networks in one environment.
void fill(Store& store, const records::EnvironmentRecord& environment, std::vector<int64_t> batches,
          double time_scale) {
  int64_t environment_id = store.ensure_environment(environment);
  for (int64_t seed : {1, 2}) {
    records::NetworkRecord network = records::network_record(synthetic(seed), image_config(1, 32));
    for (int64_t batch : batches)
      store.insert_run(network, make_run(environment_id, image_config(batch, 32), 0,
                                         time_scale * static_cast<double>(batch * seed) / 7.0));
  }
}

TEST(Merge, DeduplicatesByNetworkConfigurationEnvironmentAndRepeat) {
  ScratchDir dir;
  {
    Store a = Store::open(dir.file("a.db"));
    fill(a, test_environment(), {1, 2, 4}, 1.0);
    Store b = Store::open(dir.file("b.db"));
    fill(b, test_environment(), {4, 8}, 2.0);          // batch 4 overlaps with a.db (same identity)
    fill(b, test_environment("Other CPU"), {1}, 3.0);  // another environment: never a duplicate
  }
  MergeSummary summary = merge_datasets({dir.file("a.db"), dir.file("b.db")}, dir.file("all.db"));
  EXPECT_EQ(summary.runs_read, 6 + 4 + 2);
  EXPECT_EQ(summary.duplicates, 2);  // batch 4 of seeds 1 and 2
  EXPECT_EQ(summary.inserted, 10);
  Store all = Store::open(dir.file("all.db"), Database::Mode::ReadOnly);
  EXPECT_EQ(all.run_count(), 10);
  EXPECT_EQ(all.environments().size(), 2u);
  EXPECT_EQ(all.networks().size(), 2u);
  // The first file wins a duplicate: batch 4 keeps a.db's time.
  for (const records::RunRecord& run : all.runs()) {
    if (run.config.batch == 4 && run.environment_hash == test_environment().hash()) {
      EXPECT_NEAR(*run.result.time_ms_median, 4.0 * (run.network_hash == all.networks()[0].hash ? 1 : 2) / 7.0, 1e-12);
    }
  }
  // Merging again changes nothing.
  MergeSummary again = merge_datasets({dir.file("b.db"), dir.file("a.db")}, dir.file("all.db"));
  EXPECT_EQ(again.inserted, 0);
  EXPECT_EQ(Store::open(dir.file("all.db")).run_count(), 10);
  EXPECT_EQ(all.integrity_check(), "ok");
  EXPECT_THROW(merge_datasets({dir.file("missing.db")}, dir.file("x.db")), InputError);
}

TEST(Csv, ExportImportRoundTripsEveryRun) {
  ScratchDir dir;
  Store source = Store::open(dir.file("src.db"));
  fill(source, test_environment(), {1, 3, 16}, 1.0);
  int64_t environment_id = source.ensure_environment(test_environment());
  records::RunRecord failed = make_run(environment_id, image_config(512, 32), 0, 0);
  failed.result = records::RunResult{};
  failed.result.status = "timeout";
  failed.result.message = "killed after 300 s";
  failed.result.time_ms_median = 0;
  source.insert_run(records::network_record(synthetic(1), image_config(1, 32)), failed);

  std::stringstream csv;
  export_csv(source, csv, false);
  std::string text = csv.str();
  EXPECT_EQ(text.substr(0, text.find('\n')).find("graph_json"), std::string::npos);
  Store target = Store::open(dir.file("dst.db"));
  ImportSummary summary = import_csv(target, csv, "runs.csv");
  EXPECT_EQ(summary.rows, 7);
  EXPECT_EQ(summary.inserted, 7);
  EXPECT_EQ(run_texts(target), run_texts(source));
  // Networks were rebuilt from their sources with the same hashes and graphs.
  ASSERT_EQ(target.networks().size(), 2u);
  for (const records::NetworkRecord& network : target.networks())
    EXPECT_EQ(network.graph_json, source.network_by_hash(network.hash)->graph_json);
  // Importing the same file again adds nothing.
  std::stringstream again(text);
  EXPECT_EQ(import_csv(target, again, "runs.csv").duplicates, 7);
  EXPECT_EQ(target.run_count(), 7);
}

TEST(Csv, GraphFilesTravelOnlyWithGraphs) {
  ScratchDir dir;
  GraphBuilder builder("mine", "custom");
  int x = builder.input(TensorShape{1, 3, 8, 8});
  x = builder.conv("conv", x, 4, 3, 1, 1);
  x = builder.flatten("flatten", x);
  builder.linear("fc", x, 3);
  Graph graph = builder.finish();
  records::NetworkRecord network;
  network.hash = graph.architecture_hash();
  network.name = "mine";
  network.family = "custom";
  network.source = "file:/somewhere/mine.json";
  network.graph_json = import::write_graph_json(graph);
  Store source = Store::open(dir.file("src.db"));
  int64_t environment_id = source.ensure_environment(test_environment());
  source.insert_run(network, make_run(environment_id, image_config(2, 8), 0, 1.5));

  std::stringstream without, with;
  export_csv(source, without, false);
  export_csv(source, with, true);
  Store target = Store::open(dir.file("dst.db"));
  try {
    import_csv(target, without, "runs.csv");
    FAIL() << "imported a file network without its graph";
  } catch (const InputError& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("runs.csv:2"), std::string::npos) << text;
    EXPECT_NE(text.find("--graphs"), std::string::npos) << text;
  }
  EXPECT_EQ(target.run_count(), 0);  // all or nothing
  EXPECT_EQ(import_csv(target, with, "runs.csv").inserted, 1);
  EXPECT_EQ(target.network_by_hash(network.hash)->graph_json, network.graph_json);
}

TEST(Csv, BadFilesNameTheLine) {
  ScratchDir dir;
  Store target = Store::open(dir.file("dst.db"));
  std::stringstream missing_column("network_hash,batch\nabc,1\n");
  EXPECT_THROW(import_csv(target, missing_column, "x.csv"), InputError);
  Store source = Store::open(dir.file("src.db"));
  fill(source, test_environment(), {1}, 1.0);
  std::stringstream csv;
  export_csv(source, csv, false);
  std::string text = csv.str();
  std::string broken = text.substr(0, text.find('\n') + 1) + "1,2,3\n";
  std::stringstream broken_stream(broken);
  try {
    import_csv(target, broken_stream, "x.csv");
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("x.csv:2"), std::string::npos) << error.what();
  }
  std::string bad_batch = text;
  size_t row = bad_batch.find('\n') + 1;
  // Replace the status field of the first row by an unknown one.
  size_t status = bad_batch.find(",ok,", row);
  ASSERT_NE(status, std::string::npos);
  bad_batch.replace(status, 4, ",fine,");
  std::stringstream bad_status(bad_batch);
  EXPECT_THROW(import_csv(target, bad_status, "x.csv"), InputError);
  EXPECT_EQ(target.run_count(), 0);
}

TEST(Csv, QuotedFieldsRoundTrip) {
  std::stringstream in("a,\"b,c\",\"d\"\"e\",\"f\ng\",\nlast\r\n");
  std::vector<std::string> fields;
  int64_t line = 0;
  ASSERT_TRUE(read_csv_record(in, fields, line));
  EXPECT_EQ(fields, (std::vector<std::string>{"a", "b,c", "d\"e", "f\ng", ""}));
  EXPECT_EQ(line, 2);
  ASSERT_TRUE(read_csv_record(in, fields, line));
  EXPECT_EQ(fields, (std::vector<std::string>{"last"}));
  EXPECT_FALSE(read_csv_record(in, fields, line));
  for (const std::string field : {"plain", "with,comma", "with\"quote", "multi\nline", ""}) {
    std::stringstream round(csv_quote(field) + "\n");
    ASSERT_TRUE(read_csv_record(round, fields, line));
    EXPECT_EQ(fields, std::vector<std::string>{field});
  }
}

TEST(Stats, CountsAndRanges) {
  ScratchDir dir;
  Store store = Store::open(dir.file("s.db"));
  fill(store, test_environment(), {1, 2, 64}, 1.0);
  int64_t environment_id = store.ensure_environment(test_environment());
  records::NetworkRecord network = records::network_record(synthetic(1), image_config(1, 32));
  records::RunRecord second =
      make_run(environment_id, image_config(2, 32), 1, 2.0 * 1.1 / 7.0);  // repeat 1 of (seed 1, b2)
  store.insert_run(network, second);
  records::RunRecord oom = make_run(environment_id, image_config(128, 32), 0, 0);
  oom.result = records::RunResult{};
  oom.result.status = "oom";
  store.insert_run(network, oom);
  nlohmann::json stats = dataset_stats(store);
  EXPECT_EQ(stats["runs"], 8);
  EXPECT_EQ(stats["runs_ok"], 7);
  EXPECT_EQ(stats["by_status"]["oom"], 1);
  EXPECT_EQ(stats["by_status"]["error"], 0);
  EXPECT_EQ(stats["synthetic_networks_with_ok_runs"], 2);
  EXPECT_EQ(stats["options"]["batch"]["min"], 1);
  EXPECT_EQ(stats["options"]["batch"]["max"], 128);
  EXPECT_EQ(stats["options"]["repeat_index"]["max"], 1);
  EXPECT_EQ(stats["by_family"][0]["family"], "synthetic");
  EXPECT_EQ(stats["by_environment"][0]["runs"], 8);
  // One configuration with two repeats, 2/7 and 2.2/7 ms: range 0.2/7 over median 2.1/7.
  EXPECT_EQ(stats["repeat_spread"]["configurations"], 1);
  EXPECT_NEAR(stats["repeat_spread"]["median_rel_range"].get<double>(), 0.2 / 2.1, 1e-9);
  EXPECT_NE(format_stats(stats).find("noise floor"), std::string::npos);
  // The floor evaluate reports: 2.2 vs 2 is 10% of 2, 2 vs 2.2 is 1/11 of 2.2; scaled by sqrt(1/2).
  EXPECT_EQ(stats["repeat_spread"]["runs"], 2);
  EXPECT_NEAR(stats["repeat_spread"]["floor_mre"].get<double>(), (0.1 + 1.0 / 11) / 2 * std::sqrt(0.5), 1e-9);
}

}  // namespace
}  // namespace dnncast::store
