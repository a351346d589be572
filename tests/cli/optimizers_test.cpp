// Adding an optimizer touches core/training_setup.cpp's table, the executor and the allocator model only
// (src/README.md's checklist, issue 33): every command's --optimizer help is the table's text, and the
// forecast answers for every optimizer of the table through the CLI.
#include <gtest/gtest.h>

#include <string>

#include "cli_run.h"
#include "core/training_setup.h"

namespace dnncast {
namespace {

TEST(Optimizers, EveryCommandsHelpIsTheTables) {
  const std::string help = optimizer_help();
  for (const char* name : {"sgd", "adam", "adamw"}) EXPECT_NE(help.find(name), std::string::npos) << help;
  cli_test::ScratchDir dir("optimizers_help");
  for (const char* command : {"predict", "memory", "compare", "profile"}) {
    const cli_test::Result result = cli_test::run(command, {"--help"}, dir.path());
    ASSERT_EQ(result.exit_code, 0) << command << ": " << result.err;
    // CLI11 prints the description on one line, after the option's name and type.
    EXPECT_NE(result.out.find(help), std::string::npos) << command << " --help does not show '" << help << "':\n"
                                                        << result.out;
  }
}

TEST(Optimizers, EveryOptimizerOfTheTableIsSimulated) {
  cli_test::ScratchDir dir("optimizers_memory");
  for (Optimizer optimizer : all_optimizers()) {
    const cli_test::Result result = cli_test::run(
        "memory", {"resnet18", "--batch", "2", "--input", "3x32x32", "--optimizer", name(optimizer), "--json"},
        dir.path());
    EXPECT_EQ(result.exit_code, 0) << name(optimizer) << ": " << result.err;
    EXPECT_NE(result.out.find("\"optimizer\": \"" + name(optimizer) + "\""), std::string::npos) << result.out;
  }
}

}  // namespace
}  // namespace dnncast
