// `dnncast transfer`'s tables: a plain CSV file, or a dnncast dataset (SQLite) featurized and
// narrowed by a --source-where / --target-where filter (threads=1,input=3x64x64,...).
#pragma once

#include <string>
#include <vector>

#include "transfer/transfer.h"

namespace dnncast::cli {

// The table of `path` with `options` as columns (a dataset's default options when empty) and
// `metric` as target. Throws InputError naming `flag`: a file that cannot be opened, a filter on a
// CSV file, an unknown option, key or metric, no configuration left.
transfer::OptionTable read_table(const std::string& path, const std::vector<std::string>& options,
                                 const std::string& metric, const std::string& where, const std::string& flag);

}  // namespace dnncast::cli
