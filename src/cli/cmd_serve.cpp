// `dnncast serve [--listen 127.0.0.1:8765] [--predictors DIR] [--threads N]`: the forecast API over HTTP
// (issue 22, docs/SERVE.md, docs/openapi.yaml) for schedulers, notebooks and dashboards that ask thousands
// of times. Parses the flags; serve/serve_api.h answers, cli/serve_http.h serves.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "cli/serve_http.h"
#include "core/error.h"

namespace dnncast::cli {

namespace {

bool is_loopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

// "HOST:PORT" (an IPv6 host in brackets: "[::1]:8765"); PORT 0: any free port.
void parse_listen(const std::string& text, ServeOptions& options) {
  const std::string usage =
      "--listen " + quote(text) + ": expected HOST:PORT (e.g. 127.0.0.1:8765; port 0: any free one)";
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) throw InputError(usage);
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) throw InputError(usage);
    host = host.substr(1, host.size() - 2);
  }
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
    throw InputError(usage);
  options.host = host;
  options.port = std::stoi(port);
}

}  // namespace

int run_serve(const Args& args) {
  CLI::App app(
      "Serve the forecast API over HTTP: POST /v1/predict, /v1/memory, /v1/compare, /v1/inspect (JSON bodies with\n"
      "the CLI's options; a zoo model by name, graph JSON inline, or ONNX bytes), GET /v1/devices, /healthz,\n"
      "/metrics (Prometheus). Answers are the CLI's --json. Loopback only unless --allow-remote. docs/SERVE.md.",
      "dnncast serve");
  std::string listen = "127.0.0.1:8765";
  ServeOptions options;
  bool allow_remote = false;
  app.add_option("--listen", listen, "HOST:PORT to listen on (default 127.0.0.1:8765; port 0: any free one)");
  app.add_flag("--allow-remote", allow_remote, "allow a --listen address other than loopback (no authentication!)");
  app.add_option("--predictors", options.predictor_dir, "predictor set or bundle folder (default: data/predictors/)");
  app.add_option("--threads", options.threads, "workers computing answers not cached (default 2)")
      ->check(CLI::Range(1, 256));
  app.add_option("--queue", options.queue, "requests waiting for a worker before 429 (default 64)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--connections", options.connections, "connections served at once (default 128)")
      ->check(CLI::Range(1, 10000));
  app.add_option("--timeout", options.timeout_s, "seconds from a request to its answer before 504 (default 30)")
      ->check(CLI::Range(0.001, 86400.0));
  if (!parse_args(app, args, "serve")) return 0;
  parse_listen(listen, options);
  if (!is_loopback(options.host)) {
    if (!allow_remote)
      throw InputError("--listen " + quote(listen) +
                       " is not a loopback address: the server has no authentication; add --allow-remote to bind it");
    std::fprintf(stderr,
                 "dnncast serve: warning: listening on %s, reachable from other hosts; the server has no "
                 "authentication\n",
                 options.host.c_str());
  }
  if (const char* delay = std::getenv("DNNCAST_SERVE_DELAY_MS")) options.delay_ms = std::atoll(delay);
  return serve(options);
}

}  // namespace dnncast::cli
