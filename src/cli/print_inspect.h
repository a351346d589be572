// `dnncast inspect`'s table: one line per layer (grouped counts, SI MACs, binary bytes), then totals.
#pragma once

#include "forecast/forecast.h"

namespace dnncast::cli {

void print_table(const forecast::Inspection& inspection);

}  // namespace dnncast::cli
