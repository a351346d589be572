// QLoRA's quantized base weights as a graph transform (issue 47): the frozen Linear layers of a LoRA fine-tune
// stored as bitsandbytes stores them (attr quantize on the Linear), the adapters, the LM head (transformers keeps
// the output embedding unquantized) and every other parameter as they were.
//   nf4   bitsandbytes' Linear4bit with QLoRA's double quantization (BitsAndBytesConfig load_in_4bit,
//         bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True): two 4-bit codes per byte, one 8-bit absmax per
//         block of 64 weights, one fp32 absmax per 256 blocks and an fp32 offset; forward and backward each
//         dequantize the weight to the compute dtype (MatMul4Bit: nothing but the quantized weight is kept).
//   int8  Linear8bitLt (load_in_8bit, LLM.int8()): one int8 per weight and an fp32 scale per output row; the
//         weight is dequantized alike for the input's gradient.
// Nothing here is measured: bitsandbytes is not in Debian and runs its kernels on CUDA only. The byte counts are the
// layouts above; the rest is the memory simulator's recipe (memory/recipe_linear.cpp, run_linear_quantized).
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace dnncast {

// "nf4" | "int8"; anything else is InputError naming `what` and the kinds.
std::string parse_quantize(const std::string& text, const std::string& what);

// Bytes of a quantized out x in weight (see above).
int64_t quantized_weight_bytes(int64_t numel, int64_t out_features, const std::string& kind);

// The graph with every frozen Linear but the LM head (the Linear whose output is a graph output) and LoRA's
// adapters marked quantize=KIND. InputError where nothing is frozen (quantized weights cannot be trained: give a
// LoRA fine-tune) or no Linear is left to quantize. `graph` must be shape-inferred; so is the result. Taken by value:
// a caller done with its graph moves it in rather than copying every node.
Graph apply_quantization(Graph graph, const std::string& kind);

}  // namespace dnncast
