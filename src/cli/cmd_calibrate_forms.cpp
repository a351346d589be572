// `dnncast calibrate --refit DIR`: a host calibration fitted again from the measurements its folder keeps
// (calibrate/calibrate_model.h refit_calibration), and which of calibrate's forms a command line is.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "calibrate/calibrate_model.h"
#include "cli/commands.h"
#include "cli/parse_args.h"

namespace dnncast::cli {

void print_anchors(const nlohmann::json& report) {
  if (!report.contains("anchors") || report["anchors"]["whole_runs"].get<size_t>() == 0) return;
  const nlohmann::json& anchors = report["anchors"];
  const size_t probes = anchors["host_check_probes"].get<size_t>();
  std::printf("other configurations: measured / source by %s from %zu whole runs of this host%s\n",
              anchors["by"].get<std::string>().c_str(), anchors["whole_runs"].get<size_t>(),
              probes > 0 ? (" (the host check's " + std::to_string(probes) + " probes among them)").c_str() : "");
}

void print_left_out(const nlohmann::json& report) {
  for (const nlohmann::json& run : report.value("whole_runs_left_out", nlohmann::json::array()))
    std::printf(
        "left out: real iterations at batch %lld, %s: %.4g ms, waiting for their CPU %.0f%% of their time (another "
        "process ran there); `dnncast calibrate` again when the CPU is free measures them anew\n",
        run["batch"].get<long long>(), run["input"].get<std::string>().c_str(), run["measured_ms"].get<double>(),
        100 * run["cpu_wait_share"].get<double>());
}

int run_calibrate_refit(const Args& args) {
  CLI::App app(
      "Fit a host calibration again from the measurements its folder keeps (calibration.db), as this version of\n"
      "dnncast fits them: nothing is measured, host.json is rewritten (docs/TRANSFER.md \"Calibrate on this host\").",
      "dnncast calibrate");
  std::string dir;
  bool json = false;
  app.add_option("--refit", dir, "the calibration's folder (where host.json is)")->required();
  app.add_flag("--json", json, "print the report as JSON");
  if (!parse_args(app, args, "calibrate")) return 0;
  const nlohmann::json report = calibrate::refit_calibration(dir);
  if (json) {
    std::cout << report.dump(1) << "\n";
    return 0;
  }
  std::printf("refitted %s from its measurements:\n", report["dir"].get<std::string>().c_str());
  std::printf("layer scales here over the source's layer model (per kind, time-weighted):");
  for (const auto& [kind, scale] : report["kind_scale"].items())
    std::printf(" %s %.3g (%lld)", kind.c_str(), scale.get<double>(), report["kind_layers"][kind].get<long long>());
  std::printf("\nwhole-iteration shift: %s over %zu real runs\n", report["shift"]["map"].get<std::string>().c_str(),
              report["whole_runs"].size());
  print_left_out(report);
  if (report.contains("note")) std::printf("note: %s\n", report["note"].get<std::string>().c_str());
  print_anchors(report);
  return 0;
}

bool calibrate_other_form(const Args& args, int& exit_code) {
  if (!args.empty() && !args.front().empty() && args.front()[0] != '-') {
    exit_code = run_calibrate_model(args);
    return true;
  }
  for (const std::string& arg : args) {
    if (arg == "--layer-bench" || arg.rfind("--layer-bench=", 0) == 0) {
      exit_code = run_calibrate_cross_host(args);
      return true;
    }
    if (arg == "--refit" || arg.rfind("--refit=", 0) == 0) {
      exit_code = run_calibrate_refit(args);
      return true;
    }
    if (arg == "--help" || arg == "-h") {  // the four forms' help, the one a new host needs first
      run_calibrate_model({"--help"});
      std::printf("\n");
      run_calibrate_cross_host({"--help"});
      std::printf("\n");
      run_calibrate_refit({"--help"});
      std::printf("\n");
    }
  }
  return false;
}

}  // namespace dnncast::cli
