// Limits on a JSON document read from outside (HTTP bodies, config.json, graph JSON, plans, predictor files),
// checked on its text before any parser sees it: a document nested 100,000 deep overflowed the stack of the
// code that walks or prints it (issue 51). No document dnncast reads nests deeper than about ten levels.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

namespace dnncast {

inline constexpr int kMaxJsonNesting = 256;  // arrays and objects inside each other

// The deepest nesting of arrays and objects in `text` (brackets inside strings not counted), stopping as soon
// as it passes `limit`; malformed text is the parser's to report.
int json_nesting(std::string_view text, int limit = kMaxJsonNesting);

// Throws InputError "WHAT: JSON nested deeper than 256 levels (arrays and objects inside each other)" when
// `text` nests deeper than kMaxJsonNesting.
void check_json_nesting(std::string_view text, const std::string& what);

// The rest of a stream, as text (a file read whole before its nesting is checked).
std::string read_all(std::istream& in);

}  // namespace dnncast
