// Integers read from a model or manifest file, strictly: nlohmann's get<int>() converts a float (1.1e55) or an
// out-of-range integer with undefined behaviour (found by fuzz_predictor_manifest under UBSan, issue 37). These
// accept only a JSON integer within int's range and otherwise throw InputError naming `what`.
#pragma once

#include <climits>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"

namespace dnncast::learn {

inline int json_int(const nlohmann::json& value, const std::string& what) {
  const bool in_range = value.is_number_unsigned()  ? value.get<uint64_t>() <= uint64_t{INT_MAX}
                        : value.is_number_integer() ? value.get<int64_t>() >= INT_MIN && value.get<int64_t>() <= INT_MAX
                                                    : false;
  if (!in_range) {
    std::string shown = value.dump();
    if (shown.size() > 40) shown = shown.substr(0, 40) + "... (cut)";
    throw InputError(what + ": expected an integer in int's range, got " + shown);
  }
  return static_cast<int>(value.get<int64_t>());
}

inline std::vector<int> json_ints(const nlohmann::json& value, const std::string& what) {
  if (!value.is_array())
    throw InputError(what + ": expected an array of integers, got " + std::string(value.type_name()));
  std::vector<int> out;
  out.reserve(value.size());
  for (const nlohmann::json& item : value) out.push_back(json_int(item, what));
  return out;
}

}  // namespace dnncast::learn
