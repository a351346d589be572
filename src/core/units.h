// Sizes in bytes as text, both ways: one grammar for every option that takes a size (--memory-limit,
// --fits, --max-batch, --cuda-context) and one formatter for every report that prints one.
#pragma once

#include <cstdint>
#include <string>

namespace dnncast {

// "4096", "1e9", "2G", "512M", "24GiB", "512 MiB", "1.5GB" -> bytes, rounded to the nearest byte.
// Units (case-insensitive, spaces allowed before them): B; K/M/G/T and KiB/MiB/GiB/TiB are powers of
// 1024; KB/MB/GB/TB are powers of 1000. At least 1 byte. Throws InputError naming `what` and the text:
// "--memory-limit '2X': unknown unit 'X' (use ...)".
int64_t parse_bytes(const std::string& text, const std::string& what = "bytes");

// How format_bytes writes a size; binary units (1 KiB = 1024 B) in every style.
enum class ByteStyle {
  Fixed,        // memory reports: "1.50 GiB", "512.0 MiB", "1.5 KiB", "812 B" (GiB at most)
  FixedKiB,     // campaign progress: as Fixed, but below 1 MiB always KiB: "0.5 KiB", "0.0 KiB"
  Significant,  // inspect: three significant digits, "98.0 MiB", "1.23 GiB", "812 B" (up to EiB)
  TwoDecimals,  // predict: "98.00 MiB", "812.00 B" (up to TiB)
};
// `bytes` is a double so that estimates with a fraction (predict's interval bounds) print as before.
std::string format_bytes(double bytes, ByteStyle style = ByteStyle::Fixed);

}  // namespace dnncast
