#include "core/error.h"

#include <cstdio>

#include "core/text.h"

namespace dnncast {

void internal_assert_fail(const char* expr, const char* file, int line) {
  throw InternalError("DNNCAST_ASSERT(" + std::string(expr) + ") failed at " + file + ":" + std::to_string(line));
}

std::string escape_control(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      escaped += "\\n";
    } else if (c == '\r') {
      escaped += "\\r";
    } else if (c == '\t') {
      escaped += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02x", byte);
      escaped += buffer;
    } else {
      escaped += c;
    }
  }
  return escaped;
}

std::string quote(const std::string& text) { return "'" + escape_control(cut_for_message(text)) + "'"; }

const ErrorAnswer& error_answer(const std::exception* error) {
  static const ErrorAnswer kAnswers[] = {
      {ErrorKind::Input, 2, 400, "ValueError", "error"},
      {ErrorKind::NotFound, 2, 404, "ValueError", "error"},
      {ErrorKind::Internal, 3, 500, "RuntimeError", "internal error"},
  };
  if (dynamic_cast<const NotFound*>(error) != nullptr) return kAnswers[1];
  if (dynamic_cast<const InputError*>(error) != nullptr) return kAnswers[0];
  return kAnswers[2];
}

}  // namespace dnncast
