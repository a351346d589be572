#include "cli/commands.h"
#include "graph/error.h"

namespace dnncast::cli {

int run_dataset(const Args&) { throw InputError("dataset: not available yet"); }

}  // namespace dnncast::cli
