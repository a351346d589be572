// What the commands' --json outputs share: an unknown value (an empty optional) is null.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace dnncast::cli {

template <typename T>
nlohmann::ordered_json or_null(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

}  // namespace dnncast::cli
