// NCCL collectives' time: the ring model, its constants file, Vidur's measured rows, the fit and its scores
// (collectives.h).
#include "gpu/collectives.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "core/csv.h"
#include "core/error.h"
#include "core/text.h"
#include "gpu/kernel_model.h"

namespace fs = std::filesystem;

namespace dnncast::gpu {

namespace {

const std::vector<std::string> kModelColumns = {"link",      "alpha_us",   "efficiency", "link_gbs",
                                                "fitted_on", "source_url", "notes"};

// Vidur's node kinds (vidur/config/node_sku_config.py names them): the catalogue GPU and, on a node whose GPUs are
// joined in NVLink pairs, the bridge's per-direction GB/s (the datasheet's bidirectional figure halved) that two GPUs
// of the node share; four of them cross PCIe (the catalogue's link). DGX nodes join all eight over NVSwitch (the
// catalogue's NVLink). Vidur's A100 is an A100 80GB (gpu/half_kernels.h); its pairwise A100 and H100 nodes are taken
// as the PCIe cards with NVLink bridges, the A100 80GB PCIe and the H100 NVL (the files do not name the form).
struct NodeKind {
  const char* folder;
  const char* gpu;
  double pair_bridge_gbs;  // 0: the catalogue's link for every GPU count
  const char* source_url;
};
constexpr NodeKind kNodeKinds[] = {
    {"a40_pairwise_nvlink", "a40", 56.25, "https://www.nvidia.com/en-us/data-center/a40/"},  // NVLink 112.5 GB/s
    {"a100_pairwise_nvlink", "a100-80gb-pcie", 300, "https://www.nvidia.com/en-us/data-center/a100/"},  // 600 GB/s
    {"a100_dgx", "a100-80gb", 0, "https://www.nvidia.com/en-us/data-center/dgx-a100/"},
    {"h100_pairwise_nvlink", "h100-nvl", 300, "https://www.nvidia.com/en-us/data-center/h100/"},  // 600 GB/s
    {"h100_dgx", "h100-sxm", 0, "https://www.nvidia.com/en-us/data-center/dgx-h100/"},
};

std::optional<LinkKind> link_kind(const std::string& link) {
  if (starts_with(link, "nvlink")) return LinkKind::NvLink;
  if (starts_with(link, "pcie")) return LinkKind::Pcie;
  return std::nullopt;
}

// One ring over `ranks` GPUs moving `bytes` (the whole buffer) at `gbs` GB/s per direction.
double ring_seconds(CollectiveKind kind, double bytes, int64_t ranks, const LinkConstants& link, double gbs) {
  if (ranks <= 1 && kind != CollectiveKind::SendRecv) return 0;
  const double n = static_cast<double>(ranks);
  double steps = 1, wire_bytes = bytes;
  if (kind == CollectiveKind::AllReduce) {
    steps = 2 * (n - 1);
    wire_bytes = 2 * (n - 1) / n * bytes;
  } else if (kind != CollectiveKind::SendRecv) {
    steps = n - 1;
    wire_bytes = (n - 1) / n * bytes;
  }
  return steps * link.alpha_s + wire_bytes / (link.efficiency * gbs * 1e9);
}

double parse_number(const std::string& text, const std::string& where, const std::string& column, bool positive) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value < 0 || (positive && value == 0))
    throw InputError(where + ": " + column + " is " + quote(text) + ", not a " +
                     (positive ? "positive number" : "number of at least 0"));
  return value;
}

// The fields of one table's row by column name; InputError names the file and line of a short row.
struct Columns {
  std::map<std::string, size_t> index;
  Columns(const std::vector<std::string>& header, const std::vector<std::string>& required, const std::string& file) {
    for (size_t at = 0; at < header.size(); ++at) index[header[at]] = at;
    for (const std::string& column : required)
      if (!index.count(column)) throw InputError(file + ": no column " + quote(column));
  }
  const std::string& get(const std::vector<std::string>& fields, const std::string& column,
                         const std::string& where) const {
    const size_t at = index.at(column);
    if (at >= fields.size()) throw InputError(where + ": too few fields (no " + column + ")");
    return fields[at];
  }
};

bool blank(const std::vector<std::string>& fields) {
  return fields.empty() || (fields.size() == 1 && fields[0].empty());
}

}  // namespace

const std::string& name(CollectiveKind kind) {
  static const std::array<std::string, 4> names = {"all-reduce", "all-gather", "reduce-scatter", "send-recv"};
  return names[static_cast<size_t>(kind)];
}

const std::string& name(LinkKind kind) {
  static const std::array<std::string, kLinkKinds> names = {"nvlink", "pcie", "infiniband"};
  return names[static_cast<size_t>(kind)];
}

CollectiveModel load_collective_model(const std::string& path) {
  const std::string file =
      path.empty() ? (fs::path(hardware::default_catalogue_dir()) / "collectives.csv").string() : path;
  std::ifstream in(file);
  if (!in) throw InputError("cannot read the collective model " + quote(file));
  CollectiveModel model;
  std::string comment;
  std::getline(in, comment);  // line 1: what fitted it
  if (!starts_with(comment, "#")) throw InputError(file + " line 1: expected a '#' line saying what fitted the file");
  model.source = file + " (" + comment.substr(std::min<size_t>(comment.size(), 2)) + ")";
  int64_t line = 1;
  std::vector<std::string> header, fields;
  if (!read_csv_record(in, header, line)) throw InputError(file + ": no header");
  const Columns columns(header, kModelColumns, file);
  std::array<bool, kLinkKinds> seen{};
  while (read_csv_record(in, fields, line)) {
    if (blank(fields)) continue;
    const std::string where = file + " line " + std::to_string(line);
    const std::string& link = columns.get(fields, "link", where);
    size_t kind = 0;
    while (kind < kLinkKinds && name(static_cast<LinkKind>(kind)) != link) ++kind;
    if (kind == kLinkKinds) throw InputError(where + ": link " + quote(link) + " is not nvlink, pcie or infiniband");
    if (seen[kind]) throw InputError(where + ": link " + link + " listed twice");
    seen[kind] = true;
    LinkConstants& constants = model.links[kind];
    constants.alpha_s = parse_number(columns.get(fields, "alpha_us", where), where, "alpha_us", false) * 1e-6;
    constants.efficiency = parse_number(columns.get(fields, "efficiency", where), where, "efficiency", true);
    if (constants.efficiency > 1.5)
      throw InputError(where + ": efficiency " + shown_number(constants.efficiency) + " is past 1.5 of the link");
    const std::string& gbs = columns.get(fields, "link_gbs", where);
    if (!gbs.empty()) constants.link_gbs = parse_number(gbs, where, "link_gbs", true);
    if (static_cast<LinkKind>(kind) == LinkKind::InfiniBand && !constants.link_gbs)
      throw InputError(where + ": infiniband needs link_gbs (GB/s per GPU per direction)");
    constants.fitted_on = columns.get(fields, "fitted_on", where);
    constants.source_url = columns.get(fields, "source_url", where);
    constants.notes = columns.get(fields, "notes", where);
  }
  for (size_t kind = 0; kind < kLinkKinds; ++kind)
    if (!seen[kind]) throw InputError(file + ": no row for link " + name(static_cast<LinkKind>(kind)));
  return model;
}

const CollectiveModel& shipped_collective_model() {
  static const CollectiveModel model = load_collective_model();
  return model;
}

void save_collective_model(const CollectiveModel& model, const std::string& path, const std::string& comment) {
  std::ofstream out(path);
  if (!out) throw InputError("cannot write " + quote(path));
  out << "# " << comment << "\n";
  write_csv_record(out, kModelColumns);
  for (size_t kind = 0; kind < kLinkKinds; ++kind) {
    const LinkConstants& link = model.links[kind];
    char alpha[32], efficiency[32];
    std::snprintf(alpha, sizeof alpha, "%.3f", link.alpha_s * 1e6);
    std::snprintf(efficiency, sizeof efficiency, "%.4f", link.efficiency);
    write_csv_record(
        out, {name(static_cast<LinkKind>(kind)), alpha, efficiency, link.link_gbs ? shown_number(*link.link_gbs) : "",
              link.fitted_on, link.source_url, link.notes});
  }
  if (!out) throw InputError("cannot write " + quote(path));
}

std::optional<double> collective_seconds(const CollectiveModel& model, CollectiveKind kind, double bytes, int64_t gpus,
                                         const hardware::GpuSpec& gpu, int64_t gpus_per_node) {
  const std::optional<LinkKind> intra = link_kind(gpu.link);
  if (!intra || !(gpu.link_gbs.value_or(0) > 0)) return std::nullopt;
  if (gpus <= 1 || bytes <= 0) return 0.0;
  const LinkConstants& local = model.at(*intra);
  const int64_t per_node = std::max<int64_t>(1, std::min(gpus, gpus_per_node));
  if (gpus <= per_node) return ring_seconds(kind, bytes, gpus, local, *gpu.link_gbs);
  const LinkConstants& inter = model.at(LinkKind::InfiniBand);
  const double inter_gbs = inter.link_gbs.value_or(0);
  DNNCAST_ASSERT(inter_gbs > 0);  // load_collective_model requires it
  if (kind == CollectiveKind::SendRecv) return ring_seconds(kind, bytes, 2, inter, inter_gbs);
  const int64_t nodes = (gpus + per_node - 1) / per_node;
  const double share = bytes / static_cast<double>(per_node);  // what each GPU's NIC carries across the nodes
  const double across = ring_seconds(kind, share, nodes, inter, inter_gbs);
  // all-reduce: reduce-scatter in the node, all-reduce across, all-gather in the node; all-gather and reduce-scatter
  // each have one intra-node phase.
  const CollectiveKind phase =
      kind == CollectiveKind::AllGather ? CollectiveKind::AllGather : CollectiveKind::ReduceScatter;
  const double within = ring_seconds(phase, bytes, per_node, local, *gpu.link_gbs);
  return across + within * (kind == CollectiveKind::AllReduce ? 2 : 1);
}

std::string default_vidur_network_dir() { return shared_public_dir("DNNCAST_VIDUR_NETWORK", "vidur/network"); }

CollectiveTables load_vidur_collectives(const hardware::Catalogue& catalogue, const std::string& given,
                                        bool include_test_gpus) {
  CollectiveTables tables;
  tables.dir = given.empty() ? default_vidur_network_dir() : given;
  std::error_code error;
  if (tables.dir.empty() || !fs::is_directory(tables.dir, error))
    throw InputError("no Vidur network folder found (../shared/data/public/vidur/network" +
                     (given.empty() ? std::string() : ": " + quote(given)) +
                     "): set DNNCAST_VIDUR_NETWORK or pass --vidur DIR");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(tables.dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    const std::string file = it->path().filename().string();
    if (file == "all_reduce.csv.xz" || file == "send_recv.csv.xz" || file == "all_reduce.csv" ||
        file == "send_recv.csv")
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError("no NODE/{all_reduce,send_recv}.csv[.xz] under " + quote(tables.dir));
  std::map<std::pair<std::string, int64_t>, size_t> specs;  // (node, GPUs in the node) -> tables.specs
  for (const fs::path& file : files) {
    const std::string folder = file.parent_path().filename().string();
    const NodeKind* node = nullptr;
    for (const NodeKind& candidate : kNodeKinds)
      if (folder == candidate.folder) node = &candidate;
    if (!node) throw InputError(file.string() + ": node kind " + quote(folder) + " is not one of Vidur's five");
    const hardware::GpuSpec& gpu = catalogue.gpu(node->gpu);
    const bool send_recv = starts_with(file.filename().string(), "send_recv");
    const std::string time_column = send_recv ? "time_stats.send_recv.median" : "time_stats.all_reduce.median";
    std::istringstream in(table_text(file.string()));
    std::vector<std::string> header, fields;
    int64_t line = 0;
    if (!read_csv_record(in, header, line)) throw InputError(file.string() + ": empty");
    const Columns columns(header, {time_column, "num_workers", "size", "devices_per_node"}, file.string());
    while (read_csv_record(in, fields, line)) {
      if (blank(fields)) continue;
      if (is_held_out_test_gpu(gpu.name) && !include_test_gpus) {
        ++tables.held_out;
        continue;
      }
      const std::string where = file.string() + " line " + std::to_string(line);
      CollectiveMeasurement row;
      row.node = folder;
      row.kind = send_recv ? CollectiveKind::SendRecv : CollectiveKind::AllReduce;
      row.measured_s = parse_number(columns.get(fields, time_column, where), where, time_column, true) * 1e-3;
      row.bytes = parse_number(columns.get(fields, "size", where), where, "size", true);
      const double gpus = parse_number(columns.get(fields, "num_workers", where), where, "num_workers", true);
      const double per_node =
          parse_number(columns.get(fields, "devices_per_node", where), where, "devices_per_node", true);
      if (gpus != std::floor(gpus) || per_node != std::floor(per_node) || gpus > 4096 || per_node > gpus)
        throw InputError(where +
                         ": num_workers and devices_per_node must be whole, devices_per_node at most "
                         "num_workers");
      row.gpus = static_cast<int64_t>(gpus);
      row.gpus_per_node = static_cast<int64_t>(per_node);
      const auto key = std::make_pair(folder, row.gpus_per_node);
      auto found = specs.find(key);
      if (found == specs.end()) {
        hardware::GpuSpec spec = gpu;
        if (node->pair_bridge_gbs > 0 && row.gpus_per_node <= 2) {
          spec.link = "nvlink-bridge";
          spec.link_gbs = node->pair_bridge_gbs;
          spec.source_url = node->source_url;
        }
        if (!link_kind(spec.link) || !spec.link_gbs)
          throw InputError("GPU " + quote(spec.name) + " of node kind " + folder + " has no link in the catalogue");
        found = specs.emplace(key, tables.specs.size()).first;
        tables.specs.push_back(spec);
      }
      row.spec = found->second;
      tables.rows.push_back(row);
    }
  }
  return tables;
}

namespace {

double log_loss(const CollectiveModel& model, const CollectiveTables& tables, const std::vector<size_t>& rows) {
  double sum = 0;
  for (size_t at : rows) {
    const CollectiveMeasurement& row = tables.rows[at];
    const double forecast =
        *collective_seconds(model, row.kind, row.bytes, row.gpus, tables.specs[row.spec], row.gpus_per_node);
    const double residual = std::log(forecast / row.measured_s);
    sum += residual * residual;
  }
  return sum;
}

}  // namespace

CollectiveModel fit_collective_model(const CollectiveTables& tables, const std::vector<size_t>& rows,
                                     const CollectiveModel& base) {
  // Two parameters shared by every link kind: a grid in log alpha and log efficiency, narrowed around its best
  // point (its basin is one smooth valley): six rounds end on steps of 2e-6 in either logarithm.
  double log_alpha = std::log(1e-5), log_efficiency = std::log(0.5);
  double span_alpha = std::log(1e3), span_efficiency = std::log(1e3);
  CollectiveModel trial = base;
  const auto set = [&trial](double alpha_log, double efficiency_log) {
    for (LinkConstants& link : trial.links) {
      link.alpha_s = std::exp(alpha_log);
      link.efficiency = std::min(1.5, std::exp(efficiency_log));
    }
  };
  constexpr int kSteps = 40;
  for (int round = 0; round < 6; ++round) {
    double best = INFINITY, best_alpha = log_alpha, best_efficiency = log_efficiency;
    for (int alpha_step = -kSteps; alpha_step <= kSteps; ++alpha_step)
      for (int efficiency_step = -kSteps; efficiency_step <= kSteps; ++efficiency_step) {
        const double alpha = log_alpha + span_alpha * alpha_step / kSteps;
        const double efficiency = std::min(std::log(1.5), log_efficiency + span_efficiency * efficiency_step / kSteps);
        set(alpha, efficiency);
        const double loss = log_loss(trial, tables, rows);
        if (loss < best) {
          best = loss;
          best_alpha = alpha;
          best_efficiency = efficiency;
        }
      }
    log_alpha = best_alpha;
    log_efficiency = best_efficiency;
    span_alpha *= 4.0 / kSteps;
    span_efficiency *= 4.0 / kSteps;
  }
  set(log_alpha, log_efficiency);
  return trial;
}

std::vector<CollectiveScore> score_collectives(const CollectiveModel& model, const CollectiveTables& tables,
                                               const std::vector<size_t>& rows) {
  std::map<std::tuple<std::string, int, int64_t, int64_t>, CollectiveScore> groups;  // node, kind, per node, gpus
  for (size_t at : rows) {
    const CollectiveMeasurement& row = tables.rows[at];
    const double forecast =
        *collective_seconds(model, row.kind, row.bytes, row.gpus, tables.specs[row.spec], row.gpus_per_node);
    CollectiveScore& score = groups[{row.node, static_cast<int>(row.kind), row.gpus_per_node, row.gpus}];
    if (score.rows == 0 && score.rows_large == 0) {
      score.node = row.node;
      score.kind = row.kind;
      score.gpus = row.gpus;
      score.gpus_per_node = row.gpus_per_node;
    }
    const double error = (forecast - row.measured_s) / row.measured_s * 100;
    ++score.rows;
    score.error_pct += std::abs(error);
    if (row.bytes >= kLargeCollectiveBytes) {
      ++score.rows_large;
      score.error_large_pct += std::abs(error);
      score.bias_large_pct += error;
    }
  }
  std::vector<CollectiveScore> scores;
  for (auto& [key, score] : groups) {
    score.error_pct /= static_cast<double>(std::max<int64_t>(1, score.rows));
    score.error_large_pct /= static_cast<double>(std::max<int64_t>(1, score.rows_large));
    score.bias_large_pct /= static_cast<double>(std::max<int64_t>(1, score.rows_large));
    scores.push_back(score);
  }
  return scores;
}

}  // namespace dnncast::gpu
