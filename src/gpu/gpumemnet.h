// The GPUMemNet MLP measurements (../shared/data/public/gpu_memory/gpumemnet_mlp_a100_40gb.csv, decompressed):
// synthetic PyTorch MLPs trained with Adam in fp32 on one A100 40GB, each row the peak memory.used nvidia-smi
// reported. Each row's network is rebuilt as a dnncast graph, so that the memory simulator forecasts it.
//
// GPUMemNet's script (NeuroNetGen_scripts/MLP/mlp_next.py there) builds nn.Sequential of Linear, BatchNorm1d,
// an activation module (not in place), Dropout, and Softmax(dim=1) before CrossEntropyLoss. Mapped to the IR:
//   BatchNorm1d         Reshape N x C -> N x C x 1 x 1, BatchNorm2d, Reshape back (views: the same tensors kept)
//   ReLU                Sigmoid: keeps its output and runs out of place (the IR's ReLU would run in place)
//   SiLU, Softplus, Mish, ELU, SELU, LeakyReLU, PReLU
//                       GELU: keeps its input, out of place (PReLU's one weight is left out: 4 bytes)
//   Identity            nothing
// The memory of each is that of the module it stands for; their FLOPs are not (only memory is fitted here).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace dnncast::gpu {

struct GpuMemNetLayer {
  std::string kind;  // as the file names it: "linear", "batch_normalization", "ReLU", "dropout", ...
  int64_t width = 0, params = 0;
};

struct GpuMemNetRow {
  int64_t line = 0;            // in the file (line 1 is the source note, line 2 the header)
  std::string filename, arch;  // arch: the `arch:` part of Filename (pyramid, uniform, bottleneck, gradual)
  int64_t input_features = 0, batch = 0;
  std::vector<GpuMemNetLayer> layers;
  double measured_mib = 0;  // Max GPU Memory (MiB): nvidia-smi's peak memory.used
};

// Throws InputError naming the file and line: a missing or compressed file, a missing column, a bad row.
std::vector<GpuMemNetRow> load_gpumemnet_rows(const std::string& path);

// A published table opened for reading, decompressed: throws InputError for a missing file or an xz one.
std::ifstream open_published_table(const std::string& path);

// The row's MLP at its batch; throws InputError naming the row's line for a layer list that does not chain.
Graph gpumemnet_graph(const GpuMemNetRow& row);

}  // namespace dnncast::gpu
