// The GPUMemNet MLP rows and their graphs (gpumemnet.h).
#include "gpu/gpumemnet.h"

#include <cctype>
#include <fstream>
#include <map>

#include "core/csv.h"
#include "core/error.h"
#include "graph/builder.h"

namespace dnncast::gpu {

namespace {

// "key:value" out of GPUMemNet's Filename ("input:2346_output:197_depth:2_arch:pyramid_batch:996_...").
std::string filename_field(const std::string& filename, const std::string& key) {
  const std::string tag = key + ":";
  size_t at = 0;
  while ((at = filename.find(tag, at)) != std::string::npos) {
    if (at == 0 || filename[at - 1] == '_') break;
    at += tag.size();
  }
  if (at == std::string::npos) return "";
  const size_t start = at + tag.size();
  return filename.substr(start, filename.find('_', start) - start);
}

int64_t parse_count(const std::string& text, const std::string& what) {
  size_t used = 0;
  long long value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 0) throw InputError(what + ": expected a count, got " + quote(text));
  return value;
}

// "[('linear', 1173, 2753031), ('ReLU', 1173, 0), ...]": Python tuples of (name, width, params).
std::vector<GpuMemNetLayer> parse_layers(const std::string& text) {
  std::vector<GpuMemNetLayer> layers;
  size_t at = 0;
  while ((at = text.find('(', at)) != std::string::npos) {
    const size_t close = text.find(')', at);
    if (close == std::string::npos) throw InputError("Activations-Params: unclosed '(' in " + quote(text));
    const std::string tuple = text.substr(at + 1, close - at - 1);
    const size_t first = tuple.find(','), second = tuple.find(',', first + 1);
    if (first == std::string::npos || second == std::string::npos)
      throw InputError("Activations-Params: expected (name, width, params), got " + quote("(" + tuple + ")"));
    auto trimmed = [](std::string part) {
      while (!part.empty() && (std::isspace(static_cast<unsigned char>(part.front())) || part.front() == '\''))
        part.erase(0, 1);
      while (!part.empty() && (std::isspace(static_cast<unsigned char>(part.back())) || part.back() == '\''))
        part.pop_back();
      return part;
    };
    GpuMemNetLayer layer;
    layer.kind = trimmed(tuple.substr(0, first));
    layer.width = parse_count(trimmed(tuple.substr(first + 1, second - first - 1)), "Activations-Params width");
    layer.params = parse_count(trimmed(tuple.substr(second + 1)), "Activations-Params parameters");
    layers.push_back(layer);
    at = close + 1;
  }
  if (layers.empty()) throw InputError("Activations-Params: no layers in " + quote(text));
  return layers;
}

// The IR op that has the memory behaviour of GPUMemNet's activation module (gpumemnet.h); "" for Identity.
std::string activation_op(const std::string& kind) {
  static const std::map<std::string, std::string> ops = {
      {"ReLU", "Sigmoid"}, {"Sigmoid", "Sigmoid"}, {"Tanh", "Tanh"},  {"GELU", "GELU"},
      {"SiLU", "GELU"},    {"Softplus", "GELU"},   {"Mish", "GELU"},  {"ELU", "GELU"},
      {"SELU", "GELU"},    {"LeakyReLU", "GELU"},  {"PReLU", "GELU"}, {"Identity", ""}};
  auto found = ops.find(kind);
  if (found == ops.end()) throw InputError("layer " + quote(kind) + " is not one GPUMemNet's MLPs use");
  return found->second;
}

}  // namespace

std::ifstream open_published_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + quote(path));
  if (in.peek() == 0xFD) throw InputError(quote(path) + " is xz-compressed: decompress it first (xz -dk FILE)");
  return in;
}

std::vector<GpuMemNetRow> load_gpumemnet_rows(const std::string& path) {
  std::ifstream in = open_published_table(path);
  std::vector<std::string> fields;
  int64_t line = 0;
  std::map<std::string, size_t> column;
  std::vector<GpuMemNetRow> rows;
  while (read_csv_record(in, fields, line)) {
    if (column.empty()) {
      if (fields.empty() || fields[0] != "Filename") continue;  // the source note before the header
      for (size_t index = 0; index < fields.size(); ++index) column[fields[index]] = index;
      for (const char* needed : {"Activations-Params", "Batch Size", "Max GPU Memory (MiB)"})
        if (!column.count(needed)) throw InputError(path + ": no column " + quote(needed));
      continue;
    }
    if (fields.size() == 1 && fields[0].empty()) continue;
    const std::string where = path + " line " + std::to_string(line);
    if (fields.size() < column.size())
      throw InputError(where + ": " + std::to_string(fields.size()) + " fields, the header has " +
                       std::to_string(column.size()));
    try {
      GpuMemNetRow row;
      row.line = line;
      row.filename = fields[0];
      row.arch = filename_field(row.filename, "arch");
      if (row.arch.empty()) throw InputError("Filename " + quote(row.filename) + " has no arch:");
      row.input_features = parse_count(filename_field(row.filename, "input"), "Filename's input:");
      row.batch = parse_count(fields[column["Batch Size"]], "Batch Size");
      row.layers = parse_layers(fields[column["Activations-Params"]]);
      const std::string& mib = fields[column["Max GPU Memory (MiB)"]];
      size_t used = 0;
      try {
        row.measured_mib = std::stod(mib, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != mib.size() || !(row.measured_mib > 0))
        throw InputError("Max GPU Memory (MiB): expected a positive number, got " + quote(mib));
      if (row.input_features <= 0 || row.batch <= 0) throw InputError("input and batch must be positive");
      rows.push_back(std::move(row));
    } catch (const InputError& error) {
      throw InputError(where + ": " + error.what());
    }
  }
  if (column.empty()) throw InputError(path + ": no header line starting with Filename (is it GPUMemNet's MLP table?)");
  if (rows.empty()) throw InputError(path + ": no rows");
  return rows;
}

Graph gpumemnet_graph(const GpuMemNetRow& row) {
  GraphBuilder b("gpumemnet_line" + std::to_string(row.line), "mlp");
  int x = b.input(TensorShape({row.batch, row.input_features}));
  int64_t width = row.input_features;
  int index = 0;
  for (const GpuMemNetLayer& layer : row.layers) {
    const std::string name = "l" + std::to_string(index++);
    if (layer.kind == "linear") {
      // Parameters = in * out + out: the widths must chain.
      if (layer.params != (width + 1) * layer.width)
        throw InputError("line " + std::to_string(row.line) + ": linear " + name + " has " +
                         std::to_string(layer.params) + " parameters, not (" + std::to_string(width) + " + 1) x " +
                         std::to_string(layer.width));
      x = b.linear(name, x, layer.width);
      width = layer.width;
    } else if (layer.kind == "batch_normalization") {
      x = b.op(name + "_4d", "Reshape", {x}, {{"shape", std::vector<int64_t>{0, 0, 1, 1}}});
      x = b.batchnorm(name, x);
      x = b.op(name + "_2d", "Reshape", {x}, {{"shape", std::vector<int64_t>{0, 0}}});
    } else if (layer.kind == "dropout") {
      x = b.dropout(name, x, 0.5);
    } else if (layer.kind == "Softmax") {
      x = b.op(name, "Softmax", {x}, {{"axis", int64_t{1}}});
    } else {
      const std::string op = activation_op(layer.kind);
      if (!op.empty()) x = b.act(name, op, x);
    }
  }
  return b.finish();
}

}  // namespace dnncast::gpu
