// The per-kernel GPU time model (issue 34, docs/GPU.md "Per-kernel model"): a kernel's latency from its
// shape and the GPU's catalogue specs, learned across GPUs from public per-kernel measurements (NeuSight's
// fp32 kernels on P4, P100, T4, V100 and A100 40GB: ../shared/data/public/neusight/ops).
//
// The idea is NeuSight's -- predict how much of the roofline a kernel reaches, not its time -- written our
// own way: per kernel family (GEMM, convolution, LayerNorm, softmax, elementwise) a gradient-boosted tree
// ensemble predicts log(busy time / roofline time) from features that carry across GPUs because each is
// measured against the GPU: the problem's size in waves of 128x128 (and 64x64) tiles over the SMs and the
// last wave's fill, and arithmetic intensity beside the GPU's ridge point. Not the working set beside the L2: the
// A100's 40 MB lie past the others' 2-6 MB, and the trees read each GPU's L2 as its name (leave-one-GPU-out chose
// this, issue 45). No feature names the GPU itself (peaks, SM count, power): with five training GPUs such features let
// the trees mistake a new GPU for one of them -- leave-one-GPU-out chose this (docs/RESULTS.md, issue 34), and a new
// GPU gets the utilisation the five reach on the same normalised problem. Busy time is the measured latency less the
// GPU's launch floor (what a kernel of no work took when timed alone), so that kernels queued back to back in a
// training step add their work, not their floors. The forecast is the roofline time times the predicted ratio (never
// below the roofline but for 3x3 convolutions, which cuDNN runs as Winograd). NeuSight's convolutions are all 3x3
// forward passes; DeepBench's training convolutions (1x1, strided, 5x5, 7x7; forward, input gradient and weight
// gradient, queued calls: their latency is the busy time) add the other kernel sizes and both backward passes, each
// pass its own implicit GEMM and a feature; DeepBench's training GEMMs add the GTX 1080 Ti, TITAN Xp and TITAN X
// Pascal to the GEMMs'. DeepBench's rows are of another regime (calls queued back to back, CUDA 8-10, where large
// GEMMs run nearer the peak), told apart by a feature; a forecast is made in NeuSight's. Fitted by `dnncast
// calibrate-gpu-kernels`; shipped in data/hardware/gpu_kernels/.
//
// What rests on no per-kernel measurement, and is said where it is used: GEMM backward kernels (costed as the
// GEMMs of the shapes they run), depthwise and grouped convolutions (PyTorch runs them
// outside cuDNN's GEMM paths: costed as memory-bound elementwise work), tensor-core precisions (the
// calibrated curves of gpu_forecast.h), and the test GPUs of NeuSight's protocol, whose rows no fit sees.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/op_registry.h"
#include "hardware/catalogue.h"

namespace dnncast::learn {
class Learner;
}

namespace dnncast::gpu {

enum class KernelFamily { Gemm, Conv, Norm, Softmax, Elementwise };
inline constexpr int kKernelFamilies = 5;
const std::string& name(KernelFamily family);  // "gemm", "conv", "norm", "softmax", "elementwise"

// One kernel as the model sees it. Gemm: batch x (m x k) . (k x n). Conv: the input batch, channels, square
// kernel, input size, stride, padding, and which pass (m, n, k are that pass's implicit GEMM: forward batch*out^2,
// out channels, in*kernel^2; input gradient batch*in^2, in channels, out*kernel^2; weight gradient out channels,
// in*kernel^2, batch*out^2). Norm, softmax: rows x cols. Elementwise: m elements. flops and bytes: the work and
// traffic (fp32); a convolution's three passes do the same multiply-adds over the same three tensors.
enum class ConvPass : uint8_t { Forward, InputGrad, WeightGrad };
const std::string& name(ConvPass pass);  // "forward", "input-grad", "weight-grad"
struct KernelShape {
  KernelFamily family = KernelFamily::Elementwise;
  double batch = 1, m = 1, n = 1, k = 1;
  double channels = 0, out_channels = 0, kernel = 0, size = 0, stride = 1, padding = 0;  // Conv only
  ConvPass pass = ConvPass::Forward;                                                     // Conv only
  double flops = 0, bytes = 0;
};

KernelShape gemm_kernel(double batch, double m, double n, double k, bool shared_b = false);
KernelShape conv_kernel(double batch, double channels, double out_channels, double kernel, double size, double stride,
                        double padding, ConvPass pass = ConvPass::Forward);
KernelShape row_kernel(KernelFamily family, double rows, double cols, double flops_per_element,
                       double bytes_per_element);
KernelShape elementwise_kernel(double elements, double flops, double bytes);

// The kernels one node of a graph runs (fp32): forward, and backward (input and weight gradients).
struct NodeKernels {
  std::vector<KernelShape> forward, backward;
};
NodeKernels node_kernels(const Graph& graph, int node_index);

// One GPU's part of a node when a tensor-parallel group of `tp` GPUs shares it (gpu/parallel.h): the whole node (run
// on every GPU alike), none of it (another pipeline stage's), 1/tp of its work (a tensor split over the GPUs:
// attention heads, an MLP's hidden units), or a Linear split Megatron's way, by its output features (column) or by
// its input features (row).
enum class NodePart : uint8_t { Whole, Skip, Split, Column, Row };
NodeKernels node_kernels(const Graph& graph, int node_index, NodePart part, double tp);
// The same, given the node's cost (node_cost), as a caller that has it at hand knows. `training` false: the model in
// eval mode, as inference runs it (model.eval(): dropout is the identity, no kernel; NeuSight's inference labels time
// a dropout node at the floor of a node that launches nothing).
NodeKernels node_kernels(const Graph& graph, int node_index, const OpCost& cost, NodePart part, double tp,
                         bool training = true);
// Per node, the gradient sums autograd runs right after its backward, as elementwise kernels (fp32: read two
// gradients, write their sum): a tensor that requires a gradient and feeds several nodes (a residual stream, q, k
// and v's shared input) has its gradients added as the second and later ones arrive. Backward runs in reverse, so
// each consumer but the last in forward order adds one; the earliest consumer is where PyTorch's trace shows it.
std::vector<std::vector<double>> gradient_sums(const Graph& graph);  // per node, the elements of each sum
// The same, given which nodes' outputs require a gradient (requires_gradient, node by node in order), as a caller
// that has each node's cost at hand knows.
std::vector<std::vector<double>> gradient_sums(const Graph& graph, const std::vector<char>& requires_grad);
// Whether a node's output requires a gradient: a float output of a node with weights to train, or of one reading
// such an output (`requires_grad`: the earlier nodes').
bool requires_gradient(const Node& node, const OpCost& cost, const std::vector<char>& requires_grad);
KernelShape gradient_sum_kernel(double elements);

// What a node's GPU time counts as, in the kinds NeuSight's per-node labels are compared by (issue 45,
// scripts/neusight-nodes.py): "gemm" (Linear, MatMul), "conv", "attention" (the attention op and every other node
// of an attention block: head splits, merges, its dropout), "norm", "activation", "embedding", "loss",
// "elementwise" (residual adds, dropouts, the rest); "" for an input.
std::string node_time_kind(const Graph& graph, int node_index);

// The GPU specs the model reads (catalogue columns); InputError names a missing one.
struct KernelDevice {
  double fp32_flops = 0, bandwidth = 0, sms = 0;
};
KernelDevice kernel_device(const hardware::GpuSpec& gpu);

double roofline_seconds(const KernelShape& shape, const KernelDevice& device);
// `queued`: the regime of the rows timed as the mean of calls queued back to back (DeepBench's, CUDA 8-10), a
// feature so that the two regimes are told apart; false: the regime of the rows timed one call at a time
// (NeuSight's, PyTorch 2.1 and CUDA 12.1, the launch floor taken off), the one forecasts are made in.
std::vector<float> kernel_features(const KernelShape& shape, const KernelDevice& device, bool queued = false);
int kernel_feature_count(KernelFamily family);

// One public measurement: a kernel, the catalogue GPU it ran on, its latency.
struct KernelMeasurement {
  KernelShape shape;
  std::string gpu;
  double seconds = 0;
  std::string group;  // what it was measured for (Vidur's rows: the model), for leave-one-group-out
  // Timed as one call alone, its launch floor in it (NeuSight's, Vidur's); false: the mean of calls queued back to
  // back, the floor hidden behind the previous call (DeepBench's), so the latency is the busy time.
  bool timed_alone = true;
};

// The fitted ensembles, one per family, and each training GPU's launch floor.
class GpuKernelModel {
 public:
  GpuKernelModel();
  ~GpuKernelModel();
  GpuKernelModel(GpuKernelModel&&) noexcept;
  GpuKernelModel& operator=(GpuKernelModel&&) noexcept;

  // Fits every family from `rows` (those of NeuSight's test GPUs are refused: InputError).
  // `half`: the rows are half-precision kernels (half_kernels.h), their GEMMs judged against the tensor-core peak
  // slowed by `gemm_vector_share` of their FLOPs at the FP32 rate (half_kernel_device), which the model keeps.
  static GpuKernelModel fit(const std::vector<KernelMeasurement>& rows, const hardware::Catalogue& catalogue,
                            int rounds = 200, bool half = false, double gemm_vector_share = 0);
  // data/hardware/gpu_kernels (or `dir`); InputError for a missing or malformed folder.
  static GpuKernelModel load(const std::string& dir = "");
  static std::string default_dir();
  void save(const std::string& dir, const std::string& header) const;

  // Busy seconds on the GPU (no launch floor) in the regime of NeuSight's rows (kernel_features): roofline x the
  // predicted ratio, at least the roofline (a 3x3 convolution may go below it, as Winograd does in the measurements).
  double seconds(const KernelShape& shape, const KernelDevice& device) const;
  // The same in either regime (kernel_features): `queued`, as DeepBench's rows were timed.
  double seconds(const KernelShape& shape, const KernelDevice& device, bool queued) const;
  // The same for many kernels, each family's rows predicted in one pass over its trees (issue 37): equal to
  // seconds() of each, to the bit.
  std::vector<double> seconds_many(const std::vector<const KernelShape*>& shapes, const KernelDevice& device) const;
  // What the kernel took when timed alone, as in the public tables: busy time plus the launch floor
  // (the training GPUs' mean floor of the family for a GPU that was not in the fit).
  double timed_alone_seconds(const KernelShape& shape, const KernelDevice& device, const std::string& gpu) const;
  bool has(KernelFamily family) const;
  const std::vector<std::string>& gpus() const { return gpus_; }  // the GPUs fitted on
  const std::string& source() const { return source_; }
  // A half-precision model's share of a GEMM's FLOPs at the FP32 rate (fit; tensor_gemm.csv in its folder, 0 when
  // the folder has none, as a model written before it was fitted).
  double gemm_vector_share() const { return gemm_vector_share_; }

 private:
  std::array<std::unique_ptr<learn::Learner>, kKernelFamilies> learners_;
  // floor per family per fitted GPU (seconds)
  std::vector<std::string> gpus_;
  std::array<std::vector<double>, kKernelFamilies> floors_;
  std::string source_;
  double gemm_vector_share_ = 0;
};

// NeuSight's test GPUs (the H100 in every form and the chips of its family, the L4, the A100 80GB): left out of every
// fit that is shipped and of the forecast interval, scored only when asked (`--score-test-gpus`).
bool is_held_out_test_gpu(const std::string& catalogue_name);
// The same GPUs in words, for help texts, messages and file headers.
inline constexpr const char* kTestGpusInWords = "the H100 and its family: GH200, H200; L4; A100 80GB";

// NeuSight's ops folder (ops/train/OP/GPU.csv[.xz]): every NVIDIA kernel row, mapped to the catalogue.
// Rows of test GPUs are counted in `held_out` and left out. InputError names a malformed file and line.
struct KernelTables {
  std::vector<KernelMeasurement> rows;
  int64_t held_out = 0;
  std::string dir;
};
KernelTables load_kernel_tables(const hardware::Catalogue& catalogue, const std::string& dir = "");
std::string default_kernel_tables_dir();

// DeepBench's fp32 training convolutions (../shared/data/public/gpu_benchmarks/deepbench_conv_train_fp32.csv): each
// row's forward, input-gradient and weight-gradient times on its NVIDIA GPUs, appended to `tables` as queued
// (timed_alone false) Conv rows of the catalogue's GPUs. Its V100 and P100 are filed under the catalogue's
// V100 PCIe 32GB and P100 PCIe, NeuSight's (DeepBench does not name the form factor), so that leaving a GPU out leaves
// its chip out. Rows of non-square kernels, inputs, strides or padding, and GPUs the catalogue lacks (the M40), are
// counted in `skipped`. InputError names a malformed file and line.
struct DeepBenchLoad {
  int64_t rows = 0;                        // measurements added
  std::map<std::string, int64_t> skipped;  // reason -> measurements
};
DeepBenchLoad load_deepbench_convolutions(const hardware::Catalogue& catalogue, const std::string& path,
                                          KernelTables& tables);
std::string default_deepbench_convolutions();  // "" when the public folder is not found
// DeepBench's fp32 training GEMMs (../shared/data/public/gpu_benchmarks/deepbench_gemm_train_fp32.csv: C = A.B of M x K
// and K x N, cuBLAS, the mean of calls queued back to back) on its NVIDIA GPUs, appended to `tables` as queued
// Gemm rows of the catalogue's GPUs (filed as the convolutions are); the M40 is counted in `skipped`. The transposes
// are not a feature (the model's GEMMs carry none). InputError names a malformed file and line.
DeepBenchLoad load_deepbench_gemms(const hardware::Catalogue& catalogue, const std::string& path, KernelTables& tables);
std::string default_deepbench_gemms();  // "" when the public folder is not found
// $VARIABLE, else the nearest shared/data/public/RELATIVE beside or above the executable's folder; "" when neither.
std::string shared_public_dir(const char* variable, const std::string& relative);
// The text of a table file; a .xz file through `xz -dc` (xz-utils is part of every Debian system). InputError
// names a file that cannot be read.
std::string table_text(const std::string& path);

}  // namespace dnncast::gpu
