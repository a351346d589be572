#include "models/zoo.h"

namespace dnncast {

void register_alexnet_vgg(std::vector<ZooEntry>& /*entries*/) {}

}  // namespace dnncast
