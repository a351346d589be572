// core/csv: the one RFC 4180 reader and writer.
#include "core/csv.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace dnncast {
namespace {

using Record = std::vector<std::string>;

std::vector<Record> read_all(const std::string& text, int64_t* lines = nullptr) {
  std::istringstream in(text);
  std::vector<Record> records;
  Record fields;
  int64_t line = 0;
  while (read_csv_record(in, fields, line)) records.push_back(fields);
  if (lines) *lines = line;
  return records;
}

TEST(Csv, RoundTripsQuotesCommasAndNewlines) {
  const std::vector<Record> records{
      {"plain", "with,comma", "say \"hi\"", ""}, {"two\nlines", "cr\r\nlf", "\"", ",,"}, {"", "", "", "last"}};
  std::ostringstream out;
  for (const Record& record : records) write_csv_record(out, record);
  int64_t lines = 0;
  EXPECT_EQ(read_all(out.str(), &lines), records);
  EXPECT_EQ(lines, 5);  // two quoted newlines: three records on five lines
}

TEST(Csv, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv_quote("resnet50"), "resnet50");
  EXPECT_EQ(csv_quote("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_quote("x\ny"), "\"x\ny\"");
  std::ostringstream out;
  write_csv_record(out, {"a", "b c", ""});
  EXPECT_EQ(out.str(), "a,b c,\n");
}

TEST(Csv, ReadsCrlfAndAFinalRecordWithoutNewline) {
  EXPECT_EQ(read_all("a,b\r\n1,2\r\n3,\"x\r\ny\""), (std::vector<Record>{{"a", "b"}, {"1", "2"}, {"3", "x\r\ny"}}));
  EXPECT_EQ(read_all("a,\"\"\n"), (std::vector<Record>{{"a", ""}}));  // an empty quoted field
  EXPECT_EQ(read_all("\n"), (std::vector<Record>{{""}}));             // a blank line: one empty field
  EXPECT_TRUE(read_all("").empty());
}

TEST(Csv, UnterminatedQuoteNamesTheLineItStartsOn) {
  std::istringstream in("h1,h2\nok,fine\n\"multi\nline,\"\"open\nstill open");
  Record fields;
  int64_t line = 0;
  ASSERT_TRUE(read_csv_record(in, fields, line));
  ASSERT_TRUE(read_csv_record(in, fields, line));
  try {
    read_csv_record(in, fields, line);
    FAIL() << "read an unterminated quote";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "line 3: unterminated quoted field");
  }
}

}  // namespace
}  // namespace dnncast
