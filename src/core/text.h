// Text that came from outside (files, flags, HTTP bodies) made safe once, where it is read: valid UTF-8
// for every JSON writer, and short enough to quote back in a one-line error.
#pragma once

#include <cstddef>
#include <string>

namespace dnncast {

// `text` with every byte sequence that is not UTF-8 (a stray continuation byte, an overlong or truncated
// sequence, a surrogate, a code point above U+10FFFF) replaced by U+FFFD; valid text comes back unchanged.
std::string valid_utf8(const std::string& text);
bool is_valid_utf8(const std::string& text);

// The first `limit` bytes of `text` (cut at a UTF-8 character boundary) followed by "... (N bytes)" when it
// is longer; unchanged otherwise. quote() cuts with kQuoteLimit.
inline constexpr size_t kQuoteLimit = 120;
std::string cut_for_message(const std::string& text, size_t limit = kQuoteLimit);

}  // namespace dnncast
