// Features of one (network, training configuration, hardware) triple: DNNAbacus's network
// structural matrix (per op kind: count, MACs, FLOPs, parameters, activation and saved bytes;
// op-kind -> op-kind connection counts) with totals, depth and widths, convolution work by the
// implementation libtorch runs for it in the configuration (conv.*, version 2), the configuration
// and the hardware. The list is versioned: a predictor trained on version N refuses features of
// another.
//
// Speed: the graph-dependent part is computed once (GraphFeatures) and scaled per batch, so a
// batch sweep of a fixed graph costs one multiply-add per feature and configuration, plus a few
// comparisons per convolution for the conv.* columns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "hardware/cpu_conv.h"
#include "hardware/isa.h"

namespace dnncast::features {

// Bump whenever a feature is added, removed, reordered or computed differently.
inline constexpr int kFeatureVersion = 3;
#define DNNCAST_FEATURE_VERSION ::dnncast::features::kFeatureVersion

// The op kinds of the structural matrix in feature order (node_kind() names); the last is "Other",
// which takes every kind not listed.
const std::vector<std::string>& op_kinds();
// Index into op_kinds() of a node's feature kind (OpDef::feature_kind_of; "Permute" for a Transpose
// node). A kind no op declares is folded by registry category ("loss", "attention") or into
// "Other"; a registered op's own name that is not a kind is a bug (asserted).
int kind_index(const std::string& kind, const std::string& category = "");
// Whether the feature kind op `op` declares (or `op` itself, for a name no op registers) is in the
// kind table. True for every op of the registry (op_completeness_test).
bool has_kind_entry(const std::string& op);

// What is being trained, and how (the options a campaign varies).
// Optimizer and precision: TrainingSetup (the device is the hardware's: HardwareFeatures).
struct TrainingConfig : TrainingSetup {
  int64_t batch = 1;
  int64_t threads = 1;  // CPU threads of the training process
};

// The machine it runs on; 0 = unknown.
struct HardwareFeatures {
  int64_t cores = 0;  // logical CPUs
  bool gpu = false;
  double peak_flops_f32 = 0;            // FLOP/s of the whole device
  double memory_bandwidth_bytes_s = 0;  // bytes/s
  int64_t memory_bytes = 0;
  // What oneDNN dispatches to on a CPU: which convolution kernels run (conv.* columns). Unknown
  // (not recorded, as in datasets before the ISA was fingerprinted) counts as kUnrecordedIsa.
  hardware::CpuIsa isa = hardware::CpuIsa::Unknown;
};

// The ISA of environments that did not record one: every such run of the shipped data ran on
// AVX-512 (docs/DATASET.md: its peaks match the AVX-512 rules, not the AVX2 ones).
constexpr hardware::CpuIsa kUnrecordedIsa = hardware::CpuIsa::Avx512Core;
inline hardware::CpuIsa effective_isa(hardware::CpuIsa isa) {
  return isa == hardware::CpuIsa::Unknown ? kUnrecordedIsa : isa;
}

// One Conv2d of a graph, for the columns that depend on which implementation libtorch's CPU path
// runs (conv.*): the choice changes with the batch and the thread count (ATen's use_mkldnn: a
// single-thread 1x1 convolution takes the slow im2col path below batch 16, oneDNN's jit kernels
// from 16), so these columns are computed per configuration, not fixed + batch x per-sample.
struct ConvSite {
  hardware::ConvShape shape;    // at batch 1
  double flops_per_sample = 0;  // one pass (forward; each backward pass does as many)
  double weight_bytes = 0;
  bool input_grad = true;                           // false: no backward-data pass (the input needs no gradient)
  std::array<hardware::ConvImpl, 3> mkldnn{};       // the passes' implementations when oneDNN runs it (AVX-512)
  std::array<hardware::ConvImpl, 3> mkldnn_avx2{};  // the same under AVX2 dispatch
};

// The graph-dependent part of the features, at one sample and independent of the batch.
// row = fixed + batch * per_sample, then the configuration and hardware columns are written.
struct GraphFeatures {
  std::vector<double> fixed;       // feature_count() values
  std::vector<double> per_sample;  // feature_count() values
  int64_t graph_batch = 1;         // the batch the graph was built with
  // Totals used by baselines and derived columns (per sample unless said otherwise).
  double flops_train_per_sample = 0;  // forward + backward
  double bytes_per_sample = 0;        // activation bytes read + written, forward
  double saved_bytes_per_sample = 0;  // kept for backward
  double saved_bytes_fixed = 0;       // kept for backward whatever the batch (BatchNorm statistics)
  double param_bytes = 0;             // batch-independent
  int64_t params = 0;
  std::vector<ConvSite> convs;  // in graph order
};

// Computes the graph part. The graph must be shape-inferred and have an Input node (whose first
// dimension is the batch); throws InputError naming the graph otherwise. Each quantity is split
// into fixed + per-sample from the graph at its batch and at batch + 1 (exact for quantities
// affine in the batch); a graph that does not re-infer at batch + 1 is taken as proportional.
GraphFeatures graph_features(const Graph& graph);

// Names of all features, in row order (stable within one kFeatureVersion).
const std::vector<std::string>& feature_names();
size_t feature_count();
// Index of a feature by name; -1 when there is none.
int feature_index(const std::string& name);
// The graph's convolutions (ConvSite), from a shape-inferred graph at its batch.
std::vector<ConvSite> conv_sites(const Graph& graph);
// The ConvSite of one Conv2d node (rank-4 input and output) of a shape-inferred graph; input_grad:
// whether anything before it needs a gradient (else there is no backward-data pass).
ConvSite conv_site_of(const Graph& graph, int node_index, bool input_grad);
// The same from the node's cost already known (node_cost or its op's cost: the forward FLOPs and parameters are
// read), so that a caller that has it does not cost the node twice.
ConvSite conv_site_of(const Graph& graph, int node_index, const OpCost& cost, bool input_grad);
// The implementation of each pass (forward, backward data, backward weights) of one convolution in
// one configuration; on a GPU every pass counts as Jit (its vendor library's kernels).
std::array<hardware::ConvImpl, 3> conv_impls(const ConvSite& site, const TrainingConfig& config,
                                             const HardwareFeatures& hardware);

// Writes feature_count() values to `row`. Throws InputError on a batch or thread count < 1.
void featurize(const GraphFeatures& graph, const TrainingConfig& config, const HardwareFeatures& hardware, double* row);
std::vector<double> featurize(const GraphFeatures& graph, const TrainingConfig& config,
                              const HardwareFeatures& hardware);
// One configuration of a graph built at its batch: a single pass over the nodes (the fastest way to
// one forecast). Equals featurize(graph_features(graph), config, hardware). Throws InputError when
// config.batch differs from the graph's batch.
std::vector<double> featurize_graph(const Graph& graph, const TrainingConfig& config, const HardwareFeatures& hardware);

}  // namespace dnncast::features
