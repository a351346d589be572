// The model zoo: classic architectures by torchvision's names, and transformer encoders/decoders.
// Parameter counts equal torchvision's exactly (auxiliary classifiers off).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace dnncast::models {

struct ModelSpec {
  int64_t batch = 1;
  std::vector<int64_t> input;      // C x H x W for images; empty = the model's default
  int64_t seq_len = 0;             // tokens for sequence models; 0 = the model's default
  int64_t num_classes = 1000;      // classifier outputs (vocabulary size stays fixed for LMs)
  bool allow_unknown_ops = false;  // ONNX files: unsupported ops become elementwise nodes (import/onnx.h)
  std::string lora = "";  // "" or LoRA fine-tuning, "r=16,alpha=32,targets=q,v" (graph/lora.h; load_model applies it)
  std::string quantize = "";  // "" or "nf4" | "int8": QLoRA's quantized frozen base weights (graph/quantize.h)
  // Mixtures of experts: the busiest expert's routed tokens over the mean (1 = balanced; models/moe.h).
  double expert_balance = 1.0;
  // "" or "eager": attention as libtorch's math path (the S x S scores kept); "sdpa": PyTorch 2's fused
  // scaled_dot_product_attention on CUDA (no S x S matrix kept; load_model marks every attention node fused=1).
  std::string attention = "";
  bool checkpointing =
      false;  // activation checkpointing per transformer block (graph/checkpoint.h; load_model applies it)
};

struct ZooEntry {
  std::string name;                    // "resnet50"
  std::string family;                  // "resnet"
  std::string kind;                    // "cnn" or "transformer"
  std::vector<int64_t> default_input;  // C x H x W (cnn) or {seq_len} (transformer)
  std::function<Graph(const ModelSpec& spec)> build;
};

// All zoo models, sorted by name.
const std::vector<ZooEntry>& zoo();
// Throws InputError "unknown model 'resnet5' (did you mean resnet50, resnet18?)".
const ZooEntry& zoo_entry(const std::string& name);
// Builds a zoo model; fills the spec's defaults; throws InputError on a bad spec.
Graph build_zoo_model(const std::string& name, ModelSpec spec);

// Each family file registers its models here.
void register_alexnet_vgg(std::vector<ZooEntry>& entries);
void register_resnet(std::vector<ZooEntry>& entries);
void register_densenet(std::vector<ZooEntry>& entries);
void register_inception(std::vector<ZooEntry>& entries);     // googlenet, inception_v3
void register_mobile(std::vector<ZooEntry>& entries);        // mobilenet v2/v3, mnasnet, shufflenet, squeezenet
void register_efficient(std::vector<ZooEntry>& entries);     // efficientnet, regnet, convnext
void register_transformers(std::vector<ZooEntry>& entries);  // vit_b_16, bert_base, gpt2_small

}  // namespace dnncast::models
