// Command-line parsing shared by every subcommand: CLI11 on the arguments after the command's name.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace dnncast::cli {

// Parses `args` into `app`. Returns false when --help was asked for (the help is printed on
// stdout: the command then returns 0). A parse error becomes InputError on one line, naming the
// command's help: "... (see dnncast COMMAND --help)".
bool parse_args(CLI::App& app, const Args& args, const std::string& command);

// "a,b,,c" -> {"a", "b", "c"}: the items of a list option, empty ones dropped.
std::vector<std::string> split_list(const std::string& text, char separator = ',');

}  // namespace dnncast::cli
