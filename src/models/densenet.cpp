#include "models/zoo.h"

namespace dnncast {

void register_densenet(std::vector<ZooEntry>& /*entries*/) {}

}  // namespace dnncast
