// Where a campaign's networks come from, and how to rebuild one for a run's configuration.
// (import/model_source.h does the same for users' command lines; data may not depend on apps.)
//   zoo:NAME          a model of the zoo (models/zoo.h)
//   synthetic:SEED    a network of the seeded synthetic generator (models/synthetic.h)
//   file:PATH         a graph JSON file (import/graph_json.h); its input shape is kept, its batch replaced
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"
#include "records/records.h"

namespace dnncast::records {

struct ModelRef {
  enum class Kind { Zoo, Synthetic, File };
  Kind kind = Kind::Zoo;
  std::string name;  // zoo name
  int64_t seed = 0;  // synthetic seed
  std::string path;  // graph JSON file

  std::string source() const;  // "zoo:resnet18", "synthetic:42", "file:PATH"
  // Whether the model takes tokens (seq_len) rather than an image (C x H x W).
  bool is_sequence() const;
  bool operator<(const ModelRef& other) const;
  bool operator==(const ModelRef& other) const { return !(*this < other) && !(other < *this); }
};

// Parses a source string as written by ModelRef::source(); throws InputError naming it.
ModelRef parse_model_source(const std::string& source);

// Builds the network for a configuration (batch, input or seq_len). Throws InputError when the
// model cannot take that configuration (an input too small for its pooling, ...).
Graph build_network(const ModelRef& model, const RunConfig& config);

// The stored record of a network: hash, name, family, source and the graph JSON at batch 1.
NetworkRecord network_record(const ModelRef& model, const RunConfig& config);

// The input shape (without batch) stored in a file graph's first Input node; throws InputError.
std::vector<int64_t> file_graph_input(const std::string& path);

}  // namespace dnncast::records
