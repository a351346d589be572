#include "core/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/error.h"

namespace dnncast {

namespace {

constexpr double kKiB = 1024.0;

struct Unit {
  const char* name;  // lower case
  double scale;
};
constexpr Unit kUnits[] = {{"", 1},
                           {"b", 1},
                           {"k", kKiB},
                           {"kib", kKiB},
                           {"m", kKiB* kKiB},
                           {"mib", kKiB* kKiB},
                           {"g", kKiB* kKiB* kKiB},
                           {"gib", kKiB* kKiB* kKiB},
                           {"t", kKiB* kKiB* kKiB* kKiB},
                           {"tib", kKiB* kKiB* kKiB* kKiB},
                           {"kb", 1e3},
                           {"mb", 1e6},
                           {"gb", 1e9},
                           {"tb", 1e12}};

// The largest binary unit (index into names, at most `last`) whose size `bytes` reaches, and bytes in it.
// `threshold` below 1024 moves up a unit early where the printed value would round to 1024.
double scaled_to_unit(double bytes, size_t last, double threshold, size_t& unit) {
  unit = 0;
  while (bytes >= threshold && unit < last) {
    bytes /= kKiB;
    ++unit;
  }
  return bytes;
}

std::string printed(const char* format, double value, const char* unit) {
  char text[64];
  std::snprintf(text, sizeof text, format, value, unit);
  return text;
}

}  // namespace

int64_t parse_bytes(const std::string& text, const std::string& what) {
  auto fail = [&]() -> int64_t {
    throw InputError(what + " " + quote(text) +
                     ": expected a size in bytes, optionally with a unit (4096, 512MiB, 24GiB, 1.5GB)");
  };
  if (text.empty()) return fail();
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return fail();
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  const Unit* found = nullptr;
  for (const Unit& candidate : kUnits)
    if (unit == candidate.name) found = &candidate;
  if (!found)
    throw InputError(what + " " + quote(text) + ": unknown unit '" + text.substr(used) +
                     "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
  double bytes = value * found->scale;
  if (!std::isfinite(bytes) || bytes < 1) throw InputError(what + " must be at least 1 byte, got " + quote(text));
  if (bytes > 9.0e18) throw InputError(what + " " + quote(text) + " is too large");
  return static_cast<int64_t>(std::llround(bytes));
}

std::string format_bytes(double bytes, ByteStyle style) {
  static const char* const kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  switch (style) {
    case ByteStyle::Fixed:
    case ByteStyle::FixedKiB: {
      if (bytes < kKiB && style == ByteStyle::Fixed) return printed("%.0f %s", bytes, "B");
      double value = scaled_to_unit(bytes, 3, kKiB, unit);
      if (unit == 0) {  // FixedKiB below 1 KiB
        value = bytes / kKiB;
        unit = 1;
      }
      return printed(unit == 3 ? "%.2f %s" : "%.1f %s", value, kNames[unit]);
    }
    case ByteStyle::Significant: {
      if (bytes < kKiB) return printed("%.0f %s", bytes, "B");
      double value = scaled_to_unit(bytes, 6, 1023.95, unit);
      return printed(value >= 99.95 ? "%.0f %s" : "%.1f %s", value, kNames[unit]);
    }
    case ByteStyle::TwoDecimals: {
      double value = scaled_to_unit(bytes, 4, kKiB, unit);
      return printed("%.2f %s", value, kNames[unit]);
    }
  }
  DNNCAST_ASSERT(false);
  return "";
}

}  // namespace dnncast
