// Transfer strategies, stepwise regression and the evaluation loop (transfer.h).
#include "transfer/transfer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "core/error.h"
#include "core/stats.h"
#include "learn/metrics.h"

namespace dnncast::transfer {

using learn::Matrix;
using learn::Vector;

std::string Term::name(const std::vector<std::string>& options) const {
  DNNCAST_ASSERT(first >= 0 && first < static_cast<int>(options.size()));
  if (second < 0) return options[static_cast<size_t>(first)];
  return options[static_cast<size_t>(first)] + "*" + options[static_cast<size_t>(second)];
}

// ---- stepwise ----

namespace {

Matrix scaled(const Matrix& x, const Vector& low, const Vector& high) {
  Matrix z(x.rows(), x.cols());
  for (int64_t col = 0; col < x.cols(); ++col) {
    double span = high(col) - low(col);
    for (int64_t row = 0; row < x.rows(); ++row) z(row, col) = span > 0 ? (x(row, col) - low(col)) / span : 0.0;
  }
  return z;
}

Vector term_column(const Matrix& z, const Term& term) {
  if (term.second < 0) return z.col(term.first);
  return z.col(term.first).cwiseProduct(z.col(term.second));
}

// Residual sum of squares of y on an intercept and the columns.
double rss_of(const std::vector<Vector>& columns, const Vector& y) {
  const int64_t rows = y.size();
  Matrix a(rows, static_cast<int64_t>(columns.size()) + 1);
  a.col(0).setOnes();
  for (size_t k = 0; k < columns.size(); ++k) a.col(static_cast<int64_t>(k) + 1) = columns[k];
  Vector coef = a.colPivHouseholderQr().solve(y);
  return (y - a * coef).squaredNorm();
}

}  // namespace

StepwiseResult stepwise_terms(const Matrix& x, const Vector& y, const StepwiseOptions& options) {
  if (x.rows() != y.size() || x.rows() < 3) throw InputError("stepwise: need at least 3 rows with one target each");
  StepwiseResult result;
  result.low = x.colwise().minCoeff().transpose();
  result.high = x.colwise().maxCoeff().transpose();
  Matrix z = scaled(x, result.low, result.high);

  std::vector<Term> candidates;
  std::vector<int> varying;
  for (int col = 0; col < static_cast<int>(x.cols()); ++col)
    if (result.high(col) > result.low(col)) varying.push_back(col);
  for (int col : varying) candidates.push_back({col, -1});
  if (options.interactions)
    for (size_t i = 0; i < varying.size(); ++i)
      for (size_t j = i + 1; j < varying.size(); ++j) candidates.push_back({varying[i], varying[j]});
  std::vector<Vector> candidate_columns;
  for (const Term& term : candidates) candidate_columns.push_back(term_column(z, term));

  const double total = (y.array() - y.mean()).square().sum();
  if (!(total > 0)) return result;  // constant target: nothing is influential
  std::vector<int> chosen;          // indices into candidates
  std::vector<double> gains;
  auto columns_of = [&](const std::vector<int>& picks) {
    std::vector<Vector> columns;
    for (int pick : picks) columns.push_back(candidate_columns[static_cast<size_t>(pick)]);
    return columns;
  };
  double current = total;
  while (static_cast<int>(chosen.size()) < options.max_terms) {
    int best = -1;
    double best_rss = current;
    for (int pick = 0; pick < static_cast<int>(candidates.size()); ++pick) {
      if (std::find(chosen.begin(), chosen.end(), pick) != chosen.end()) continue;
      std::vector<int> trial = chosen;
      trial.push_back(pick);
      double rss = rss_of(columns_of(trial), y);
      if (rss < best_rss) {
        best_rss = rss;
        best = pick;
      }
    }
    if (best < 0 || (current - best_rss) / total < options.min_gain) break;
    chosen.push_back(best);
    gains.push_back((current - best_rss) / total);
    current = best_rss;
    // Backward elimination: a term made redundant by the later ones goes (never the one just added).
    bool removed = true;
    while (removed && chosen.size() > 1) {
      removed = false;
      for (size_t k = 0; k + 1 < chosen.size(); ++k) {
        std::vector<int> trial;
        for (size_t other = 0; other < chosen.size(); ++other)
          if (other != k) trial.push_back(chosen[other]);
        double rss = rss_of(columns_of(trial), y);
        if ((rss - current) / total < options.min_gain / 2) {
          chosen.erase(chosen.begin() + static_cast<int64_t>(k));
          gains.erase(gains.begin() + static_cast<int64_t>(k));
          current = rss;
          removed = true;
          break;
        }
      }
    }
  }
  for (int pick : chosen) result.terms.push_back(candidates[static_cast<size_t>(pick)]);
  result.gains = gains;
  result.r2 = 1 - current / total;
  return result;
}

Matrix term_columns(const StepwiseResult& fit, const Matrix& x) {
  Matrix z = scaled(x, fit.low, fit.high);
  Matrix out(x.rows(), static_cast<int64_t>(fit.terms.size()));
  for (size_t k = 0; k < fit.terms.size(); ++k) out.col(static_cast<int64_t>(k)) = term_column(z, fit.terms[k]);
  return out;
}

// ---- sampling ----

std::vector<int64_t> random_sample(int64_t rows, int64_t count, learn::Rng& rng) {
  DNNCAST_ASSERT(count >= 0 && count <= rows);
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t k = 0; k < count; ++k) {  // partial Fisher-Yates
    int64_t pick = k + static_cast<int64_t>(rng.below(static_cast<uint64_t>(rows - k)));
    std::swap(order[static_cast<size_t>(k)], order[static_cast<size_t>(pick)]);
  }
  order.resize(static_cast<size_t>(count));
  return order;
}

std::vector<int64_t> covering_sample(const Matrix& x, const std::vector<int>& columns, int64_t count, learn::Rng& rng,
                                     int max_levels) {
  const int64_t rows = x.rows();
  DNNCAST_ASSERT(count >= 0 && count <= rows && max_levels >= 1);
  // Level of each row in each covered option: distinct values, or quantile bins when there are many.
  std::vector<std::vector<int>> levels;
  std::vector<std::vector<double>> counts;
  for (int col : columns) {
    std::vector<double> values(x.col(col).data(), x.col(col).data() + rows);
    std::vector<double> distinct = values;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    std::vector<double> edges;  // upper bounds of the levels
    if (static_cast<int>(distinct.size()) <= max_levels) {
      edges = distinct;
    } else {
      for (int bin = 1; bin <= max_levels; ++bin)
        edges.push_back(quantile(values, static_cast<double>(bin) / max_levels));
    }
    std::vector<int> level(static_cast<size_t>(rows));
    for (int64_t row = 0; row < rows; ++row) {
      auto found = std::lower_bound(edges.begin(), edges.end(), x(row, col));
      level[static_cast<size_t>(row)] =
          static_cast<int>(std::min<int64_t>(found - edges.begin(), static_cast<int64_t>(edges.size()) - 1));
    }
    levels.push_back(level);
    counts.emplace_back(edges.size(), 0.0);
  }
  std::vector<int64_t> picked;
  std::vector<char> taken(static_cast<size_t>(rows), 0);
  while (static_cast<int64_t>(picked.size()) < count) {
    double best = 1e300;
    std::vector<int64_t> ties;
    for (int64_t row = 0; row < rows; ++row) {
      if (taken[static_cast<size_t>(row)]) continue;
      double score = 0;
      for (size_t c = 0; c < levels.size(); ++c)
        score += counts[c][static_cast<size_t>(levels[c][static_cast<size_t>(row)])];
      if (score < best - 1e-12) {
        best = score;
        ties.clear();
      }
      if (score <= best + 1e-12) ties.push_back(row);
    }
    int64_t pick = ties[static_cast<size_t>(rng.below(ties.size()))];
    picked.push_back(pick);
    taken[static_cast<size_t>(pick)] = 1;
    for (size_t c = 0; c < levels.size(); ++c)
      counts[c][static_cast<size_t>(levels[c][static_cast<size_t>(pick)])] += 1;
  }
  return picked;
}

// ---- models ----

std::pair<double, double> fit_linear_shift(const Vector& s, const Vector& y) {
  DNNCAST_ASSERT(s.size() == y.size() && s.size() > 0);
  double s_mean = s.mean(), y_mean = y.mean();
  double sxx = (s.array() - s_mean).square().sum();
  if (!(sxx > 0)) return {0.0, y_mean};
  double sxy = ((s.array() - s_mean) * (y.array() - y_mean)).sum();
  double a = sxy / sxx;
  return {a, y_mean - a * s_mean};
}

namespace {

Matrix guided_design(const GuidedShift& shift, const Matrix& x, const Vector& source_forecast, int terms) {
  Matrix terms_x = term_columns(shift.source_fit, x);
  Matrix design(x.rows(), 2 + terms);
  design.col(0).setOnes();
  design.col(1) = source_forecast.array().max(1e-300).log().matrix();
  for (int k = 0; k < terms; ++k) design.col(2 + k) = terms_x.col(k);
  return design;
}

}  // namespace

void GuidedShift::fit(const Matrix& x, const Vector& source_forecast, const Vector& y, double ridge) {
  DNNCAST_ASSERT(x.rows() == y.size() && source_forecast.size() == y.size());
  if (y.size() < 2) throw InputError("guided sampling needs at least 2 target samples");
  terms_used = static_cast<int>(
      std::min<int64_t>(static_cast<int64_t>(source_fit.terms.size()), std::max<int64_t>(0, (y.size() - 3) / 5)));
  Matrix design = guided_design(*this, x, source_forecast, terms_used);
  Vector log_y = y.array().log().matrix();
  if (y.size() < 5) {
    // Too few points to fit a slope without wild extrapolation: a pure ratio, y = e^c0 * s.
    coefficients = Vector::Zero(2);
    coefficients(1) = 1;
    coefficients(0) = (log_y - design.col(1)).mean();
    return;
  }
  Matrix normal = design.transpose() * design;
  for (int k = 2; k < design.cols(); ++k) normal(k, k) += ridge * static_cast<double>(y.size());
  normal(1, 1) += 1e-9;  // a constant source forecast leaves the slope free
  coefficients = normal.ldlt().solve(design.transpose() * log_y);
}

Vector GuidedShift::predict(const Matrix& x, const Vector& source_forecast) const {
  DNNCAST_ASSERT(coefficients.size() == 2 + terms_used);
  return (guided_design(*this, x, source_forecast, terms_used) * coefficients).array().exp().matrix();
}

ShiftChoice fit_shift(const std::string& name, const StepwiseResult& source_fit, const Matrix& x, const Vector& s,
                      const Vector& y) {
  ShiftChoice choice;
  choice.guided.source_fit = source_fit;
  const Vector log_s = s.array().max(1e-300).log().matrix();
  const Vector log_y = y.array().log().matrix();
  choice.chosen = name;
  choice.log_intercept = 0;
  choice.log_slope = 1;
  if (name == "ratio") {
    choice.log_intercept = (log_y - log_s).mean();
  } else if (name == "lms") {
    auto [a, b] = fit_linear_shift(log_s, log_y);
    // A flat or inverted slope says the sample cannot tell the configurations apart: keep a ratio.
    if (!(a > 0.2)) {
      a = 1;
      b = (log_y - log_s).mean();
    }
    choice.log_slope = a;
    choice.log_intercept = b;
  } else if (name == "gs") {
    choice.guided.fit(x, s, y);
  } else if (name != "source") {
    throw InputError("unknown shift " + quote(name) + " (source, ratio, lms, gs)");
  }
  return choice;
}

Vector ShiftChoice::predict(const Matrix& x, const Vector& source_forecast) const {
  if (chosen == "gs") return guided.predict(x, source_forecast);
  Vector log_s = source_forecast.array().max(1e-300).log().matrix();
  return (log_intercept + log_slope * log_s.array()).exp().matrix();
}

ShiftChoice choose_shift(const StepwiseResult& source_fit, const Matrix& x, const Vector& source_forecast,
                         const Vector& y, double margin) {
  DNNCAST_ASSERT(x.rows() == y.size() && source_forecast.size() == y.size());
  const int64_t n = y.size();
  std::vector<std::string> candidates{"source"};
  if (n >= 2) candidates.push_back("ratio");
  if (n >= 5) {
    candidates.push_back("lms");
    if (!source_fit.terms.empty()) candidates.push_back("gs");
  }
  std::vector<std::pair<std::string, double>> scored;
  std::vector<double> scores;
  for (const std::string& name : candidates) {
    double sum = 0;
    for (int64_t left = 0; left < n; ++left) {
      std::vector<int64_t> rest;
      for (int64_t k = 0; k < n; ++k)
        if (k != left) rest.push_back(k);
      ShiftChoice one = fit_shift(name, source_fit, learn::select_rows(x, rest),
                                  learn::select_rows(source_forecast, rest), learn::select_rows(y, rest));
      Vector predicted = one.predict(x.row(left), source_forecast.segment(left, 1));
      sum += std::abs(std::log(std::max(predicted(0), 1e-300) / y(left)));
    }
    scores.push_back(100 * sum / static_cast<double>(n));
    scored.emplace_back(name, scores.back());
  }
  const double best = *std::min_element(scores.begin(), scores.end());
  size_t pick = 0;
  while (scores[pick] > best * (1 + margin) + 0.5) ++pick;  // the least fitted candidate within the margin
  ShiftChoice result = fit_shift(candidates[pick], source_fit, x, source_forecast, y);
  result.loo_log_error_pct = std::move(scored);
  return result;
}

double mape_pct(const Vector& predicted, const Vector& truth, const std::vector<int64_t>& rows) {
  DNNCAST_ASSERT(predicted.size() == truth.size() && !rows.empty());
  double sum = 0;
  for (int64_t row : rows) sum += std::abs(predicted(row) - truth(row)) / truth(row);
  return 100 * sum / static_cast<double>(rows.size());
}

// ---- the experiment ----

std::string learner_name(const std::string& alias) {
  static const std::map<std::string, std::string> aliases{{"rt", "cart"}, {"nn", "mlp"}, {"xgb", "xgboost"}};
  auto found = aliases.find(alias);
  std::string name = found == aliases.end() ? alias : found->second;
  try {
    learn::learner_info(name);
  } catch (const InputError& error) {
    throw InputError(std::string(error.what()) + "; aliases: rt = cart, nn = mlp, xgb = xgboost");
  }
  return name;
}

int64_t budget_rows(double budget, int64_t rows) {
  if (!(budget > 0) || !std::isfinite(budget))
    throw InputError("budget must be a fraction in (0, 1) or a row count >= 2, got " + std::to_string(budget));
  int64_t count = 0;
  if (budget < 1) {
    count = static_cast<int64_t>(std::ceil(budget * static_cast<double>(rows) - 1e-9));
  } else {
    if (budget != std::floor(budget))
      throw InputError("budget above 1 must be a whole row count, got " + std::to_string(budget));
    count = static_cast<int64_t>(budget);
  }
  if (count < 2)
    throw InputError("budget gives " + std::to_string(count) + " target row(s) of " + std::to_string(rows) +
                     "; at least 2 are needed");
  if (count > rows - 1)
    throw InputError("budget gives " + std::to_string(count) + " target rows but the target has " +
                     std::to_string(rows) + "; at least one row must be left to evaluate on");
  return count;
}

nlohmann::json Cell::to_json() const {
  return {{"strategy", strategy}, {"learner", learner},   {"samples", samples},        {"evaluated", evaluated},
          {"draws", draws},       {"mape_pct", mape_pct}, {"mape_sd_pct", mape_sd_pct}};
}

nlohmann::json ExperimentResult::to_json() const {
  nlohmann::json terms = nlohmann::json::array();
  for (size_t k = 0; k < source_terms.size(); ++k)
    terms.push_back({{"term", source_terms[k].name(options)}, {"gain", source_gains[k]}});
  nlohmann::json out{{"source", source},           {"target", target},
                     {"options", options},         {"source_rows", source_rows},
                     {"target_rows", target_rows}, {"budget_rows", budget_rows},
                     {"gs_terms", terms},          {"cells", nlohmann::json::array()}};
  for (const Cell& cell : cells) out["cells"].push_back(cell.to_json());
  return out;
}

namespace {

std::unique_ptr<learn::Learner> fit_log(const std::string& learner, const Matrix& x, const Vector& y) {
  auto model = learn::make_learner(learner);
  model->fit(x, y.array().log().matrix());
  return model;
}

Vector predict_exp(const learn::Learner& model, const Matrix& x) { return model.predict(x).array().exp().matrix(); }

Matrix with_column(const Matrix& x, const Vector& extra) {
  Matrix out(x.rows(), x.cols() + 1);
  out.leftCols(x.cols()) = x;
  out.col(x.cols()) = extra;
  return out;
}

std::vector<int64_t> sorted(std::vector<int64_t> rows) {
  std::sort(rows.begin(), rows.end());
  return rows;
}

// GS target model fitted on `rows` of the target, forecasts for every target row: the guided shift,
// and optionally the learner on (options, log source forecast) -> log residual of the shift.
Vector guided_predict(const GuidedShift& guided, const std::string& learner, const OptionTable& target,
                      const Vector& forecast, const Matrix& nmls_x, const std::vector<int64_t>& rows, bool residual) {
  GuidedShift shift = guided;
  Vector y_rows = learn::select_rows(target.y, rows);
  shift.fit(learn::select_rows(target.x, rows), learn::select_rows(forecast, rows), y_rows);
  Vector shifted = shift.predict(target.x, forecast);
  if (!residual) return shifted;
  Vector log_residual = (y_rows.array().log() - learn::select_rows(shifted, rows).array().log()).matrix();
  auto model = learn::make_learner(learner);
  model->fit(learn::select_rows(nmls_x, rows), log_residual);
  return (shifted.array() * model->predict(nmls_x).array().exp()).matrix();
}

}  // namespace

ExperimentResult run_experiment(const OptionTable& source, const OptionTable& target,
                                const ExperimentOptions& options) {
  if (source.options != target.options) throw InputError("source and target must have the same option columns");
  if (source.rows() < 3)
    throw InputError("source " + quote(source.name) + " has " + std::to_string(source.rows()) +
                     " rows; at least 3 are needed");
  if (options.draws < 1) throw InputError("draws must be at least 1");
  if (options.folds < 2) throw InputError("folds must be at least 2");
  for (const std::string& strategy : options.strategies)
    if (std::find(strategy_names().begin(), strategy_names().end(), strategy) == strategy_names().end()) {
      std::string known;
      for (const std::string& name : strategy_names()) known += (known.empty() ? "" : ", ") + name;
      throw InputError("unknown strategy " + quote(strategy) + " (known: " + known + ")");
    }
  std::vector<std::string> learners;
  for (const std::string& alias : options.learners) learners.push_back(learner_name(alias));
  if (learners.empty() || options.strategies.empty()) throw InputError("no strategy or no learner given");

  ExperimentResult result;
  result.source = source.name;
  result.target = target.name;
  result.options = source.options;
  result.source_rows = source.rows();
  result.target_rows = target.rows();
  result.budget_rows = budget_rows(options.budget, target.rows());
  const int64_t budget = result.budget_rows;

  GuidedShift guided;
  guided.source_fit = stepwise_terms(source.x, source.y.array().log().matrix(), options.stepwise);
  result.source_terms = guided.source_fit.terms;
  result.source_gains = guided.source_fit.gains;
  std::vector<int> covered;  // options appearing in the influential terms
  for (const Term& term : guided.source_fit.terms)
    for (int col : {term.first, term.second})
      if (col >= 0 && std::find(covered.begin(), covered.end(), col) == covered.end()) covered.push_back(col);

  auto wants = [&](const std::string& strategy) {
    return std::find(options.strategies.begin(), options.strategies.end(), strategy) != options.strategies.end();
  };
  // Samples of each draw, the same for every learner (paired comparison).
  std::vector<std::vector<int64_t>> random_draws, covering_draws;
  learn::Rng rng(options.seed);
  for (int draw = 0; draw < options.draws; ++draw) {
    random_draws.push_back(sorted(random_sample(target.rows(), budget, rng)));
    covering_draws.push_back(sorted(covering_sample(target.x, covered, budget, rng)));
  }

  for (const std::string& strategy : options.strategies) {
    for (size_t l = 0; l < learners.size(); ++l) {
      Cell cell;
      cell.strategy = strategy;
      cell.learner = options.learners[l];
      result.cells.push_back(cell);
    }
  }
  auto cell_of = [&](const std::string& strategy, size_t learner) -> Cell& {
    size_t s = static_cast<size_t>(std::find(options.strategies.begin(), options.strategies.end(), strategy) -
                                   options.strategies.begin());
    return result.cells[s * learners.size() + learner];
  };
  auto finish = [&](Cell& cell, const std::vector<double>& errors, int64_t samples, int64_t evaluated) {
    cell.draws = static_cast<int>(errors.size());
    cell.samples = samples;
    cell.evaluated = evaluated;
    double mean = std::accumulate(errors.begin(), errors.end(), 0.0) / static_cast<double>(errors.size());
    double var = 0;
    for (double e : errors) var += (e - mean) * (e - mean);
    cell.mape_pct = mean;
    cell.mape_sd_pct = errors.size() > 1 ? std::sqrt(var / static_cast<double>(errors.size() - 1)) : 0.0;
  };

  for (size_t l = 0; l < learners.size(); ++l) {
    const std::string& learner = learners[l];
    bool needs_source = wants("dm") || wants("lms") || wants("nmls") || wants("gs");
    Vector forecast;  // source model on every target row
    if (needs_source) forecast = predict_exp(*fit_log(learner, source.x, source.y), target.x);
    Matrix nmls_x = needs_source ? with_column(target.x, forecast.array().log().matrix()) : Matrix();
    std::vector<double> dm, lms, nmls, gs, random;
    for (int draw = 0; draw < options.draws; ++draw) {
      const std::vector<int64_t>& picked = random_draws[static_cast<size_t>(draw)];
      std::vector<int64_t> rest = learn::complement(target.rows(), picked);
      Vector y_picked = learn::select_rows(target.y, picked);
      if (wants("dm")) dm.push_back(mape_pct(forecast, target.y, rest));
      if (wants("lms")) {
        auto [a, b] = fit_linear_shift(learn::select_rows(forecast, picked), y_picked);
        Vector shifted = (a * forecast.array() + b).matrix();
        lms.push_back(mape_pct(shifted, target.y, rest));
      }
      if (wants("nmls")) {
        auto model = fit_log(learner, learn::select_rows(nmls_x, picked), y_picked);
        nmls.push_back(mape_pct(predict_exp(*model, nmls_x), target.y, rest));
      }
      if (wants("random")) {
        auto model = fit_log(learner, learn::select_rows(target.x, picked), y_picked);
        random.push_back(mape_pct(predict_exp(*model, target.x), target.y, rest));
      }
      if (wants("gs")) {
        const std::vector<int64_t>& guided_rows = covering_draws[static_cast<size_t>(draw)];
        // The shift alone, or the shift with the learner on its log residuals: whichever predicts the
        // held-out rows of a k-fold split of the target sample better (the sample only, never the rest).
        std::vector<double> cv_error(2, 0.0);
        auto folds = learn::kfold_indices(static_cast<int64_t>(guided_rows.size()), 5,
                                          options.seed + static_cast<uint64_t>(draw));
        for (const auto& test : folds) {
          std::vector<int64_t> fit_rows, test_rows;
          for (int64_t k : learn::complement(static_cast<int64_t>(guided_rows.size()), test))
            fit_rows.push_back(guided_rows[static_cast<size_t>(k)]);
          for (int64_t k : test) test_rows.push_back(guided_rows[static_cast<size_t>(k)]);
          if (fit_rows.size() < 3) continue;
          for (int residual = 0; residual < 2; ++residual) {
            Vector predicted = guided_predict(guided, learner, target, forecast, nmls_x, fit_rows, residual == 1);
            cv_error[static_cast<size_t>(residual)] +=
                mape_pct(predicted, target.y, test_rows) * static_cast<double>(test_rows.size());
          }
        }
        bool residual = cv_error[1] < cv_error[0];
        Vector predicted = guided_predict(guided, learner, target, forecast, nmls_x, guided_rows, residual);
        gs.push_back(mape_pct(predicted, target.y, learn::complement(target.rows(), guided_rows)));
      }
    }
    const int64_t rest_rows = target.rows() - budget;
    if (wants("dm")) finish(cell_of("dm", l), dm, 0, rest_rows);
    if (wants("lms")) finish(cell_of("lms", l), lms, budget, rest_rows);
    if (wants("nmls")) finish(cell_of("nmls", l), nmls, budget, rest_rows);
    if (wants("gs")) finish(cell_of("gs", l), gs, budget, rest_rows);
    if (wants("random")) finish(cell_of("random", l), random, budget, rest_rows);
    if (wants("scratch_all")) {
      // k-fold cross-validation on all target rows: each row is predicted by a model that never saw it.
      auto folds = learn::kfold_indices(target.rows(), options.folds, options.seed);
      Vector predicted(target.rows());
      for (const auto& test : folds) {
        std::vector<int64_t> train = learn::complement(target.rows(), test);
        auto model = fit_log(learner, learn::select_rows(target.x, train), learn::select_rows(target.y, train));
        Vector fold_forecast = predict_exp(*model, learn::select_rows(target.x, test));
        for (size_t k = 0; k < test.size(); ++k) predicted(test[k]) = fold_forecast(static_cast<int64_t>(k));
      }
      std::vector<int64_t> all(static_cast<size_t>(target.rows()));
      std::iota(all.begin(), all.end(), 0);
      Cell& cell = cell_of("scratch_all", l);
      finish(cell, {mape_pct(predicted, target.y, all)}, target.rows() - target.rows() / options.folds, target.rows());
    }
  }
  return result;
}

}  // namespace dnncast::transfer
