#include "cli/parse_args.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "core/text.h"
#include "core/units.h"

namespace dnncast::cli {

bool parse_args(CLI::App& app, const Args& args, const std::string& command) {
  // CLI11's parse(vector) takes the arguments last to first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  // A flag takes no value: --checkpointing=5 or =-1 is a mistake, not "on" or "off".
  for (CLI::Option* option : app.get_options())
    if (option->get_expected_max() == 0) option->disable_flag_override();
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& help) {
    app.exit(help);  // the help of the (sub)command asked about, on stdout
    return false;
  } catch (const CLI::ParseError& error) {
    std::string message = error.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    const std::string override_said = " was given a disallowed flag override";  // CLI11's words for --flag=VALUE
    const size_t said = message.find(override_said);
    if (said != std::string::npos) {
      const std::string flag = "--" + message.substr(0, said);
      message = flag + ": a flag takes no value; give " + flag + " alone to turn it on";
    }
    throw InputError(message + " (see dnncast " + command + " --help)");
  }
  // An option given an empty value ("--lora ''") is refused, not taken as left out; an integer past what 64 bits
  // hold is named as typed (CLI11 saturates it: --grad-accum 9223372036854775808 was read as ...807).
  for (CLI::Option* option : app.get_options()) {
    if (option->count() == 0 || option->get_expected_max() == 0) continue;
    for (const std::string& value : option->results()) {
      if (value.empty())
        throw InputError(option->get_name() + ": empty; leave the option out for its default (see dnncast " + command +
                         " --help)");
      const size_t digits_at = value[0] == '-' || value[0] == '+' ? 1 : 0;
      const bool integer =
          value.size() > digits_at && std::all_of(value.begin() + static_cast<std::ptrdiff_t>(digits_at), value.end(),
                                                  [](char c) { return c >= '0' && c <= '9'; });
      if (!integer || value.size() - digits_at < 19) continue;
      errno = 0;
      std::strtoll(value.c_str(), nullptr, 10);
      const bool fits_signed = errno == 0;
      errno = 0;
      std::strtoull(value.c_str(), nullptr, 10);
      const bool fits_unsigned = errno == 0 && value[0] != '-';
      bool unsigned_seed = false;  // seed_number()'s options read a uint64_t
      try {
        option->get_validator("seed");
        unsigned_seed = true;
      } catch (const CLI::OptionNotFound&) {
      }
      if (!fits_signed && !(fits_unsigned && unsigned_seed))
        throw InputError(option->get_name() + ": " + cut_for_message(value, 40) +
                         " is past what a 64-bit integer holds (see dnncast " + command + " --help)");
    }
  }
  return true;
}

CLI::Validator thread_count(bool zero_allowed) {
  return CLI::Range(zero_allowed ? int64_t{0} : int64_t{1}, kMaxThreads);
}

CLI::Validator positive_at_most(int64_t max) { return CLI::Range(int64_t{1}, max); }

CLI::Validator seed_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool digits = !text.empty() && text.size() <= 20 &&
                            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits && (text.size() < 20 || text <= "18446744073709551615")) return "";
        return "a seed is a whole number from 0 to 18446744073709551615, got " + cut_for_message(text, 40);
      },
      "SEED", "seed");
}

CLI::Validator byte_size_or_gpu() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text == "gpu") return "";
        try {
          parse_bytes(text, "value");
        } catch (const InputError& error) {
          return error.what();
        }
        return "";
      },
      "BYTES|gpu");
}

CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_bytes(text, "value");
        } catch (const InputError& error) {
          return error.what();
        }
        return "";
      },
      "BYTES");
}

void check_name_option(const CLI::App& app, const std::string& option, const std::string& value) {
  if (app.count(option) == 0) return;
  if (split_list(value).empty()) throw InputError(option + ": empty (give a name, or leave the option out)");
  check_printable_name(option, value);
}

std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, separator))
    if (!item.empty()) items.push_back(item);
  return items;
}

void check_writable(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path file(path);
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (path.empty() || fs::is_directory(file, error)) throw InputError(option + " " + quote(path) + ": not a file name");
  if (!fs::is_directory(dir, error))
    throw InputError(option + " " + quote(path) + ": no folder " + quote(dir.string()));
  if (::access(dir.c_str(), W_OK) != 0 || (fs::exists(file, error) && ::access(file.c_str(), W_OK) != 0))
    throw InputError(option + " " + quote(path) + ": cannot write the file");
}

std::ofstream open_output(const std::string& path) {
  std::ofstream file;
  if (path.empty()) return file;
  file.open(path);
  if (!file) throw InputError("cannot write " + path);
  return file;
}

}  // namespace dnncast::cli
