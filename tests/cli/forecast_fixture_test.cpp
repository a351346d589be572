// Behaviour unchanged across the redesign (issue 17): `dnncast predict --json` and `dnncast memory --json` on
// the 50 configurations of tests/cli/forecast_fixture/configs.tsv (zoo, synthetic and graph JSON models; 1 and
// 2 threads; sgd and adam; AVX-512 and AVX2) print exactly what the code before it printed (before.json,
// written by commit a2d2084 through scripts/forecast-fixture.py --write). And the checker itself sees a
// changed number.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "python_run.h"

namespace {

const std::string kFixture = std::string(DNNCAST_SOURCE_DIR) + "/tests/cli/forecast_fixture/before.json";

std::string forecast_fixture(const std::string& arguments) {
  return dnncast::python_test::run_python_command(
      std::string(DNNCAST_SOURCE_DIR) + "/scripts/forecast-fixture.py --dnncast " DNNCAST_BINARY_DIR "/dnncast " +
      arguments);
}

TEST(ForecastFixture, PredictAndMemoryPrintWhatTheCodeBeforeTheRedesignPrinted) {
  const std::string output = forecast_fixture("--check " + kFixture);
  EXPECT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  EXPECT_NE(output.find("50 configurations x (predict, memory): identical"), std::string::npos) << output;
}

TEST(ForecastFixture, CheckerNamesAChangedNumber) {
  std::ifstream in(kFixture);
  std::stringstream text;
  text << in.rdbuf();
  // z11's forecast time (vgg11 at 64 px: the whole-network learner's, compared since the fixture was
  // written), one digit changed: the checker must name exactly that field.
  std::string changed = text.str();
  const size_t z11 = changed.find("\n \"z11\": {");
  ASSERT_NE(z11, std::string::npos);
  const size_t field = changed.find("\"time_ms\": ", z11);
  ASSERT_NE(field, std::string::npos);
  const size_t digit = field + std::string("\"time_ms\": ").size();
  changed[digit] = changed[digit] == '9' ? '1' : static_cast<char>(changed[digit] + 1);
  const std::string path = dnncast::python_test::write_temp(changed);
  ASSERT_FALSE(path.empty());
  const std::string last_id = "z11";
  const std::string output = forecast_fixture("--only " + last_id + " --check " + path);
  std::remove(path.c_str());
  EXPECT_EQ(output.rfind("FAILED", 0), 0u) << output;  // exit 1
  EXPECT_NE(output.find("." + last_id + ".predict.json.time_ms: "), std::string::npos) << output;
  EXPECT_NE(output.find("1 differences from"), std::string::npos) << output;
}

}  // namespace
