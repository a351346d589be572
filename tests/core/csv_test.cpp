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

// The key,value[,detail] tables of data/hardware: comments, blank records and the header skipped, each value a finite
// non-negative number, a bad one named by its line.
TEST(Csv, KeyValueRecordsSkipCommentsAndNameABadLine) {
  std::istringstream in("# fitted on ...\nkey,value,detail\n\nalpha_us,2.18,\"fitted, on the A40\"\nbeta,-1\n");
  std::vector<std::string> fields;
  int64_t line = 0;
  double value = 0;
  std::string where;
  ASSERT_TRUE(read_key_value_record(in, "t.csv", fields, line, value, where));
  EXPECT_EQ(fields[0], "alpha_us");
  EXPECT_DOUBLE_EQ(value, 2.18);
  EXPECT_EQ(fields[2], "fitted, on the A40");
  EXPECT_EQ(where, "t.csv line 4");
  try {
    read_key_value_record(in, "t.csv", fields, line, value, where);
    ADD_FAILURE() << "a negative value was read";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "t.csv line 5: '-1' is not a non-negative number");
  }
  std::istringstream short_record("key,value\nalpha\n"), empty("# nothing\n");
  EXPECT_THROW(read_key_value_record(short_record, "t.csv", fields, line = 0, value, where), InputError);
  EXPECT_FALSE(read_key_value_record(empty, "t.csv", fields, line = 0, value, where));
}

}  // namespace
}  // namespace dnncast
