// Calibrating a time predictor to a host no predictor knows (docs/TRANSFER.md "Calibrate"):
//   1. the plan's configurations are the candidates; the source predictor forecasts each one;
//   2. stepwise regression of the log forecasts over the configuration options finds the influential
//      ones; the budget is drawn to cover their levels, plus `holdout` random others;
//   3. only those are profiled here (the campaign runner, pinned to `cpus`), into `db_path`;
//   4. the map from forecast to measurement is chosen on the budget alone, by leave-one-out log error
//      (transfer::choose_shift): keep the source, a constant ratio, a log-space linear shift, or the
//      guided shift with the influential terms; a fitted map must beat a simpler one by more than
//      10% + 0.5 percentage points;
//   5. every map's error and the chosen one's are reported on the holdout (which chose nothing);
//   6. an adapted predictor bundle (forecast/predictor.h format) is written to `out_dir`: the source model
//      with the chosen map on its forecasts (source, ratio, lms), or for gs the source's learner
//      refitted on the shifted forecasts of every candidate. Its own holdout error is reported too.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hardware/isa.h"

namespace dnncast::calibrate {

struct CalibrateOptions {
  std::string predictor_dir;  // source predictor set (DIR with time/) or a time bundle
  std::string plan_path;      // campaign plan whose configurations are the candidates
  std::string db_path;        // dataset the measurements go to (created or resumed)
  std::string out_dir;        // adapted bundle; "" = none written
  double budget = 0.1;        // a fraction of the candidates in (0, 1), or a count
  int64_t holdout = 4;        // extra random configurations profiled only to report the error
  int64_t threads = 0;        // measure every candidate at this thread count; 0 = the plan's
  double time_budget_s = 0;   // timing budget per measurement; 0 = the plan's
  int64_t seed = 1;
  std::vector<int> cpus;  // pin the measurements; empty = those allowed now
};

// Runs the whole calibration and returns its report: candidates, profiled, sample, holdout,
// gs_terms, gs_terms_used, chosen, sample_loo_log_error_pct {map: error}, holdout_mape_pct
// {source, ratio, lms, gs, chosen[, bundle]}, db[, out]. InputError on bad options or when too few
// configurations measured ok.
nlohmann::json calibrate_host(const CalibrateOptions& options);

// The same adaptation on configurations already measured (docs/TRANSFER.md "Calibrate offline"):
// every configuration of a dataset (the mean of its ok repeats, featurized from the run's own
// network, batch, input, optimizer, precision and threads, as `load_training_table` does) is a
// candidate; steps 2 and 4 of calibrate_host choose the budget and the map, with nothing profiled;
// every map is scored on ALL the candidates not sampled. Repeated over `draws` samples, both the
// guided sample of calibrate and a uniformly random one of the same size.
struct OfflineCalibrateOptions {
  std::string predictor_dir;                         // source predictor set (DIR with time/) or a time bundle
  std::string db_path;                               // the dataset whose configurations are the candidates
  std::string environment;                           // keep only this environment of the dataset; "" = all
  hardware::CpuIsa isa = hardware::CpuIsa::Unknown;  // features under this ISA's rules; Unknown = as recorded
  double budget = 0.1;                               // a fraction of the candidates in (0, 1), or a count
  int64_t draws = 20;                                // samples drawn per sampler
  int64_t seed = 1;
  bool list_draws = false;  // the report lists each draw's sample and errors
};

// Report: dataset, predictor, candidates, budget, evaluated (candidates not sampled), draws, seed,
// gs_terms, noise_floor_pct (a repeat against its configuration's mean, as `dataset stats`),
// dm_all_mape_pct (the predictor as is on every candidate against the mean of its repeats),
// dm_all_repeat_mape_pct (against every single repeat), configurations [{network, family, batch,
// input, optimizer, precision, threads, repeats, time_ms, forecast_ms}], and per sampler
// ("guided", "random"): mape_pct {dm, chosen, source, ratio, lms, gs: {mean, sd, min, max}} over
// the draws, each on that draw's rows not sampled (dm = source: the predictor as is), chosen_count
// {map: draws}, and with list_draws: draws [{sample [configuration indices], chosen, mape_pct
// {map: error}}]. InputError on a missing predictor or dataset, a file that is not a dataset, a
// budget that is not below the candidates.
nlohmann::json calibrate_offline(const OfflineCalibrateOptions& options);

}  // namespace dnncast::calibrate
