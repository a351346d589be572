// The options that size a model, shared by inspect, memory, profile and predict: --input CxHxW or
// --seq N (one or the other), and --classes N. One place, so every command refuses the same bad
// values with the same line.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/isa.h"
#include "models/zoo.h"

namespace dnncast::cli {

class ModelOptions {
 public:
  // Adds --input, --seq (excluding each other), --classes, --allow-unknown (ONNX) and --lora to `app`.
  void add_to(CLI::App& app);
  // The spec of MODEL at `batch` (0: the graph file's or 1) from the options given. Throws
  // InputError naming the option: an --input that is not three positive integers, a --seq or
  // --classes below 1, --classes with a graph file (its classifier is part of the file).
  models::ModelSpec spec(const std::string& model, int64_t batch) const;

 private:
  std::string input_text_;
  int64_t seq_len_ = 0, classes_ = 0;
  bool allow_unknown_ = false;
  std::string lora_;
  std::string attention_;
  bool checkpointing_ = false;
  CLI::Option* input_ = nullptr;
  CLI::Option* seq_ = nullptr;
  CLI::Option* classes_option_ = nullptr;
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
