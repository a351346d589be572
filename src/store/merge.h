// Merging datasets collected on several machines or shards into one file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"

namespace dnncast::store {

struct MergeSummary {
  int64_t runs_read = 0;
  int64_t inserted = 0;
  int64_t layer_benchmarks_read = 0, layer_benchmarks_inserted = 0;  // table layer_benchmarks (schema 4)
  int64_t duplicates = 0;  // same network hash + configuration + environment + repeat index
};

// Copies every environment, network and run of `inputs` into `output` (created when missing),
// one transaction per input; a run whose identity is already there is skipped.
MergeSummary merge_datasets(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace dnncast::store
