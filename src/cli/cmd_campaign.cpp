#include "cli/commands.h"
#include "graph/error.h"

namespace dnncast::cli {

int run_campaign(const Args&) { throw InputError("campaign: not available yet"); }

}  // namespace dnncast::cli
