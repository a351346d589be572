// Stepwise linear regression with pairwise interactions (the "guided sampling" workhorse of
// Iqbal et al.): the strongest main effects (by |correlation| with the target, near-duplicates
// skipped) and all their pairwise products are the candidate terms; forward selection adds the
// term that lowers the information criterion most (via Gram-Schmidt, one projection per candidate
// and step), backward elimination then drops terms while that lowers it further.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "learn/json_int.h"
#include "learn/learn_util.h"

namespace dnncast::learn {

namespace {

struct Term {
  int first = -1;
  int second = -1;  // -1 for a main effect
};

class StepwiseLearner : public Learner {
 public:
  explicit StepwiseLearner(nlohmann::json hyperparameters) : hyper_(std::move(hyperparameters)) {
    std::string criterion = hyper_.at("criterion").get<std::string>();
    if (criterion != "aic" && criterion != "bic")
      throw InputError("stepwise: criterion must be 'aic' or 'bic', got " + quote(criterion));
    if (hyper_.at("candidates").get<int64_t>() < 1) throw InputError("stepwise: candidates must be >= 1");
    if (hyper_.at("max_terms").get<int64_t>() < 1) throw InputError("stepwise: max_terms must be >= 1");
  }
  std::string name() const override { return "stepwise"; }
  nlohmann::json hyperparameters() const override { return hyper_; }
  std::string model_file() const override { return "stepwise.json"; }

  void fit(const Matrix& x, const Vector& y) override {
    detail::check_fit_input("stepwise", x, y);
    standardizer_.fit(x);
    Matrix z = standardizer_.transform(x);
    int64_t rows = z.rows();
    std::vector<int> mains = screen(z, y);

    // Candidate terms over the screened main effects, each standardized.
    terms_.clear();
    for (int main : mains) terms_.push_back({main, -1});
    if (hyper_.at("interactions").get<bool>())
      for (size_t a = 0; a < mains.size(); ++a)
        for (size_t b = a + 1; b < mains.size(); ++b) terms_.push_back({mains[a], mains[b]});
    Matrix candidates(rows, static_cast<int64_t>(terms_.size()));
    for (size_t term = 0; term < terms_.size(); ++term)
      candidates.col(static_cast<int64_t>(term)) = raw_term(z, terms_[term]);
    term_mean_ = candidates.colwise().mean().transpose();
    term_scale_.resize(candidates.cols());
    for (int64_t col = 0; col < candidates.cols(); ++col) {
      candidates.col(col).array() -= term_mean_(col);
      double norm = std::sqrt(candidates.col(col).squaredNorm() / static_cast<double>(rows));
      term_scale_(col) = norm > 1e-12 ? norm : 1.0;
      candidates.col(col) /= term_scale_(col);
    }

    std::vector<int> selected = forward(candidates, y);
    selected = backward(candidates, y, selected);

    // Keep only the chosen terms, in a stable order.
    std::sort(selected.begin(), selected.end());
    std::vector<Term> kept;
    Vector kept_mean(static_cast<int64_t>(selected.size())), kept_scale(static_cast<int64_t>(selected.size()));
    Matrix design(rows, static_cast<int64_t>(selected.size()));
    for (size_t index = 0; index < selected.size(); ++index) {
      kept.push_back(terms_[static_cast<size_t>(selected[index])]);
      kept_mean(static_cast<int64_t>(index)) = term_mean_(selected[index]);
      kept_scale(static_cast<int64_t>(index)) = term_scale_(selected[index]);
      design.col(static_cast<int64_t>(index)) = candidates.col(selected[index]);
    }
    terms_ = kept;
    term_mean_ = kept_mean;
    term_scale_ = kept_scale;
    intercept_ = y.mean();
    coefficients_ =
        selected.empty() ? Vector() : Vector(design.colPivHouseholderQr().solve((y.array() - intercept_).matrix()));
    columns_ = x.cols();
  }

  Vector predict(const Matrix& x) const override {
    detail::check_predict_input("stepwise", x, columns_);
    Vector result = Vector::Constant(x.rows(), intercept_);
    if (terms_.empty()) return result;
    Matrix z = standardizer_.transform(x);
    for (size_t term = 0; term < terms_.size(); ++term) {
      int64_t index = static_cast<int64_t>(term);
      result += coefficients_(index) *
                ((raw_term(z, terms_[term]).array() - term_mean_(index)) / term_scale_(index)).matrix();
    }
    return result;
  }

  // The chosen terms by column index ("12" or "3*12"), for reports.
  std::vector<std::string> term_names() const {
    std::vector<std::string> names;
    for (const Term& term : terms_) {
      int first = standardizer_.active[static_cast<size_t>(term.first)];
      names.push_back(term.second < 0 ? std::to_string(first)
                                      : std::to_string(first) + "*" +
                                            std::to_string(standardizer_.active[static_cast<size_t>(term.second)]));
    }
    return names;
  }

  void save(const std::string& dir) const override {
    if (columns_ < 0) throw InputError("stepwise: save called before fit");
    nlohmann::json terms = nlohmann::json::array();
    for (const Term& term : terms_) terms.push_back({term.first, term.second});
    detail::write_json(dir + "/" + model_file(), {{"columns", columns_},
                                                  {"intercept", intercept_},
                                                  {"terms", terms},
                                                  {"term_names", term_names()},
                                                  {"term_mean", detail::vector_to_json(term_mean_)},
                                                  {"term_scale", detail::vector_to_json(term_scale_)},
                                                  {"coefficients", detail::vector_to_json(coefficients_)},
                                                  {"standardizer", standardizer_.to_json()}});
  }

  void load(const std::string& dir) override {
    std::string path = dir + "/" + model_file();
    nlohmann::json document = detail::read_json(path);
    try {
      standardizer_.from_json(document.at("standardizer"));
      terms_.clear();
      for (const nlohmann::json& term : document.at("terms"))
        terms_.push_back({json_int(term.at(0), "stepwise term"), json_int(term.at(1), "stepwise term")});
      term_mean_ = detail::vector_from_json(document.at("term_mean"));
      term_scale_ = detail::vector_from_json(document.at("term_scale"));
      coefficients_ = detail::vector_from_json(document.at("coefficients"));
      intercept_ = document.at("intercept").get<double>();
      columns_ = document.at("columns").get<int64_t>();
    } catch (const nlohmann::json::exception& error) {
      throw InputError(path + ": " + error.what());
    }
    int64_t active = static_cast<int64_t>(standardizer_.active.size());
    for (const Term& term : terms_)
      if (term.first < 0 || term.first >= active || term.second >= active)
        throw InputError(path + ": term out of range");
    if (coefficients_.size() != static_cast<int64_t>(terms_.size()) || term_mean_.size() != coefficients_.size() ||
        term_scale_.size() != coefficients_.size())
      throw InputError(path + ": term and coefficient counts disagree");
  }

 private:
  static Vector raw_term(const Matrix& z, const Term& term) {
    if (term.second < 0) return z.col(term.first);
    return z.col(term.first).cwiseProduct(z.col(term.second));
  }

  double criterion(double rss, int64_t rows, int64_t terms) const {
    double n = static_cast<double>(rows);
    double penalty = hyper_.at("criterion") == "bic" ? std::log(n) : 2.0;
    return n * std::log(std::max(rss, 1e-300) / n) + penalty * static_cast<double>(terms + 1);
  }

  // The strongest main effects by |correlation|, skipping columns almost collinear with one taken.
  std::vector<int> screen(const Matrix& z, const Vector& y) const {
    int64_t cols = z.cols();
    Vector centered = y.array() - y.mean();
    double y_norm = std::max(centered.norm(), 1e-300);
    std::vector<std::pair<double, int>> scored;
    for (int64_t col = 0; col < cols; ++col) {
      double norm = z.col(col).norm();
      if (norm < 1e-12) continue;
      scored.emplace_back(-std::abs(z.col(col).dot(centered)) / (norm * y_norm), static_cast<int>(col));
    }
    std::sort(scored.begin(), scored.end());
    size_t wanted = static_cast<size_t>(hyper_.at("candidates").get<int64_t>());
    std::vector<int> picked;
    for (const auto& [score, col] : scored) {
      if (picked.size() >= wanted) break;
      bool duplicate = false;
      for (int other : picked) {
        double correlation = z.col(col).dot(z.col(other)) / (z.col(col).norm() * z.col(other).norm());
        if (std::abs(correlation) > 0.995) duplicate = true;
      }
      if (!duplicate) picked.push_back(col);
    }
    return picked;
  }

  std::vector<int> forward(Matrix candidates, const Vector& y) const {
    int64_t rows = candidates.rows();
    Vector residual = y.array() - y.mean();
    double rss = residual.squaredNorm();
    double best_criterion = criterion(rss, rows, 0);
    std::vector<int> selected;
    std::vector<bool> used(static_cast<size_t>(candidates.cols()), false);
    int64_t max_terms = std::min<int64_t>(hyper_.at("max_terms").get<int64_t>(), rows - 2);
    while (static_cast<int64_t>(selected.size()) < max_terms) {
      int best = -1;
      double best_rss = rss;
      for (int64_t col = 0; col < candidates.cols(); ++col) {
        if (used[static_cast<size_t>(col)]) continue;
        double norm2 = candidates.col(col).squaredNorm();
        if (norm2 < 1e-9 * static_cast<double>(rows)) continue;  // (nearly) in the span already
        double projection = candidates.col(col).dot(residual);
        double candidate_rss = rss - projection * projection / norm2;
        if (candidate_rss < best_rss) {
          best_rss = candidate_rss;
          best = static_cast<int>(col);
        }
      }
      if (best < 0) break;
      double candidate_criterion = criterion(best_rss, rows, static_cast<int64_t>(selected.size()) + 1);
      if (candidate_criterion >= best_criterion) break;
      best_criterion = candidate_criterion;
      Vector q = candidates.col(best).normalized();
      residual -= q * q.dot(residual);
      rss = residual.squaredNorm();
      // Orthogonalize the remaining candidates against the new direction.
      Eigen::RowVectorXd overlaps = q.transpose() * candidates;
      candidates.noalias() -= q * overlaps;
      used[static_cast<size_t>(best)] = true;
      selected.push_back(best);
    }
    return selected;
  }

  double fit_rss(const Matrix& candidates, const Vector& centered, const std::vector<int>& terms) const {
    if (terms.empty()) return centered.squaredNorm();
    Matrix design(candidates.rows(), static_cast<int64_t>(terms.size()));
    for (size_t index = 0; index < terms.size(); ++index)
      design.col(static_cast<int64_t>(index)) = candidates.col(terms[index]);
    Vector beta = design.colPivHouseholderQr().solve(centered);
    return (centered - design * beta).squaredNorm();
  }

  std::vector<int> backward(const Matrix& candidates, const Vector& y, std::vector<int> selected) const {
    Vector centered = y.array() - y.mean();
    int64_t rows = candidates.rows();
    double current = criterion(fit_rss(candidates, centered, selected), rows, static_cast<int64_t>(selected.size()));
    bool improved = true;
    while (improved && !selected.empty()) {
      improved = false;
      int drop = -1;
      double best = current;
      for (size_t index = 0; index < selected.size(); ++index) {
        std::vector<int> without = selected;
        without.erase(without.begin() + static_cast<int64_t>(index));
        double value = criterion(fit_rss(candidates, centered, without), rows, static_cast<int64_t>(without.size()));
        if (value < best) {
          best = value;
          drop = static_cast<int>(index);
        }
      }
      if (drop >= 0) {
        selected.erase(selected.begin() + drop);
        current = best;
        improved = true;
      }
    }
    return selected;
  }

  nlohmann::json hyper_;
  detail::Standardizer standardizer_;
  std::vector<Term> terms_;  // indices into the standardizer's active columns
  Vector term_mean_, term_scale_, coefficients_;
  double intercept_ = 0;
  int64_t columns_ = -1;
};

}  // namespace

LearnerInfo stepwise_learner_info() {
  LearnerInfo info;
  info.name = "stepwise";
  info.summary = "stepwise linear regression with pairwise interactions (forward + backward by AIC/BIC)";
  static const nlohmann::json defaults = {
      {"candidates", 20}, {"max_terms", 40}, {"criterion", "bic"}, {"interactions", true}};
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    return std::make_unique<StepwiseLearner>(detail::merge_hyperparameters("stepwise", defaults, given));
  };
  info.sample = [](Rng& rng) {
    return nlohmann::json{{"candidates", rng.int_between(8, 30)},
                          {"max_terms", rng.int_between(10, 60)},
                          {"criterion", rng.unit() < 0.5 ? "aic" : "bic"},
                          {"interactions", true}};
  };
  return info;
}

}  // namespace dnncast::learn
