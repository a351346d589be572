// Loss ops.
#include "graph/op_helpers.h"

namespace dnncast {

void register_loss_ops(OpRegistry& /*registry*/) {}

}  // namespace dnncast
