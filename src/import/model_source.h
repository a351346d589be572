// Where a model named on a command line comes from:
//   resnet50 | zoo:resnet50          a model of the zoo (models/zoo.h)
//   synthetic:SEED                   a network of the seeded generator (models/synthetic.h)
//   path/to/graph.json | file:PATH   a graph JSON file (import/graph_json.h), or a Hugging Face config.json
//                                    (models/hf_config.h: one with "model_type"): a source ending in
//                                    ".json", containing '/', or naming an existing file
//   model.onnx | onnx:PATH           an ONNX file (import/onnx.h): a source ending in ".onnx"
//   ORG/NAME[@REVISION]              a Hugging Face Hub id that is no file: its config.json from the local Hugging
//                                    Face cache (import/hub_cache.h)
// and built for one configuration (batch, image input CxHxW or sequence length, classes).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/option_names.h"
#include "graph/graph.h"
#include "models/zoo.h"

namespace dnncast::import {

enum class ModelSourceKind { Zoo, Synthetic, File, Onnx };

// Which kind of source the text names (no file is read, no model built).
ModelSourceKind model_source_kind(const std::string& source);

// Builds the model for `spec`. spec.batch == 0 means the source's own batch (1 for zoo and
// synthetic models, the file's for a graph file); an empty spec.input / zero spec.seq_len the
// model's default input. For a graph file, batch, input and seq_len replace the shape of its
// Input node(s) and shapes are inferred again; num_classes is the file's own. An ONNX file takes them
// the same way (a dynamic batch dimension is spec.batch, or 1), and spec.allow_unknown_ops.
// Throws InputError: unknown model (with the closest names), a bad seed, a missing or malformed
// file, an input the model cannot take (an image size for a sequence model, ...), or an input
// too large to count (more than 2^34 elements or 2^24 tokens).
Graph load_model(const std::string& source, const models::ModelSpec& spec);

// A model given as text or bytes instead of a name (`dnncast serve`'s inline graph JSON and ONNX bodies),
// built for `spec` as load_model() builds a file of that kind; `source` names it in messages.
Graph load_graph_json_text(const std::string& text, const std::string& source, const models::ModelSpec& spec);
Graph load_onnx_bytes(const std::string& bytes, const std::string& source, const models::ModelSpec& spec);
// A Hugging Face config.json's text (serve's field "config"): the model it describes, sized and fine-tuned by `spec`.
Graph load_hf_config_text(const std::string& text, const std::string& source, const models::ModelSpec& spec);

// What a request builds its model with, for each batch it asks about: empty means
// load_model(source, spec). The server passes one that answers from its graph cache.
using ModelBuilder = std::function<Graph(const models::ModelSpec& spec)>;

// A model as a request carries it: the source as named, the spec it was asked at, and how to build its graph at any
// batch or sequence length. Made once by make_model_source() for every front end (the CLI, serve, Python); the
// engines build through it (forecast, memory, GPU time, compare) and never load a model themselves.
struct ModelSource {
  std::string name;        // zoo name, synthetic:SEED, graph JSON or ONNX file, or the server's name of a body
  models::ModelSpec spec;  // batch (0: the source's own), input or sequence length, classes, LoRA, ...
  ModelBuilder builder;    // empty: load_model(name, spec)

  Graph build() const { return build(spec); }
  Graph build(const models::ModelSpec& at) const { return builder ? builder(at) : load_model(name, at); }
  Graph build_at_batch(int64_t batch) const {
    models::ModelSpec at = spec;
    at.batch = batch;
    return build(at);
  }
  // `graph` (this source's graph at some batch) made what build_at_batch(batch) returns: its inputs' batch set and
  // its shapes inferred again, several times faster than a build (a search over batches), where that is exactly
  // what a build gives; built anew where the batch may enter more than the inputs (a builder given, an ONNX file,
  // an op sized by the batch: OpDef::sized_by_batch) or where a size limit or a shape rule might refuse it (so
  // that the refusal is the build's own). Returns whether it resized the graph (false: built anew).
  bool rebatch(Graph& graph, int64_t batch) const;
};

// What a user gave about a model, as a front end reads it (the CLI's options, serve's fields, Python's keywords),
// before any check: an empty optional was not given.
struct ModelArgs {
  std::string model;
  std::optional<int64_t> batch;                // none: the source's own (1 for zoo and synthetic models)
  std::optional<std::vector<int64_t>> input;   // C, H, W
  std::optional<int64_t> seq, classes;         // sequence length; classifier outputs (zoo and synthetic models)
  std::optional<std::string> lora, attention;  // graph/lora.h; eager | sdpa
  std::optional<std::string> quantize;         // nf4 | int8 (graph/quantize.h), with lora
  std::optional<double> expert_balance;        // a mixture of experts' busiest expert over the mean (models/moe.h)
  bool allow_unknown = false;                  // ONNX: unsupported ops as elementwise
  bool checkpointing = false;                  // activation checkpointing per transformer block
  // The kind of model when the name is not its source (serve's graph and ONNX bodies); none: model_source_kind.
  std::optional<ModelSourceKind> kind;
};

// The one check of what a user gave about a model, for every front end, each mistake one line naming the option as
// `style` spells it (core/option_names.h): an empty model, LoRA or attention; a batch, sequence length, classes or
// input dimension out of range; an input and a sequence length together; classes for a graph or ONNX file (its
// classifier is part of it); a malformed LoRA; an unknown attention. `builder`: how the model is built (empty:
// load_model). Nothing is built here.
ModelSource make_model_source(const ModelArgs& args, OptionStyle style, ModelBuilder builder = {});

}  // namespace dnncast::import
