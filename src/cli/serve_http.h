// The socket side of `dnncast serve` (docs/SERVE.md): cpp-httplib serves serve/serve_api.h's routes with a
// bounded worker pool and queue (429 when full), body caps (413), a per-request timeout (504) and a
// graceful shutdown on SIGTERM or SIGINT that finishes the requests in flight.
#pragma once

#include <cstdint>
#include <string>

namespace dnncast::cli {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8765;            // 0: any free port (the line on stdout says which)
  std::string predictor_dir;  // --predictors
  int threads = 2;            // workers that compute answers not in the response cache
  int queue = 64;             // answers waiting for a worker beyond those computing; more: 429
  int connections = 128;      // connections served at once (each holds a thread while open)
  double timeout_s = 30;      // from the request read to the answer; longer: 504
  int64_t delay_ms = 0;       // tests only (DNNCAST_SERVE_DELAY_MS): each worker task sleeps this long first
};

// Serves until SIGTERM or SIGINT, then finishes the requests in flight and returns 0. Prints
// "dnncast serve: listening on http://HOST:PORT" on stdout once the socket is bound. Throws InputError
// when the address cannot be bound.
int serve(const ServeOptions& options);

}  // namespace dnncast::cli
