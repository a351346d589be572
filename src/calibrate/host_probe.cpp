// The host check's probes, measured and forecast (host_probe.h).
#include "calibrate/host_probe.h"

#include <cstdio>
#include <utility>

#include "core/error.h"
#include "forecast/forecast.h"
#include "forecast/host_match.h"
#include "import/model_source.h"
#include "records/records.h"
#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast::calibrate {

forecast::HostCheck run_host_check(const std::function<void(const std::string&)>& progress) {
#ifndef DNNCAST_HAVE_TORCH
  (void)progress;
  throw InputError("this build has no profiler (DNNCAST_WITH_TORCH=OFF): the host check cannot measure");
#else
  forecast::HostCheck check;
  check.key = forecast::host_check_key(forecast::host_environment());
  check.checked = records::utc_now();
  for (forecast::HostProbe probe : forecast::host_check_probes()) {
    import::ModelSource source;
    source.name = probe.model;
    source.spec.batch = probe.batch;
    source.spec.input = records::parse_input_text(probe.input);
    forecast::ForecastRequest request;
    request.model = source;
    request.optimizer = parse_optimizer(probe.optimizer);
    request.threads = 1;
    // The probe's forecast as the shipped set makes it: neither the host check nor a calibration of this host (with
    // one, the probes were set beside the calibrated forecast: a ratio near 1, and calibrate's anchors from it wrong).
    request.host_check = false;
    request.use_calibration = false;
    const forecast::Forecast forecast = forecast::forecast(request);
    probe.forecast_ms = forecast.time_ms;
    check.predictor = forecast.predictor;
    profile::TrainConfig config;
    config.optimizer = request.optimizer;
    config.threads = 1;
    profile::Limits limits;
    limits.time_budget_s = 0.5;
    limits.warmup_budget_s = 0.5;
    limits.min_iterations = 3;
    limits.ci_target = 0.05;
    limits.timeout_s = 60;
    // Measured again while another process held its CPU; the attempt that waited least is kept.
    profile::Measurement measured;
    for (int attempt = 0; attempt < forecast::kHostCheckAttempts; ++attempt) {
      profile::Measurement again = profile::measure_isolated(source.build(), config, limits);
      if (again.status != "ok")
        throw InputError("host check: " + probe.model + " did not measure (" + again.status + ": " + again.message +
                         ")");
      if (attempt == 0 || again.cpu_wait_share < measured.cpu_wait_share) measured = std::move(again);
      if (measured.cpu_wait_share <= forecast::kHostCheckMaxWaitShare) break;
    }
    if (measured.cpu_wait_share > forecast::kHostCheckMaxWaitShare) {
      char line[320];
      std::snprintf(
          line, sizeof line,
          "host check: %s waited for its CPU at least %.0f%% of its time in each of %d tries (another process is "
          "running on this CPU): not checked; run `dnncast host-check` again when the CPU is free",
          probe.model.c_str(), 100 * measured.cpu_wait_share, forecast::kHostCheckAttempts);
      throw InputError(line);
    }
    probe.measured_ms = measured.time_ms.median;
    probe.wait_share = measured.cpu_wait_share;
    check.probes.push_back(probe);
    if (progress) {
      char line[200];
      std::snprintf(line, sizeof line, "%s batch %lld %s: %.1f ms here, %.1f ms forecast (%.2fx)", probe.model.c_str(),
                    static_cast<long long>(probe.batch), probe.input.c_str(), probe.measured_ms, probe.forecast_ms,
                    probe.measured_ms / probe.forecast_ms);
      progress(line);
    }
  }
  check.summarize();
  return check;
#endif
}

}  // namespace dnncast::calibrate
