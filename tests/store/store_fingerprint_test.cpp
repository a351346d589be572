// The CPU fingerprint of environments (schema 3): hashes that tell CPUs apart, old hashes kept,
// the migration, and the fields carried by merge and CSV.
#include <gtest/gtest.h>

#include <sstream>

#include "core/error.h"
#include "records/network_source.h"
#include "store/dataset_csv.h"
#include "store/dataset_stats.h"
#include "store/merge.h"
#include "store/store.h"
#include "store/test_util.h"

namespace dnncast::store {
namespace {

using testing::fingerprinted_environment;
using testing::ScratchDir;
using testing::test_environment;

void expect_same_fingerprint(const records::EnvironmentRecord& read, const records::EnvironmentRecord& written) {
  EXPECT_EQ(read.cpu_vendor, written.cpu_vendor);
  EXPECT_EQ(read.cpu_family, written.cpu_family);
  EXPECT_EQ(read.cpu_model_number, written.cpu_model_number);
  EXPECT_EQ(read.cpu_stepping, written.cpu_stepping);
  EXPECT_EQ(read.isa, written.isa);
  EXPECT_EQ(read.aten_capability, written.aten_capability);
  EXPECT_EQ(read.isa_cap, written.isa_cap);
  EXPECT_EQ(read.l2_bytes, written.l2_bytes);
  EXPECT_EQ(read.l3_bytes, written.l3_bytes);
  EXPECT_EQ(read.base_mhz, written.base_mhz);
  EXPECT_EQ(read.hash(), written.hash());
}

// One stored run of resnet18 in ENVIRONMENT.
void store_one_run(Store& store, const records::EnvironmentRecord& environment) {
  records::RunConfig config;
  config.input = {3, 32, 32};
  records::ModelRef model;
  model.name = "resnet18";
  records::RunRecord run;
  run.environment_id = store.ensure_environment(environment);
  run.config = config;
  run.result.time_ms_median = 12.5;
  run.measured_at = "2026-12-01T00:00:00Z";
  ASSERT_TRUE(store.insert_run(records::network_record(model, config), run));
}

TEST(Fingerprint, HashTellsApartFamilyModelAndIsa) {
  // Two hosts that /proc/cpuinfo cannot tell apart ("AMD EPYC", 2 cores).
  records::EnvironmentRecord zen3 = fingerprinted_environment();
  records::EnvironmentRecord other_model = zen3;
  other_model.cpu_family = 23;
  other_model.cpu_model_number = 49;
  EXPECT_NE(zen3.hash(), other_model.hash());
  records::EnvironmentRecord only_model = zen3;
  only_model.cpu_model_number = 17;
  EXPECT_NE(zen3.hash(), only_model.hash());
  // The same AVX-512 host with and without ONEDNN_MAX_CPU_ISA=AVX2: two environments.
  records::EnvironmentRecord avx512 = zen3;
  avx512.isa = "avx512_core";
  EXPECT_NE(zen3.hash(), avx512.hash());
  records::EnvironmentRecord aten = zen3;
  aten.aten_capability = "default";
  EXPECT_NE(zen3.hash(), aten.hash());
  // The cap's text and the clock are kept but not hashed: the dispatch is what the cap changes.
  records::EnvironmentRecord capped = zen3;
  capped.isa_cap = "AVX2";
  capped.base_mhz = 2000;
  EXPECT_EQ(zen3.hash(), capped.hash());
}

TEST(Fingerprint, UnrecordedEnvironmentKeepsItsOldHash) {
  // The formula of schema 1 and 2, written out here: an environment without the fingerprint
  // (every dataset and predictor manifest so far) must keep exactly this hash.
  records::EnvironmentRecord old = test_environment();
  std::string old_text =
      "cpu=Test CPU 9000\ncores=8\nthreads=8\nmemory_gib=16\ngpu=\ndriver=\ntorch=1.13.0\nbuild=release\n";
  EXPECT_EQ(old.hash(), records::fnv1a_hex(old_text));
  // The shipped dataset's first environment (data/predictors/amd-epyc-2cpu manifests record it).
  records::EnvironmentRecord shipped;
  shipped.cpu_model = "AMD EPYC";
  shipped.cores = 2;
  shipped.threads = 1;
  shipped.memory_bytes = 25276026880;
  shipped.torch_version = "1.13.0";
  shipped.build_type = "Release";
  EXPECT_EQ(shipped.hash(),
            records::fnv1a_hex("cpu=AMD EPYC\ncores=2\nthreads=1\nmemory_gib=24\ngpu=\ndriver=\ntorch=1.13.0\n"
                               "build=Release\n"));
  EXPECT_EQ(shipped.hash(), "0e36ffec1c422972");
  // Any recorded field makes another environment.
  records::EnvironmentRecord recorded = old;
  recorded.isa = "avx2";
  EXPECT_NE(recorded.hash(), old.hash());
}

TEST(Fingerprint, StoreRoundTripsTheFields) {
  ScratchDir dir;
  Store store = Store::open(dir.file("f.db"));
  records::EnvironmentRecord written = fingerprinted_environment();
  written.isa_cap = "AVX2";
  store.ensure_environment(written);
  ASSERT_EQ(store.environments().size(), 1u);
  expect_same_fingerprint(store.environments()[0], written);
}

TEST(Fingerprint, MigratesSchemaTwoToThreeAsNotRecorded) {
  ScratchDir dir;
  std::string path = dir.file("v2.db");
  records::EnvironmentRecord old = test_environment();
  {
    Store store = Store::open(path);
    store_one_run(store, old);
    testing::drop_fingerprint_columns(store.db());
    testing::drop_wait_share_column(store.db());
    store.db().exec("DROP TABLE layer_benchmarks; PRAGMA user_version = 2");
  }
  {
    // A reader migrates a copy in memory and leaves the file as it was (schema 2).
    Store reader = Store::open(path, Database::Mode::ReadOnly);
    EXPECT_EQ(reader.schema_version(), kSchemaVersion);
    EXPECT_EQ(reader.run_count(), 1);
    ASSERT_EQ(reader.environments().size(), 1u);
    EXPECT_EQ(reader.environments()[0].isa, "");
    Database raw(path, Database::Mode::ReadOnly);
    Statement version = raw.prepare("PRAGMA user_version");
    ASSERT_TRUE(version.step());
    EXPECT_EQ(version.get_int(0), 2);
  }
  Store store = Store::open(path);
  EXPECT_EQ(store.schema_version(), kSchemaVersion);
  EXPECT_EQ(store.run_count(), 1);
  std::vector<records::EnvironmentRecord> environments = store.environments();
  ASSERT_EQ(environments.size(), 1u);
  expect_same_fingerprint(environments[0], old);            // all "" and 0: not recorded
  EXPECT_EQ(store.runs()[0].environment_hash, old.hash());  // the stored hash is still the computed one
  // The same machine measured again with the fingerprint is a new environment beside the old one.
  records::EnvironmentRecord now = old;
  now.isa = "avx2";
  EXPECT_NE(store.ensure_environment(now), environments[0].id);
  // stats shows the fingerprint, or says it is not recorded.
  std::string text = format_stats(dataset_stats(store));
  EXPECT_NE(text.find("isa not recorded, cpu family/model not recorded"), std::string::npos) << text;
  EXPECT_NE(text.find("isa avx2"), std::string::npos) << text;
}

TEST(Fingerprint, MergeAndCsvCarryTheFields) {
  ScratchDir dir;
  records::EnvironmentRecord written = fingerprinted_environment();
  written.isa_cap = "AVX2";
  {
    Store source = Store::open(dir.file("a.db"));
    store_one_run(source, written);
    store_one_run(source, test_environment());
  }
  merge_datasets({dir.file("a.db")}, dir.file("merged.db"));
  Store merged = Store::open(dir.file("merged.db"));
  ASSERT_EQ(merged.environments().size(), 2u);
  expect_same_fingerprint(merged.environments()[0], written);
  expect_same_fingerprint(merged.environments()[1], test_environment());

  std::stringstream csv;
  export_csv(merged, csv, false);
  Store imported = Store::open(dir.file("imported.db"));
  ImportSummary summary = import_csv(imported, csv, "runs.csv");  // checks env_hash on every row
  EXPECT_EQ(summary.inserted, 2);
  ASSERT_EQ(imported.environments().size(), 2u);
  expect_same_fingerprint(imported.environments()[0], written);
  expect_same_fingerprint(imported.environments()[1], test_environment());
}

TEST(Fingerprint, CsvWithoutTheColumnsImportsAsNotRecorded) {
  // A CSV exported before schema 3: no env_cpu_* / env_isa* / env_l*_bytes / env_base_mhz columns.
  ScratchDir dir;
  {
    Store source = Store::open(dir.file("a.db"));
    store_one_run(source, test_environment());
  }
  Store source = Store::open(dir.file("a.db"));
  std::stringstream csv;
  export_csv(source, csv, false);
  // Drop the new columns from header and row.
  std::string header_line, row_line;
  std::getline(csv, header_line);
  std::getline(csv, row_line);
  auto split = [](const std::string& text) {
    std::vector<std::string> fields;
    std::stringstream stream(text);
    std::string field;
    while (std::getline(stream, field, ',')) fields.push_back(field);
    if (!text.empty() && text.back() == ',') fields.push_back("");
    return fields;
  };
  std::vector<std::string> header = split(header_line), row = split(row_line);
  ASSERT_EQ(header.size(), row.size()) << row_line;  // nothing quoted in this row
  std::string old_header, old_row;
  bool first = true;
  for (size_t col = 0; col < header.size(); ++col) {
    const std::string& name = header[col];
    bool fingerprint = name.rfind("env_cpu_", 0) == 0 && name != "env_cpu_model";
    fingerprint = fingerprint || name.rfind("env_isa", 0) == 0 || name == "env_aten_capability" ||
                  name == "env_l2_bytes" || name == "env_l3_bytes" || name == "env_base_mhz";
    if (fingerprint) continue;
    old_header += (first ? "" : ",") + name;
    old_row += (first ? "" : ",") + row[col];
    first = false;
  }
  EXPECT_EQ(old_header.find("env_isa"), std::string::npos);
  std::stringstream old_csv(old_header + "\n" + old_row + "\n");
  Store imported = Store::open(dir.file("imported.db"));
  EXPECT_EQ(import_csv(imported, old_csv, "old.csv").inserted, 1);
  ASSERT_EQ(imported.environments().size(), 1u);
  expect_same_fingerprint(imported.environments()[0], test_environment());
}

}  // namespace
}  // namespace dnncast::store
