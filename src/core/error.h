// Two kinds of checks, never mixed:
//   InputError  - the user gave us something wrong; message names what and where.
//   DNNCAST_ASSERT - a bug in dnncast; never reachable from user input. It throws InternalError (as c10's
//     TORCH_INTERNAL_ASSERT throws c10::Error): the CLI, the Python module and the server each report it at
//     their boundary ("internal error: ...", CLI exit code 3) instead of the process dying inside an
//     interpreter or a request.
#pragma once

#include <stdexcept>
#include <string>

namespace dnncast {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  // Adds outer context on the way up: "while importing graph.json: node 'c1': ..."
  InputError with_context(const std::string& context) const { return InputError(context + ": " + what()); }
};

// A failed DNNCAST_ASSERT: "DNNCAST_ASSERT(expr) failed at file:line". Deliberately not an InputError, so
// that no boundary reports a bug as the user's fault.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

[[noreturn]] void internal_assert_fail(const char* expr, const char* file, int line);

// An InputError about a name that is not there (a model, a job's model): serve answers 404 for it.
class NotFound : public InputError {
 public:
  explicit NotFound(const std::string& message) : InputError(message) {}
};

// What every front end makes of an error, one row per kind (issue 33): the CLI's exit code and the words before
// the message, serve's HTTP status, the Python exception.
enum class ErrorKind { Input, NotFound, Internal };
struct ErrorAnswer {
  ErrorKind kind;
  int exit_code;
  int http_status;
  const char* python_exception;  // "ValueError" | "RuntimeError"
  const char* label;             // "error" | "internal error"
};
// The row of an error caught as `error` (nullptr: an exception of no known type, answered as internal).
const ErrorAnswer& error_answer(const std::exception* error);

// `text` with control characters written as escapes (\n, \t, \x1b): a user's string quoted into a
// message keeps the message on one line. quote() adds the quotes: 'conv\n1', and cuts a long text to its first
// 120 bytes with the length said (core/text.h), so a 100,000-character flag is not echoed whole.
std::string escape_control(const std::string& text);
std::string quote(const std::string& text);

}  // namespace dnncast

#define DNNCAST_ASSERT(cond)                                                 \
  do {                                                                       \
    if (!(cond)) ::dnncast::internal_assert_fail(#cond, __FILE__, __LINE__); \
  } while (0)
