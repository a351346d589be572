// core/units: the one byte grammar (every size option) and the formatter's styles.
#include "core/units.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace dnncast {
namespace {

constexpr int64_t kKiB = 1024, kMiB = kKiB << 10, kGiB = kMiB << 10;

TEST(ParseBytes, ReadsTheProfileForms) {  // dnncast profile --memory-limit, before it shared this grammar
  EXPECT_EQ(parse_bytes("2G", "--memory-limit"), 2 * kGiB);
  EXPECT_EQ(parse_bytes("512M"), 512 * kMiB);
  EXPECT_EQ(parse_bytes("64k"), 64 * kKiB);
  EXPECT_EQ(parse_bytes("1T"), kGiB << 10);
  EXPECT_EQ(parse_bytes("100000"), 100000);
  EXPECT_EQ(parse_bytes("100000B"), 100000);
  EXPECT_EQ(parse_bytes("1.5K"), 1536);
}

TEST(ParseBytes, ReadsTheSimulatorForms) {
  EXPECT_EQ(parse_bytes("4096"), 4096);
  EXPECT_EQ(parse_bytes("512MiB"), 512 * kMiB);
  EXPECT_EQ(parse_bytes("24GiB"), 24 * kGiB);
  EXPECT_EQ(parse_bytes("24 gib"), 24 * kGiB);
  EXPECT_EQ(parse_bytes("1.5GB"), 1500000000);
  EXPECT_EQ(parse_bytes("1GB"), 1000000000);
  EXPECT_EQ(parse_bytes("100kb"), 100000);
  EXPECT_EQ(parse_bytes("2TB"), 2000000000000);
  EXPECT_EQ(parse_bytes("1e6"), 1000000);
  EXPECT_EQ(parse_bytes("1.6"), 2);  // rounded to the nearest byte
}

TEST(ParseBytes, RefusesBadTextNamingTheOption) {
  for (const char* text : {"", "abc", "12XB", "2X", "-5", "0", "0.4", "GiB", "1e30", "nan", "inf", "2 G B"}) {
    try {
      parse_bytes(text, "--memory-limit");
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const InputError& error) {
      EXPECT_EQ(std::string(error.what()).rfind("--memory-limit ", 0), 0u) << error.what();
    }
  }
  try {
    parse_bytes("2X", "--memory-limit");
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "--memory-limit '2X': unknown unit 'X' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
  }
}

TEST(FormatBytes, FixedStyle) {  // memory reports
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(812), "812 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(512 * kMiB), "512.0 MiB");
  EXPECT_EQ(format_bytes(kGiB + kGiB / 2), "1.50 GiB");
  EXPECT_EQ(format_bytes(2048 * kGiB), "2048.00 GiB");  // GiB at most
}

TEST(FormatBytes, FixedKiBStyle) {  // campaign progress lines
  EXPECT_EQ(format_bytes(0, ByteStyle::FixedKiB), "0.0 KiB");
  EXPECT_EQ(format_bytes(512, ByteStyle::FixedKiB), "0.5 KiB");
  EXPECT_EQ(format_bytes(3 * kMiB, ByteStyle::FixedKiB), "3.0 MiB");
  EXPECT_EQ(format_bytes(3 * kGiB, ByteStyle::FixedKiB), "3.00 GiB");
}

TEST(FormatBytes, SignificantStyle) {  // dnncast inspect
  EXPECT_EQ(format_bytes(812, ByteStyle::Significant), "812 B");
  EXPECT_EQ(format_bytes(102760448, ByteStyle::Significant), "98.0 MiB");
  EXPECT_EQ(format_bytes(150 * kMiB, ByteStyle::Significant), "150 MiB");
  EXPECT_EQ(format_bytes(kMiB - 10, ByteStyle::Significant), "1.0 MiB");  // not "1024 KiB"
  EXPECT_EQ(format_bytes(5 * (kGiB << 10), ByteStyle::Significant), "5.0 TiB");
}

TEST(FormatBytes, TwoDecimalsStyle) {  // dnncast predict
  EXPECT_EQ(format_bytes(812.5, ByteStyle::TwoDecimals), "812.50 B");
  EXPECT_EQ(format_bytes(1536, ByteStyle::TwoDecimals), "1.50 KiB");
  EXPECT_EQ(format_bytes(3.25 * kGiB, ByteStyle::TwoDecimals), "3.25 GiB");
  EXPECT_EQ(format_bytes(4096.0 * (kGiB << 10), ByteStyle::TwoDecimals), "4096.00 TiB");
}

TEST(FormatBytes, ParsesBackToTheSameSize) {
  for (int64_t bytes : {int64_t{4096}, 3 * kMiB, 7 * kGiB, 5 * kGiB / 2}) {
    EXPECT_EQ(parse_bytes(format_bytes(bytes)), bytes) << format_bytes(bytes);
    EXPECT_EQ(parse_bytes(format_bytes(bytes, ByteStyle::TwoDecimals)), bytes);
  }
  EXPECT_EQ(parse_bytes(format_bytes(812)), 812);
}

}  // namespace
}  // namespace dnncast
