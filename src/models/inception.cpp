#include "models/zoo.h"

namespace dnncast {

void register_inception(std::vector<ZooEntry>& /*entries*/) {}

}  // namespace dnncast
