#include "cli/commands.h"
#include "graph/error.h"

namespace dnncast::cli {

int run_inspect(const Args&) { throw InputError("inspect: not built yet"); }

}  // namespace dnncast::cli
