// Command-line parsing shared by every subcommand: CLI11 on the arguments after the command's name.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace dnncast::cli {

// Parses `args` into `app`. Returns false when --help was asked for (the help is printed on
// stdout: the command then returns 0). A parse error becomes InputError on one line, naming the
// command's help: "... (see dnncast COMMAND --help)".
bool parse_args(CLI::App& app, const Args& args, const std::string& command);

}  // namespace dnncast::cli
