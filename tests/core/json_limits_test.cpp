// core/json_limits.h: the nesting of a JSON text counted before a parser sees it (issue 51).
#include "core/json_limits.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dnncast {
namespace {

TEST(JsonLimits, CountsTheDeepestNestingOfArraysAndObjects) {
  EXPECT_EQ(json_nesting("1"), 0);
  EXPECT_EQ(json_nesting("{}"), 1);
  EXPECT_EQ(json_nesting(R"({"a": [1, {"b": [[]]}], "c": {}})"), 5);
  // Brackets inside strings, escaped quotes included, are text.
  EXPECT_EQ(json_nesting(R"({"a": "[[[{{{", "b": "\"[[[", "c": "\\"})"), 1);
  EXPECT_EQ(json_nesting(R"(["\\\"[[[", []])"), 2);
  // The count agrees with nlohmann's own parse of documents up to the limit.
  for (int depth : {1, 7, 64, kMaxJsonNesting}) {
    const std::string text =
        std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
    EXPECT_EQ(json_nesting(text), depth);
    EXPECT_NO_THROW(check_json_nesting(text, "doc"));
    EXPECT_FALSE(nlohmann::json::parse(text, nullptr, false).is_discarded());
  }
}

TEST(JsonLimits, RefusesPastTheLimitWithOneLineNamingIt) {
  const std::string deep = "{\"n_embd\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(json_nesting(deep), kMaxJsonNesting + 1);  // stops counting past the limit
  try {
    check_json_nesting(deep, "config.json");
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "config.json: JSON nested deeper than 256 levels (arrays and objects inside each other)");
  }
  // Unbalanced text is the parser's to report, never a crash here.
  EXPECT_EQ(json_nesting("]]]]{"), 1);
  EXPECT_EQ(json_nesting("\"unterminated [[["), 0);
}

}  // namespace
}  // namespace dnncast
