// The options that size a model, shared by inspect, memory, profile, predict, compare and calibrate: --input CxHxW or
// --seq N (one or the other), --classes N, --lora, --attention, --checkpointing, --allow-unknown. Read here, checked
// by import::make_model_source() as serve and Python are, so a mistake reads the same line in every front end.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hardware/isa.h"
#include "import/model_source.h"

namespace dnncast::cli {

class ModelOptions {
 public:
  // Adds --input, --seq (excluding each other), --classes, --allow-unknown (ONNX) and --lora to `app`.
  void add_to(CLI::App& app);
  // MODEL at `batch` (none: the source's own, 1 or the graph file's) with the options given. Throws InputError
  // naming the option (import::make_model_source): an --input that is not three positive integers, a --seq or
  // --classes out of range, --classes with a graph file (its classifier is part of the file), a bad --lora, ...
  import::ModelSource source(const std::string& model, std::optional<int64_t> batch) const;

 private:
  std::string input_text_;
  int64_t seq_len_ = 0, classes_ = 0;
  bool allow_unknown_ = false;
  std::string lora_, quantize_;
  std::string attention_;
  bool checkpointing_ = false;
  CLI::Option* input_ = nullptr;
  CLI::Option* seq_ = nullptr;
  CLI::Option* classes_option_ = nullptr;
  CLI::Option* lora_option_ = nullptr;
  CLI::Option* quantize_option_ = nullptr;
  CLI::Option* expert_balance_option_ = nullptr;
  double expert_balance_ = 1.0;
  CLI::Option* attention_option_ = nullptr;
};

// --gpus, --parallel, --micro-batches and --gpus-per-node (predict, memory): training on several GPUs
// (gpu/parallel_plan.h), checked by gpu::parse_parallel as serve and Python are.
struct ParallelFlags {
  int64_t gpus = 1, micro_batches = 1, gpus_per_node = 8;
  std::string parallel;
  // `gpus_help`: what --gpus means to the command.
  void add_to(CLI::App& app, const std::string& gpus_help);
};

// "3x224x224" -> {3, 224, 224}; throws InputError naming --input otherwise.
std::vector<int64_t> parse_image_input(const std::string& text);

}  // namespace dnncast::cli

namespace dnncast::cli {

// The ISA names --isa accepts ("sse41 | avx | avx2 | ..."), for help texts.
std::string isa_list();
// --isa NAME -> the ISA; throws InputError naming `option` and listing the known names otherwise.
hardware::CpuIsa parse_isa_option(const std::string& text, const std::string& option);

}  // namespace dnncast::cli
