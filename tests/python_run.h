// Running Debian's /usr/bin/python3 (DNNCAST_PYTHON, with python3-torch and torchvision) from a
// test, for cross-checks against PyTorch itself. Needs DNNCAST_PYTHON (set by tests/CMakeLists.txt).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace dnncast::python_test {

// Writes `text` to a new temporary file and returns its path ("" when none could be made).
inline std::string write_temp(const std::string& text) {
  char path[] = "/tmp/dnncast-test-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "";
  close(fd);
  std::ofstream(path) << text;
  return path;
}

// Runs `arguments` with the test Python (stderr into stdout); returns the output, prefixed with
// "FAILED\n" when the command exits non-zero.
inline std::string run_python_command(const std::string& arguments) {
  std::string command = std::string(DNNCAST_PYTHON) + " " + arguments + " 2>&1";
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t count;
    while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, count);
    if (pclose(pipe) != 0) output = "FAILED\n" + output;
  } else {
    output = "FAILED\ncannot start " + command;
  }
  return output;
}

// Runs a Python script given as text; the output as run_python_command's.
inline std::string run_python(const std::string& script) {
  std::string path = write_temp(script);
  if (path.empty()) return "FAILED\ncannot create a temporary file";
  std::string output = run_python_command(path);
  std::remove(path.c_str());
  return output;
}

}  // namespace dnncast::python_test
