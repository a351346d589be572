#include "models/zoo.h"

namespace dnncast {

void register_mobile(std::vector<ZooEntry>& /*entries*/) {}

}  // namespace dnncast
