#include "graph/lora.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "core/error.h"
#include "graph/op_registry.h"

namespace dnncast {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

namespace {

const char* const kShortTargets[] = {"q", "k", "v", "o", "gate", "up", "down"};

bool ends_with_module(const std::string& name, const std::string& module) {
  if (name == module) return true;
  return name.size() > module.size() && name.compare(name.size() - module.size(), module.size(), module) == 0 &&
         name[name.size() - module.size() - 1] == '.';
}

bool is_short(const std::string& target) {
  for (const char* known : kShortTargets)
    if (target == known) return true;
  return false;
}

bool matches(const std::string& name, const std::string& target) {
  return ends_with_module(name, target) || (is_short(target) && ends_with_module(name, target + "_proj"));
}

int64_t parse_count(const std::string& value, const std::string& what, const std::string& key) {
  size_t used = 0;
  int64_t number = 0;
  try {
    number = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size())
    throw InputError(what + ": " + key + "=" + quote(value) + " is not an integer");
  return number;
}

double parse_number(const std::string& value, const std::string& what, const std::string& key) {
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || !(number > 0 && number < 1e9))
    throw InputError(what + ": " + key + "=" + quote(value) + " is not a positive number");
  return number;
}

// The last module of each Linear's name, for the message of a target that matches none.
std::string projection_names(const Graph& graph) {
  std::set<std::string> names;
  for (const Node& node : graph.nodes())
    if (node.op == "Linear"sv) names.insert(node.name.substr(node.name.find_last_of('.') + 1));
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  return list;
}

}  // namespace

LoraConfig parse_lora(const std::string& text, const std::string& what) {
  LoraConfig config;
  bool have_rank = false, in_targets = false;
  std::vector<std::string> keys;  // each key once: "r=8,r=16" is a mistake, not r=16
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const size_t equals = item.find('=');
    if (equals == std::string::npos) {
      if (!in_targets || item.empty())
        throw InputError(what + ": expected key=value (r, alpha, targets, norms), got " + quote(item) + " in " +
                         quote(text));
      config.targets.push_back(item);
      continue;
    }
    const std::string key = item.substr(0, equals), value = item.substr(equals + 1);
    in_targets = false;
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      throw InputError(what + ": key " + quote(key) + " given twice in " + quote(text));
    keys.push_back(key);
    if (key == "r") {
      config.rank = parse_count(value, what, key);
      if (config.rank < 1) throw InputError(what + ": rank r=" + value + " must be at least 1");
      have_rank = true;
    } else if (key == "alpha") {
      config.alpha = parse_number(value, what, key);
    } else if (key == "targets") {
      if (value.empty()) throw InputError(what + ": targets= names no module");
      config.targets = {value};
      in_targets = true;
    } else if (key == "norms") {
      if (value != "train" && value != "frozen")
        throw InputError(what + ": norms=" + quote(value) + ": expected train or frozen");
      config.train_norms = value == "train";
    } else {
      throw InputError(what + ": unknown key " + quote(key) + " (r, alpha, targets, norms)");
    }
  }
  if (!have_rank) throw InputError(what + ": r=RANK is required, got " + quote(text));
  return config;
}

Graph apply_lora(const Graph& graph, const LoraConfig& config) {
  if (config.rank < 1) throw InputError("LoRA rank r=" + std::to_string(config.rank) + " must be at least 1");
  for (const std::string& target : config.targets) {
    bool found = false;
    for (const Node& node : graph.nodes()) found = found || (node.op == "Linear"sv && matches(node.name, target));
    if (!found)
      throw InputError("LoRA target " + quote(target) + " matches no Linear of " + quote(graph.name) +
                       " (its projections: " + projection_names(graph) + ")");
  }
  Graph result;
  result.name = graph.name;
  result.family = graph.family;
  result.notes = graph.notes;
  std::vector<int> moved(static_cast<size_t>(graph.size()), -1);
  auto append = [&](Node node) {
    const int index = result.add(std::move(node));
    result.infer_node(index);
    return index;
  };
  for (int index = 0; index < graph.size(); ++index) {
    Node node = graph.node(index);
    for (int& input : node.inputs) input = moved.at(static_cast<size_t>(input));
    const OpDef& def = OpRegistry::instance().get(node.op);
    if (node_cost(graph, index).params > 0 && !(config.train_norms && def.category == "norm"sv))
      node.attrs["frozen"] = int64_t{1};
    bool adapted = false;
    for (const std::string& target : config.targets)
      adapted = adapted || (node.op == "Linear"sv && matches(node.name, target));
    // A node carried over keeps the source's inferred shape and type: its inputs keep theirs (an adapted Linear's
    // sum has the Linear's) and `frozen` enters no shape rule, so it is not inferred again (a build of Llama-2-7B
    // a quarter faster).
    if (!adapted) {
      moved[static_cast<size_t>(index)] = result.add(std::move(node));
      continue;
    }
    const int64_t in_features = graph.node(graph.node(index).inputs.at(0)).shape.dims.back();
    const int64_t out_features = graph.node(index).shape.dims.back();
    if (config.rank > std::min(in_features, out_features))
      throw InputError("LoRA rank r=" + std::to_string(config.rank) + " is larger than the smaller width of " +
                       quote(node.name) + " (" + std::to_string(in_features) + " -> " + std::to_string(out_features) +
                       ")");
    const std::string name = node.name;
    const int x = node.inputs.at(0);
    // The adapter belongs to the Linear's transformer block (graph/checkpoint.h), if any.
    std::map<std::string, AttrValue> block;
    for (const char* key : {"block", "checkpoint"})
      if (node.has_attr(key)) block[key] = node.attrs.at(key);
    auto in_block = [&](std::map<std::string, AttrValue> attrs) {
      attrs.insert(block.begin(), block.end());
      return attrs;
    };
    const int base = result.add(std::move(node));
    Node a{name + ".lora_A", "Linear", in_block({{"out_features", config.rank}, {"bias", int64_t{0}}}), {x}, {},
           DType::F32};
    const int down = append(a);
    Node b{name + ".lora_B", "Linear", in_block({{"out_features", out_features}, {"bias", int64_t{0}}}),
           {down},           {},       DType::F32};
    const int up = append(b);
    Node scale{name + ".lora_scale",
               "Mul",
               in_block({{"scalar", config.alpha / static_cast<double>(config.rank)}}),
               {up},
               {},
               DType::F32};
    const int scaled = append(scale);
    moved[static_cast<size_t>(index)] =
        append(Node{name + ".lora_add", "Add", in_block({}), {base, scaled}, {}, DType::F32});
  }
  return result;
}

}  // namespace dnncast
