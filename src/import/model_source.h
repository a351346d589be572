// Where a model named on a command line comes from:
//   resnet50 | zoo:resnet50          a model of the zoo (models/zoo.h)
//   synthetic:SEED                   a network of the seeded generator (models/synthetic.h)
//   path/to/graph.json | file:PATH   a graph JSON file (import/graph_json.h), or a Hugging Face config.json
//                                    (models/hf_config.h: one with "model_type"): a source ending in
//                                    ".json", containing '/', or naming an existing file
//   model.onnx | onnx:PATH           an ONNX file (import/onnx.h): a source ending in ".onnx"
// and built for one configuration (batch, image input CxHxW or sequence length, classes).
#pragma once

#include <functional>
#include <string>

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

// What a request builds its model with, for each batch it asks about: empty means
// load_model(request.model, spec). The server passes one that answers from its graph cache.
using ModelBuilder = std::function<Graph(const models::ModelSpec& spec)>;
inline Graph build_model(const ModelBuilder& builder, const std::string& source, const models::ModelSpec& spec) {
  return builder ? builder(spec) : load_model(source, spec);
}

}  // namespace dnncast::import
