// CART regression tree: binary splits "x[f] <= t" chosen by the largest drop in squared error.
// Candidate thresholds are up to `bins` quantile edges per feature (histogram splitting), so a
// level of the tree costs one pass over its rows and features.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "core/error.h"
#include "learn/json_int.h"
#include "learn/learn_util.h"

namespace dnncast::learn {

namespace {

struct TreeNode {
  int feature = -1;  // -1: leaf
  double threshold = 0;
  int left = -1, right = -1;
  double value = 0;
};

class CartLearner : public Learner {
 public:
  explicit CartLearner(nlohmann::json hyperparameters) : hyper_(std::move(hyperparameters)) {
    if (hyper_.at("max_depth").get<int64_t>() < 0) throw InputError("cart: max_depth must be >= 0");
    if (hyper_.at("min_samples_leaf").get<int64_t>() < 1) throw InputError("cart: min_samples_leaf must be >= 1");
    int64_t bins = hyper_.at("bins").get<int64_t>();
    if (bins < 2 || bins > 255) throw InputError("cart: bins must be in [2, 255]");
  }
  std::string name() const override { return "cart"; }
  nlohmann::json hyperparameters() const override { return hyper_; }
  std::string model_file() const override { return "cart.json"; }

  void fit(const Matrix& x, const Vector& y) override {
    detail::check_fit_input("cart", x, y);
    rows_ = x.rows();
    cols_ = x.cols();
    make_bins(x);
    nodes_.clear();
    std::vector<int> indices(static_cast<size_t>(rows_));
    std::iota(indices.begin(), indices.end(), 0);
    y_ = &y;
    grow(indices, 0);
    y_ = nullptr;
    binned_.clear();
    columns_ = x.cols();
  }

  Vector predict(const Matrix& x) const override {
    detail::check_predict_input("cart", x, columns_);
    Vector result(x.rows());
    for (int64_t row = 0; row < x.rows(); ++row) {
      int node = 0;
      while (nodes_[static_cast<size_t>(node)].feature >= 0) {
        const TreeNode& split = nodes_[static_cast<size_t>(node)];
        node = x(row, split.feature) <= split.threshold ? split.left : split.right;
      }
      result(row) = nodes_[static_cast<size_t>(node)].value;
    }
    return result;
  }

  void save(const std::string& dir) const override {
    if (columns_ < 0) throw InputError("cart: save called before fit");
    nlohmann::json nodes = nlohmann::json::array();
    for (const TreeNode& node : nodes_)
      nodes.push_back({node.feature, node.threshold, node.left, node.right, node.value});
    detail::write_json(dir + "/" + model_file(), {{"columns", columns_}, {"nodes", nodes}});
  }

  void load(const std::string& dir) override {
    std::string path = dir + "/" + model_file();
    nlohmann::json document = detail::read_json(path);
    std::vector<TreeNode> nodes;
    int64_t columns = 0;
    try {
      columns = document.at("columns").get<int64_t>();
      for (const nlohmann::json& item : document.at("nodes"))
        nodes.push_back({json_int(item.at(0), "tree node"), item.at(1).get<double>(), json_int(item.at(2), "tree node"),
                         json_int(item.at(3), "tree node"), item.at(4).get<double>()});
    } catch (const nlohmann::json::exception& error) {
      throw InputError(path + ": " + error.what());
    }
    // Children always come after their parent, so a walk from the root ends.
    int count = static_cast<int>(nodes.size());
    if (count == 0) throw InputError(path + ": no nodes");
    for (int index = 0; index < count; ++index) {
      const TreeNode& node = nodes[static_cast<size_t>(index)];
      if (node.feature < 0) continue;
      if (node.feature >= columns || node.left <= index || node.right <= index || node.left >= count ||
          node.right >= count)
        throw InputError(path + ": node " + std::to_string(index) + " is malformed");
    }
    nodes_ = std::move(nodes);
    columns_ = columns;
  }

  int depth() const { return depth_of(0); }
  size_t leaves() const {
    return static_cast<size_t>(
        std::count_if(nodes_.begin(), nodes_.end(), [](const TreeNode& n) { return n.feature < 0; }));
  }

 private:
  int depth_of(int node) const {
    const TreeNode& n = nodes_[static_cast<size_t>(node)];
    return n.feature < 0 ? 0 : 1 + std::max(depth_of(n.left), depth_of(n.right));
  }

  // Edges per feature: a value goes to the first bin whose edge is >= it (the last bin otherwise).
  void make_bins(const Matrix& x) {
    int64_t bins = hyper_.at("bins").get<int64_t>();
    edges_.assign(static_cast<size_t>(cols_), {});
    binned_.assign(static_cast<size_t>(rows_ * cols_), 0);
    std::vector<double> values(static_cast<size_t>(rows_));
    for (int64_t col = 0; col < cols_; ++col) {
      values.resize(static_cast<size_t>(rows_));  // the previous column's unique() shrank it
      for (int64_t row = 0; row < rows_; ++row) values[static_cast<size_t>(row)] = x(row, col);
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      std::vector<double>& edges = edges_[static_cast<size_t>(col)];
      size_t distinct = values.size();
      if (distinct <= 1) continue;
      size_t wanted = std::min<size_t>(static_cast<size_t>(bins), distinct);
      for (size_t cut = 1; cut < wanted; ++cut) {
        size_t position = cut * distinct / wanted;  // boundary between values[position-1] and values[position]
        double edge = 0.5 * (values[position - 1] + values[position]);
        if (edges.empty() || edge > edges.back()) edges.push_back(edge);
      }
      for (int64_t row = 0; row < rows_; ++row) {
        double value = x(row, col);
        size_t bin = static_cast<size_t>(std::lower_bound(edges.begin(), edges.end(), value) - edges.begin());
        binned_[static_cast<size_t>(row * cols_ + col)] = static_cast<uint8_t>(bin);
      }
    }
  }

  int grow(std::vector<int>& indices, int64_t depth) {
    int node_index = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
    const Vector& y = *y_;
    double sum = 0, sum2 = 0;
    for (int row : indices) {
      sum += y(row);
      sum2 += y(row) * y(row);
    }
    double count = static_cast<double>(indices.size());
    nodes_[static_cast<size_t>(node_index)].value = sum / count;
    int64_t min_leaf = hyper_.at("min_samples_leaf").get<int64_t>();
    double node_sse = sum2 - sum * sum / count;
    if (depth >= hyper_.at("max_depth").get<int64_t>() || static_cast<int64_t>(indices.size()) < 2 * min_leaf ||
        node_sse <= 1e-12 * std::max(1.0, sum2))
      return node_index;

    // Histograms of (sum of y, count) per feature and bin.
    std::vector<double> hist_sum, hist_count;
    int best_feature = -1;
    size_t best_bin = 0;
    double best_gain = hyper_.at("min_gain").get<double>() * std::max(node_sse, 0.0);
    best_gain = std::max(best_gain, 1e-12 * std::max(1.0, node_sse));
    for (int64_t col = 0; col < cols_; ++col) {
      const std::vector<double>& edges = edges_[static_cast<size_t>(col)];
      if (edges.empty()) continue;
      size_t bins = edges.size() + 1;
      hist_sum.assign(bins, 0.0);
      hist_count.assign(bins, 0.0);
      for (int row : indices) {
        uint8_t bin = binned_[static_cast<size_t>(row * cols_ + col)];
        hist_sum[bin] += y(row);
        hist_count[bin] += 1;
      }
      double left_sum = 0, left_count = 0;
      for (size_t bin = 0; bin + 1 < bins; ++bin) {
        left_sum += hist_sum[bin];
        left_count += hist_count[bin];
        double right_count = count - left_count;
        if (left_count < static_cast<double>(min_leaf) || right_count < static_cast<double>(min_leaf)) continue;
        double right_sum = sum - left_sum;
        // SSE drop = left_sum^2/left_count + right_sum^2/right_count - sum^2/count.
        double gain = left_sum * left_sum / left_count + right_sum * right_sum / right_count - sum * sum / count;
        if (gain > best_gain) {
          best_gain = gain;
          best_feature = static_cast<int>(col);
          best_bin = bin;
        }
      }
    }
    if (best_feature < 0) return node_index;
    std::vector<int> left, right;
    for (int row : indices)
      (binned_[static_cast<size_t>(row * cols_ + best_feature)] <= best_bin ? left : right).push_back(row);
    std::vector<int>().swap(indices);  // release before recursing
    nodes_[static_cast<size_t>(node_index)].feature = best_feature;
    nodes_[static_cast<size_t>(node_index)].threshold = edges_[static_cast<size_t>(best_feature)][best_bin];
    int left_child = grow(left, depth + 1);
    int right_child = grow(right, depth + 1);
    nodes_[static_cast<size_t>(node_index)].left = left_child;
    nodes_[static_cast<size_t>(node_index)].right = right_child;
    return node_index;
  }

  nlohmann::json hyper_;
  std::vector<TreeNode> nodes_;
  int64_t columns_ = -1;
  // Fit-time state.
  int64_t rows_ = 0, cols_ = 0;
  std::vector<std::vector<double>> edges_;
  std::vector<uint8_t> binned_;  // rows x cols, row-major
  const Vector* y_ = nullptr;
};

}  // namespace

LearnerInfo cart_learner_info() {
  LearnerInfo info;
  info.name = "cart";
  info.summary = "CART regression tree (histogram splits)";
  static const nlohmann::json defaults = {{"max_depth", 12}, {"min_samples_leaf", 2}, {"bins", 64}, {"min_gain", 0.0}};
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    return std::make_unique<CartLearner>(detail::merge_hyperparameters("cart", defaults, given));
  };
  info.sample = [](Rng& rng) {
    return nlohmann::json{{"max_depth", rng.int_between(4, 20)},
                          {"min_samples_leaf", rng.int_between(1, 10)},
                          {"bins", rng.int_between(16, 255)},
                          {"min_gain", 0.0}};
  };
  return info;
}

}  // namespace dnncast::learn
