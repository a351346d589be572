// `dnncast dataset stats | export | features | import | merge`: inspect and move measurement databases.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "store/dataset_csv.h"
#include "store/dataset_stats.h"
#include "store/merge.h"
#include "store/store.h"
#include "study/training.h"

namespace dnncast::cli {

namespace {

// CLI11 parse: --help prints and returns 0; a parse error becomes InputError (exit 2).
bool parse(CLI::App& app, const Args& args, int& exit_code) {
  exit_code = 0;  // --help
  return parse_args(app, args, "dataset");
}

// Writes through `write` to standard output ("" path) or to PATH via PATH.partial and a rename, so
// that an interrupted write never leaves a truncated file under the final name. `what` names the
// subcommand in errors. Returns true when a file was written.
bool write_output(const std::string& path, const std::string& what, const std::function<void(std::ostream&)>& write) {
  if (path.empty()) {
    write(std::cout);
    std::cout.flush();
    if (!std::cout) throw InputError(what + ": cannot write to standard output");
    return false;
  }
  std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    if (!out) throw InputError(what + ": cannot write " + quote(partial));
    write(out);
    out.flush();
    if (!out) throw InputError(what + ": writing " + quote(partial) + " failed");
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0)
    throw InputError(what + ": cannot rename " + quote(partial) + " to " + quote(path));
  return true;
}

}  // namespace

int run_dataset(const Args& args) {
  CLI::App app("stats, export, import and merge of measurement databases (docs/DATASET.md)", "dnncast dataset");
  app.require_subcommand(1);

  CLI::App* stats = app.add_subcommand("stats", "counts by environment, family, status; range of every option");
  std::string stats_db;
  bool stats_json = false;
  stats->add_option("DB", stats_db, "dataset file")->required();
  stats->add_flag("--json", stats_json, "print JSON");

  CLI::App* export_command = app.add_subcommand("export", "write every run as CSV");
  std::string export_db, export_out;
  bool export_csv_flag = false, export_graphs = false;
  export_command->add_flag("--csv", export_csv_flag, "CSV format (the only one)")->required();
  export_command->add_option("DB", export_db, "dataset file")->required();
  export_command->add_option("-o,--output", export_out, "output file (default: stdout)");
  export_command->add_flag("--graphs", export_graphs, "add each network's graph JSON (self-contained file)");

  CLI::App* features_command =
      app.add_subcommand("features", "write the featurized configurations as CSV (one row per configuration)");
  std::string features_db, features_out;
  features_command->add_option("DB", features_db, "dataset file")->required();
  features_command->add_option("-o,--output", features_out, "output file (default: stdout)");

  CLI::App* import_command = app.add_subcommand("import", "read runs from CSV into a dataset");
  std::string import_csv_path, import_db;
  import_command->add_option("--csv", import_csv_path, "CSV file written by export")->required();
  import_command->add_option("--db", import_db, "dataset file (created when missing)")->required();

  CLI::App* merge = app.add_subcommand("merge", "merge datasets, skipping runs already present");
  std::vector<std::string> merge_inputs;
  std::string merge_out;
  merge->add_option("INPUTS", merge_inputs, "datasets to merge")->required();
  merge->add_option("-o,--output", merge_out, "merged dataset (created when missing)")->required();

  int exit_code = 0;
  if (!parse(app, args, exit_code)) return exit_code;

  if (stats->parsed()) {
    store::Store store = store::Store::open(stats_db, store::Database::Mode::ReadOnly);
    nlohmann::json result = store::dataset_stats(store);
    if (stats_json)
      std::cout << result.dump(2) << "\n";
    else
      std::cout << store::format_stats(result);
    return 0;
  }
  if (export_command->parsed()) {
    store::Store store = store::Store::open(export_db, store::Database::Mode::ReadOnly);
    if (write_output(export_out, "export", [&](std::ostream& out) { store::export_csv(store, out, export_graphs); }))
      std::fprintf(stderr, "wrote %lld runs to %s\n", static_cast<long long>(store.run_count()), export_out.c_str());
    return 0;
  }
  if (features_command->parsed()) {
    study::TrainingTable table = study::load_training_table(features_db);
    if (write_output(features_out, "features", [&](std::ostream& out) { study::write_features_csv(table, out); }))
      std::fprintf(stderr, "wrote %zu configurations x %lld features to %s\n", table.samples.size(),
                   static_cast<long long>(table.x.cols()), features_out.c_str());
    return 0;
  }
  if (import_command->parsed()) {
    std::ifstream in(import_csv_path, std::ios::binary);
    if (!in) throw InputError("import: cannot open " + quote(import_csv_path));
    store::Store store = store::Store::open(import_db, store::Database::Mode::Create);
    store::ImportSummary summary = store::import_csv(store, in, import_csv_path);
    std::printf("imported %lld rows into %s: %lld new runs, %lld already present\n",
                static_cast<long long>(summary.rows), import_db.c_str(), static_cast<long long>(summary.inserted),
                static_cast<long long>(summary.duplicates));
    return 0;
  }
  if (merge->parsed()) {
    store::MergeSummary summary = store::merge_datasets(merge_inputs, merge_out);
    std::printf("merged %zu datasets into %s: %lld runs read, %lld new, %lld duplicates skipped\n", merge_inputs.size(),
                merge_out.c_str(), static_cast<long long>(summary.runs_read), static_cast<long long>(summary.inserted),
                static_cast<long long>(summary.duplicates));
    if (summary.layer_benchmarks_read > 0)
      std::printf("layer benchmarks: %lld read, %lld new\n", static_cast<long long>(summary.layer_benchmarks_read),
                  static_cast<long long>(summary.layer_benchmarks_inserted));
    return 0;
  }
  return 2;
}

}  // namespace dnncast::cli
