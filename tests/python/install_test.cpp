// `pip install .` (issue 33): the repository installs as a Python package, offline, into a virtual environment
// (the forecast library built from scratch with -DDNNCAST_WITH_TORCH=OFF: about 2.5 minutes on two cores). Run
// from another folder, the installed package finds its shipped predictors and catalogue inside itself, forecasts
// what the CLI forecasts (time on a CPU set; time and memory on a catalogued GPU, memory agreeing with predict),
// and its module links neither libtorch nor SQLite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

std::string output_of(const std::string& command, int* status) {
  std::string output;
  *status = -1;
  if (FILE* pipe = popen((command + " 2>&1").c_str(), "r")) {
    char buffer[4096];
    size_t count;
    while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, count);
    *status = pclose(pipe);
  }
  return output;
}

TEST(Install, PipInstallsThePackageWithItsPredictors) {
  char root[] = "/tmp/dnncast-install-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  const std::string dir = root, venv = dir + "/venv";
  int status = 0;
  std::string output = output_of(std::string(DNNCAST_PYTHON) + " -m venv --system-site-packages " + venv, &status);
  ASSERT_EQ(status, 0) << output;
  // pip builds in the source tree's build/ (ignored by git); no network, no build isolation.
  output = output_of("cd " + std::string(DNNCAST_SOURCE_DIR) + " && " + venv +
                         "/bin/pip install --no-build-isolation --no-index --quiet .",
                     &status);
  ASSERT_EQ(status, 0) << output;
  const std::string script = dir + "/use.py";
  FILE* file = std::fopen(script.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs(
      "import glob, json, os, subprocess, sys, warnings\n"
      "import dnncast\n"
      "warnings.simplefilter('ignore')\n"
      "package = os.path.dirname(dnncast.__file__)\n"
      "assert package.startswith(sys.argv[1]), package\n"
      "assert os.environ['DNNCAST_PREDICTORS'] == os.path.join(package, 'data', 'predictors'), "
      "os.environ['DNNCAST_PREDICTORS']\n"
      "cpu = dnncast.predict('resnet18', 8, input_shape=(3, 64, 64)).to_dict()\n"
      "gpu = dnncast.predict('resnet50', 32, device='a100-40gb').to_dict()\n"
      "mem = dnncast.memory('resnet50', 32, device='a100-40gb').to_dict()\n"
      "assert mem['required_bytes'] == gpu['required_bytes'], (mem['required_bytes'], gpu['required_bytes'])\n"
      "cli = json.loads(subprocess.run([sys.argv[2], 'predict', 'resnet18', '--batch', '8', '--input', '3x64x64', "
      "'--json'],\n"
      "                                capture_output=True, text=True, check=True).stdout)\n"
      "assert cpu['time_ms'] == cli['time_ms'], (cpu['time_ms'], cli['time_ms'])\n"
      "module = glob.glob(os.path.join(package, '_dnncast*.so'))[0]\n"
      "ldd = subprocess.run(['ldd', module], capture_output=True, text=True).stdout\n"
      "assert 'libtorch' not in ldd and 'libsqlite3' not in ldd, ldd\n"
      "print('installed', cpu['time_ms'], gpu['time_ms'])\n",
      file);
  std::fclose(file);
  output = output_of(
      "cd " + dir + " && " + venv + "/bin/python " + script + " " + venv + " " + DNNCAST_BINARY_DIR + "/dnncast",
      &status);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("installed "), std::string::npos) << output;
}

}  // namespace
