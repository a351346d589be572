#include "core/json_limits.h"

#include <iterator>

#include "core/error.h"

namespace dnncast {

int json_nesting(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t at = 0; at < text.size(); ++at) {
    const char c = text[at];
    if (in_string) {
      if (c == '\\')
        ++at;  // the escaped character, a quote included
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

void check_json_nesting(std::string_view text, const std::string& what) {
  if (json_nesting(text) > kMaxJsonNesting)
    throw InputError(what + ": JSON nested deeper than " + std::to_string(kMaxJsonNesting) +
                     " levels (arrays and objects inside each other)");
}

std::string read_all(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace dnncast
