// Command-line parsing shared by every subcommand: CLI11 on the arguments after the command's name.
#pragma once

#include <CLI/CLI.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace dnncast::cli {

// Parses `args` into `app`. Returns false when --help was asked for (the help is printed on
// stdout: the command then returns 0). A parse error becomes InputError on one line, naming the
// command's help: "... (see dnncast COMMAND --help)".
bool parse_args(CLI::App& app, const Args& args, const std::string& command);

// Checks shared by every command's options (CLI11 `->check(...)`), so that one bad value gets the
// same one line everywhere ("--threads: Value 0 not in range [1 - 1024] (see dnncast memory --help)"):
inline constexpr int64_t kMaxThreads = 1024;
// A thread count 1..kMaxThreads; 0 too where the command says what 0 means (profile: all CPUs).
CLI::Validator thread_count(bool zero_allowed = false);
// An integer 1..max.
CLI::Validator positive_at_most(int64_t max);
// A seed: a whole number from 0 to 2^64 - 1 (a uint64_t, which CLI11 would wrap -1 into), said in those words.
CLI::Validator seed_number();
// A size in bytes as core::parse_bytes reads it ("24GiB"), at least one byte: "" and 1e-5 are refused.
CLI::Validator byte_size();
// The same, or the word `gpu` (the --device GPU's memory).
CLI::Validator byte_size_or_gpu();

// Refuses a path given to `option` that cannot be written (a folder, a missing folder, no permission),
// before any work is done: InputError "--html 'x/': not a file name".
void check_writable(const std::string& option, const std::string& path);

// A name given to `option` (a device, a GPU list): refused when it was given empty ("--device ''" is not "no
// device") or holds anything but printable ASCII (a zero-width space after "t4" is not t4). Lists: each item.
void check_name_option(const CLI::App& app, const std::string& option, const std::string& value);

// A file opened for writing before any work is done (InputError "cannot write PATH"); not open when PATH is "".
std::ofstream open_output(const std::string& path);

// "a,b,,c" -> {"a", "b", "c"}: the items of a list option, empty ones dropped.
std::vector<std::string> split_list(const std::string& text, char separator = ',');

}  // namespace dnncast::cli
