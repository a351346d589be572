// The docs name only what exists (issue 16): scripts/check-docs.py over README.md and docs/*.md
// finds no path that is missing from the checkout or the build, and no `dnncast` command or option
// that the built CLI refuses; and on a stale fixture it finds every problem planted there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "python_run.h"

namespace {

std::string check_docs(const std::string& arguments) {
  return dnncast::python_test::run_python_command(std::string(DNNCAST_SOURCE_DIR) + "/scripts/check-docs.py --build " +
                                                  DNNCAST_BINARY_DIR + " " + arguments);
}

TEST(Docs, NameOnlyWhatExists) {
  const std::string output = check_docs("");
  EXPECT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  std::smatch counts;
  ASSERT_TRUE(
      std::regex_search(output, counts, std::regex(R"((\d+) paths and (\d+) dnncast commands checked, 0 problems)")))
      << output;
  EXPECT_GT(std::stoi(counts[1]), 100) << output;  // README and docs/ name hundreds: the scan did not come up empty
  EXPECT_GT(std::stoi(counts[2]), 50) << output;
}

TEST(Docs, CheckerFindsEveryPlantedProblem) {
  const std::string output = check_docs(std::string(DNNCAST_SOURCE_DIR) + "/tests/docs/fixtures/stale.md");
  EXPECT_EQ(output.rfind("FAILED", 0), 0u) << output;  // exit 1
  for (const char* expected :
       {"stale.md:3: scripts/no-such-script.sh: no such file", "stale.md:3: data/no-such-file.db: no such file",
        "stale.md:9: `dnncast frobnicate`: not a command",
        "stale.md:10: `dnncast predict --no-such-option`: not an option",
        "stale.md:12: `dnncast dataset nosuchsub`: not a subcommand",
        "stale.md:15: build/configure.txt: no such file in the build folder, nor a CMake target"})
    EXPECT_NE(output.find(expected), std::string::npos) << expected << "\n" << output;
  // The benchmark lives in build/bench/: where it is built, the checker says so; the line of each
  // problem above and nothing else (the fixture's compressed data, its own output file and the
  // Makefile's build/configure.log pass, in any build folder).
  const bool bench_built = access(DNNCAST_BINARY_DIR "/bench/predict_bench", X_OK) == 0;
  if (bench_built) {
    EXPECT_NE(
        output.find("stale.md:3: build/predict_bench: the target predict_bench is built as build/bench/predict_bench"),
        std::string::npos)
        << output;
  }
  EXPECT_NE(output.find(bench_built ? ", 7 problems" : ", 6 problems"), std::string::npos) << output;
}

}  // namespace

// Every program a script or test calls is installed by scripts/setup.sh or is in a minimal Debian 12 (issue 37:
// `jq` was not, and `make test` failed on a fresh minimal root); the checker finds a planted one.
static std::string check_tools(const std::string& arguments) {
  return dnncast::python_test::run_python_command(std::string(DNNCAST_SOURCE_DIR) + "/scripts/check-tools.py " +
                                                  arguments);
}

TEST(Setup, InstallsEveryProgramAScriptCalls) {
  const std::string output = check_tools("");
  EXPECT_NE(output.find(" programs checked, 0 problems"), std::string::npos) << output;
  std::smatch counts;
  ASSERT_TRUE(std::regex_search(output, counts, std::regex(R"((\d+) programs checked)"))) << output;
  EXPECT_GT(std::stoi(counts[1]), 20) << output;  // grep, sed, awk, xz, sqlite3, jq, ...: the scan found them
}

TEST(Setup, CheckerNamesAProgramNothingInstalls) {
  const std::string output = check_tools(std::string(DNNCAST_SOURCE_DIR) + "/tests/docs/fixtures/needs_tools.sh");
  EXPECT_EQ(output.rfind("FAILED", 0), 0u) << output;  // exit 1
  EXPECT_NE(output.find("needs_tools.sh:6: frobnicate-tool: not on this machine's PATH"), std::string::npos) << output;
  EXPECT_EQ(output.find(": jq:"), std::string::npos) << output;
  EXPECT_NE(output.find(", 1 problems"), std::string::npos) << output;
}

// The shape of src/ (issue 33): scripts/check-source.py finds the layering of src/CMakeLists.txt kept, and on a
// planted tree it names each kind of problem.
static std::string check_source(const std::string& arguments) {
  return dnncast::python_test::run_python_command(std::string(DNNCAST_SOURCE_DIR) + "/scripts/check-source.py " +
                                                  arguments);
}

TEST(Source, KeepsTheLayeringOfItsCMakeLists) {
  const std::string output = check_source("");
  EXPECT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  std::smatch counts;
  ASSERT_TRUE(
      std::regex_search(output, counts, std::regex(R"((\d+) modules, (\d+) files of src/ checked, 0 problems)")))
      << output;
  EXPECT_GE(std::stoi(counts[1]), 18) << output;
  EXPECT_GT(std::stoi(counts[2]), 200) << output;
}

TEST(Source, CheckerNamesEveryPlantedProblem) {
  char root[] = "/tmp/dnncast-source-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  const std::string dir = root;
  auto write = [&](const std::string& path, const std::string& text) {
    const std::string full = dir + "/" + path;
    std::filesystem::create_directories(std::filesystem::path(full).parent_path());
    std::ofstream(full) << text;
  };
  write("src/CMakeLists.txt",
        "dnncast_module(core)\n"
        "dnncast_module(lower DEPS dnncast::core dnncast::upper)  # reaches up\n"
        "dnncast_module(upper DEPS dnncast::core SQLite::SQLite3)\n"
        "add_library(dnncast_forecast_library INTERFACE)\n"
        "target_link_libraries(dnncast_forecast_library INTERFACE dnncast::upper)\n");
  write("src/core/util.h", "#pragma once\n");
  write("src/lower/util.h", "#pragma once\n// see DESIGN.md and docs/no-such.md\n");
  write("src/upper/thing.cpp", "#include \"cli/main.h\"\n");
  // A room in another's namespace (issue 50); a block that only forward-declares another module's type is not one.
  write("src/upper/rooms.h",
        "#pragma once\nnamespace dnncast::lower {\nclass Thing;\n}  // namespace dnncast::lower\n"
        "namespace dnncast::apps {\nint f();  // see STYLE.md\n}  // namespace dnncast::apps\n");
  std::string long_function = "int f() {\n";
  for (int line = 0; line < 160; ++line) long_function += "  g();\n";
  write("src/cli/cmd_long.cpp", long_function + "}\n");
  const std::string output = check_source("--root " + dir);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(output.rfind("FAILED", 0), 0u) << output;  // exit 1
  for (const char* expected :
       {"src/CMakeLists.txt: lower depends on upper, defined after it", "the forecast library reaches SQLite",
        "src/upper/thing.cpp:1: includes cli/, which module upper does not depend on",
        "src/cli/cmd_long.cpp: 162 lines", "src/cli/cmd_long.cpp:1: function of 162 lines",
        "src/lower/util.h:2: names DESIGN.md", "src/lower/util.h:2: names docs/no-such.md, which does not exist",
        "src/: 2 files named util.h",
        "src/upper/rooms.h:5: namespace dnncast::apps in src/upper/ (its namespace is dnncast::upper)",
        "src/upper/rooms.h:6: names STYLE.md"})
    EXPECT_NE(output.find(expected), std::string::npos) << expected << "\n" << output;
  EXPECT_NE(output.find(", 10 problems"), std::string::npos) << output;
}
