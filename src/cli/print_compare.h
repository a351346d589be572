// Output of `dnncast compare` (cmd_compare.cpp): the table on stdout, the JSON document, the notes.
#pragma once

#include <nlohmann/json.hpp>

#include "decide/compare.h"

namespace dnncast::cli {

// One line per instance, cheapest first, Pareto rows marked '*'; then the fits-nowhere line if any.
void print_comparison(const decide::Comparison& comparison);
// Every field of the comparison; unknown values are null.
nlohmann::ordered_json comparison_json(const decide::Comparison& comparison);

}  // namespace dnncast::cli
