// `dnncast profile` as a user runs it: build/dnncast hands it to build/dnncast-measure (the program that links
// libtorch, issue 33), and its --json names the configuration as every other command does ("adam", "cpu").
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace dnncast {
namespace {

#ifdef DNNCAST_CLI_PROFILES
TEST(ProfileCli, RunsThroughTheMeasuringProgramAndNamesItsConfiguration) {
  cli_test::ScratchDir dir("profile_cli");
  const cli_test::Result result = cli_test::run(
      "profile", {"resnet18", "--batch", "2", "--input", "3x32x32", "--optimizer", "adam", "--json"}, dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json doc = nlohmann::json::parse(result.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << result.out;
  EXPECT_EQ(doc["config"]["optimizer"], "adam") << doc["config"].dump();
  EXPECT_EQ(doc["config"]["precision"], "fp32");
  EXPECT_EQ(doc["config"]["device"], "cpu");
  EXPECT_EQ(doc["status"], "ok") << result.out;
  EXPECT_FALSE(doc["env"]["torch_version"].get<std::string>().empty()) << doc["env"].dump();
}
#endif

TEST(ProfileCli, AMeasuringCommandWithoutItsProgramSaysSo) {
  // A copy of build/dnncast alone, without dnncast-measure beside it: one line, exit 2, naming what is missing.
  cli_test::ScratchDir dir("profile_cli_alone");
  const std::string copy = dir.path() + "/dnncast";
  ASSERT_EQ(std::system(("cp " + cli_test::binary() + " " + copy).c_str()), 0);
  const std::string command = copy + " campaign --help 2>&1; echo \"exit=$?\"";
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t count;
    while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, count);
    pclose(pipe);
  }
#ifdef DNNCAST_CLI_PROFILES
  EXPECT_NE(output.find("dnncast campaign: error: this command measures with libtorch, which runs in " + dir.path() +
                        "/dnncast-measure"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("exit=2"), std::string::npos) << output;
#else
  EXPECT_NE(output.find("exit=0"), std::string::npos) << output;  // the whole CLI is this one program
#endif
}

}  // namespace
}  // namespace dnncast
