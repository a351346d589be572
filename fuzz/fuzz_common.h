// Shared by the libFuzzer targets: what counts as a finding. dnncast's InputError (bad input,
// exit 2 in the CLI) is the expected answer to most inputs and is swallowed; any other exception
// would reach the CLI as "internal error" (exit 3), so it aborts and libFuzzer keeps the input.
// Crashes, assertions (DNNCAST_ASSERT aborts) and sanitizer reports are findings by themselves.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/error.h"

namespace dnncast::fuzz {

template <typename Body>
int run_one(Body body) {
  try {
    body();
  } catch (const InputError&) {
    // expected: the CLI would print one line and exit 2
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fuzz: not an InputError (the CLI's exit 3): %s\n", error.what());
    std::abort();
  }
  return 0;
}

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace dnncast::fuzz
