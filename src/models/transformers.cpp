#include "models/zoo.h"

namespace dnncast {

void register_transformers(std::vector<ZooEntry>& /*entries*/) {}

}  // namespace dnncast
