// `dnncast calibrate MODEL --batch N [--input CxHxW] --minutes M`: carries the shipped time model to this
// host by timing MODEL's own layers and a few real iterations here (calibrate/calibrate_model.h); `predict` on
// this host then uses it without flags. `dnncast calibrate --from-db DATA --layer-bench LAYERS --minutes
// 2,5,10 --predictor SET`: the same fit on another host's recorded measurements, scored on the rest.
// This file parses and prints.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "calibrate/calibrate_model.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "measure/campaign.h"

namespace dnncast::cli {

int run_calibrate_model(const Args& args) {
  CLI::App app(
      "Carry the shipped time predictor to this host: time MODEL's own layers at the batch and input asked, a\n"
      "few real training iterations of it and a shared sample of probe layers, all within --minutes of this\n"
      "host's time; fit the host's per-kind layer scales and its whole-iteration shift, and save them where\n"
      "`dnncast predict` on this host finds them (docs/TRANSFER.md \"Calibrate on this host\").",
      "dnncast calibrate");
  calibrate::ModelCalibrateOptions options;
  ModelOptions model_options;
  std::string optimizer = "sgd", cpus_text;
  bool json = false;
  app.add_option("MODEL", options.model, "zoo name, graph JSON or ONNX file, synthetic:SEED")->required();
  app.add_option("--batch", options.spec.batch, "mini-batch size")->required()->check(positive_at_most(1 << 20));
  model_options.add_to(app);
  app.add_option("--minutes", options.minutes, "this host's time for every measurement together (default 5)");
  app.add_option("--threads", options.threads, "intra-op threads (default 1)")->check(thread_count());
  app.add_option("--optimizer", optimizer, "optimizer of the real iterations: " + optimizer_help());
  app.add_option("--predictor", options.predictor_dir,
                 "source predictor set (default: the shipped one predict uses here)");
  app.add_option("--out", options.out_dir,
                 "folder of the calibration (default: this host's under $DNNCAST_CALIBRATIONS, "
                 "else ~/.local/share/dnncast/calibrations)");
  app.add_option("--cpus", cpus_text, "pin the measurements to these CPUs (\"1\")");
  app.add_flag("--json", json, "print the report as JSON");
  if (!parse_args(app, args, "calibrate")) return 0;
  // At least 0.1 minutes (6 s): less measures nothing (1e-300 ran and printed two lines).
  if (!(options.minutes >= 0.1) || options.minutes > 240)
    throw InputError("--minutes must be from 0.1 to 240, got " + app.get_option("--minutes")->as<std::string>());
  options.spec = model_options.source(options.model, options.spec.batch).spec;
  options.optimizer = parse_optimizer(optimizer, "--optimizer");
  if (!cpus_text.empty()) options.cpus = measure::parse_cpu_list(cpus_text);
  nlohmann::json report = calibrate::calibrate_model(options);
  if (json) {
    std::cout << report.dump(1) << "\n";
    return 0;
  }
  const nlohmann::json& requested = report["requested"];
  std::printf(
      "calibrated %s at batch %lld, %s, on this host in %.1f min: %lld of its %lld layers and %lld probe layers "
      "timed\n",
      options.model.c_str(), static_cast<long long>(options.spec.batch), report["input"].get<std::string>().c_str(),
      report["wall_s"].get<double>() / 60, report["model_layers"]["measured"].get<long long>(),
      report["model_layers"]["cases"].get<long long>(), report["probe_layers"].get<long long>());
  std::printf("layer scales here over the source's layer model (per kind, time-weighted):");
  for (const auto& [kind, scale] : report["kind_scale"].items())
    std::printf(" %s %.3g (%lld)", kind.c_str(), scale.get<double>(), report["kind_layers"][kind].get<long long>());
  std::printf("\n");
  for (const nlohmann::json& run : report["whole_runs"])
    std::printf(
        "real iterations of %s at batch %lld: %.4g ms measured; the source forecast %.4g ms x layer scale %.3g\n",
        run["model"].get<std::string>().c_str(), run["batch"].get<long long>(), run["measured_ms"].get<double>(),
        run["source_ms"].get<double>(), run["layer_factor"].get<double>());
  print_left_out(report);
  if (report.contains("note")) std::printf("note: %s\n", report["note"].get<std::string>().c_str());
  std::printf("whole-iteration shift: %s; forecast here %.4g ms (the source's %.4g ms)\n",
              report["shift"]["map"].get<std::string>().c_str(), requested["calibrated_ms"].get<double>(),
              requested["source_ms"].get<double>());
  print_anchors(report);
  std::printf("wrote %s: `dnncast predict` on this host uses it from now on\n",
              report["dir"].get<std::string>().c_str());
  return 0;
}

int run_calibrate_cross_host(const Args& args) {
  CLI::App app(
      "Score the host calibration on another host's recorded measurements: for each budget, the shared probe\n"
      "layers of LAYERS (half of it, by their recorded wall time) and whole runs of DATA spanning the forecast\n"
      "range (the other half) calibrate the source set; every other configuration of DATA scores it.",
      "dnncast calibrate");
  calibrate::CrossHostOptions options;
  bool json = false;
  app.add_option("--predictor", options.predictor_dir, "source predictor set")->required();
  app.add_option("--from-db", options.db_path, "the target host's whole-network runs")->required();
  app.add_option("--layer-bench", options.layers_path, "the target host's single-layer benchmarks")->required();
  app.add_option("--env", options.environment, "keep only this environment of --from-db");
  app.add_option("--minutes", options.minutes, "budgets of the target host's time (default 2,5,10)")->delimiter(',');
  app.add_flag("--json", json, "print the report as JSON");
  if (!parse_args(app, args, "calibrate")) return 0;
  nlohmann::json report = calibrate::calibrate_cross_host(options);
  if (json) {
    std::cout << report.dump(1) << "\n";
    return 0;
  }
  std::printf("%s carried to %s (%lld configurations; noise floor %.1f%% over %lld repeats)\n",
              report["source"].get<std::string>().c_str(), options.db_path.c_str(), report["samples"].get<long long>(),
              report["noise_floor_pct"].get<double>(), report["noise_floor_repeats"].get<long long>());
  std::printf("uncalibrated: MRE %.1f%%, %.0f%% inside the widened 90%% interval\n",
              report["uncalibrated"]["mre_pct"].get<double>(),
              report["uncalibrated"]["within_interval_pct"].get<double>());
  std::printf(
      "| minutes | probe layers | whole runs | scored | none | shift only | layers only | both | both in interval |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const nlohmann::json& budget : report["budgets"]) {
    const nlohmann::json& mre = budget["mre_pct"];
    auto cell = [](const nlohmann::json& value) {
      char text[32];
      if (value.is_null()) return std::string("-");
      std::snprintf(text, sizeof text, "%.1f%%", value.get<double>());
      return std::string(text);
    };
    std::printf("| %g | %lld | %lld (%s) | %lld | %s | %s | %s | %s | %.0f%% |\n", budget["minutes"].get<double>(),
                budget["probe_layers"].get<long long>(), budget["whole_runs"].get<long long>(),
                budget["shift"]["map"].get<std::string>().c_str(), budget["evaluated"].get<long long>(),
                cell(mre["none"]).c_str(), cell(mre["shift_only"]).c_str(), cell(mre["layers_only"]).c_str(),
                cell(mre["both"]).c_str(), budget["within_interval_pct"].get<double>());
  }
  return 0;
}

}  // namespace dnncast::cli
