// core/stats: the one quantile, against hand-computed cases and numpy.quantile.
#include "core/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "python_run.h"

namespace dnncast {
namespace {

TEST(Quantile, HandComputedCases) {
  std::vector<double> values{5, 1, 4, 2, 3};  // unsorted on purpose
  EXPECT_DOUBLE_EQ(quantile(values, 0.5), 3);
  EXPECT_DOUBLE_EQ(quantile(values, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile(values, 1.0), 5);
  EXPECT_DOUBLE_EQ(quantile(values, 0.1), 1.4);   // position 0.4 between 1 and 2
  EXPECT_DOUBLE_EQ(quantile(values, 0.9), 4.6);   // position 3.6 between 4 and 5
  EXPECT_DOUBLE_EQ(quantile({10, 20}, 0.5), 15);  // even count: the mean of the middle two
  EXPECT_DOUBLE_EQ(quantile({10, 20, 30, 40}, 0.25), 17.5);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.9), 7);
  EXPECT_EQ(quantile({}, 0.5), 0);
}

TEST(Quantile, LowPlusStepFormAgreesToTheLastBits) {
  EXPECT_DOUBLE_EQ(quantile_low_plus_step({5, 1, 4, 2, 3}, 0.1), 1.4);
  EXPECT_EQ(quantile_low_plus_step({}, 0.5), 0);
  SplitMix64 rng(3);
  std::vector<double> values;
  for (int index = 0; index < 41; ++index) values.push_back(rng.unit());
  for (double q : {0.0, 0.3, 0.5, 0.9, 1.0})
    EXPECT_NEAR(quantile_low_plus_step(values, q), quantile(values, q), 1e-15) << q;
}

TEST(Quantile, MatchesNumpyLinear) {
  if (python_test::run_python_command("-c 'import numpy'").rfind("FAILED", 0) == 0) GTEST_SKIP() << "no numpy";
  SplitMix64 rng(17);
  std::vector<std::vector<double>> samples;
  for (int count : {1, 2, 3, 10, 37}) {
    std::vector<double> values;
    for (int index = 0; index < count; ++index) values.push_back(rng.log_uniform(0.01, 1000));
    samples.push_back(values);
  }
  const std::vector<double> qs{0, 0.05, 0.1, 0.5, 0.9, 0.95, 1};
  std::ostringstream script;
  script.precision(17);
  script << "import numpy\nsamples = [";
  for (const auto& values : samples) {
    script << "[";
    for (double value : values) script << value << ",";
    script << "],";
  }
  script << "]\nfor s in samples:\n  for q in [0, 0.05, 0.1, 0.5, 0.9, 0.95, 1]:\n"
            "    print(repr(float(numpy.quantile(numpy.array(s), q))))\n";
  std::istringstream output(python_test::run_python(script.str()));
  for (const auto& values : samples) {
    for (double q : qs) {
      std::string line;
      ASSERT_TRUE(std::getline(output, line)) << "numpy printed too little";
      double expected = std::stod(line);
      EXPECT_NEAR(quantile(values, q), expected, 1e-12 * std::fabs(expected)) << values.size() << " values, q " << q;
    }
  }
}

}  // namespace
}  // namespace dnncast
