// The eager kernel list as data (eager_kernels.h).
#include "gpu/eager_kernels.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>

#include "core/csv.h"
#include "core/error.h"
#include "core/text.h"
#include "hardware/catalogue.h"

namespace dnncast::gpu {

std::string default_eager_kernels_path() {
  const std::string dir = hardware::default_catalogue_dir();
  return dir.empty() ? "" : (std::filesystem::path(dir) / "eager_kernels.csv").string();
}

std::vector<EagerKernel> load_eager_kernels(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + quote(path));
  const std::vector<std::string> header = {
      "family", "op", "phase", "operand", "count", "bytes_per_element", "flops_per_element", "mode", "if", "what"};
  std::vector<std::string> fields;
  int64_t line = 0;
  bool seen_header = false;
  std::vector<EagerKernel> rows;
  while (read_csv_record(in, fields, line)) {
    if (fields.empty() || (fields.size() == 1 && fields[0].empty()) || fields[0][0] == '#') continue;
    const std::string where = path + " line " + std::to_string(line);
    if (!seen_header) {
      if (fields != header) throw InputError(where + ": expected the header family,op,phase,operand,count,...,what");
      seen_header = true;
      continue;
    }
    if (fields.size() != header.size())
      throw InputError(where + ": " + std::to_string(fields.size()) + " fields, the header has " +
                       std::to_string(header.size()));
    try {
      EagerKernel row;
      row.family = fields[0];
      row.op = fields[1];
      if (row.family.empty() || row.op.empty()) throw InputError("family and op must be given");
      if (fields[2] != "forward" && fields[2] != "backward")
        throw InputError("phase must be forward or backward, got " + quote(fields[2]));
      row.backward = fields[2] == "backward";
      row.operand = fields[3];
      static const std::map<std::string, EagerKernel::Operand> operands = {
          {"scores", EagerKernel::Operand::Scores},
          {"query", EagerKernel::Operand::Query},
          {"output", EagerKernel::Operand::Output},
          {"input", EagerKernel::Operand::Input},
          {"rows", EagerKernel::Operand::Rows},
          {"weight", EagerKernel::Operand::Weight},
          {"output_and_input", EagerKernel::Operand::OutputAndInput}};
      const auto operand = operands.find(row.operand);
      if (operand == operands.end())
        throw InputError("operand must be scores, query, output, input, rows, weight or output_and_input, got " +
                         quote(row.operand));
      row.operand_kind = operand->second;
      const double count = parse_bounded_number(fields[4], "count", 1e6);
      if (count < 1 || count > 64 || count != static_cast<double>(static_cast<int>(count)))
        throw InputError("count must be a whole number from 1 to 64, got " + quote(fields[4]));
      row.count = static_cast<int>(count);
      row.bytes_per_element = parse_bounded_number(fields[5], "bytes_per_element", 1e6);
      row.flops_per_element = parse_bounded_number(fields[6], "flops_per_element", 1e6);
      if (fields[7] != "replace" && fields[7] != "add")
        throw InputError("mode must be replace or add, got " + quote(fields[7]));
      row.replaces = fields[7] == "replace";
      row.condition = fields[8];
      static const std::map<std::string, EagerKernel::Condition> conditions = {
          {"", EagerKernel::Condition::Always},         {"dropout", EagerKernel::Condition::Dropout},
          {"causal", EagerKernel::Condition::Causal},   {"softcap", EagerKernel::Condition::Softcap},
          {"batched", EagerKernel::Condition::Batched}, {"kv_views", EagerKernel::Condition::KvViews},
          {"copies", EagerKernel::Condition::Copies}};
      const auto condition = conditions.find(row.condition);
      if (condition == conditions.end())
        throw InputError("if must be empty, dropout, causal, softcap, batched, kv_views or copies, got " +
                         quote(row.condition));
      row.condition_kind = condition->second;
      row.what = fields[9];
      rows.push_back(std::move(row));
    } catch (const InputError& error) {
      throw InputError(where + ": " + error.what());
    }
  }
  if (!seen_header) throw InputError(path + ": no header line");
  return rows;
}

namespace {
// (family, op) keys looked up as views of the caller's strings: no copies on the per-node path.
struct ByFamilyAndOp {
  using is_transparent = void;
  using Key = std::pair<std::string_view, std::string_view>;
  static Key view(const std::pair<std::string, std::string>& key) { return {key.first, key.second}; }
  static Key view(const Key& key) { return key; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return view(a) < view(b);
  }
};
}  // namespace

const std::vector<const EagerKernel*>& eager_kernels(const std::string& family, const std::string& op) {
  struct Index {
    std::vector<EagerKernel> rows;
    std::map<std::pair<std::string, std::string>, std::vector<const EagerKernel*>, ByFamilyAndOp> by_key;
  };
  static const Index index = [] {
    Index built;
    const std::string path = default_eager_kernels_path();
    if (path.empty() || !std::filesystem::exists(path)) return built;
    built.rows = load_eager_kernels(path);
    for (const EagerKernel& row : built.rows) {  // "llama;mistral": the same code in each family's modeling file
      std::istringstream families(row.family);
      for (std::string family; std::getline(families, family, ';');)
        if (!family.empty()) built.by_key[{family, row.op}].push_back(&row);
    }
    // A family's list carries the "*" rows of its op too, merged once here rather than per lookup.
    for (auto& [key, list] : built.by_key) {
      if (key.first == "*") continue;
      const auto every = built.by_key.find(ByFamilyAndOp::Key{"*", key.second});
      if (every != built.by_key.end()) list.insert(list.end(), every->second.begin(), every->second.end());
    }
    return built;
  }();
  static const std::vector<const EagerKernel*> none;
  auto found = index.by_key.find(ByFamilyAndOp::Key{family, op});
  if (found == index.by_key.end()) found = index.by_key.find(ByFamilyAndOp::Key{"*", op});
  return found == index.by_key.end() ? none : found->second;
}

}  // namespace dnncast::gpu
