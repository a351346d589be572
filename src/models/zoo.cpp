#include "models/zoo.h"

#include <algorithm>

#include "core/error.h"
#include "core/text.h"

namespace dnncast::models {

namespace {

std::vector<ZooEntry> make_zoo() {
  std::vector<ZooEntry> entries;
  register_alexnet_vgg(entries);
  register_resnet(entries);
  register_densenet(entries);
  register_inception(entries);
  register_mobile(entries);
  register_efficient(entries);
  register_transformers(entries);
  std::sort(entries.begin(), entries.end(), [](const ZooEntry& a, const ZooEntry& b) { return a.name < b.name; });
  return entries;
}

}  // namespace

const std::vector<ZooEntry>& zoo() {
  static const std::vector<ZooEntry> entries = make_zoo();
  return entries;
}

const ZooEntry& zoo_entry(const std::string& name) {
  for (const ZooEntry& entry : zoo())
    if (entry.name == name) return entry;
  std::vector<std::string> known;
  for (const ZooEntry& entry : zoo()) known.push_back(entry.name);
  std::string hint;
  for (const std::string& candidate : closest_names(name, known)) hint += (hint.empty() ? "" : ", ") + candidate;
  throw InputError("unknown model " + quote(name) + " (did you mean " + hint + "? `dnncast inspect --list` shows all " +
                   std::to_string(known.size()) + ")");
}

Graph build_zoo_model(const std::string& name, ModelSpec spec) {
  const ZooEntry& entry = zoo_entry(name);
  if (spec.batch <= 0) throw InputError("batch must be positive, got " + std::to_string(spec.batch));
  if (spec.num_classes <= 0) throw InputError("number of classes must be positive");
  if (entry.kind == "cnn") {
    if (spec.input.empty()) spec.input = entry.default_input;
    if (spec.input.size() != 3)
      throw InputError(name + " takes an image input CxHxW, got " + TensorShape(spec.input).to_string());
  } else if (spec.seq_len <= 0) {
    spec.seq_len = entry.default_input.at(0);
  }
  try {
    return entry.build(spec);
  } catch (const InputError& error) {
    throw error.with_context(
        name + " at input " +
        (entry.kind == "cnn" ? TensorShape(spec.input).to_string() : "seq " + std::to_string(spec.seq_len)));
  }
}

}  // namespace dnncast::models
