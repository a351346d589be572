// Calibrating on this host from the user's own model (issue 36, docs/TRANSFER.md "Calibrate on this host"):
// `dnncast calibrate MODEL --batch N --minutes M` times, within M minutes of this host's time,
//   1. the distinct layers of MODEL at its batch and input (forward + backward, warm, as bench-layers does),
//   2. a few real training iterations of MODEL (at the requested batch when they fit the budget left, else at a
//      smaller one), and
//   3. the probe sample of single layers every host shares (bench-layers --sample 4000 --seed 20261202
//      --max-gflops 0.5, in order) with what time is left;
// then fits the host's per-kind layer scales and its whole-iteration shift (forecast/host_calibration.h) and
// writes them where `predict` on this host finds them. The measurements stay in the folder's dataset.
//
// `dnncast calibrate --from-db DATA --layer-bench LAYERS --minutes 2,5,10`: the same fit on another host's
// recorded measurements, each calibration given M minutes of that host's recorded wall time (probe layers
// first half, then whole runs spanning the forecast range), scored on every configuration it did not take.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "import/model_source.h"

namespace dnncast::calibrate {

struct ModelCalibrateOptions {
  std::string model;       // zoo name, graph JSON, ONNX, synthetic:SEED
  models::ModelSpec spec;  // batch, input or sequence length
  Optimizer optimizer = Optimizer::Sgd;
  int64_t threads = 1;
  double minutes = 5;         // this host's time for every measurement together, (0, 240]
  std::string predictor_dir;  // the source set; "": the shipped set `predict` uses on this host
  std::string out_dir;        // "": default_calibration_root()/<this host's environment hash>
  std::vector<int> cpus;      // pin the measurements; empty = those allowed now
  std::FILE* out = stderr;    // progress
};

// Runs the calibration and returns its report (HostCalibration::report, with "dir"). InputError on bad
// options (before anything is measured), a source set without a layer-wise model, no layer measured ok.
nlohmann::json calibrate_model(const ModelCalibrateOptions& options);

// `dnncast calibrate --refit DIR`: the fit of a calibration made again from the measurements its folder keeps
// (calibration.db), as this version of dnncast fits them; nothing is measured. Its report as calibrate_model's, with
// "refitted". InputError when DIR holds no calibration or no dataset.
nlohmann::json refit_calibration(const std::string& dir);

struct CrossHostOptions {
  std::string predictor_dir;  // the source set
  std::string db_path;        // the target host's whole-network runs
  std::string layers_path;    // the target host's single-layer benchmarks (layer_benchmarks)
  std::string environment;    // keep only this environment of db_path; "" = all
  std::vector<double> minutes{2, 5, 10};
};

// Report: source, db, layers, samples, noise_floor_pct, and per budget {minutes, probe_layers, whole_runs,
// kind_scale, shift, mre_pct {none, shift_only, layers_only, both}, evaluated, within_interval_pct}.
nlohmann::json calibrate_cross_host(const CrossHostOptions& options);

}  // namespace dnncast::calibrate
