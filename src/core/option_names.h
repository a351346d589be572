// How each front end names an option in its messages: the CLI's flag ("--max-batch"), the Python keyword
// ("max_batch_bytes") or serve's JSON field (the keyword, except "input" for Python's "input_shape"). Requests
// made from what a user gave (import/model_source.h, forecast/forecast.h) name the option as the caller spells it,
// so that a mistake reads the same line in every front end once the option is spelled alike.
#pragma once

#include <string>

namespace dnncast {

enum class OptionStyle { Flag, Keyword, Field };  // the CLI, Python, serve

// `keyword` (a Python keyword of the table in option_names.cpp) as `style` spells it.
std::string option_name(const std::string& keyword, OptionStyle style);

}  // namespace dnncast
