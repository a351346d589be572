// Every reproducer of tests/cli/bad_input/cases.tsv, run through the built `dnncast`: bad input is
// one line on stderr and exit code 2, whatever the command, never a crash, a hang, a stack trace, a
// second line, output on stdout, or a changed input file.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"

namespace dnncast {
namespace {

namespace fs = std::filesystem;
using cli_test::Result;

const std::string kHere = std::string(DNNCAST_SOURCE_DIR) + "/tests/cli/bad_input";

struct Case {
  std::string name, command, expected;
  std::vector<std::string> args;
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::vector<Case> read_cases(const std::string& dir) {
  std::vector<Case> cases;
  std::ifstream in(kHere + "/cases.tsv");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> columns;
    std::stringstream stream(line);
    std::string column;
    while (std::getline(stream, column, '\t')) columns.push_back(column);
    EXPECT_EQ(columns.size(), 4u) << line;
    if (columns.size() != 4) continue;
    Case item{columns[0], columns[1], columns[3], {}};
    std::stringstream words(columns[2]);
    std::string word;
    while (words >> word)
      item.args.push_back(word == "''" ? std::string() : replace_all(replace_all(word, "{here}", kHere), "{dir}", dir));
    cases.push_back(item);
  }
  return cases;
}

// Path -> bytes of every file under `root`.
std::map<std::string, std::string> snapshot(const std::string& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file()) files[entry.path().string()] = cli_test::read_text(entry.path().string());
  return files;
}

void copy_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(scratch_.ok());
    const std::string& dir = scratch_.path();
    // A dataset whose one network has a graph_json that is not JSON (a damaged file).
    Result imported =
        cli_test::run("dataset", {"import", "--csv", kHere + "/one_run.csv", "--db", dir + "/bad_graph.db"}, dir);
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir + "/bad_graph.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE networks SET graph_json = '{not json'; PRAGMA journal_mode = DELETE;", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    EXPECT_EQ(sqlite3_changes(db), 1);
    sqlite3_close(db);
    // The shipped time predictor with its XGBoost model missing, cut short, or noise.
    const std::string shipped = cli_test::epyc_predictor() + "/time";
    std::string model = cli_test::read_text(shipped + "/xgboost.json");
    ASSERT_GT(model.size(), 1000u);
    for (const char* kind : {"missing", "truncated", "garbage"}) {
      std::string bundle = dir + "/bundle_" + kind;
      fs::create_directories(bundle);
      copy_file(shipped + "/manifest.json", bundle + "/manifest.json");
      std::ofstream out(bundle + "/xgboost.json", std::ios::binary);
      if (std::string(kind) == "truncated") out << model.substr(0, model.size() / 2);
      if (std::string(kind) == "garbage") out << "\x01\x02 not a model \xff\xfe";
    }
    fs::remove(dir + "/bundle_missing/xgboost.json");
  }

  cli_test::ScratchDir scratch_{"bad_input"};
};

TEST_F(BadInput, EveryReproducerIsOneLineAndExitCode2) {
  const std::string& dir = scratch_.path();
  std::vector<Case> cases = read_cases(dir);
  ASSERT_GE(cases.size(), 25u);
  std::map<std::string, std::string> fixtures = snapshot(kHere);
  std::string bad_graph_db = cli_test::read_text(dir + "/bad_graph.db");
  for (const Case& item : cases) {
    SCOPED_TRACE(item.name);
    Result result = cli_test::run(item.command, item.args, dir);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(result.out, "");
    ASSERT_FALSE(result.err.empty());
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;  // exactly one line
    EXPECT_NE(result.err.find("dnncast " + item.command + ": error: "), std::string::npos) << result.err;
    EXPECT_NE(result.err.find(item.expected), std::string::npos)
        << "wanted: " << item.expected << "\ngot: " << result.err;
    EXPECT_EQ(result.err.find("Stack trace"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("[bt]"), std::string::npos) << result.err;
  }
  EXPECT_EQ(snapshot(kHere), fixtures) << "a command changed a fixture";
  EXPECT_EQ(cli_test::read_text(dir + "/bad_graph.db"), bad_graph_db) << "a command changed the damaged dataset";
  EXPECT_FALSE(fs::exists(dir + "/merged.db") &&
               cli_test::read_text(dir + "/merged.db").find("{not json") != std::string::npos)
      << "merge copied the damaged graph";
}

// The CSV reproducers are the good row with one damage each, so that a case cannot pass by being
// harmless in some other way: the good row imports (exit 0), its copy differs in one field only.
TEST_F(BadInput, TheCsvReproducersAreAGoodRowWithOneDamage) {
  const std::string& dir = scratch_.path();
  Result good = cli_test::run("dataset", {"import", "--csv", kHere + "/one_run.csv", "--db", dir + "/good.db"}, dir);
  EXPECT_EQ(good.exit_code, 0) << good.err;
  auto fields = [](const std::string& text) {
    std::vector<std::string> result;
    std::stringstream stream(text);
    std::string field;
    while (std::getline(stream, field, ',')) result.push_back(field);
    return result;
  };
  std::vector<std::string> row = fields(cli_test::read_text(kHere + "/one_run.csv"));
  std::vector<std::string> nan_row = fields(cli_test::read_text(kHere + "/csv_nan_time.csv"));
  ASSERT_EQ(row.size(), nan_row.size());
  int differing = 0;
  for (size_t index = 0; index < row.size(); ++index) differing += row[index] != nan_row[index];
  EXPECT_EQ(differing, 1);
}

}  // namespace
}  // namespace dnncast
