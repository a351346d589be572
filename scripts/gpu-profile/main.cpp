// `dnncast-profile ARGS` = `dnncast profile ARGS`, for the standalone profiler build
// (scripts/gpu-profile/CMakeLists.txt): the same subcommand, the same exit codes.
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  dnncast::cli::Args args(argv + 1, argv + argc);
  try {
    return dnncast::cli::run_profile(args);
  } catch (const dnncast::InputError& error) {
    std::fprintf(stderr, "dnncast profile: error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dnncast profile: internal error: %s\n", error.what());
    return 3;
  }
}
