// A small multilayer perceptron in Eigen (no DL framework: predictions never load one):
// standardized inputs and target, ReLU hidden layers, a linear output, mean squared error,
// Adam on shuffled minibatches with weight decay, and early stopping on a held-out tenth.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "learn/learn_util.h"

namespace dnncast::learn {

namespace {

using MatrixF = Eigen::MatrixXf;  // float: half the memory traffic of double, plenty for an MLP
using VectorF = Eigen::VectorXf;

struct Layer {
  MatrixF weight;  // out x in
  VectorF bias;    // out
};

class MlpLearner : public Learner {
 public:
  explicit MlpLearner(nlohmann::json hyperparameters) : hyper_(std::move(hyperparameters)) {
    for (const nlohmann::json& width : hyper_.at("hidden"))
      if (!width.is_number_integer() || width.get<int64_t>() < 1)
        throw InputError("mlp: hidden must be a list of positive layer widths, got " + hyper_.at("hidden").dump());
    if (hyper_.at("learning_rate").get<double>() <= 0) throw InputError("mlp: learning_rate must be positive");
    if (hyper_.at("epochs").get<int64_t>() < 1) throw InputError("mlp: epochs must be >= 1");
    if (hyper_.at("batch_size").get<int64_t>() < 1) throw InputError("mlp: batch_size must be >= 1");
  }
  std::string name() const override { return "mlp"; }
  nlohmann::json hyperparameters() const override { return hyper_; }
  std::string model_file() const override { return "mlp.json"; }

  void fit(const Matrix& x, const Vector& y) override {
    detail::check_fit_input("mlp", x, y);
    standardizer_.fit(x);
    MatrixF inputs = standardizer_.transform(x).cast<float>().transpose();  // features x rows
    y_mean_ = y.mean();
    y_scale_ = std::sqrt((y.array() - y_mean_).square().mean());
    if (y_scale_ < 1e-12) y_scale_ = 1.0;
    VectorF targets = ((y.array() - y_mean_) / y_scale_).cast<float>();

    Rng rng(static_cast<uint64_t>(hyper_.at("seed").get<int64_t>()));
    int64_t rows = inputs.cols();
    std::vector<int64_t> order(static_cast<size_t>(rows));
    std::iota(order.begin(), order.end(), 0);
    for (int64_t i = rows - 1; i > 0; --i)
      std::swap(order[static_cast<size_t>(i)], order[rng.below(static_cast<uint64_t>(i + 1))]);
    int64_t held_out = rows >= 20 ? std::max<int64_t>(1, rows / 10) : 0;
    std::vector<int64_t> train(order.begin() + held_out, order.end());
    std::vector<int64_t> valid(order.begin(), order.begin() + held_out);

    init_layers(inputs.rows(), rng);
    std::vector<Layer> m = zeros_like(), v = zeros_like();
    std::vector<Layer> best = layers_;
    double best_loss = HUGE_VAL;
    int64_t patience = hyper_.at("patience").get<int64_t>(), since_best = 0;
    int64_t batch = std::min<int64_t>(hyper_.at("batch_size").get<int64_t>(), static_cast<int64_t>(train.size()));
    float rate = static_cast<float>(hyper_.at("learning_rate").get<double>());
    float decay = static_cast<float>(hyper_.at("weight_decay").get<double>());
    int64_t step = 0;
    MatrixF valid_x = gather(inputs, valid);
    VectorF valid_y = gather(targets, valid);
    for (int64_t epoch = 0; epoch < hyper_.at("epochs").get<int64_t>(); ++epoch) {
      for (int64_t i = static_cast<int64_t>(train.size()) - 1; i > 0; --i)
        std::swap(train[static_cast<size_t>(i)], train[rng.below(static_cast<uint64_t>(i + 1))]);
      for (int64_t start = 0; start < static_cast<int64_t>(train.size()); start += batch) {
        int64_t end = std::min<int64_t>(start + batch, static_cast<int64_t>(train.size()));
        std::vector<int64_t> slice(train.begin() + start, train.begin() + end);
        std::vector<Layer> grads = gradients(gather(inputs, slice), gather(targets, slice));
        adam_step(grads, m, v, ++step, rate, decay);
      }
      if (held_out == 0) continue;
      double loss =
          (forward(valid_x).back().row(0).transpose() - valid_y).squaredNorm() / static_cast<double>(held_out);
      if (loss < best_loss - 1e-7) {
        best_loss = loss;
        best = layers_;
        since_best = 0;
      } else if (++since_best >= patience) {
        break;
      }
    }
    if (held_out > 0) layers_ = best;
    columns_ = x.cols();
  }

  Vector predict(const Matrix& x) const override {
    detail::check_predict_input("mlp", x, columns_);
    MatrixF inputs = standardizer_.transform(x).cast<float>().transpose();
    VectorF out = forward(inputs).back().row(0).transpose();
    return (out.cast<double>().array() * y_scale_ + y_mean_).matrix();
  }

  void save(const std::string& dir) const override {
    if (columns_ < 0) throw InputError("mlp: save called before fit");
    nlohmann::json layers = nlohmann::json::array();
    for (const Layer& layer : layers_)
      layers.push_back({{"weight", detail::matrix_to_json(layer.weight.cast<double>())},
                        {"bias", detail::vector_to_json(layer.bias.cast<double>())}});
    detail::write_json(dir + "/" + model_file(), {{"columns", columns_},
                                                  {"y_mean", y_mean_},
                                                  {"y_scale", y_scale_},
                                                  {"layers", layers},
                                                  {"standardizer", standardizer_.to_json()}});
  }

  void load(const std::string& dir) override {
    std::string path = dir + "/" + model_file();
    nlohmann::json document = detail::read_json(path);
    std::vector<Layer> layers;
    try {
      standardizer_.from_json(document.at("standardizer"));
      for (const nlohmann::json& item : document.at("layers"))
        layers.push_back({detail::matrix_from_json(item.at("weight")).cast<float>(),
                          detail::vector_from_json(item.at("bias")).cast<float>()});
      y_mean_ = document.at("y_mean").get<double>();
      y_scale_ = document.at("y_scale").get<double>();
      columns_ = document.at("columns").get<int64_t>();
    } catch (const nlohmann::json::exception& error) {
      throw InputError(path + ": " + error.what());
    }
    int64_t width = static_cast<int64_t>(standardizer_.active.size());
    if (layers.empty()) throw InputError(path + ": no layers");
    for (const Layer& layer : layers) {
      if (layer.weight.cols() != width || layer.bias.size() != layer.weight.rows())
        throw InputError(path + ": layer shapes do not chain");
      width = layer.weight.rows();
    }
    if (width != 1) throw InputError(path + ": the last layer must have one output");
    layers_ = std::move(layers);
  }

 private:
  static MatrixF gather(const MatrixF& columns, const std::vector<int64_t>& which) {
    MatrixF result(columns.rows(), static_cast<int64_t>(which.size()));
    for (size_t index = 0; index < which.size(); ++index)
      result.col(static_cast<int64_t>(index)) = columns.col(which[index]);
    return result;
  }
  static VectorF gather(const VectorF& values, const std::vector<int64_t>& which) {
    VectorF result(static_cast<int64_t>(which.size()));
    for (size_t index = 0; index < which.size(); ++index) result(static_cast<int64_t>(index)) = values(which[index]);
    return result;
  }

  void init_layers(int64_t inputs, Rng& rng) {
    layers_.clear();
    std::vector<int64_t> widths;
    for (const nlohmann::json& width : hyper_.at("hidden")) widths.push_back(width.get<int64_t>());
    widths.push_back(1);
    int64_t in = inputs;
    for (int64_t out : widths) {
      Layer layer{MatrixF(out, in), VectorF::Zero(out)};
      float scale = static_cast<float>(std::sqrt(2.0 / static_cast<double>(std::max<int64_t>(in, 1))));  // He
      for (int64_t r = 0; r < out; ++r)
        for (int64_t c = 0; c < in; ++c) layer.weight(r, c) = static_cast<float>(rng.normal()) * scale;
      layers_.push_back(std::move(layer));
      in = out;
    }
  }

  std::vector<Layer> zeros_like() const {
    std::vector<Layer> result;
    for (const Layer& layer : layers_)
      result.push_back({MatrixF::Zero(layer.weight.rows(), layer.weight.cols()), VectorF::Zero(layer.bias.size())});
    return result;
  }

  // Activations of every layer (input first); hidden layers after ReLU, the last linear.
  std::vector<MatrixF> forward(const MatrixF& inputs) const {
    std::vector<MatrixF> activations{inputs};
    for (size_t index = 0; index < layers_.size(); ++index) {
      MatrixF z = layers_[index].weight * activations.back();
      z.colwise() += layers_[index].bias;
      if (index + 1 < layers_.size()) z = z.cwiseMax(0.0f);
      activations.push_back(std::move(z));
    }
    return activations;
  }

  std::vector<Layer> gradients(const MatrixF& inputs, const VectorF& targets) const {
    std::vector<MatrixF> activations = forward(inputs);
    float count = static_cast<float>(inputs.cols());
    MatrixF delta = (activations.back().row(0) - targets.transpose()) * (2.0f / count);  // d loss / d output
    std::vector<Layer> grads(layers_.size());
    for (size_t index = layers_.size(); index-- > 0;) {
      grads[index].weight = delta * activations[index].transpose();
      grads[index].bias = delta.rowwise().sum();
      if (index > 0) {
        MatrixF back = layers_[index].weight.transpose() * delta;
        delta = back.cwiseProduct((activations[index].array() > 0.0f).cast<float>().matrix());
      }
    }
    return grads;
  }

  void adam_step(const std::vector<Layer>& grads, std::vector<Layer>& m, std::vector<Layer>& v, int64_t step,
                 float rate, float decay) {
    const float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
    float correction1 = 1.0f - std::pow(beta1, static_cast<float>(step));
    float correction2 = 1.0f - std::pow(beta2, static_cast<float>(step));
    auto update = [&](auto& param, const auto& grad, auto& first, auto& second, float weight_decay) {
      auto g = (grad.array() + weight_decay * param.array()).eval();
      first.array() = beta1 * first.array() + (1 - beta1) * g;
      second.array() = beta2 * second.array() + (1 - beta2) * g.square();
      param.array() -= rate * (first.array() / correction1) / ((second.array() / correction2).sqrt() + epsilon);
    };
    for (size_t index = 0; index < layers_.size(); ++index) {
      update(layers_[index].weight, grads[index].weight, m[index].weight, v[index].weight, decay);
      update(layers_[index].bias, grads[index].bias, m[index].bias, v[index].bias, 0.0f);
    }
  }

  nlohmann::json hyper_;
  detail::Standardizer standardizer_;
  std::vector<Layer> layers_;
  double y_mean_ = 0, y_scale_ = 1;
  int64_t columns_ = -1;
};

}  // namespace

LearnerInfo mlp_learner_info() {
  LearnerInfo info;
  info.name = "mlp";
  info.summary = "multilayer perceptron (Eigen, ReLU, Adam, early stopping)";
  static const nlohmann::json defaults = {{"hidden", {64, 64}}, {"learning_rate", 1e-3}, {"epochs", 200},
                                          {"batch_size", 64},   {"weight_decay", 1e-5},  {"patience", 20},
                                          {"seed", 0}};
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    return std::make_unique<MlpLearner>(detail::merge_hyperparameters("mlp", defaults, given));
  };
  info.sample = [](Rng& rng) {
    int64_t layers = rng.int_between(1, 3);
    int64_t width = int64_t{16} << rng.int_between(0, 3);
    return nlohmann::json{{"hidden", std::vector<int64_t>(static_cast<size_t>(layers), width)},
                          {"learning_rate", rng.log_uniform(3e-4, 3e-3)},
                          {"epochs", 200},
                          {"batch_size", int64_t{32} << rng.int_between(0, 2)},
                          {"weight_decay", rng.log_uniform(1e-6, 1e-3)},
                          {"patience", 20},
                          {"seed", 0}};
  };
  return info;
}

}  // namespace dnncast::learn
