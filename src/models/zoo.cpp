#include "models/zoo.h"

#include <algorithm>

#include "core/error.h"

namespace dnncast {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t col = 0; col <= b.size(); ++col) row[col] = col;
  for (size_t line = 1; line <= a.size(); ++line) {
    size_t diagonal = row[0];
    row[0] = line;
    for (size_t col = 1; col <= b.size(); ++col) {
      size_t up = row[col];
      row[col] = std::min({row[col] + 1, row[col - 1] + 1, diagonal + (a[line - 1] == b[col - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

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

std::vector<std::string> closest_names(const std::string& name, const std::vector<std::string>& known, size_t count) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& candidate : known) {
    size_t distance = edit_distance(name, candidate);
    // A prefix match ("resnet" for "resnet50") is as good as one edit.
    if (candidate.rfind(name, 0) == 0 && !name.empty()) distance = std::min<size_t>(distance, 1);
    scored.emplace_back(distance, candidate);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> result;
  for (size_t item = 0; item < scored.size() && result.size() < count; ++item) result.push_back(scored[item].second);
  return result;
}

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
  throw InputError("unknown model " + quote(name) + " (did you mean " + hint +
                   "? `dnncast inspect --list` shows all " + std::to_string(known.size()) + ")");
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
    throw error.with_context(name + " at input " +
                             (entry.kind == "cnn" ? TensorShape(spec.input).to_string()
                                                  : "seq " + std::to_string(spec.seq_len)));
  }
}

}  // namespace dnncast
