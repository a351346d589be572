#include "cli/parse_args.h"

#include <algorithm>
#include <iostream>

#include "graph/error.h"

namespace dnncast::cli {

bool parse_args(CLI::App& app, const Args& args, const std::string& command) {
  // CLI11's parse(vector) takes the arguments last to first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& help) {
    app.exit(help);  // the help of the (sub)command asked about, on stdout
    return false;
  } catch (const CLI::ParseError& error) {
    std::string message = error.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    throw InputError(message + " (see dnncast " + command + " --help)");
  }
  return true;
}

}  // namespace dnncast::cli
