#include "import/graph_json.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/checked.h"
#include "core/error.h"
#include "core/json_limits.h"

namespace dnncast::import {

using nlohmann::json;

namespace {

// Attributes are bounded here (kMaxIntegerAttr, core/checked.h); tensors and costs by shape inference.
int64_t bounded_integer(const json& value, const std::string& where) {
  bool in_range = value.is_number_unsigned()
                      ? value.get<uint64_t>() <= static_cast<uint64_t>(kMaxIntegerAttr)
                      : value.get<int64_t>() >= -kMaxIntegerAttr && value.get<int64_t>() <= kMaxIntegerAttr;
  if (!in_range)
    throw InputError(where + ": value " + value.dump() + " is out of range (at most " +
                     std::to_string(kMaxIntegerAttr) + " in magnitude)");
  return value.get<int64_t>();
}

// Element count of `dims`, or -1 when it exceeds kMaxTensorElements (or a dimension is not positive).
int64_t bounded_numel(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim <= 0) return -1;
    if (count > kMaxTensorElements / dim) return -1;
    count *= dim;
  }
  return count;
}

json attr_to_json(const AttrValue& value) {
  return std::visit([](const auto& v) { return json(v); }, value);
}

AttrValue attr_from_json(const json& value, const std::string& where) {
  if (value.is_number_integer()) return bounded_integer(value, where);
  if (value.is_number_float()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    std::vector<int64_t> list;
    for (const json& item : value) {
      if (!item.is_number_integer()) throw InputError(where + ": list attributes must hold integers");
      list.push_back(bounded_integer(item, where));
    }
    return list;
  }
  throw InputError(where + ": attribute must be an integer, number, string or list of integers");
}

const json& field(const json& object, const char* key, const std::string& where) {
  auto found = object.find(key);
  if (found == object.end()) throw InputError(where + ": missing field " + quote(key));
  return *found;
}

}  // namespace

json graph_to_json(const Graph& graph) {
  json nodes = json::array();
  for (const Node& node : graph.nodes()) {
    json attrs = json::object();
    for (const auto& [key, value] : node.attrs) attrs[key] = attr_to_json(value);
    json inputs = json::array();
    for (int input : node.inputs) inputs.push_back(graph.node(input).name);
    nodes.push_back({{"name", node.name},
                     {"op", node.op},
                     {"inputs", inputs},
                     {"attrs", attrs},
                     {"shape", node.shape.dims},
                     {"dtype", dtype_name(node.dtype)}});
  }
  return {{"format", kGraphFormat}, {"name", graph.name}, {"family", graph.family}, {"nodes", nodes}};
}

std::string write_graph_json(const Graph& graph) { return graph_to_json(graph).dump(1) + "\n"; }

Graph graph_from_json(const json& document, const std::string& source) {
  try {
    if (!document.is_object()) throw InputError("expected a JSON object at the top level");
    const json& format = field(document, "format", "graph");
    if (!format.is_string() || format.get<std::string>() != kGraphFormat)
      throw InputError("unsupported format " + format.dump() + " (this dnncast reads \"" + kGraphFormat + "\")");
    const json& nodes = field(document, "nodes", "graph");
    if (!nodes.is_array()) throw InputError("'nodes' must be an array");
    std::string name = document.value("name", std::string("graph"));
    std::string family = document.value("family", std::string("custom"));
    std::vector<Graph::NamedNode> named;
    std::vector<std::vector<int64_t>> declared_shapes;
    std::vector<std::string> declared_dtypes;
    for (size_t item = 0; item < nodes.size(); ++item) {
      const json& entry = nodes[item];
      std::string where = "node #" + std::to_string(item);
      if (!entry.is_object()) throw InputError(where + ": expected an object");
      Graph::NamedNode node;
      const json& node_name = field(entry, "name", where);
      const json& op = field(entry, "op", where);
      if (!node_name.is_string() || !op.is_string()) throw InputError(where + ": 'name' and 'op' must be strings");
      node.node.name = node_name.get<std::string>();
      node.node.op = op.get<std::string>();
      where = "node " + quote(node.node.name);
      if (entry.contains("inputs")) {
        const json& inputs = entry["inputs"];
        if (!inputs.is_array()) throw InputError(where + ": 'inputs' must be an array of node names");
        for (const json& input : inputs) {
          if (!input.is_string()) throw InputError(where + ": 'inputs' must be an array of node names");
          node.input_names.push_back(input.get<std::string>());
        }
      }
      if (entry.contains("attrs")) {
        const json& attrs = entry["attrs"];
        if (!attrs.is_object()) throw InputError(where + ": 'attrs' must be an object");
        for (const auto& [key, value] : attrs.items())
          node.node.attrs[key] = attr_from_json(value, where + " attribute " + quote(key));
      }
      // An Input's size is checked before shapes are inferred (products of its dimensions).
      if (node.node.op == "Input" && node.node.has_attr("shape")) {
        std::vector<int64_t> dims = node.node.attr_ints("shape");
        bool positive = std::all_of(dims.begin(), dims.end(), [](int64_t dim) { return dim > 0; });
        if (positive && bounded_numel(dims) < 0)
          throw InputError("node " + quote(node.node.name) + " (Input): shape " + TensorShape(dims).to_string() +
                           " has more than " + std::to_string(kMaxTensorElements) + " elements");
      }
      std::vector<int64_t> shape;
      if (entry.contains("shape")) {
        const json& dims = entry["shape"];
        if (!dims.is_array()) throw InputError(where + ": 'shape' must be an array of integers");
        for (const json& dim : dims) {
          if (!dim.is_number_integer()) throw InputError(where + ": 'shape' must be an array of integers");
          shape.push_back(dim.get<int64_t>());
        }
      }
      std::string dtype;
      if (entry.contains("dtype")) {
        const json& declared = entry["dtype"];
        if (!declared.is_string()) throw InputError(where + ": 'dtype' must be a string");
        try {
          dtype = dtype_name(parse_dtype(declared.get<std::string>()));
        } catch (const InputError& error) {
          throw error.with_context(where);
        }
      }
      declared_shapes.push_back(shape);
      declared_dtypes.push_back(dtype);
      named.push_back(std::move(node));
    }
    std::map<std::string, std::vector<int64_t>> shape_by_name;
    std::map<std::string, std::string> dtype_by_name;
    for (size_t item = 0; item < named.size(); ++item) {
      if (!declared_shapes[item].empty()) shape_by_name[named[item].node.name] = declared_shapes[item];
      if (!declared_dtypes[item].empty()) dtype_by_name[named[item].node.name] = declared_dtypes[item];
    }
    Graph graph = Graph::from_named(name, family, std::move(named));
    for (const Node& node : graph.nodes()) {
      auto declared_dtype = dtype_by_name.find(node.name);
      if (declared_dtype != dtype_by_name.end() && declared_dtype->second != dtype_name(node.dtype))
        throw InputError("node " + quote(node.name) + " (" + node.op + "): declared dtype " + declared_dtype->second +
                         " but its inputs give " + dtype_name(node.dtype));
      auto declared = shape_by_name.find(node.name);
      if (declared != shape_by_name.end() && declared->second != node.shape.dims)
        throw InputError("node " + quote(node.name) + " (" + node.op + "): declared shape " +
                         TensorShape(declared->second).to_string() + " but its inputs give " + node.shape.to_string());
    }
    return graph;
  } catch (const InputError& error) {
    throw error.with_context(source);
  } catch (const json::exception& error) {
    throw InputError(source + ": " + error.what());
  }
}

Graph read_graph_json(const std::string& text, const std::string& source) {
  check_json_nesting(text, source);
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception& error) {  // parse_error, and out_of_range for a number past a double
    throw InputError(source + ": not valid JSON (" + error.what() + ")");
  }
  return graph_from_json(document, source);
}

Graph load_graph_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InputError("cannot open graph file " + quote(path));
  std::stringstream text;
  text << file.rdbuf();
  return read_graph_json(text.str(), path);
}

}  // namespace dnncast::import
