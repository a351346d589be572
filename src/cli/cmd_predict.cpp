#include "cli/commands.h"
#include "graph/error.h"

namespace dnncast::cli {

int run_predict(const Args&) { throw InputError("predict: not available yet"); }

}  // namespace dnncast::cli
