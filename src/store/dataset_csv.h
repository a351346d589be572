// CSV export and import of a dataset: one row per run, with its environment and network fields
// (columns listed in docs/DATASET.md). Quoting follows RFC 4180; an empty field is NULL.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "core/csv.h"
#include "store/store.h"

namespace dnncast::store {

// The columns written by export_csv, in order (graph_json last, only with graphs).
const std::vector<std::string>& csv_columns();

// Writes every run. With graphs, each row carries its network's graph JSON, so that the
// file imports into an empty database even for networks read from files.
void export_csv(Store& store, std::ostream& out, bool with_graphs);

struct ImportSummary {
  int64_t rows = 0;
  int64_t inserted = 0;
  int64_t duplicates = 0;  // already in the database (same identity)
};

// Reads runs into the store in one transaction (all or nothing). A network missing from the
// database is taken from the graph_json column, or rebuilt from its source (zoo:, synthetic:)
// and checked against network_hash. Throws InputError naming `source` and the line.
ImportSummary import_csv(Store& store, std::istream& in, const std::string& source);

}  // namespace dnncast::store
