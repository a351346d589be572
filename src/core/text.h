// Text that came from outside (files, flags, HTTP bodies) made safe once, where it is read: valid UTF-8
// for every JSON writer, and short enough to quote back in a one-line error.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dnncast {

// `text` with every byte sequence that is not UTF-8 (a stray continuation byte, an overlong or truncated
// sequence, a surrogate, a code point above U+10FFFF) replaced by U+FFFD; valid text comes back unchanged.
std::string valid_utf8(const std::string& text);
bool is_valid_utf8(const std::string& text);

// The first `limit` bytes of `text` (cut at a UTF-8 character boundary) followed by "... (N bytes)" when it
// is longer; unchanged otherwise. quote() cuts with kQuoteLimit.
inline constexpr size_t kQuoteLimit = 120;
std::string cut_for_message(const std::string& text, size_t limit = kQuoteLimit);
// The longest error message a front end (CLI, serve, Python) passes on whole; longer ones are cut as above.
inline constexpr size_t kMessageLimit = 2000;

// A number as a message shows it (%g: 0.5, 3, 1e+09), not std::to_string's 0.500000.
std::string shown_number(double value);

// Whether `text` begins / ends with the other string.
inline bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }
inline bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `word` as a POSIX shell reads it back: unchanged when it holds only letters, digits and _./:=,+@%-, else in
// single quotes (a ' inside as '\''); "" as ''.
std::string shell_word(const std::string& word);

// InputError unless `value`, a name the user gave to `option` (a device, a list of GPUs), is printable ASCII: a
// zero-width space after "t4" is not t4. Spaces are printable ("A100 40GB" names a catalogued GPU).
void check_printable_name(const std::string& option, const std::string& value);

// `text` as a number in [0, max], all of it: a field of a data file. InputError "WHAT: expected a number from 0 to
// MAX, got 'TEXT'" otherwise (a NaN, a sign, trailing characters).
double parse_bounded_number(const std::string& text, const std::string& what, double max);

// Up to `count` known names closest to `name` (edit distance; a prefix counts as one edit), for error messages.
std::vector<std::string> closest_names(const std::string& name, const std::vector<std::string>& known,
                                       size_t count = 3);

}  // namespace dnncast
