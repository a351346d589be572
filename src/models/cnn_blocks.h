// Building blocks shared by the CNN families of the zoo, named as torchvision names their modules
// (torchvision/ops/misc.py: Conv2dNormActivation, SqueezeExcitation; models/_utils.py: _make_divisible).
#pragma once

#include <string>

#include "graph/builder.h"
#include "models/zoo.h"

namespace dnncast::models::blocks {

// The image input of a CNN: batch x C x H x W from the spec (build_zoo_model fills the defaults).
int image_input(GraphBuilder& b, const ModelSpec& spec);

// Conv2dNormActivation: prefix+"0" conv (padding (k-1)/2*dilation, bias only without a norm),
// prefix+"1" BatchNorm2d (eps), prefix+"2" activation (none when `activation` is empty).
int conv_norm_act(GraphBuilder& b, const std::string& prefix, int x, int64_t out_channels, int64_t kernel,
                  int64_t stride, int64_t groups, const std::string& activation, double eps = 1e-5,
                  double momentum = 0.1);

// SqueezeExcitation: avgpool -> fc1 (1x1 conv) -> activation -> fc2 -> scale_activation, then
// scale * x with the (N, C, 1, 1) scale broadcast over H x W (node prefix+"mul").
int squeeze_excite(GraphBuilder& b, const std::string& prefix, int x, int64_t squeeze_channels,
                   const std::string& activation, const std::string& scale_activation);

// x.mean([2, 3]) of shufflenet/mnasnet: a global average pool and a flatten (a view), as one
// would write it with nn modules; the same arithmetic and output.
int global_mean(GraphBuilder& b, const std::string& name, int x);

// _make_divisible(v, divisor, min_value): rounds v to a multiple of divisor, never more than 10% down.
int64_t make_divisible(double value, int64_t divisor, int64_t min_value = 0);

// Python's round() (half to even), which torchvision uses for some widths.
int64_t python_round(double value);

}  // namespace dnncast::models::blocks
