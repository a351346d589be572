#include "cli/commands.h"
#include "graph/error.h"

namespace dnncast::cli {

int run_train(const Args&) { throw InputError("train: not available yet"); }

}  // namespace dnncast::cli
