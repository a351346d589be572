#include "cli/commands.h"
#include "graph/error.h"

namespace dnncast::cli {

int run_evaluate(const Args&) { throw InputError("evaluate: not available yet"); }

}  // namespace dnncast::cli
