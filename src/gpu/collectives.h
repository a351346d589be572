// NCCL collectives' time (docs/GPU.md "Collectives"): a latency-bandwidth model per link kind on NCCL's ring,
// time = steps x alpha + wire_bytes / (efficiency x link_gbs), its constants in data/hardware/collectives.csv
// (written by `dnncast calibrate-collectives` from Vidur's measured NCCL times; the protocol: rows of NeuSight's
// test GPUs, every A100 80GB and H100 row, are never fitted on).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hardware/catalogue.h"

namespace dnncast::gpu {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, SendRecv };
const std::string& name(CollectiveKind kind);  // "all-reduce", "all-gather", "reduce-scatter", "send-recv"

// The link a collective's bytes cross: NVLink (any generation, bridges too), PCIe, InfiniBand between nodes.
enum class LinkKind { NvLink, Pcie, InfiniBand };
constexpr size_t kLinkKinds = 3;
const std::string& name(LinkKind kind);  // "nvlink", "pcie", "infiniband": collectives.csv's `link` column

// One link kind's constants: a step's latency and the share of the link's per-direction bandwidth a ring reaches.
struct LinkConstants {
  double alpha_s = 0;     // seconds per ring step
  double efficiency = 1;  // wire bytes move at efficiency x link_gbs
  // GB/s per GPU per direction: InfiniBand's (one NIC per GPU); NVLink's and PCIe's come from the GPU's catalogue
  // row (GpuSpec::link_gbs), so theirs is none.
  std::optional<double> link_gbs;
  std::string fitted_on;  // the rows the constants were fitted on, or where they were taken from
  std::string source_url;
  std::string notes;
};

struct CollectiveModel {
  std::array<LinkConstants, kLinkKinds> links;  // by LinkKind
  std::string source;                           // the file read, and its first line
  const LinkConstants& at(LinkKind kind) const { return links[static_cast<size_t>(kind)]; }
  LinkConstants& at(LinkKind kind) { return links[static_cast<size_t>(kind)]; }
};

// data/hardware/collectives.csv (or `path`); InputError for a missing or malformed file.
CollectiveModel load_collective_model(const std::string& path = "");
const CollectiveModel& shipped_collective_model();  // loaded once per process
// Writes `model` as collectives.csv, `comment` its first line (what fitted it). InputError when it cannot write.
void save_collective_model(const CollectiveModel& model, const std::string& path, const std::string& comment);

// Seconds of one collective in which each of `gpus` GPUs contributes `bytes` (all-reduce: the buffer's size; send/recv:
// the message), on `gpu`'s link; GPUs beyond `gpus_per_node` reach each other over the inter-node link. none when the
// catalogue has no link for `gpu` (the caller says so).
// All-gather's and reduce-scatter's `bytes` is the whole buffer too (all-gather's output, reduce-scatter's input; each
// GPU holds bytes / gpus of it), as nccl-tests counts them. Rings: all-reduce 2(n-1) steps carrying 2(n-1)/n x bytes,
// all-gather and reduce-scatter n-1 steps of (n-1)/n x bytes, send/recv one step of bytes. Past one node, the
// hierarchical form: within each node a reduce-scatter (all-gather), across the nodes the collective on each node's
// 1/gpus_per_node share over every GPU's own NIC at once, within each node an all-gather. One GPU: 0 seconds.
std::optional<double> collective_seconds(const CollectiveModel& model, CollectiveKind kind, double bytes, int64_t gpus,
                                         const hardware::GpuSpec& gpu, int64_t gpus_per_node = 8);

// --- Calibration on Vidur's measured NCCL times (../shared/data/public/vidur/network) ---

// One measured collective: a row of NODE/{all_reduce,send_recv}.csv[.xz].
struct CollectiveMeasurement {
  std::string node;  // Vidur's node kind: "a40_pairwise_nvlink", "a100_dgx", ...
  CollectiveKind kind = CollectiveKind::SendRecv;
  int64_t gpus = 0, gpus_per_node = 0;  // num_workers, devices_per_node
  double bytes = 0;                     // size
  double measured_s = 0;                // the median
  size_t spec = 0;                      // CollectiveTables::specs' entry: the GPU and the link its node gives them
};

struct CollectiveTables {
  std::string dir;
  std::vector<CollectiveMeasurement> rows;
  // Per node kind and GPU count within the node: the catalogue GPU with the link it has there (a pairwise NVLink
  // node's pair crosses the bridge, four of its GPUs PCIe).
  std::vector<hardware::GpuSpec> specs;
  int64_t held_out = 0;  // rows of test GPUs left out
};

// ../shared/data/public/vidur/network ($DNNCAST_VIDUR_NETWORK); "" when not found.
std::string default_vidur_network_dir();
// Every row of `dir` (default: default_vidur_network_dir()); the test GPUs' only with `include_test_gpus`. InputError
// for a missing folder, an unknown node kind or a malformed row (file and line named).
CollectiveTables load_vidur_collectives(const hardware::Catalogue& catalogue, const std::string& dir = "",
                                        bool include_test_gpus = false);

// `base` with every link kind's alpha and efficiency fitted together to `rows` (least squares in log time).
CollectiveModel fit_collective_model(const CollectiveTables& tables, const std::vector<size_t>& rows,
                                     const CollectiveModel& base);

// Mean absolute percentage error of `model` on one group of rows: a node kind, a collective, a GPU count.
struct CollectiveScore {
  std::string node;
  CollectiveKind kind = CollectiveKind::SendRecv;
  int64_t gpus = 0, gpus_per_node = 0;  // gpus_per_node < gpus: across nodes
  int64_t rows = 0, rows_large = 0;
  double error_pct = 0, error_large_pct = 0;  // over all sizes; over sizes of at least kLargeBytes
  double bias_large_pct = 0;                  // mean signed error over the large sizes (+: forecast too slow)
};
constexpr double kLargeCollectiveBytes = 1e6;
std::vector<CollectiveScore> score_collectives(const CollectiveModel& model, const CollectiveTables& tables,
                                               const std::vector<size_t>& rows);

}  // namespace dnncast::gpu
