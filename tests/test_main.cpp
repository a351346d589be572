// The main of every test binary (tests/CMakeLists.txt). Outside CI it is gtest_main. Under CI=true a
// GTEST_SKIP is a failure unless the test is on tests/skip_allowlist.txt: a green CI run has run
// every test it lists, not skipped the ones whose precondition went missing (a data folder, a build
// dependency, libtorch). Every test runs offline from the Hugging Face Hub (HF_HUB_OFFLINE, below) and without the
// host check (DNNCAST_HOST_CHECK).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>

namespace {

bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// "Suite.Name  # reason" per line; '#' lines are comments. An entry without its reason is an error:
// the allow-list says why each skip is acceptable, or it does not grant it.
bool read_allowlist(const std::string& path, std::map<std::string, std::string>& reasons) {
  std::ifstream file(path);
  if (!file) {
    std::fprintf(stderr, "test_main: cannot read the skip allow-list %s\n", path.c_str());
    return false;
  }
  std::string line;
  int line_number = 0;
  while (std::getline(file, line)) {
    ++line_number;
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    const std::string name = line.substr(start, line.find_first_of(" \t#", start) - start);
    const size_t hash = line.find('#', start);
    const size_t reason_start = hash == std::string::npos ? std::string::npos : line.find_first_not_of(" \t#", hash);
    if (reason_start == std::string::npos) {
      std::fprintf(stderr, "test_main: %s:%d: '%s' has no '# reason'\n", path.c_str(), line_number, name.c_str());
      return false;
    }
    reasons[name] = line.substr(reason_start);
  }
  return true;
}

// Turns a refused skip into a failure of that test while it is still the current test, so that
// gtest reports it FAILED, the binary exits 1, and ctest (which takes any "[  SKIPPED ]" line for
// a skip, whatever the exit code) sees a failure. Appended after gtest's printer: end events reach
// listeners in reverse order, so the printer already sees the failure.
class RefuseUnlistedSkips : public testing::EmptyTestEventListener {
 public:
  explicit RefuseUnlistedSkips(std::map<std::string, std::string> allowed) : allowed_(std::move(allowed)) {}

  void OnTestEnd(const testing::TestInfo& test) override {
    const testing::TestResult& result = *test.result();
    if (!result.Skipped()) return;
    const std::string name = std::string(test.test_suite_name()) + "." + test.name();
    if (allowed_.count(name)) return;
    std::string message;
    for (int part_idx = 0; part_idx < result.total_part_count(); ++part_idx)
      if (result.GetTestPartResult(part_idx).skipped()) message += result.GetTestPartResult(part_idx).message();
    ADD_FAILURE() << "CI=true: " << name << " skipped and not on tests/skip_allowlist.txt: " << message;
  }

 private:
  std::map<std::string, std::string> allowed_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  // No test reaches the Hugging Face Hub: a Hub id not in a cache is refused offline (the commands the tests run
  // inherit it); the download tests serve their own Hub on 127.0.0.1 and turn this off themselves.
  setenv("HF_HUB_OFFLINE", "1", 1);
  // Nor does a test's forecast depend on how fast this machine is: the host check (forecast/host_check.h) is off
  // unless a test turns it on with its own cache folder.
  setenv("DNNCAST_HOST_CHECK", "off", 1);
  if (under_ci()) {
    std::map<std::string, std::string> allowed;
    if (!read_allowlist(DNNCAST_SKIP_ALLOWLIST, allowed)) return 1;
    testing::UnitTest::GetInstance()->listeners().Append(new RefuseUnlistedSkips(std::move(allowed)));
  }
  return RUN_ALL_TESTS();
}
