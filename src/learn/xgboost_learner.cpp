// Gradient-boosted trees and random forests through XGBoost's C API (linked as libxgboost.so).
// The random forest is XGBoost's RF mode: one round of num_parallel_tree trees on row subsamples
// with per-node column sampling and learning rate 1.
//
// Forecasts walk the fitted trees here (Forest below), read from XGBoost's own JSON model after
// every fit and load: XGBoost's prediction entry points build a data proxy per call whose context
// reads the cgroup CPU quota from /sys: 47 us for one row of the shipped time model, 7.5 us walking
// the same trees here (bench/predict_bench, BM_PredictOneCachedGraph). Same trees, same
// float comparisons (go left when value < threshold; missing values take the default branch);
// tests/learn/xgboost_forest_test.cpp checks the outputs against XGBoost's prediction.
//
// save() also writes those trees as flat binary arrays (xgboost.trees, kTreesMagic), stamped with the
// FNV-1a hash of xgboost.json: load() takes them when the stamp matches the JSON beside them, and skips
// XGBoost's JSON parse, its re-serialisation and the parse here (~140 ms for each 2 MB model of the shipped
// set, 3-4 models per CPU forecast). A missing, stale or damaged trees file only means the slow path.
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/json_limits.h"
#include "learn/learn_util.h"

namespace dnncast::learn {

namespace {

// A value never seen in features: XGBoost's "missing" marker for in-place prediction.
constexpr float kMissing = std::numeric_limits<float>::lowest();

// xgboost.trees: this magic, the FNV-1a 64 of the xgboost.json it was written from, the column count, then
// the trees (Forest::write_binary).
constexpr char kTreesMagic[8] = {'D', 'N', 'C', 'T', 'R', 'E', 'E', '1'};
constexpr const char* kTreesFile = "xgboost.trees";

uint64_t fnv1a(const std::string& bytes) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// XGBoost's message, without the stack trace (its "Stack trace:" and "[bt]" lines) it appends.
std::string xgb_error() {
  std::string message = XGBGetLastError();
  size_t end = message.find('\n');
  if (end != std::string::npos) message.erase(end);
  while (!message.empty() && (message.back() == ' ' || message.back() == ':')) message.pop_back();
  return message;
}

void xgb_check(int status, const std::string& what) {
  if (status != 0) throw InputError("xgboost: " + what + ": " + xgb_error());
}

class DMatrix {
 public:
  DMatrix(const std::vector<float>& rows, int64_t row_count, int64_t column_count) {
    xgb_check(XGDMatrixCreateFromMat(rows.data(), static_cast<bst_ulong>(row_count),
                                     static_cast<bst_ulong>(column_count), kMissing, &handle_),
              "creating the training matrix");
  }
  ~DMatrix() { XGDMatrixFree(handle_); }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle handle() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

std::vector<float> row_major_floats(const Matrix& x) {
  std::vector<float> values(static_cast<size_t>(x.rows() * x.cols()));
  for (int64_t row = 0; row < x.rows(); ++row)
    for (int64_t col = 0; col < x.cols(); ++col)
      values[static_cast<size_t>(row * x.cols() + col)] = static_cast<float>(x(row, col));
  return values;
}

std::string number_text(const nlohmann::json& value) {
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  std::ostringstream text;
  text.precision(17);
  text << value.get<double>();
  return text.str();
}

// The trees of a fitted booster as flat arrays: prediction = base score + the sum over trees of
// the leaf a row reaches (reg:squarederror's identity link; RF mode stores its leaves already
// scaled, so the sum is the forest's mean).
class Forest {
 public:
  void clear() {
    nodes_.clear();
    roots_.clear();
    depths_.clear();
    base_score_ = 0;
  }

  // From XGBoost's JSON model document.
  void read(const std::string& text) {
    clear();
    check_json_nesting(text, "XGBoost model");
    try {
      nlohmann::json model = nlohmann::json::parse(text);
      const nlohmann::json& learner = model.at("learner");
      const nlohmann::json& booster_json = learner.at("gradient_booster");
      std::string kind = booster_json.at("name").get<std::string>();
      if (kind != "gbtree") throw InputError("xgboost: booster " + quote(kind) + " is not a tree ensemble (gbtree)");
      base_score_ = text_number(learner.at("learner_model_param").at("base_score"));
      for (const nlohmann::json& tree : booster_json.at("model").at("trees")) {
        const auto& lefts = tree.at("left_children");
        const auto& rights = tree.at("right_children");
        const auto& features = tree.at("split_indices");
        const auto& conditions = tree.at("split_conditions");
        const auto& defaults = tree.at("default_left");
        size_t count = lefts.size();
        if (rights.size() != count || features.size() != count || conditions.size() != count ||
            defaults.size() != count || count == 0)
          throw InputError("xgboost: a tree's node arrays differ in length");
        int32_t offset = static_cast<int32_t>(nodes_.size());
        roots_.push_back(offset);
        for (size_t index = 0; index < count; ++index) {
          Node node;
          int32_t left = lefts[index].get<int32_t>();
          node.value = conditions[index].get<float>();  // a leaf's value, or a split's threshold
          if (left >= 0) {
            node.left = offset + left;
            node.right = offset + rights[index].get<int32_t>();
            node.feature = features[index].get<int32_t>();
            node.default_left =
                defaults[index].is_boolean() ? defaults[index].get<bool>() : defaults[index].get<int>() != 0;
            if (left >= static_cast<int32_t>(count) || node.right - offset >= static_cast<int32_t>(count) ||
                node.feature < 0)
              throw InputError("xgboost: a tree node points outside its tree");
          }
          nodes_.push_back(node);
        }
      }
      compute_depths();
    } catch (const nlohmann::json::exception& error) {
      throw InputError(std::string("xgboost: unexpected model JSON: ") + error.what());
    }
  }

  // The trees as xgboost.trees stores them (after the magic and the stamp): base score, roots, nodes.
  void write_binary(std::ostream& out) const {
    auto put = [&](const void* data, size_t bytes) {
      out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    };
    const uint64_t roots = roots_.size(), nodes = nodes_.size();
    put(&base_score_, sizeof base_score_);
    put(&roots, sizeof roots);
    put(&nodes, sizeof nodes);
    put(roots_.data(), roots * sizeof(int32_t));
    for (const Node& node : nodes_) {
      const int32_t fields[3] = {node.left, node.right, node.feature};
      const uint8_t default_left = node.default_left ? 1 : 0;
      put(fields, sizeof fields);
      put(&node.value, sizeof node.value);
      put(&default_left, 1);
    }
  }
  // False (the forest left empty) when `bytes` are not trees as write_binary() writes them, every index in range.
  bool read_binary(const char* bytes, size_t size) {
    clear();
    size_t at = 0;
    auto get = [&](void* data, size_t count) {
      if (count > size - at) return false;
      std::memcpy(data, bytes + at, count);
      at += count;
      return true;
    };
    uint64_t roots = 0, nodes = 0;
    constexpr size_t kNodeBytes = 3 * sizeof(int32_t) + sizeof(float) + 1;
    if (!get(&base_score_, sizeof base_score_) || !get(&roots, sizeof roots) || !get(&nodes, sizeof nodes) ||
        roots > size / sizeof(int32_t) || nodes > size / kNodeBytes || nodes == 0)
      return fail();
    roots_.resize(roots);
    if (!get(roots_.data(), roots * sizeof(int32_t))) return fail();
    nodes_.resize(nodes);
    for (Node& node : nodes_) {
      int32_t fields[3];
      uint8_t default_left = 0;
      if (!get(fields, sizeof fields) || !get(&node.value, sizeof node.value) || !get(&default_left, 1)) return fail();
      node.left = fields[0];
      node.right = fields[1];
      node.feature = fields[2];
      node.default_left = default_left != 0;
    }
    const int64_t count = static_cast<int64_t>(nodes);
    for (int32_t root : roots_)
      if (root < 0 || root >= count) return fail();
    // Children lie after their parent (XGBoost numbers a tree's nodes breadth-first), so every walk ends at a leaf.
    for (int64_t index = 0; index < count; ++index) {
      const Node& node = nodes_[static_cast<size_t>(index)];
      if (node.left < 0) continue;
      if (node.left <= index || node.left >= count || node.right <= index || node.right >= count || node.feature < 0)
        return fail();
    }
    if (at != size) return fail();
    compute_depths();
    return true;
  }

  int32_t max_feature() const {
    int32_t largest = -1;
    for (const Node& node : nodes_) largest = std::max(largest, node.feature);
    return largest;
  }

  double predict(const float* row) const {
    double sum = 0;
    for (int32_t root : roots_) {
      const Node* node = &nodes_[static_cast<size_t>(root)];
      while (node->left >= 0) {
        float value = row[node->feature];
        bool missing = std::isnan(value) || value == kMissing;
        int32_t next = missing ? (node->default_left ? node->left : node->right)
                               : (value < node->value ? node->left : node->right);
        node = &nodes_[static_cast<size_t>(next)];
      }
      sum += node->value;
    }
    // XGBoost adds the leaves in float; the sum is exact enough in double (differences ~1e-7).
    return base_score_ + sum;
  }

  // `count` rows `stride` floats apart: tree by tree, kLanes rows walking each tree side by side, each a fixed
  // number of levels (the tree's depth; a leaf stays where it is) with selects instead of branches. The nodes of
  // one tree stay in L1 across the rows and the lanes' loads overlap; a row still adds its leaves in tree order,
  // so every output is bit-identical to predict()'s one-row walk (tests/learn/xgboost_forest_test.cpp). With the
  // layer-wise model's row cache it took BM_PredictResnet50Corrected from 1.2 ms to 0.25 ms (docs/RESULTS.md,
  // "Distinct forecasts").
  void predict_many(const float* rows, int64_t count, int64_t stride, double* out) const {
    constexpr int64_t kLanes = 8;
    if (depths_.size() != roots_.size()) {  // trees not stored one after another: the one-row walk
      for (int64_t row = 0; row < count; ++row) out[row] = predict(rows + row * stride);
      return;
    }
    for (int64_t row = 0; row < count; ++row) out[row] = 0;
    for (size_t tree = 0; tree < roots_.size(); ++tree) {
      const int32_t root = roots_[tree];
      const int depth = depths_[tree];
      for (int64_t start = 0; start < count; start += kLanes) {
        const int64_t lanes = std::min(kLanes, count - start);
        int32_t at[kLanes];
        for (int64_t lane = 0; lane < kLanes; ++lane) at[lane] = root;
        for (int level = 0; level < depth; ++level) {
          for (int64_t lane = 0; lane < lanes; ++lane) {
            const Node& node = nodes_[static_cast<size_t>(at[lane])];
            const float value = rows[(start + lane) * stride + std::max(node.feature, 0)];
            const bool missing = std::isnan(value) || value == kMissing;
            const bool left = missing ? node.default_left : value < node.value;
            const int32_t next = left ? node.left : node.right;
            at[lane] = node.left < 0 ? at[lane] : next;
          }
        }
        for (int64_t lane = 0; lane < lanes; ++lane) out[start + lane] += nodes_[static_cast<size_t>(at[lane])].value;
      }
    }
    for (int64_t row = 0; row < count; ++row) out[row] = base_score_ + out[row];
  }

 private:
  struct Node {
    int32_t left = -1, right = -1, feature = -1;
    float value = 0;
    bool default_left = false;
  };
  bool fail() {
    clear();
    return false;
  }
  // Each tree's depth (edges on its longest walk), for predict_many's fixed-length walks. A tree's nodes run from
  // its root to the next root, children after their parents (checked on load).
  void compute_depths() {
    depths_.assign(roots_.size(), 0);
    std::vector<int> level(nodes_.size(), 0);
    for (size_t tree = 0; tree < roots_.size(); ++tree) {
      const size_t begin = static_cast<size_t>(roots_[tree]);
      const size_t end = tree + 1 < roots_.size() ? static_cast<size_t>(roots_[tree + 1]) : nodes_.size();
      if (end <= begin) {
        depths_.clear();
        return;
      }
      for (size_t index = begin; index < end; ++index) {
        const Node& node = nodes_[index];
        depths_[tree] = std::max(depths_[tree], level[index]);
        if (node.left < 0) continue;
        if (static_cast<size_t>(node.left) >= end || static_cast<size_t>(node.right) >= end) {
          depths_.clear();  // a child in another tree (not XGBoost's layout): predict_many walks row by row
          return;
        }
        level[static_cast<size_t>(node.left)] = level[index] + 1;
        level[static_cast<size_t>(node.right)] = level[index] + 1;
      }
    }
  }
  static double text_number(const nlohmann::json& value) {
    return value.is_string() ? std::stod(value.get<std::string>()) : value.get<double>();
  }
  std::vector<Node> nodes_;
  std::vector<int32_t> roots_;
  std::vector<int> depths_;  // per tree
  double base_score_ = 0;
};

// A booster that lives only as long as one fit or load. XGBoost keeps per-booster thread-local
// state (the buffers its C API hands out) that a booster freed from a static destructor, after the
// thread's locals are gone, frees a second time (seen as "free(): invalid pointer" at exit); the
// learner keeps the model as JSON text and its trees, never a booster.
class ScopedBooster {
 public:
  explicit ScopedBooster(DMatrixHandle train = nullptr) {
    DMatrixHandle handles[] = {train};
    xgb_check(XGBoosterCreate(train ? handles : nullptr, train ? 1 : 0, &handle_), "creating the booster");
  }
  ~ScopedBooster() { XGBoosterFree(handle_); }
  ScopedBooster(const ScopedBooster&) = delete;
  ScopedBooster& operator=(const ScopedBooster&) = delete;
  BoosterHandle handle() const { return handle_; }
  void set(const char* key, const std::string& value) {
    xgb_check(XGBoosterSetParam(handle_, key, value.c_str()), std::string("setting ") + key + "=" + value);
  }
  std::string model_json() const {
    bst_ulong length = 0;
    const char* buffer = nullptr;
    xgb_check(XGBoosterSaveModelToBuffer(handle_, "{\"format\": \"json\"}", &length, &buffer), "reading the model");
    return std::string(buffer, length);
  }

 private:
  BoosterHandle handle_ = nullptr;
};

class XGBoostLearner : public Learner {
 public:
  XGBoostLearner(std::string name, nlohmann::json hyperparameters, bool forest)
      : name_(std::move(name)), hyper_(std::move(hyperparameters)), forest_(forest) {
    validate();
  }

  std::string name() const override { return name_; }
  nlohmann::json hyperparameters() const override { return hyper_; }
  std::string model_file() const override { return "xgboost.json"; }

  void fit(const Matrix& x, const Vector& y) override {
    detail::check_fit_input(name_, x, y);
    std::vector<float> rows = row_major_floats(x);
    DMatrix train(rows, x.rows(), x.cols());
    std::vector<float> labels(y.data(), y.data() + y.size());
    xgb_check(XGDMatrixSetFloatInfo(train.handle(), "label", labels.data(), static_cast<bst_ulong>(labels.size())),
              "setting labels");
    forget();
    ScopedBooster booster(train.handle());
    auto set = [&](const char* key, const std::string& value) { booster.set(key, value); };
    set("objective", "reg:squarederror");
    set("tree_method", "hist");
    set("verbosity", "0");
    set("nthread", std::to_string(fit_threads()));
    set("seed", number_text(hyper_.at("seed")));
    set("max_depth", number_text(hyper_.at("max_depth")));
    set("min_child_weight", number_text(hyper_.at("min_child_weight")));
    set("subsample", number_text(hyper_.at("subsample")));
    set("lambda", number_text(hyper_.at("lambda")));
    // Start from the mean target, not XGBoost's 0.5, so few rounds already fit a log-time target.
    set("base_score", number_text(nlohmann::json(y.mean())));
    int64_t rounds = 1;
    if (forest_) {
      set("num_parallel_tree", number_text(hyper_.at("trees")));
      set("colsample_bynode", number_text(hyper_.at("colsample_bynode")));
      set("learning_rate", "1");
    } else {
      set("learning_rate", number_text(hyper_.at("learning_rate")));
      set("colsample_bytree", number_text(hyper_.at("colsample_bytree")));
      set("alpha", number_text(hyper_.at("alpha")));
      rounds = hyper_.at("rounds").get<int64_t>();
    }
    for (int64_t round = 0; round < rounds; ++round)
      xgb_check(XGBoosterUpdateOneIter(booster.handle(), static_cast<int>(round), train.handle()), "boosting");
    model_json_ = booster.model_json();
    forest_trees_.read(model_json_);
    columns_ = x.cols();
  }

  Vector predict(const Matrix& x) const override {
    detail::check_predict_input(name_, x, columns_);
    std::vector<float> rows = row_major_floats(x);
    Vector result(x.rows());
    if (x.rows() == 0) return result;
    predict_in_place(rows.data(), x.rows(), result.data());
    return result;
  }

  void predict_rows(const float* rows, int64_t count, int64_t columns, double* out) const override {
    if (columns_ < 0) throw InputError(name_ + ": predict called before fit or load");
    if (columns != columns_)
      throw InputError(name_ + ": fitted on " + std::to_string(columns_) + " features, asked with " +
                       std::to_string(columns));
    if (count > 0) predict_in_place(rows, count, out);
  }

  void save(const std::string& dir) const override {
    if (columns_ < 0) throw InputError(name_ + ": save called before fit");
    std::string path = dir + "/" + model_file();
    std::ofstream out(path, std::ios::binary);
    out << model_json_;
    out.close();
    if (!out) throw InputError("xgboost: cannot write " + path);
    const std::string trees_path = dir + "/" + kTreesFile;
    std::ofstream trees(trees_path, std::ios::binary);
    const uint64_t stamp = fnv1a(model_json_);
    const int64_t columns = columns_;
    trees.write(kTreesMagic, sizeof kTreesMagic);
    trees.write(reinterpret_cast<const char*>(&stamp), sizeof stamp);
    trees.write(reinterpret_cast<const char*>(&columns), sizeof columns);
    forest_trees_.write_binary(trees);
    trees.close();
    if (!trees) throw InputError("xgboost: cannot write " + trees_path);
  }

  // XGBoost reads the file (and refuses what it cannot read); the trees come from its JSON.
  void load(const std::string& dir) override {
    forget();
    std::string path = dir + "/" + model_file();
    if (load_trees(dir, path)) return;
    ScopedBooster booster;
    if (XGBoosterLoadModel(booster.handle(), path.c_str()) != 0)
      throw InputError("cannot load XGBoost model " + path + ": " + xgb_error());
    bst_ulong features = 0;
    xgb_check(XGBoosterGetNumFeature(booster.handle(), &features), "reading the feature count");
    std::string text = booster.model_json();
    Forest trees;
    trees.read(text);
    if (trees.max_feature() >= static_cast<int64_t>(features))
      throw InputError("cannot load XGBoost model " + path + ": a split uses a feature beyond its " +
                       std::to_string(features) + " columns");
    model_json_ = std::move(text);
    forest_trees_ = std::move(trees);
    columns_ = static_cast<int64_t>(features);
  }

 private:
  void validate() const {
    auto positive = [&](const char* key) {
      if (hyper_.at(key).get<double>() <= 0) throw InputError(name_ + ": " + key + " must be positive");
    };
    auto fraction = [&](const char* key) {
      double value = hyper_.at(key).get<double>();
      if (!(value > 0 && value <= 1)) throw InputError(name_ + ": " + key + " must be in (0, 1]");
    };
    positive("max_depth");
    fraction("subsample");
    if (forest_) {
      positive("trees");
      fraction("colsample_bynode");
    } else {
      positive("rounds");
      fraction("learning_rate");
      fraction("colsample_bytree");
    }
  }

  // The fast path of load(): the trees file beside `json_path`, when it was written from those very bytes.
  bool load_trees(const std::string& dir, const std::string& json_path) {
    const std::string trees = file_bytes(dir + "/" + kTreesFile);
    constexpr size_t kHeader = sizeof kTreesMagic + sizeof(uint64_t) + sizeof(int64_t);
    if (trees.size() <= kHeader || std::memcmp(trees.data(), kTreesMagic, sizeof kTreesMagic) != 0) return false;
    std::string json = file_bytes(json_path);
    uint64_t stamp = 0;
    int64_t columns = 0;
    std::memcpy(&stamp, trees.data() + sizeof kTreesMagic, sizeof stamp);
    std::memcpy(&columns, trees.data() + sizeof kTreesMagic + sizeof stamp, sizeof columns);
    if (json.empty() || stamp != fnv1a(json) || columns <= 0) return false;
    Forest forest;
    if (!forest.read_binary(trees.data() + kHeader, trees.size() - kHeader) || forest.max_feature() >= columns)
      return false;
    model_json_ = std::move(json);
    forest_trees_ = std::move(forest);
    columns_ = columns;
    return true;
  }

  void forget() {
    model_json_.clear();
    forest_trees_.clear();
    columns_ = -1;
  }

  void predict_in_place(const float* rows, int64_t row_count, double* out) const {
    forest_trees_.predict_many(rows, row_count, columns_, out);
  }

  std::string name_;
  nlohmann::json hyper_;
  bool forest_;
  std::string model_json_;  // XGBoost's JSON model, as save() writes it
  Forest forest_trees_;
  int64_t columns_ = -1;
};

const nlohmann::json kBoostDefaults = {{"rounds", 400},           {"learning_rate", 0.05}, {"max_depth", 6},
                                       {"min_child_weight", 1.0}, {"subsample", 0.8},      {"colsample_bytree", 0.8},
                                       {"lambda", 1.0},           {"alpha", 0.0},          {"seed", 0}};
const nlohmann::json kForestDefaults = {{"trees", 200},       {"max_depth", 12},         {"min_child_weight", 1.0},
                                        {"subsample", 0.632}, {"colsample_bynode", 0.8}, {"lambda", 0.0},
                                        {"seed", 0}};

}  // namespace

LearnerInfo xgboost_learner_info() {
  LearnerInfo info;
  info.name = "xgboost";
  info.summary = "gradient-boosted trees (XGBoost hist)";
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    return std::make_unique<XGBoostLearner>("xgboost", detail::merge_hyperparameters("xgboost", kBoostDefaults, given),
                                            false);
  };
  info.sample = [](Rng& rng) {
    return nlohmann::json{{"rounds", rng.int_between(100, 800)},
                          {"learning_rate", rng.log_uniform(0.02, 0.3)},
                          {"max_depth", rng.int_between(3, 10)},
                          {"min_child_weight", rng.log_uniform(0.5, 10)},
                          {"subsample", 0.5 + 0.5 * rng.unit()},
                          {"colsample_bytree", 0.3 + 0.7 * rng.unit()},
                          {"lambda", rng.log_uniform(0.1, 10)},
                          {"alpha", 0.0},
                          {"seed", 0}};
  };
  return info;
}

LearnerInfo random_forest_learner_info() {
  LearnerInfo info;
  info.name = "random_forest";
  info.summary = "random forest (XGBoost RF mode: 1 round of parallel trees, row and column sampling)";
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    return std::make_unique<XGBoostLearner>(
        "random_forest", detail::merge_hyperparameters("random_forest", kForestDefaults, given), true);
  };
  info.sample = [](Rng& rng) {
    return nlohmann::json{{"trees", rng.int_between(50, 300)},
                          {"max_depth", rng.int_between(6, 16)},
                          {"min_child_weight", rng.log_uniform(0.5, 5)},
                          {"subsample", 0.5 + 0.4 * rng.unit()},
                          {"colsample_bynode", 0.2 + 0.7 * rng.unit()},
                          {"lambda", 0.0},
                          {"seed", 0}};
  };
  return info;
}

}  // namespace dnncast::learn
