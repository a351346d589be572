// Graph JSON ("format": "dnncast-graph/1"): nodes with op, attributes, inputs by name and output
// shapes. Writing then reading gives back the same graph, attribute types included.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "graph/graph.h"

namespace dnncast::import {

inline constexpr const char* kGraphFormat = "dnncast-graph/1";

nlohmann::json graph_to_json(const Graph& graph);
std::string write_graph_json(const Graph& graph);  // pretty-printed, ends with a newline
// Throws InputError naming `source` ("model.json: node 'c1': ...") on malformed or inconsistent input.
Graph graph_from_json(const nlohmann::json& document, const std::string& source);
Graph read_graph_json(const std::string& text, const std::string& source);
Graph load_graph_file(const std::string& path);

}  // namespace dnncast::import
