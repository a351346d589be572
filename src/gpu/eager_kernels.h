// The memory-bound kernels PyTorch eager launches for an op of a model family beyond what the IR op implies
// (issue 45): Hugging Face's GPT-2 scales the S x S attention scores and masks them with torch.where, BERT adds its
// mask to them, OPT clamps them with torch.max and copies q, k and v into heads; GPT-2's gelu_new is eight
// elementwise kernels where the IR has one GELU. Kept as data (data/hardware/eager_kernels.csv, written from the
// modeling code and PyTorch's autograd formulas, checked against NeuSight's per-node labels of the training GPUs)
// that node_kernels (kernel_model.h) reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dnncast::gpu {

struct EagerKernel {
  std::string family;  // the graph's family, several separated by ';', or "*" for every family
  std::string op;      // the IR op
  bool backward = false;
  // scores | query | output | input | rows (the input's, its last dimension reduced) | weight | output_and_input (a
  // kernel over the output whose bytes_per_element count over the output's and the input's elements both: a copy
  // from one size to another)
  std::string operand;
  enum class Operand : uint8_t { Scores, Query, Output, Input, Rows, Weight, OutputAndInput };
  Operand operand_kind = Operand::Output;  // the same, parsed
  int count = 1;
  double bytes_per_element = 0, flops_per_element = 0;
  bool replaces = false;  // the family's rows of this op replace its default elementwise and norm kernels
  // "" | dropout | causal | softcap | batched (the attention's batch over 1) | kv_views (batched, and keys and values
  // not from a repeat_kv that copies) | copies (a repeat_kv of more than one key head; one head is expanded as a view)
  std::string condition;
  enum class Condition : uint8_t { Always, Dropout, Causal, Softcap, Batched, KvViews, Copies };
  Condition condition_kind = Condition::Always;  // the same, parsed
  std::string what;
};

// The file's rows; throws InputError naming the file and line (an unknown operand, mode or condition too).
std::vector<EagerKernel> load_eager_kernels(const std::string& path);
std::string default_eager_kernels_path();  // data/hardware/eager_kernels.csv ("" when no data folder is found)

// The shipped rows for a graph family's op (the family's own, then the "*" rows), loaded once; none when the
// file is absent.
const std::vector<const EagerKernel*>& eager_kernels(const std::string& family, const std::string& op);

}  // namespace dnncast::gpu
