// Text from outside made safe once (core/text.h): valid UTF-8 for the JSON writers, and quoted values cut to a
// readable length. Cross-checked against Python's own UTF-8 decoder ("replace" errors) on the same bytes.
#include "core/text.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "python_run.h"

namespace dnncast {
namespace {

TEST(Text, ValidUtf8IsUnchanged) {
  for (const std::string text :
       {"", "resnet50", "caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x98\x80", "t4\xe2\x80\x8b"}) {
    EXPECT_TRUE(is_valid_utf8(text)) << text;
    EXPECT_EQ(valid_utf8(text), text);
  }
}

TEST(Text, EachBadByteBecomesOneReplacementCharacter) {
  const std::string replacement = "\xef\xbf\xbd";
  EXPECT_EQ(valid_utf8("a\xff"
                       "b"),
            "a" + replacement + "b");
  EXPECT_EQ(valid_utf8("\xc3"), replacement);                                                        // truncated
  EXPECT_EQ(valid_utf8("\xc0\xaf"), replacement + replacement);                                      // overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), replacement + replacement + replacement);                    // a surrogate
  EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80"), replacement + replacement + replacement + replacement);  // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\x80"));
}

// Python's decoder with errors="replace" agrees on where the valid characters are (it may replace a maximal
// bad prefix by one character where this replaces each byte; both keep every valid character).
TEST(Text, KeepsTheCharactersPythonKeeps) {
  const std::string output = python_test::run_python(R"PY(
samples = [b"ok", b"a\xffb", b"caf\xc3\xa9\xff", b"\xe2\x82\xac\x80x"]
for s in samples:
    print(s.decode("utf-8", "replace").replace("\ufffd", ""))
)PY");
  ASSERT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  const std::string strip = "\xef\xbf\xbd";
  std::string mine;
  for (const std::string sample : {"ok",
                                   "a\xff"
                                   "b",
                                   "caf\xc3\xa9\xff", "\xe2\x82\xac\x80x"}) {
    std::string text = valid_utf8(sample);
    for (size_t at; (at = text.find(strip)) != std::string::npos;) text.erase(at, strip.size());
    mine += text + "\n";
  }
  EXPECT_EQ(output, mine);
}

TEST(Text, QuoteCutsALongValueAndSaysHowLongItWas) {
  const std::string huge(100000, 'x');
  const std::string quoted = quote(huge);
  EXPECT_LT(quoted.size(), 200u);
  EXPECT_NE(quoted.find("... (100000 bytes)"), std::string::npos) << quoted;
  EXPECT_EQ(quote("t4"), "'t4'");
  // Never inside a character: 119 ASCII bytes then a 3-byte character across the limit.
  const std::string text = std::string(119, 'a') + "\xe2\x82\xac" + std::string(10, 'b');
  EXPECT_TRUE(is_valid_utf8(cut_for_message(text)));
  EXPECT_EQ(cut_for_message(text).substr(0, 122), std::string(119, 'a') + "...");
}

}  // namespace
}  // namespace dnncast
