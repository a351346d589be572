#include "models/cnn_blocks.h"

#include <algorithm>
#include <cmath>

namespace dnncast::models::blocks {

int image_input(GraphBuilder& b, const ModelSpec& spec) {
  return b.input(TensorShape{spec.batch, spec.input.at(0), spec.input.at(1), spec.input.at(2)});
}

int conv_norm_act(GraphBuilder& b, const std::string& prefix, int x, int64_t out_channels, int64_t kernel,
                  int64_t stride, int64_t groups, const std::string& activation, double eps, double momentum) {
  x = b.conv(prefix + "0", x, out_channels, kernel, stride, (kernel - 1) / 2, groups, false);
  x = b.batchnorm(prefix + "1", x, eps, momentum);
  if (!activation.empty()) x = b.act(prefix + "2", activation, x);
  return x;
}

int squeeze_excite(GraphBuilder& b, const std::string& prefix, int x, int64_t squeeze_channels,
                   const std::string& activation, const std::string& scale_activation) {
  int64_t channels = b.channels(x);
  int scale = b.adaptive_avgpool(prefix + "avgpool", x, 1, 1);
  scale = b.conv(prefix + "fc1", scale, squeeze_channels, 1);
  scale = b.act(prefix + "activation", activation, scale);
  scale = b.conv(prefix + "fc2", scale, channels, 1);
  scale = b.act(prefix + "scale_activation", scale_activation, scale);
  return b.mul(prefix + "mul", scale, x);
}

int global_mean(GraphBuilder& b, const std::string& name, int x) {
  x = b.adaptive_avgpool(name, x, 1, 1);
  return b.flatten(name + ".flatten", x);
}

int64_t make_divisible(double value, int64_t divisor, int64_t min_value) {
  if (min_value == 0) min_value = divisor;
  int64_t rounded =
      std::max<int64_t>(min_value, static_cast<int64_t>(value + static_cast<double>(divisor) / 2) / divisor * divisor);
  if (static_cast<double>(rounded) < 0.9 * value) rounded += divisor;
  return rounded;
}

int64_t python_round(double value) { return static_cast<int64_t>(std::nearbyint(value)); }

}  // namespace dnncast::models::blocks
