// The built `dnncast serve` as a user starts it, on an ephemeral loopback port, for the tests of tests/serve:
// started by the constructor, stopped with SIGTERM (its exit code returned) by stop() or the destructor.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_run.h"

namespace dnncast::serve_test {

class Server {
 public:
  // `dnncast serve --listen 127.0.0.1:0 ARGS...`, with `delay_ms` as DNNCAST_SERVE_DELAY_MS when > 0.
  explicit Server(const std::vector<std::string>& args = {}, int delay_ms = 0) : scratch_("serve") {
    int fds[2];
    if (pipe(fds) != 0) return;
    err_path_ = scratch_.path() + "/err";
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      FILE* err = std::fopen(err_path_.c_str(), "w");
      if (err != nullptr) dup2(fileno(err), 2);
      if (delay_ms > 0) setenv("DNNCAST_SERVE_DELAY_MS", std::to_string(delay_ms).c_str(), 1);
      std::vector<std::string> all = {cli_test::binary(), "serve", "--listen", "127.0.0.1:0"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& arg : all) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
    char line[512] = {0};
    if (out_ == nullptr || std::fgets(line, sizeof line, out_) == nullptr) return;
    const std::string text = line;
    const std::string marker = "http://127.0.0.1:";
    const size_t at = text.find(marker);
    if (at != std::string::npos) port_ = std::atoi(text.c_str() + at + marker.size());
  }
  ~Server() { stop(); }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  httplib::Client client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(60, 0);
    return client;
  }
  // SIGTERM, then the exit code (128 + signal when killed by one); -1 when not running.
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    return wait();
  }
  // Waits for the process to end by itself; its exit code as stop().
  int wait() {
    if (pid_ <= 0) return -1;
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    if (out_ != nullptr) std::fclose(out_);
    out_ = nullptr;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_t pid() const { return pid_; }
  std::string stderr_text() const { return cli_test::read_text(err_path_); }

 private:
  cli_test::ScratchDir scratch_;
  std::string err_path_;
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  int port_ = -1;
};

}  // namespace dnncast::serve_test
