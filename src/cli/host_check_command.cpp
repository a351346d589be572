// Runs `dnncast host-check` for `predict` (host_check_command.h).
#include "cli/host_check_command.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

extern char** environ;

namespace dnncast::cli {

void run_host_check_command() {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string path = length > 0 ? std::string(self, static_cast<size_t>(length)) : std::string("dnncast");
#ifdef DNNCAST_FORWARD_MEASURING
  path = path.substr(0, path.rfind('/') + 1) + "dnncast-measure";  // the program with libtorch
#endif
  // The child's stdout goes to stderr: predict's stdout holds its answer (--json) alone.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  char arg0[] = "dnncast", arg1[] = "host-check", arg2[] = "--for-predict";
  char* argv[] = {arg0, arg1, arg2, nullptr};
  pid_t child = 0;
  const int error = posix_spawn(&child, path.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    std::fprintf(stderr, "host check not made: cannot start %s (%s)\n", path.c_str(), std::strerror(error));
    return;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::fprintf(stderr,
                 "host check not made (`dnncast host-check` %s): the forecast is not checked against this host\n",
                 WIFEXITED(status) ? ("exited " + std::to_string(WEXITSTATUS(status))).c_str() : "was killed");
}

}  // namespace dnncast::cli
