#include "cli/commands.h"
#include "graph/error.h"

namespace dnncast::cli {

int run_profile(const Args&) { throw InputError("profile: not built yet"); }

}  // namespace dnncast::cli
