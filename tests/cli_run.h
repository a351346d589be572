// Running the built `dnncast` as a user does, for the tests of its commands: the binary, its
// stdout, stderr and exit code, and a check that nothing on stderr looks like a crash.
// Needs DNNCAST_BINARY_DIR (set by tests/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dnncast::cli_test {

inline const std::string& binary() {
  static const std::string path = std::string(DNNCAST_BINARY_DIR) + "/dnncast";
  return path;
}

// The predictor set shipped for the AMD EPYC with AVX-512 (family 26 model 2): the host the oldest shipped
// measurements come from, and the set the tests that hold forecasts to those measurements name with --predictor.
inline std::string epyc_predictor() { return std::string(DNNCAST_SOURCE_DIR) + "/data/predictors/amd-epyc-2cpu"; }

struct Result {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

inline std::string shell_quoted(const std::string& arg) {
  std::string text = "'";
  for (char c : arg) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return text + "'";
}

// A fresh folder under /tmp named after `tag`, removed with everything in it at destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    std::string pattern = "/tmp/dnncast_" + tag + "_XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) != nullptr) path_ = buffer.data();
  }
  ~ScratchDir() {
    if (!path_.empty()) std::system(("rm -rf " + shell_quoted(path_)).c_str());
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sets an environment variable for one scope (a command run meanwhile inherits it), and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// `dnncast COMMAND ARGS...` with stdout and stderr captured in files under `dir`. Whatever the
// input, stderr must not show a crash (an uncaught exception, an abort, a segfault).
inline Result run(const std::string& command_name, const std::vector<std::string>& args, const std::string& dir) {
  std::string command = shell_quoted(binary()) + " " + command_name;
  for (const std::string& arg : args) command += " " + shell_quoted(arg);
  command += " >" + shell_quoted(dir + "/out") + " 2>" + shell_quoted(dir + "/err");
  int status = std::system(command.c_str());
  Result result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_text(dir + "/out");
  result.err = read_text(dir + "/err");
  for (const char* crash : {"terminate", "Aborted", "what()", "internal error", "Segmentation"})
    EXPECT_EQ(result.err.find(crash), std::string::npos) << command << "\n" << result.err;
  return result;
}

}  // namespace dnncast::cli_test
