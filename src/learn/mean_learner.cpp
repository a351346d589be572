// The simplest learner: the mean of the training targets. With the log_residual target transform
// it is the fitted roofline alone, so AutoML always has the analytic model among its candidates
// and picks a learned correction only where cross-validation shows one helps.
#include "core/error.h"
#include "learn/learn_util.h"

namespace dnncast::learn {

namespace {

class MeanLearner : public Learner {
 public:
  std::string name() const override { return "mean"; }
  nlohmann::json hyperparameters() const override { return nlohmann::json::object(); }
  std::string model_file() const override { return "mean.json"; }

  void fit(const Matrix& x, const Vector& y) override {
    detail::check_fit_input("mean", x, y);
    mean_ = y.mean();
    columns_ = x.cols();
  }

  Vector predict(const Matrix& x) const override {
    detail::check_predict_input("mean", x, columns_);
    return Vector::Constant(x.rows(), mean_);
  }

  void save(const std::string& dir) const override {
    if (columns_ < 0) throw InputError("mean: save called before fit");
    detail::write_json(dir + "/" + model_file(), {{"columns", columns_}, {"mean", mean_}});
  }

  void load(const std::string& dir) override {
    std::string path = dir + "/" + model_file();
    nlohmann::json document = detail::read_json(path);
    try {
      mean_ = document.at("mean").get<double>();
      columns_ = document.at("columns").get<int64_t>();
    } catch (const nlohmann::json::exception& error) {
      throw InputError(path + ": " + error.what());
    }
  }

 private:
  double mean_ = 0;
  int64_t columns_ = -1;
};

}  // namespace

LearnerInfo mean_learner_info() {
  LearnerInfo info;
  info.name = "mean";
  info.summary = "mean of the targets (with log_residual: the fitted roofline alone)";
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    detail::merge_hyperparameters("mean", nlohmann::json::object(), given);
    return std::make_unique<MeanLearner>();
  };
  info.sample = [](Rng&) { return nlohmann::json::object(); };
  return info;
}

}  // namespace dnncast::learn
