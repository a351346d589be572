// Dataset CSV import (src/store/dataset_csv.h) into an in-memory dataset, then the readers of what it
// stored: runs, networks with their graphs, and the CSV export of it all.
//
// The dataset is opened once per process and emptied after each input: Store::open builds the schema by
// replaying its migrations (each ALTER TABLE re-parses the schema), 95% of an input that has no valid row
// under ASan (perf, session 23). An input sees the same empty dataset as before; the migrations do not
// read the input.
#include <sqlite3.h>

#include <cstdint>
#include <sstream>

#include "fuzz_common.h"
#include "store/dataset_csv.h"
#include "store/store.h"

namespace {

dnncast::store::Store& empty_store() {
  static dnncast::store::Store store = dnncast::store::Store::open(":memory:");
  return store;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dnncast::store::Store& store = empty_store();
  const int changes_before = sqlite3_total_changes(store.db().handle());
  dnncast::fuzz::run_one([&] {
    std::istringstream in(dnncast::fuzz::text_of(data, size));
    dnncast::store::import_csv(store, in, "fuzz.csv");
    store.runs();
    store.networks(true);
    std::ostringstream out;
    dnncast::store::export_csv(store, out, true);
  });
  // import_csv is all or nothing: a refused file left nothing; an imported one is removed (runs first:
  // they reference environments and networks). Most inputs are refused before their first insert.
  if (sqlite3_total_changes(store.db().handle()) == changes_before) return 0;
  store.db().exec(
      "DELETE FROM layer_times; DELETE FROM runs; DELETE FROM layer_benchmarks; DELETE FROM networks; "
      "DELETE FROM environments;");
  return 0;
}
