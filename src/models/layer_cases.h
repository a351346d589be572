// Layer cases for the proxy layer benchmarks (`dnncast bench-layers`, docs/MEASUREMENT.md "Layer
// benchmarks"): a graph of Input nodes and the one node to time, built from a sampled shape, from a
// node of a zoo network, or from a row of a shape file. Torch-free; profile/ times them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace dnncast::models {

// The kinds a bench samples (each a code path of its own in libtorch's CPU kernels):
// conv (dense Conv2d), dwconv (depthwise: groups = in = out channels), gconv (grouped: 1 < groups < in),
// linear, bn (BatchNorm2d), ln (LayerNorm), pool (MaxPool2d, AvgPool2d, AdaptiveAvgPool2d),
// act (ReLU, GELU, SiLU, Hardswish, Sigmoid), add (Add of two tensors), attention
// (ScaledDotProductAttention). Sorted.
const std::vector<std::string>& layer_kinds();
// The kind of a node of any graph, "" for a node no kind covers (reshapes, losses, inputs).
std::string layer_kind(const Graph& graph, int node);
// The same from an op's name and, for Conv2d, its groups and channels (a node's layer sites carry these).
std::string layer_kind_of(const std::string& op, int64_t groups = 1, int64_t in_channels = 0, int64_t out_channels = 0);
// Throws InputError "unknown layer kind 'cnv' (known: ...)" unless every name is a kind.
void check_layer_kinds(const std::vector<std::string>& kinds);

struct LayerCase {
  std::string kind;
  std::string origin;  // "sample", "zoo:<model>", "file:<path>:<row>"
  std::string key;     // identity: architecture hash (op, attributes) + input shapes ("9f..:8x64x56x56")
  int64_t batch = 1;
  double flops_forward = 0;  // of the whole batch (the op's cost rule)
  Graph graph;               // Input nodes, then the timed node (named `<kind>`)
};

// The case of node `node` of a shape-inferred graph: its producers become Input nodes of their
// shapes and dtypes. Throws InputError for an Input node.
LayerCase case_of_node(const Graph& graph, int node, const std::string& origin);

struct SampleOptions {
  std::vector<std::string> kinds = layer_kinds();
  std::vector<int64_t> batches{1, 2, 4, 8, 16, 32, 64, 128, 256};
  int64_t count = 100;
  uint64_t seed = 1;
  double max_gflops = 2;    // forward FLOPs of the whole batch, at most
  double max_act_mb = 256;  // input + output bytes, at most
};
// `count` distinct cases, kinds in turn, batches uniformly from the list, shapes drawn per kind
// (docs/MEASUREMENT.md lists the ranges), each within the caps. Deterministic in the seed.
std::vector<LayerCase> sample_layer_cases(const SampleOptions& options);

// Every distinct case of the kinds in the zoo models at each (input size, batch); sequence
// models take `seq_len` instead of the input. Unknown model names throw InputError.
std::vector<LayerCase> zoo_layer_cases(const std::vector<std::string>& models, const std::vector<int64_t>& inputs,
                                       const std::vector<int64_t>& batches, const std::vector<std::string>& kinds,
                                       int64_t seq_len = 0);

// A shape file: CSV with the header `kind,batch,channels,out_channels,height,width,kernel,stride,groups,op`
// (unused fields empty; docs/MEASUREMENT.md says which each kind reads). Throws InputError naming
// the file and row of the first bad one (unknown kind, a missing, non-positive or overflowing field,
// a shape its op refuses), before anything is measured.
std::vector<LayerCase> read_shape_file(const std::string& path);

// Keeps the first of each key, in order.
std::vector<LayerCase> unique_cases(std::vector<LayerCase> cases);

}  // namespace dnncast::models
