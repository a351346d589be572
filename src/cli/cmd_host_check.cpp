// `dnncast host-check [--force] [--json]`: is this host as fast as the shipped data's? Measures the probe
// configurations here (forecast/host_check.h, calibrate/host_probe.h) unless a check of this host (same fingerprint,
// boot and clock) is cached, prints the result and caches it. `predict` runs it for this host's CPU, once per boot.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "calibrate/host_probe.h"
#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "forecast/host_calibration.h"
#include "forecast/host_check.h"
#include "forecast/host_match.h"

namespace dnncast::cli {

int run_host_check(const Args& args) {
  CLI::App app(
      "Time a few small training configurations of the shipped data on this host and set them beside the shipped\n"
      "predictor's forecast of them: a CPU whose fingerprint matches the data's may run at another speed in another\n"
      "VM. Cached per host, boot and clock (DNNCAST_CACHE_DIR, else ~/.cache/dnncast); `predict` reads it.",
      "dnncast host-check");
  bool force = false, as_json = false, for_predict = false;
  app.add_flag("--force", force, "measure again even if this host's check is cached");
  app.add_flag("--json", as_json, "print JSON");
  app.add_flag("--for-predict", for_predict, "(predict's call) announce the check and print its lines only");
  if (!parse_args(app, args, "host-check")) return 0;
  const std::string key = forecast::host_check_key(forecast::host_environment());
  std::optional<forecast::HostCheck> check = force ? std::nullopt : forecast::cached_host_check(key);
  const bool cached = check.has_value();
  if (!check) {
    if (!as_json)
      std::printf("host check: timing %zu small configurations of the shipped data on this host, once per boot%s\n",
                  forecast::host_check_probes().size(), for_predict ? " (predict --no-host-check skips it)" : "");
    check = calibrate::run_host_check([&](const std::string& line) {
      if (!as_json) std::printf("host check: %s\n", line.c_str());
      std::fflush(stdout);
    });
    forecast::save_host_check(*check);
  }
  if (as_json) {
    nlohmann::json document = check->to_json();
    document["cached"] = cached;
    document["cache"] = forecast::host_check_cache_path();
    std::cout << document.dump(2) << "\n";
    return 0;
  }
  std::printf("host check: %s%.2fx the forecast on this host (probes %.2f-%.2fx; %s)\n", cached ? "(cached) " : "",
              check->ratio, check->low, check->high,
              check->off() ? "off: forecasts here are scaled by it and their intervals widened"
                           : "in line with the shipped data");
  if (check->off() && !for_predict)
    std::printf(
        "host check: to carry the predictor to this host for your model: dnncast calibrate MODEL --batch N "
        "--minutes %d\n",
        forecast::kCalibrateMinutes);
  return 0;
}

}  // namespace dnncast::cli
