// Every front end answers alike (issue 33): one table of requests through the CLI, `dnncast serve` and the
// Python package (tests/python/front_ends.py), and the forecast library loads neither libtorch nor SQLite:
// the Python module and build/dnncast link neither (ldd), and a Python process that forecasts never maps them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/training_setup.h"
#include "python_run.h"

namespace dnncast {
namespace {

std::string command_output(const std::string& command) {
  std::string output;
  if (FILE* pipe = popen((command + " 2>&1").c_str(), "r")) {
    char buffer[4096];
    size_t count;
    while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, count);
    if (pclose(pipe) != 0) output = "FAILED\n" + output;
  }
  return output;
}

std::string python_module() {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DNNCAST_BINARY_DIR) + "/python/dnncast"))
    if (entry.path().filename().string().rfind("_dnncast", 0) == 0 && entry.path().extension() == ".so")
      return entry.path().string();
  return "";
}

TEST(FrontEnds, OneTableOfRequestsGetsTheSameAnswerFromCliServeAndPython) {
  const std::string output = python_test::run_python_command(std::string(DNNCAST_SOURCE_DIR) +
                                                             "/tests/python/front_ends.py " + DNNCAST_BINARY_DIR);
  EXPECT_EQ(output.find("FAILED"), std::string::npos) << output;
  EXPECT_EQ(output.find("DIFF"), std::string::npos) << output;
  // Both kinds of case ran: answers (CPU and GPU) and refusals.
  EXPECT_NE(output.find("ok   predict catalogued GPU: answered"), std::string::npos) << output;
  EXPECT_NE(output.find("ok   memory memory on a catalogued GPU: answered"), std::string::npos) << output;
  EXPECT_NE(output.find("ok   predict unknown device: refused"), std::string::npos) << output;
}

TEST(FrontEnds, ThePythonModuleAndTheCliLinkNeitherTorchNorSqlite) {
  const std::string module = python_module();
  ASSERT_FALSE(module.empty()) << "no _dnncast*.so under " << DNNCAST_BINARY_DIR << "/python/dnncast";
  for (const std::string& binary : {module, std::string(DNNCAST_BINARY_DIR) + "/dnncast"}) {
    const std::string libraries = command_output("ldd " + binary);
    ASSERT_EQ(libraries.find("FAILED"), std::string::npos) << libraries;
    ASSERT_NE(libraries.find("libc.so"), std::string::npos) << libraries;  // ldd listed something
    EXPECT_EQ(libraries.find("libtorch"), std::string::npos) << binary << " links libtorch:\n" << libraries;
    EXPECT_EQ(libraries.find("libc10"), std::string::npos) << binary << " links libtorch:\n" << libraries;
    if (binary == module) {
      EXPECT_EQ(libraries.find("libsqlite3"), std::string::npos) << libraries;
    }
  }
#ifdef DNNCAST_CLI_PROFILES
  // The measuring commands run in build/dnncast-measure, which does link libtorch.
  EXPECT_NE(command_output("ldd " + std::string(DNNCAST_BINARY_DIR) + "/dnncast-measure").find("libtorch"),
            std::string::npos);
#endif
}

TEST(FrontEnds, APythonForecastNeverMapsTorchOrSqlite) {
  setenv("PYTHONPATH", (std::string(DNNCAST_BINARY_DIR) + "/python").c_str(), 1);
  const std::string script = python_test::write_temp(
      "import warnings\n"
      "import dnncast\n"
      "warnings.simplefilter('ignore')\n"
      "cpu = dnncast.predict('resnet18', 8, input_shape=(3, 64, 64))\n"
      "gpu = dnncast.predict('resnet50', 32, device='a100-40gb')\n"
      "mem = dnncast.memory('resnet50', 32, device='a100-40gb')\n"
      "assert cpu.time_ms > 0 and gpu.time_ms > 0 and mem.required_bytes == gpu.required_bytes, (mem.required_bytes, "
      "gpu.required_bytes)\n"
      "maps = open('/proc/self/maps').read()\n"
      "loaded = sorted({line.split()[-1] for line in maps.splitlines() if 'libtorch' in line or 'libsqlite3' in line "
      "or 'libc10' in line})\n"
      "print('loaded:', loaded)\n"
      "assert not loaded, loaded\n");
  ASSERT_FALSE(script.empty());
  const std::string output = python_test::run_python_command(script);
  std::remove(script.c_str());
  EXPECT_EQ(output.find("FAILED"), std::string::npos) << output;
  EXPECT_NE(output.find("loaded: []"), std::string::npos) << output;
}

TEST(FrontEnds, PythonTakesItsOptimizersFromTheTable) {
  std::string expected = "[";
  for (Optimizer optimizer : all_optimizers())
    expected +=
        std::string(expected.size() > 1 ? ", " : "") + "('" + name(optimizer) + "', '" + torch_class(optimizer) + "')";
  expected += "]";
  setenv("PYTHONPATH", (std::string(DNNCAST_BINARY_DIR) + "/python").c_str(), 1);
  const std::string script = python_test::write_temp("import dnncast\nprint(dnncast.optimizers())\n");
  ASSERT_FALSE(script.empty());
  const std::string output = python_test::run_python_command(script);
  std::remove(script.c_str());
  EXPECT_EQ(output, expected + "\n");
}

// The bad-input campaign of issue 51 (scripts/bad-input-campaign.py): JSON nested 100,000 deep, absurd config sizes,
// empty, zero, negative and past-64-bit values, megabyte strings, through the CLI, serve and Python. Every bad
// request is refused in one line, no run crashes, hangs or reports an internal error, serve survives every request,
// and the valid requests on a tied model (calibrate among them) are answered.
TEST(FrontEnds, BadInputCampaignIsRefusedInOneLineEverywhere) {
  const std::string output = python_test::run_python_command(std::string(DNNCAST_SOURCE_DIR) +
                                                             "/scripts/bad-input-campaign.py " + DNNCAST_BINARY_DIR);
  EXPECT_EQ(output.find("FAILED"), std::string::npos) << output;
  EXPECT_NE(output.find("serve survived every request: yes"), std::string::npos) << output;
  EXPECT_NE(output.find("\n0 runs neither refused nor ok"), std::string::npos) << output;
}

}  // namespace
}  // namespace dnncast
