// A predictor set carried to this host by timing the user's own layers here (issue 36, docs/TRANSFER.md
// "Calibrate on this host"). What is host-specific is fitted on this host's measurements and kept in
// a small folder (host.json) beside the source set it adapts; `predict` on this host finds it without
// flags and multiplies the source set's time forecast by
//
//   factor(c) = shift( layer_factor(c) ),  layer_factor(c) = sum_rows s[kind(row)] L(row) / sum_rows L(row)
//
// where L(row) is the source set's layer-wise model's forecast of each layer of configuration c (and of
// its optimizer row), s[kind] the host's measured layer time over L per layer kind (conv, dwconv, bn,
// ...; "*" for every other row), and shift the whole-network correction measured on a few real
// iterations here: log(measured / (source x layer_factor)) = log_intercept + (log_slope - 1) log(source
// x layer_factor) (a constant ratio unless enough iterations support a slope). Layers alone do not carry
// what a real iteration adds to them (the sequence, caches, allocator, autograd): that part is the shift.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "features/layer_features.h"
#include "forecast/layer_model.h"
#include "records/records.h"

namespace dnncast::forecast {

inline constexpr const char* kHostCalibrationFormat = "dnncast-host-calibration/1";
inline constexpr const char* kAnyKind = "*";  // the scale of rows no measured kind covers

// One single layer measured here beside the source layer model's forecast of it.
struct LayerRatio {
  std::string kind;        // models::layer_kinds()
  double measured_ms = 0;  // forward + backward, warm
  double source_ms = 0;    // the source set's layer-wise model
};

// One whole iteration measured here beside the source forecast times its layer factor.
struct WholeRatio {
  double measured_ms = 0;
  double adjusted_ms = 0;  // source forecast x layer_factor
  double source_ms = 0;    // the source forecast (0: unknown, no size anchor)
  double intensity = 0;    // arithmetic_intensity() of the configuration (0: unknown)
};

// A whole run timed here as a mix anchor (HostCalibration::mix_anchors).
struct MixAnchor {
  double source_ms = 0;  // the source forecast
  double ratio = 1;      // measured / source
  double intensity = 0;  // arithmetic_intensity() of the configuration
};

// Training FLOPs (forward and backward) per byte of activations, over every node of `graph`: how much of a step is
// arithmetic rather than memory traffic. Batch and image size leave it nearly unchanged; the network sets it (issue
// 52, session 34: the depthwise, dense and fire networks 18-100, resnet50 164, resnet18/34 and vgg 326-907).
double arithmetic_intensity(const Graph& graph);

struct HostCalibration {
  records::EnvironmentRecord environment;      // this host, as host_environment() records it
  std::string source_dir;                      // the source predictor set (absolute)
  std::map<std::string, double> kind_scale;    // kind -> measured / source; kAnyKind always present
  std::map<std::string, int64_t> kind_layers;  // layers measured per kind
  // Every layer timed here, by its case key (models::LayerCase::key: op, attributes and input shapes): a
  // configuration whose layers were timed (the model calibrated, at its batch and input) takes their own times
  // instead of its kinds' scales.
  std::map<std::string, double> layer_ms;
  // Every configuration whose real iterations were timed here (`calibrate` of each model into this folder), by
  // whole_key: the median of its iterations. Its forecast is that measurement (issue 52: calibrating another model
  // never moves it), the shift serving every other configuration.
  std::map<std::string, double> whole_ms;
  // Per model (its architecture hash, sizes left out) whose real iterations were timed here: the mean of
  // log(measured / (source x layer_factor)) over its runs. What a real iteration adds to its layers depends on the
  // model's layer mix: its other configurations take this, not the shift fitted over every model calibrated here.
  std::map<std::string, double> model_log_shift;
  // The host check of this host when the calibration was made (host_check.h: small whole runs of the shipped data
  // timed here beside the source's forecast of them): their geometric-mean ratio measured / source and the
  // geometric mean of their source forecasts. 0 where none was recorded.
  double host_check_ratio = 0, host_check_source_ms = 0;
  std::string host_check_checked;            // when it was measured, UTC
  std::vector<MixAnchor> host_check_probes;  // each probe of that check (none in calibrations before session 34)
  // Whole runs timed on this host as (source forecast ms, measured / source), rising in source ms: the host check's
  // probes pooled into one anchor, and each real run of a calibrated configuration. A configuration not measured here
  // takes measured / source from the least-squares line through them in log-log at its own source forecast (held at
  // the line's value at the smallest and largest anchor beyond them; through two anchors, the interpolation between
  // them) for the share of its time whose layers were not timed here: on two VMs the calibrated model's kind scales
  // carried other models worse than whole runs of other sizes do (issue 52: a VM 5x faster than the data's host on
  // 224-px layers, about 1x-2x on small ones; docs/RESULTS.md "Calibrating one model, the others").
  std::vector<std::pair<double, double>> size_anchors;
  // The same whole runs with the arithmetic intensity of their network, each host-check probe apart: where at least
  // kMinMixAnchors of them span a factor of 2 in intensity, a configuration takes measured / source from the
  // least-squares plane log(ratio) = a + b log(intensity) + c log(source ms) through them (b and c held towards 0 by
  // kMixRidge; both held at the anchors' range) in place of the line in size. On the Zen 4 of session 34 the networks
  // of high intensity (resnet18/34, vgg, alexnet, wide_resnet) ran at 0.36-0.62x the source forecast and those of low
  // intensity (depthwise, dense, fire) at 0.74-1.17x, at every size: a line in size alone cannot tell them apart.
  std::vector<MixAnchor> mix_anchors;
  std::string shift = "none";  // "none" (no whole iteration measured), "ratio" or "lms"
  double log_intercept = 0, log_slope = 1;
  // Spread of log(measured / calibrated) expected at configurations the calibration did not
  // measure: widens the interval (leave-one-out on the whole runs where there are 3 or more, else
  // kCalibratedLogSpread).
  double log_spread = 0;
  nlohmann::json report = nlohmann::json::object();  // what was measured, for `calibrate --json`

  // s[kind] for one layer site (models::layer_kind_of), kAnyKind's where the kind was not measured.
  double scale_of(const std::string& kind) const;
  // layer_factor(c) above, from the source's per-row forecasts (row_ms: nodes, then the optimizer row).
  double layer_factor(const features::LayerSites& sites, const std::vector<double>& row_ms) const;
  // The same where a row's layer was timed here (layer_ms by its key): its measured time in place of s[kind] L(row).
  // `graph` is the one `sites` was made from. `covered`: the share of the source's layer time so replaced.
  double layer_factor(const Graph& graph, const features::LayerSites& sites, const std::vector<double>& row_ms,
                      double* covered = nullptr) const;
  // The shift applied to a source forecast already multiplied by its layer factor.
  double shifted(double adjusted_ms) const;
  // measured / source at a configuration whose source forecast is source_ms, from size_anchors (1 without any): the
  // line rather than a path through every anchor, since one network's run is not its size's ratio (the cross-host
  // table, docs/RESULTS.md: a path through single runs lost to one ratio on 4 of 6 host pairs, the line won on 4).
  // With the configuration's arithmetic intensity (> 0) and mix anchors that make a plane, from the plane in intensity
  // and size (mix_anchors above); anchoring() says which.
  double anchored_ratio(double source_ms, double intensity = 0) const;
  // Which rule anchored_ratio applies at this intensity (0: none known) and through how many whole runs: "size and
  // intensity" (the plane), "size" (the line; runs 0 where there are no size anchors either).
  struct Anchoring {
    const char* by;
    size_t runs;
    bool plane() const { return std::string_view(by) != "size"; }
  };
  Anchoring anchoring(double intensity) const;
  // The 90% interval's log half-width of the plane at a configuration whose source forecast is source_ms:
  // kMixLogSpread within kMixNearLogDistance of a mix anchor's source time in log, kMixFarLogSpread beyond.
  double plane_log_spread(double source_ms) const;

  nlohmann::json to_json() const;
  static HostCalibration from_json(const nlohmann::json& document, const std::string& where);
  static HostCalibration load(const std::string& dir);  // InputError naming the folder on any problem
  void save(const std::string& dir) const;              // creates dir; host.json
};

// A configuration as HostCalibration::whole_ms keys it: the graph's architecture hash, its inputs' shapes, the batch,
// optimizer, precision and threads.
std::string whole_key(const Graph& graph, const features::TrainingConfig& config);

// The interval of a measured configuration's forecast: x/1.13..x1.13, the noise floor between processes and days on
// these hosts (docs/RESULTS.md), since the next run of it is another process.
inline constexpr double kMeasuredLogSpread = 0.122;  // log(1.13)

// The interval of a calibrated forecast is at least x/1.35..x1.35 (log spread 0.30) where fewer than 3 whole runs
// give no leave-one-out error to size it: an assumption, checked by the share of the other configurations inside it
// in the cross-host evaluation (docs/RESULTS.md "Calibrating on this host", last column).
inline constexpr double kCalibratedLogSpread = 0.30;
// Mix anchors (HostCalibration::mix_anchors): how many make a plane, and the ridge on its two slopes (in the sums of
// squared log errors; at 0.1 the 24 configurations of session 34's Zen 4 gave 19.8%, at 0 19.7%, at 1 21.0%).
inline constexpr size_t kMinMixAnchors = 4;
inline constexpr double kMixRidge = 0.1;
// The 90% interval of a configuration carried by the plane (its share of time not timed here): x/1.50..x1.50. The
// 90th percentile of |log(measured / plane)| over the 24 configurations of session 34's Zen 4 is log(1.50) on the
// AVX-512 dispatch and log(1.51) on the AVX2 one (`scripts/anchor-replay.py ... --probe ...` prints it); x1.50 holds
// 21 of 24 on each, and each dispatch's width held 22 and 21 of the other's 24 (docs/RESULTS.md, session 35). The
// source's own interval, scaled, held 24 of 24 on both: x1.6 each way there, x4 on the AVX2 host, whose fingerprint
// no shipped data has.
inline constexpr double kMixLogSpread = 0.405;  // log(1.50)
// Farther than a factor of e (log distance 1) in source time from every mix anchor, the plane's 90% interval is
// x/1.61..x1.61: the 90th percentile of |log(measured / plane)| over the 35 such rows of issue 52's five calibrated
// datasets of 24 configurations (the EPYC family 25 model 17 VMs of sessions 34 and 35, each on both dispatches, and
// the Intel Xeon of session 40); over the 85 rows within it, log(1.50), kMixLogSpread again. On the Intel Xeon the
// anchors leave 1-2 s of source time unanchored (probes up to 279 ms, the calibrated run 38.8 s) and the five rows
// outside x1.50 all lay there (docs/RESULTS.md, session 40). Fitted on the rows it is scored on; distances of
// 0.7-1.3 put the same rows beyond.
inline constexpr double kMixNearLogDistance = 1.0;
inline constexpr double kMixFarLogSpread = 0.476;  // log(1.61)
// Uncalibrated on a host no predictor was trained on: the forecast's 90% interval is widened by this
// factor each way. The shipped set carried as is to the two other CPU kinds of data/ (`calibrate --from-db
// ... --json`, uncalibrated.within_interval_pct_by_widen; docs/RESULTS.md "Calibrating on this host"):
// x2.2 holds 94% of the Zen 3's 354 configurations but 73-83% of the Intel host's; x2.5 holds 96-100% on both.
inline constexpr double kUnmatchedHostWiden = 2.5;

// Per-kind scales: a time-weighted geometric mean of measured / source per kind with at least
// kMinKindLayers layers, and kAnyKind over all of them. InputError when `ratios` holds no usable row.
inline constexpr int64_t kMinKindLayers = 3;
void fit_kind_scales(const std::vector<LayerRatio>& ratios, HostCalibration& calibration);
// The shift from whole iterations: none without any; a ratio (geometric mean); "lms" only from
// 5 runs on and when its leave-one-out log error beats the ratio's by more than 10% + 0.5 points.
// Sets log_spread. Also sets size_anchors from the runs with a source forecast and the host check's fields.
void fit_whole_shift(const std::vector<WholeRatio>& runs, HostCalibration& calibration);

// Bench kinds of each site of `sites` (models::layer_kind_of; "" where no kind covers the node).
std::vector<std::string> site_kinds(const features::LayerSites& sites);

// Where calibrations live: $DNNCAST_CALIBRATIONS, else $XDG_DATA_HOME/dnncast/calibrations, else
// $HOME/.local/share/dnncast/calibrations ("" when none of these is set).
std::string default_calibration_root();
// The folder under `root` whose calibration was made on this host (match_host exact on its
// environment), the newest first; nullopt when none.
std::optional<std::string> find_host_calibration(const std::string& root, const records::EnvironmentRecord& host);
// A folder holding a calibration (host.json).
bool is_host_calibration(const std::string& dir);

}  // namespace dnncast::forecast
