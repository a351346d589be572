// The synthetic generator in two steps: draw a plan from the seed (every random choice happens
// here), then build the plan with GraphBuilder (no randomness). Widths are shrunk by powers of
// two until a reference build (3x224x224, 1000 classes) fits the parameter and MAC budgets, so
// the architecture depends on the seed alone, not on the spec it is built for.
#include "models/synthetic.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/op_registry.h"

namespace dnncast::models {

namespace {

// MACs of the reference build (3x224x224, batch 1): about 2.5 ResNet-50s.
constexpr int64_t kMaxReferenceMacs = 10'000'000'000;
constexpr int64_t kMaxWidth = 512;
constexpr int64_t kMaxHiddenWidth = 1024;  // inside inverted residuals and the last 1x1 conv
// A stride-2 step needs a feature map at least this wide (and high); smaller ones keep their size.
constexpr int64_t kMinDownsampleSize = 4;

// std::mt19937_64's output sequence is fixed by the C++ standard; std's distributions are not,
// so integers are drawn from the raw engine here (rejection sampling: no modulo bias).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, count).
  uint64_t below(uint64_t count) {
    DNNCAST_ASSERT(count > 0);
    const uint64_t limit = UINT64_MAX - UINT64_MAX % count;
    uint64_t value = engine_();
    while (value >= limit) value = engine_();
    return value % count;
  }
  int64_t between(int64_t low, int64_t high) {  // inclusive
    DNNCAST_ASSERT(low <= high);
    return low + static_cast<int64_t>(below(static_cast<uint64_t>(high - low) + 1));
  }
  bool chance(uint64_t numerator, uint64_t denominator) { return below(denominator) < numerator; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<size_t>(below(items.size()))];
  }
  // Index drawn with integer weights.
  size_t weighted(const std::vector<uint64_t>& weights) {
    uint64_t total = 0;
    for (uint64_t weight : weights) total += weight;
    uint64_t ticket = below(total);
    for (size_t index = 0; index < weights.size(); ++index) {
      if (ticket < weights[index]) return index;
      ticket -= weights[index];
    }
    DNNCAST_ASSERT(false);
    return 0;
  }

 private:
  std::mt19937_64 engine_;
};

enum class BlockType { Plain, Basic, Bottleneck, Inception, Separable };
constexpr int kBlockTypes = 5;

enum class Downsample { None, Strided, MaxPool, AvgPool };

struct BlockPlan {
  BlockType type = BlockType::Plain;
  int64_t width = 64;       // output channels before the budget shrink
  int64_t kernel = 3;       // main spatial kernel
  bool strided = false;     // first block of a stage that downsamples by stride
  int64_t convs = 1;        // plain: chain length
  int64_t reduction = 4;    // bottleneck: width / inner width
  int64_t groups = 1;       // bottleneck: groups of the spatial conv
  int64_t expand = 1;       // separable: expansion ratio (1 = MobileNet-v1 style, no residual)
  int64_t branches = 4;     // inception: 2..4 branches
  bool double3x3 = false;   // inception: third branch as two 3x3 instead of one 5x5
  bool avg_branch = false;  // inception: pool branch with average instead of max pooling
  bool se = false;
  int64_t se_reduction = 4;
  std::string act = "ReLU";
};

struct StagePlan {
  Downsample downsample = Downsample::None;
  int64_t pool_kernel = 2;  // 2 (stride 2, no padding) or 3 (stride 2, padding 1)
  std::vector<BlockPlan> blocks;
};

struct NetworkPlan {
  bool batchnorm = true;
  std::string act = "ReLU";
  std::string gate = "Sigmoid";  // squeeze-excite gate
  int64_t stem_width = 32, stem_kernel = 3, stem_stride = 2;
  bool stem_pool = false;
  std::vector<StagePlan> stages;
  int64_t last_conv_width = 0;  // optional 1x1 conv before the global pool (0 = none)
  int64_t head_hidden = 0;      // optional hidden Linear in the head (0 = none)
  int64_t dropout_percent = 0;  // head dropout (0 = none)
};

const std::vector<std::string> kActivations{"ReLU", "ReLU6", "SiLU", "GELU", "Hardswish"};

int64_t round8(int64_t channels) { return std::max<int64_t>(8, (channels + 4) / 8 * 8); }

NetworkPlan draw_plan(uint64_t seed) {
  Rng rng(seed);
  NetworkPlan plan;
  plan.batchnorm = rng.chance(4, 5);
  plan.act = rng.pick(kActivations);
  const bool mixed_acts = rng.chance(1, 5);
  plan.gate = rng.chance(1, 2) ? "Sigmoid" : "Hardsigmoid";
  plan.stem_width = rng.pick(std::vector<int64_t>{8, 16, 24, 32, 48, 64});
  plan.stem_kernel = rng.pick(std::vector<int64_t>{3, 3, 5, 7});
  plan.stem_stride = rng.chance(2, 3) ? 2 : 1;
  plan.stem_pool = rng.chance(1, 2);

  // The palette of block types this network uses (at least one).
  std::vector<BlockType> palette;
  while (palette.empty()) {
    for (int type = 0; type < kBlockTypes; ++type)
      if (rng.chance(1, 2)) palette.push_back(static_cast<BlockType>(type));
  }
  const uint64_t se_in_four = rng.below(5) == 0 ? 4 : rng.below(3);  // share of blocks with SE, in quarters
  const int64_t se_reduction = rng.pick(std::vector<int64_t>{4, 8, 16});

  const int64_t depth = rng.between(3, 40);
  const int64_t stage_count = std::min<int64_t>(depth, rng.between(1, 5));
  std::vector<int64_t> stage_blocks(static_cast<size_t>(stage_count), 1);
  for (int64_t extra = stage_count; extra < depth; ++extra)
    ++stage_blocks[rng.below(static_cast<uint64_t>(stage_count))];

  int64_t width = rng.pick(std::vector<int64_t>{8, 16, 24, 32, 48, 64, 96, 128});
  // Growth per stage as a fraction: x1, x1.5, x2.
  const std::vector<std::pair<int64_t, int64_t>> growths{{1, 1}, {3, 2}, {2, 1}, {2, 1}};
  const std::pair<int64_t, int64_t> growth = rng.pick(growths);

  for (int64_t stage = 0; stage < stage_count; ++stage) {
    StagePlan stage_plan;
    if (stage > 0) width = std::min(kMaxWidth, round8(width * growth.first / growth.second));
    // The first stage downsamples only sometimes (the stem may have done it already).
    if (stage > 0 || rng.chance(1, 3)) {
      size_t how = rng.weighted({3, 1, 1});
      stage_plan.downsample = how == 0 ? Downsample::Strided : how == 1 ? Downsample::MaxPool : Downsample::AvgPool;
      stage_plan.pool_kernel = rng.chance(1, 2) ? 2 : 3;
    }
    for (int64_t index = 0; index < stage_blocks[static_cast<size_t>(stage)]; ++index) {
      BlockPlan block;
      block.type = rng.pick(palette);
      block.width = width;
      block.kernel = std::vector<int64_t>{1, 3, 5, 7}[rng.weighted({1, 6, 2, 1})];
      block.strided = index == 0 && stage_plan.downsample == Downsample::Strided;
      block.convs = rng.between(1, 3);
      block.reduction = rng.chance(2, 3) ? 4 : 2;
      block.groups = std::vector<int64_t>{1, 1, 8, 32}[rng.below(4)];
      block.expand = std::vector<int64_t>{1, 3, 4, 6}[rng.below(4)];
      block.branches = rng.between(2, 4);
      block.double3x3 = rng.chance(1, 2);
      block.avg_branch = rng.chance(1, 2);
      block.se = rng.below(4) < se_in_four;
      block.se_reduction = se_reduction;
      block.act = mixed_acts ? rng.pick(kActivations) : plan.act;
      // Depthwise kernels are 3, 5 or 7.
      if (block.type == BlockType::Separable && block.kernel == 1) block.kernel = 3;
      stage_plan.blocks.push_back(block);
    }
    plan.stages.push_back(stage_plan);
  }
  if (rng.chance(1, 4)) plan.last_conv_width = rng.pick(std::vector<int64_t>{256, 512, 1024});
  if (rng.chance(1, 4)) plan.head_hidden = rng.pick(std::vector<int64_t>{128, 256, 512, 1024});
  if (rng.chance(1, 3)) plan.dropout_percent = rng.pick(std::vector<int64_t>{10, 20, 50});
  return plan;
}

// Builds a plan with every width divided by 2^shrink (at least 8 channels).
class PlanBuilder {
 public:
  PlanBuilder(const NetworkPlan& plan, int shrink, const std::string& name)
      : plan_(plan), shrink_(shrink), b_(name, "synthetic") {}

  Graph build(const ModelSpec& spec) {
    int x = b_.input(TensorShape{spec.batch, spec.input[0], spec.input[1], spec.input[2]});
    x = conv_norm_act("stem.conv", x, width(plan_.stem_width), plan_.stem_kernel, stride_for(x, plan_.stem_stride), 1,
                      plan_.act);
    if (plan_.stem_pool && can_downsample(x)) x = b_.maxpool("stem.pool", x, 3, 2, 1);
    for (size_t stage = 0; stage < plan_.stages.size(); ++stage) {
      const StagePlan& stage_plan = plan_.stages[stage];
      std::string stage_name = "stage" + std::to_string(stage + 1);
      if ((stage_plan.downsample == Downsample::MaxPool || stage_plan.downsample == Downsample::AvgPool) &&
          can_downsample(x)) {
        int64_t padding = stage_plan.pool_kernel == 3 ? 1 : 0;
        x = stage_plan.downsample == Downsample::MaxPool
                ? b_.maxpool(stage_name + ".pool", x, stage_plan.pool_kernel, 2, padding)
                : b_.avgpool(stage_name + ".pool", x, stage_plan.pool_kernel, 2, padding);
      }
      for (size_t index = 0; index < stage_plan.blocks.size(); ++index)
        x = block(stage_name + ".block" + std::to_string(index) + ".", x, stage_plan.blocks[index]);
    }
    if (plan_.last_conv_width > 0)
      x = conv_norm_act("head.conv", x, width(plan_.last_conv_width, kMaxHiddenWidth), 1, 1, 1, plan_.act);
    x = b_.adaptive_avgpool("head.pool", x, 1, 1);
    x = b_.flatten("head.flatten", x);
    if (plan_.dropout_percent > 0)
      x = b_.dropout("head.dropout", x, static_cast<double>(plan_.dropout_percent) / 100.0);
    if (plan_.head_hidden > 0) {
      x = b_.linear("head.fc1", x, width(plan_.head_hidden, kMaxHiddenWidth));
      x = b_.act("head.act", plan_.act, x);
    }
    b_.linear("head.fc", x, spec.num_classes);
    return b_.finish();
  }

 private:
  int64_t width(int64_t planned, int64_t cap = kMaxWidth) const { return std::min(cap, round8(planned >> shrink_)); }
  bool can_downsample(int x) const {
    const TensorShape& shape = b_.shape(x);
    return std::min(shape[2], shape[3]) >= kMinDownsampleSize;
  }
  int64_t stride_for(int x, int64_t planned) const { return planned > 1 && can_downsample(x) ? planned : 1; }

  // Conv (padding k/2, so stride 1 keeps the size) + optional BatchNorm + optional activation.
  int conv_norm_act(const std::string& name, int x, int64_t out, int64_t kernel, int64_t stride, int64_t groups,
                    const std::string& act) {
    int y = b_.conv(name, x, out, kernel, stride, kernel / 2, groups, !plan_.batchnorm);
    if (plan_.batchnorm) y = b_.batchnorm(name + "_bn", y);
    if (!act.empty()) y = b_.act(name + "_act", act, y);
    return y;
  }

  int squeeze_excite(const std::string& prefix, int x, const BlockPlan& block) {
    int64_t channels = b_.channels(x);
    int64_t squeezed = round8(channels / block.se_reduction);
    int s = b_.adaptive_avgpool(prefix + "se.pool", x, 1, 1);
    s = b_.conv(prefix + "se.fc1", s, squeezed, 1);
    s = b_.act(prefix + "se.act", "ReLU", s);
    s = b_.conv(prefix + "se.fc2", s, channels, 1);
    s = b_.act(prefix + "se.gate", plan_.gate, s);
    return b_.mul(prefix + "se.scale", x, s);
  }

  // Identity, or a 1x1 projection (+ norm) when the residual's shape differs from x's.
  int shortcut(const std::string& prefix, int x, int y) {
    if (b_.shape(x) == b_.shape(y)) return x;
    int64_t stride = b_.shape(x)[2] == b_.shape(y)[2] ? 1 : 2;
    return conv_norm_act(prefix + "proj", x, b_.channels(y), 1, stride, 1, "");
  }

  int block(const std::string& prefix, int x, const BlockPlan& block) {
    const int64_t out = width(block.width);
    const int64_t stride = block.strided ? stride_for(x, 2) : 1;
    switch (block.type) {
      case BlockType::Plain: {
        int y = x;
        for (int64_t conv = 0; conv < block.convs; ++conv)
          y = conv_norm_act(prefix + "conv" + std::to_string(conv + 1), y, out, block.kernel, conv == 0 ? stride : 1, 1,
                            block.act);
        return block.se ? squeeze_excite(prefix, y, block) : y;
      }
      case BlockType::Basic: {
        int y = conv_norm_act(prefix + "conv1", x, out, block.kernel, stride, 1, block.act);
        y = conv_norm_act(prefix + "conv2", y, out, block.kernel, 1, 1, "");
        if (block.se) y = squeeze_excite(prefix, y, block);
        y = b_.add(prefix + "add", y, shortcut(prefix, x, y));
        return b_.act(prefix + "act", block.act, y);
      }
      case BlockType::Bottleneck: {
        int64_t inner = round8(out / block.reduction);
        int64_t groups = block.groups;
        while (inner % groups != 0) groups /= 2;
        int y = conv_norm_act(prefix + "conv1", x, inner, 1, 1, 1, block.act);
        y = conv_norm_act(prefix + "conv2", y, inner, block.kernel, stride, groups, block.act);
        y = conv_norm_act(prefix + "conv3", y, out, 1, 1, 1, "");
        if (block.se) y = squeeze_excite(prefix, y, block);
        y = b_.add(prefix + "add", y, shortcut(prefix, x, y));
        return b_.act(prefix + "act", block.act, y);
      }
      case BlockType::Inception: {
        // Branches: 1x1 | 1x1 -> kxk | 1x1 -> 5x5 (or 3x3 -> 3x3) | pool -> 1x1; all keep the
        // same output size, stride 2 included, so Concat lines them up.
        int64_t share = round8(out / block.branches);
        int64_t reduce = round8(share / 2);
        int64_t kernel = std::max<int64_t>(3, block.kernel);
        std::vector<int> outputs;
        outputs.push_back(conv_norm_act(prefix + "branch1", x, share, 1, stride, 1, block.act));
        int y = conv_norm_act(prefix + "branch2.reduce", x, reduce, 1, 1, 1, block.act);
        outputs.push_back(conv_norm_act(prefix + "branch2.conv", y, share, kernel, stride, 1, block.act));
        if (block.branches >= 3) {
          y = conv_norm_act(prefix + "branch3.reduce", x, reduce, 1, 1, 1, block.act);
          if (block.double3x3) {
            y = conv_norm_act(prefix + "branch3.conv1", y, share, 3, 1, 1, block.act);
            y = conv_norm_act(prefix + "branch3.conv2", y, share, 3, stride, 1, block.act);
          } else {
            y = conv_norm_act(prefix + "branch3.conv", y, share, 5, stride, 1, block.act);
          }
          outputs.push_back(y);
        }
        if (block.branches >= 4) {
          y = block.avg_branch ? b_.avgpool(prefix + "branch4.pool", x, 3, stride, 1)
                               : b_.maxpool(prefix + "branch4.pool", x, 3, stride, 1);
          outputs.push_back(conv_norm_act(prefix + "branch4.conv", y, share, 1, 1, 1, block.act));
        }
        y = b_.concat(prefix + "concat", outputs);
        return block.se ? squeeze_excite(prefix, y, block) : y;
      }
      case BlockType::Separable: {
        int64_t in = b_.channels(x);
        if (block.expand == 1) {  // depthwise kxk + pointwise 1x1, both activated
          int y = conv_norm_act(prefix + "dw", x, in, block.kernel, stride, in, block.act);
          if (block.se) y = squeeze_excite(prefix, y, block);
          return conv_norm_act(prefix + "pw", y, out, 1, 1, 1, block.act);
        }
        // Inverted residual: expand 1x1, depthwise kxk, (SE), linear projection 1x1.
        int64_t hidden = std::min(kMaxHiddenWidth, round8(in * block.expand));
        int y = conv_norm_act(prefix + "expand", x, hidden, 1, 1, 1, block.act);
        y = conv_norm_act(prefix + "dw", y, hidden, block.kernel, stride, hidden, block.act);
        if (block.se) y = squeeze_excite(prefix, y, block);
        y = conv_norm_act(prefix + "project", y, out, 1, 1, 1, "");
        if (b_.shape(x) == b_.shape(y)) y = b_.add(prefix + "add", y, x);
        return y;
      }
    }
    DNNCAST_ASSERT(false);
    return x;
  }

  const NetworkPlan& plan_;
  int shrink_;
  GraphBuilder b_;
};

struct Totals {
  int64_t params = 0, macs = 0;
};

Totals totals(const Graph& graph) {
  Totals sum;
  for (int index = 0; index < graph.size(); ++index) {
    OpCost cost = node_cost(graph, index);
    sum.params += cost.params;
    sum.macs += cost.macs;
  }
  return sum;
}

}  // namespace

Graph make_synthetic(uint64_t seed, const ModelSpec& spec_in) {
  ModelSpec spec = spec_in;
  const std::string name = "synthetic:" + std::to_string(seed);
  if (spec.input.empty()) {
    if (spec.seq_len > 0)
      throw InputError(name + ": synthetic networks take an image input CxHxW, not a sequence length");
    spec.input = {3, 224, 224};
  }
  if (spec.input.size() != 3)
    throw InputError(name + ": expected an image input CxHxW, got " + TensorShape(spec.input).to_string());
  for (int64_t dim : spec.input)
    if (dim <= 0)
      throw InputError(name + ": input " + TensorShape(spec.input).to_string() + " has a non-positive dimension");
  if (spec.batch <= 0) throw InputError(name + ": batch must be positive, got " + std::to_string(spec.batch));
  if (spec.num_classes <= 0) throw InputError(name + ": number of classes must be positive");

  const NetworkPlan plan = draw_plan(seed);
  ModelSpec reference;
  reference.batch = 1;
  reference.input = {3, 224, 224};
  reference.num_classes = 1000;
  // Widths halve until the reference build fits; at 8 channels everywhere every plan fits.
  int shrink = 0;
  for (;; ++shrink) {
    Totals sum = totals(PlanBuilder(plan, shrink, name).build(reference));
    if ((sum.params <= kSyntheticMaxParams && sum.macs <= kMaxReferenceMacs) || shrink >= 8) break;
  }
  return PlanBuilder(plan, shrink, name).build(spec);
}

}  // namespace dnncast::models
