// Dataset CSV import (src/data/csv) into an in-memory dataset, then the readers of what it
// stored: runs, networks with their graphs, and the CSV export of it all.
#include <cstdint>
#include <sstream>

#include "store/dataset_csv.h"
#include "store/store.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return dnncast::fuzz::run_one([&] {
    dnncast::data::Store store = dnncast::data::Store::open(":memory:");
    std::istringstream in(dnncast::fuzz::text_of(data, size));
    dnncast::data::import_csv(store, in, "fuzz.csv");
    store.runs();
    store.networks(true);
    std::ostringstream out;
    dnncast::data::export_csv(store, out, true);
  });
}
