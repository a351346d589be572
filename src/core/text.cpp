#include "core/text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "core/error.h"

namespace dnncast {

namespace {

// Length of the UTF-8 sequence starting at text[at], 0 when it is not a valid one.
size_t sequence_length(const std::string& text, size_t at) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned int code = 0;
  if (lead >= 0xC2 && lead <= 0xDF)
    length = 2, code = lead & 0x1F;
  else if (lead >= 0xE0 && lead <= 0xEF)
    length = 3, code = lead & 0x0F;
  else if (lead >= 0xF0 && lead <= 0xF4)
    length = 4, code = lead & 0x07;
  else
    return 0;
  if (at + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(at + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(at + k) & 0x3F);
  }
  if ((length == 3 && code < 0x800) || (length == 4 && (code < 0x10000 || code > 0x10FFFF)))
    return 0;                                      // overlong, too large
  if (code >= 0xD800 && code <= 0xDFFF) return 0;  // surrogates
  return length;
}

}  // namespace

bool is_valid_utf8(const std::string& text) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = sequence_length(text, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

std::string valid_utf8(const std::string& text) {
  if (is_valid_utf8(text)) return text;
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t at = 0; at < text.size();) {
    const size_t length = sequence_length(text, at);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++at;
    } else {
      out.append(text, at, length);
      at += length;
    }
  }
  return out;
}

std::string shown_number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

std::string cut_for_message(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

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

std::string shell_word(const std::string& word) {
  bool plain = !word.empty();
  for (unsigned char byte : word)
    plain = plain && byte != 0 && (std::isalnum(byte) || std::strchr("_./:=,+@%-", byte) != nullptr);
  if (plain) return word;
  std::string quoted = "'";
  for (char byte : word) quoted += byte == '\'' ? std::string("'\\''") : std::string(1, byte);
  return quoted + "'";
}

void check_printable_name(const std::string& option, const std::string& value) {
  for (size_t at = 0; at < value.size(); ++at) {
    const unsigned char byte = static_cast<unsigned char>(value[at]);
    if (byte < 0x20 || byte >= 0x7f)
      throw InputError(option + " " + quote(value) + ": byte " + std::to_string(at + 1) + " (0x" +
                       "0123456789abcdef"[byte >> 4] + "0123456789abcdef"[byte & 15] +
                       ") is not printable ASCII: names are letters, digits, spaces and - _ . ,");
  }
}

double parse_bounded_number(const std::string& text, const std::string& what, double max) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(value >= 0) || !(value <= max)) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", max);
    throw InputError(what + ": expected a number from 0 to " + bound + ", got " + quote(text));
  }
  return value;
}

}  // namespace dnncast
