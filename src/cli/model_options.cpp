#include "cli/model_options.h"

#include "cli/parse_args.h"
#include "core/checked.h"
#include "core/error.h"
#include "graph/tensor.h"
#include "import/model_source.h"

namespace dnncast::cli {

void ModelOptions::add_to(CLI::App& app) {
  input_ = app.add_option("--input", input_text_, "image input CxHxW (default: the model's)");
  seq_ = app.add_option("--seq", seq_len_, "sequence length of a sequence model");  // not with --input: checked
  classes_option_ = app.add_option("--classes", classes_, "classifier outputs (default 1000)");
  app.add_flag("--allow-unknown", allow_unknown_,
               "ONNX: treat unsupported ops as elementwise (warns once per op type)");
  lora_option_ =
      app.add_option("--lora", lora_,
                     "LoRA fine-tuning, base weights frozen: r=RANK[,alpha=A][,targets=q,v,...][,norms=train] (default "
                     "alpha 8, targets q,v)");
  quantize_option_ = app.add_option(
      "--quantize", quantize_,
      "with --lora: the frozen base weights quantized as bitsandbytes stores them, nf4 (QLoRA: 4-bit NormalFloat, "
      "double quantization) | int8 (LLM.int8()); memory and GPU time from the layout, not measured");
  expert_balance_option_ = app.add_option(
      "--expert-balance", expert_balance_,
      "a mixture of experts' router: the busiest expert's routed tokens over the mean (default 1: balanced; the "
      "others share the rest evenly)");
  attention_option_ = app.add_option(
      "--attention", attention_,
      "eager (default: the math path, S x S scores kept) | sdpa (PyTorch 2's fused attention on CUDA: no S x S "
      "matrix kept; memory and GPU time only, unverified)");
  app.add_flag("--checkpointing", checkpointing_,
               "activation checkpointing: each transformer block keeps only its input and is recomputed in the "
               "backward pass (torch.utils.checkpoint)");
}

import::ModelSource ModelOptions::source(const std::string& model,
                                         std::optional<int64_t> batch) const {import::ModelArgs args;
args.model = model;
args.batch = batch;
if (input_->count() > 0) args.input = parse_image_input(input_text_);
if (seq_->count() > 0) args.seq = seq_len_;
if (classes_option_->count() > 0) args.classes = classes_;
if (lora_option_->count() > 0) args.lora = lora_;
if (quantize_option_->count() > 0) args.quantize = quantize_;
if (expert_balance_option_->count() > 0) args.expert_balance = expert_balance_;
if (attention_option_->count() > 0) args.attention = attention_;
args.allow_unknown = allow_unknown_;
args.checkpointing = checkpointing_;
return import::make_model_source(args, OptionStyle::Flag);
}  // namespace dnncast::cli

std::vector<int64_t> parse_image_input(const std::string& text) {
  TensorShape shape;
  try {
    shape = parse_shape(text);
  } catch (const InputError& error) {
    throw error.with_context("--input");
  }
  if (shape.rank() != 3)
    throw InputError("--input " + quote(text) +
                     ": expected CxHxW, three positive integers joined by 'x' (e.g. 3x224x224)");
  return shape.dims;
}

}  // namespace dnncast::cli

namespace dnncast::cli {

std::string isa_list() {
  std::string text;
  for (const std::string& name : hardware::isa_names()) text += (text.empty() ? "" : " | ") + name;
  return text;
}

void ParallelFlags::add_to(CLI::App& app, const std::string& gpus_help) {
  app.add_option("--gpus", gpus, gpus_help);
  app.add_option("--parallel", parallel,
                 "GPU: how --gpus share training: dp, tp, pp, or degrees such as tp=2,pp=2 (dp takes the rest); "
                 "--batch is each data-parallel replica's (docs/GPU.md \"Several GPUs\")");
  app.add_option("--micro-batches", micro_batches,
                 "with --parallel: a pipeline's micro-batches per iteration (default 1)");
  app.add_option("--gpus-per-node", gpus_per_node, "GPUs per machine (default 8)");
}

hardware::CpuIsa parse_isa_option(const std::string& text, const std::string& option) {
  hardware::CpuIsa isa = hardware::parse_isa(text);
  if (isa == hardware::CpuIsa::Unknown)
    throw InputError(option + " " + quote(text) + " is not an ISA; known: " + isa_list());
  return isa;
}

}  // namespace dnncast::cli
