// Every learner must fit known synthetic functions: y = x1*x2 + noise (non-linear learners),
// y = 3 x0 - 2 x1 + 0.5 + noise (linear ones); and survive save/load unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "learn/learner.h"
#include "learn/metrics.h"

namespace dnncast::learn {
namespace {

struct Data {
  Matrix x;
  Vector y;
};

// Five uniform features in [-1, 1]; the target reads only some of them.
Data make_data(int64_t rows, uint64_t seed, double noise, bool product) {
  Rng rng(seed);
  Data data{Matrix(rows, 5), Vector(rows)};
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t col = 0; col < 5; ++col) data.x(row, col) = 2 * rng.unit() - 1;
    double clean = product ? data.x(row, 1) * data.x(row, 2) : 3 * data.x(row, 0) - 2 * data.x(row, 1) + 0.5;
    data.y(row) = clean + noise * rng.normal();
  }
  return data;
}

double rmse(const Vector& a, const Vector& b) {
  return std::sqrt((a - b).squaredNorm() / static_cast<double>(a.size()));
}

std::string temp_dir(const std::string& name) {
  std::string dir = std::string(DNNCAST_BINARY_DIR) + "/test_learn_tmp/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Test error on the product function, in units of the clean signal's spread (std of x1*x2 = 1/3).
class ProductFit : public ::testing::TestWithParam<std::pair<std::string, double>> {};

TEST_P(ProductFit, LearnsTheInteraction) {
  const auto& [name, limit] = GetParam();
  Data train = make_data(800, 1, 0.02, true);
  Data test = make_data(300, 2, 0.0, true);
  std::unique_ptr<Learner> learner = make_learner(name);
  learner->fit(train.x, train.y);
  double error = rmse(learner->predict(test.x), test.y) / (1.0 / 3.0);
  EXPECT_LT(error, limit) << name;
  // A learner that ignored the features would score about 1.
  Vector constant = Vector::Constant(test.y.size(), train.y.mean());
  EXPECT_GT(rmse(constant, test.y) / (1.0 / 3.0), 0.9);
}

INSTANTIATE_TEST_SUITE_P(Learners, ProductFit,
                         ::testing::Values(std::make_pair("xgboost", 0.35), std::make_pair("random_forest", 0.45),
                                           std::make_pair("cart", 0.45), std::make_pair("mlp", 0.25),
                                           std::make_pair("stepwise", 0.1)),
                         [](const auto& info) { return info.param.first; });

TEST(Linear, RidgeAndLassoRecoverALinearFunction) {
  Data train = make_data(400, 3, 0.05, false);
  Data test = make_data(200, 4, 0.0, false);
  for (const char* name : {"ridge", "lasso", "stepwise"}) {
    std::unique_ptr<Learner> learner =
        make_learner(name, name == std::string("stepwise") ? nlohmann::json{} : nlohmann::json{{"alpha", 1e-4}});
    learner->fit(train.x, train.y);
    EXPECT_LT(rmse(learner->predict(test.x), test.y), 0.02) << name;
  }
  // Linear models cannot represent x1*x2: their error stays near the signal's spread.
  Data product = make_data(400, 5, 0.0, true);
  std::unique_ptr<Learner> ridge = make_learner("ridge");
  ridge->fit(product.x, product.y);
  EXPECT_GT(rmse(ridge->predict(product.x), product.y) / (1.0 / 3.0), 0.9);
}

TEST(Linear, RidgeMatchesNumpy) {
  // Independent implementation: numpy's solve of the same standardized normal equations.
  Data train = make_data(60, 6, 0.1, false);
  std::string dir = temp_dir("ridge_numpy");
  {
    std::ofstream out(dir + "/data.csv");
    out.precision(17);
    for (int64_t row = 0; row < train.x.rows(); ++row) {
      for (int64_t col = 0; col < 5; ++col) out << train.x(row, col) << ",";
      out << train.y(row) << "\n";
    }
  }
  std::string script =
      "import numpy as np\n"
      "d = np.loadtxt('" +
      dir +
      "/data.csv', delimiter=',')\n"
      "X, y = d[:, :5], d[:, 5]\n"
      "Z = (X - X.mean(0)) / X.std(0)\n"
      "n = len(y)\n"
      "b = np.linalg.solve(Z.T @ Z + 0.5 * n * np.eye(5), Z.T @ (y - y.mean()))\n"
      "p = Z @ b + y.mean()\n"
      "np.savetxt('" +
      dir + "/numpy.txt', p, fmt='%.17g')\n";
  std::ofstream(dir + "/ridge.py") << script;
  ASSERT_EQ(std::system((std::string(DNNCAST_PYTHON) + " " + dir + "/ridge.py").c_str()), 0);
  std::ifstream in(dir + "/numpy.txt");
  std::unique_ptr<Learner> ridge = make_learner("ridge", {{"alpha", 0.5}});
  ridge->fit(train.x, train.y);
  Vector ours = ridge->predict(train.x);
  for (int64_t row = 0; row < ours.size(); ++row) {
    double theirs = 0;
    in >> theirs;
    EXPECT_NEAR(ours(row), theirs, 1e-8);
  }
}

TEST(Linear, LassoSolutionSatisfiesTheOptimalityConditions) {
  // KKT of (1/2n)|y - Zb|^2 + alpha |b|_1 on standardized Z: |z_j'r/n| <= alpha where b_j = 0,
  // z_j'r/n = alpha sign(b_j) elsewhere. Checked from the saved coefficients.
  Data train = make_data(300, 7, 0.1, false);
  double alpha = 0.05;
  std::unique_ptr<Learner> lasso = make_learner("lasso", {{"alpha", alpha}, {"tolerance", 1e-10}});
  lasso->fit(train.x, train.y);
  std::string dir = temp_dir("lasso_kkt");
  lasso->save(dir);
  nlohmann::json model = nlohmann::json::parse(std::ifstream(dir + "/lasso.json"));
  std::vector<double> beta = model["coefficients"].get<std::vector<double>>();
  ASSERT_EQ(beta.size(), 5u);
  Vector residual = train.y - lasso->predict(train.x);
  double n = static_cast<double>(train.y.size());
  int zeros = 0;
  for (int64_t col = 0; col < 5; ++col) {
    Vector z = train.x.col(col).array() - train.x.col(col).mean();
    z /= std::sqrt(z.squaredNorm() / n);
    double gradient = z.dot(residual) / n;
    if (beta[static_cast<size_t>(col)] == 0) {
      ++zeros;
      EXPECT_LE(std::abs(gradient), alpha + 1e-6) << col;
    } else {
      EXPECT_NEAR(gradient, alpha * (beta[static_cast<size_t>(col)] > 0 ? 1 : -1), 1e-5) << col;
    }
  }
  EXPECT_EQ(zeros, 3);  // the three irrelevant features
}

TEST(Cart, SplitsAStepExactly) {
  Matrix x(100, 2);
  Vector y(100);
  for (int64_t row = 0; row < 100; ++row) {
    x(row, 0) = static_cast<double>(row);
    x(row, 1) = static_cast<double>((row * 37) % 100);
    y(row) = row < 30 ? 1.0 : 5.0;
  }
  std::unique_ptr<Learner> cart = make_learner("cart", {{"max_depth", 1}, {"bins", 255}});
  cart->fit(x, y);
  Vector predicted = cart->predict(x);
  for (int64_t row = 0; row < 100; ++row) EXPECT_DOUBLE_EQ(predicted(row), y(row));
  Matrix probe(2, 2);
  probe << 29.4, 0, 29.6, 0;  // the split sits halfway between 29 and 30
  Vector sides = cart->predict(probe);
  EXPECT_EQ(sides(0), 1.0);
  EXPECT_EQ(sides(1), 5.0);
}

TEST(SaveLoad, EveryLearnerRoundTrips) {
  Data train = make_data(200, 8, 0.05, true);
  for (const std::string& name : learner_names()) {
    nlohmann::json hyper = name == "mlp" ? nlohmann::json{{"epochs", 20}} : nlohmann::json::object();
    std::unique_ptr<Learner> learner = make_learner(name, hyper);
    learner->fit(train.x, train.y);
    std::string dir = temp_dir("roundtrip_" + name);
    learner->save(dir);
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + learner->model_file())) << name;
    std::unique_ptr<Learner> loaded = load_learner(name, learner->hyperparameters(), dir);
    Vector before = learner->predict(train.x), after = loaded->predict(train.x);
    // XGBoost and the MLP compute in float; the rest reload doubles exactly.
    EXPECT_LT((before - after).cwiseAbs().maxCoeff(), 1e-5) << name;
    EXPECT_EQ(loaded->hyperparameters(), learner->hyperparameters()) << name;
  }
}

TEST(Registry, NamesAndErrors) {
  std::vector<std::string> names = learner_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            (std::set<std::string>{"cart", "lasso", "mean", "mlp", "random_forest", "ridge", "stepwise", "xgboost"}));
  try {
    make_learner("svm");
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("known learners: cart, lasso"), std::string::npos) << error.what();
  }
  EXPECT_THROW(make_learner("ridge", {{"alhpa", 1}}), InputError);
  EXPECT_THROW(make_learner("ridge", {{"alpha", "big"}}), InputError);
  EXPECT_THROW(make_learner("xgboost", {{"subsample", 2.0}}), InputError);
  EXPECT_THROW(make_learner("mlp", {{"hidden", {0}}}), InputError);
  // Sampled hyperparameters are always valid.
  Rng rng(3);
  for (const LearnerInfo& info : learner_registry())
    for (int draw = 0; draw < 20; ++draw) EXPECT_NO_THROW(info.make(info.sample(rng))) << info.name;
}

TEST(Registry, BadDataIsAnInputError) {
  Data data = make_data(20, 9, 0.0, false);
  for (const std::string& name : learner_names()) {
    std::unique_ptr<Learner> learner = make_learner(name);
    EXPECT_THROW(learner->predict(data.x), InputError) << name;  // not fitted
    Matrix bad = data.x;
    bad(3, 2) = std::nan("");
    EXPECT_THROW(learner->fit(bad, data.y), InputError) << name;
    EXPECT_THROW(learner->fit(data.x, Vector(data.y.head(5))), InputError) << name;
    EXPECT_THROW(learner->load(temp_dir("empty_" + name)), InputError) << name;
  }
  std::unique_ptr<Learner> ridge = make_learner("ridge");
  ridge->fit(data.x, data.y);
  EXPECT_THROW(ridge->predict(Matrix(2, 4)), InputError);
}

}  // namespace
}  // namespace dnncast::learn
