// The socket side of `dnncast serve` (serve_http.h).
#include "cli/serve_http.h"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "serve/serve_api.h"

namespace dnncast::cli {

namespace {

using serve::Api;
using serve::HttpRequest;
using serve::HttpResponse;
using Clock = std::chrono::steady_clock;

// `threads` workers and at most `queue` tasks waiting for one: the bound on the work the server takes on.
class WorkerPool {
 public:
  WorkerPool(int threads, int queue) : max_queued_(static_cast<size_t>(queue)) {
    for (int index = 0; index < threads; ++index) workers_.emplace_back([this] { work(); });
  }
  ~WorkerPool() { shutdown(); }

  // False when `queue` tasks already wait.
  bool try_submit(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || tasks_.size() >= max_queued_ + idle_) return false;
    tasks_.push_back(std::move(task));
    ready_.notify_one();
    return true;
  }

  // Runs every task submitted, then joins the workers.
  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  void counts(size_t& queued, size_t& busy) const {
    std::lock_guard<std::mutex> lock(mutex_);
    queued = tasks_.size();
    busy = workers_.size() - idle_;
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ++idle_;
      ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      --idle_;
      if (tasks_.empty()) return;  // stopping, and nothing left
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  size_t max_queued_;
  size_t idle_ = 0;  // workers waiting for a task (a task for them is not queued)
  bool stopping_ = false;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> workers_;
};

// One request handed to a worker; the connection's thread waits for it up to the timeout.
struct Job {
  HttpRequest request;
  std::mutex mutex;
  std::condition_variable done_signal;
  bool done = false, abandoned = false;
  HttpResponse response;
};

HttpRequest to_request(const httplib::Request& request) {
  HttpRequest out;
  out.method = request.method;
  out.path = request.path;
  out.content_type = request.get_header_value("Content-Type");
  out.body = request.body;
  httplib::Params query = request.params;
  if (out.content_type.rfind("application/x-www-form-urlencoded", 0) == 0) {
    // curl -d's type: the body is JSON all the same. httplib read the body as form fields: the query is
    // the target's alone.
    out.content_type = "application/json";
    query.clear();
    const size_t mark = request.target.find('?');
    if (mark != std::string::npos) httplib::detail::parse_query_text(request.target.substr(mark + 1), query);
  }
  for (const auto& [name, value] : query) out.query.emplace_back(name, value);
  return out;
}

std::string busy_message(const ServeOptions& options) {
  return "busy: " + std::to_string(options.threads) + " requests computing and " + std::to_string(options.queue) +
         " queued (--threads, --queue); retry later";
}

// The answer to one request: from the response cache on this thread; health and metrics on this thread;
// the rest through the worker pool, within the timeout.
HttpResponse answer(Api& api, WorkerPool& pool, const ServeOptions& options, HttpRequest request) {
  if (std::shared_ptr<const HttpResponse> hit = api.cached(request)) return *hit;
  const serve::Route* route = Api::route_of(request.path);
  if (route == nullptr || route->inline_ || request.method != route->method) return api.handle(request);
  auto job = std::make_shared<Job>();
  job->request = std::move(request);
  const int64_t delay_ms = options.delay_ms;
  const bool queued = pool.try_submit([job, &api, delay_ms] {
    {
      std::lock_guard<std::mutex> lock(job->mutex);
      if (job->abandoned) return;  // its client has had its 504
    }
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    HttpResponse response = api.handle(job->request);
    std::lock_guard<std::mutex> lock(job->mutex);
    job->response = std::move(response);
    job->done = true;
    job->done_signal.notify_all();
  });
  if (!queued) return serve::error_response(429, busy_message(options));
  std::unique_lock<std::mutex> lock(job->mutex);
  const auto limit = std::chrono::duration<double>(options.timeout_s);
  if (!job->done_signal.wait_for(lock, limit, [&] { return job->done; })) {
    job->abandoned = true;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", options.timeout_s);
    return serve::error_response(504, std::string("no answer within ") + seconds + " s (--timeout)");
  }
  return job->response;
}

}  // namespace

int serve(const ServeOptions& options) {
  // SIGTERM and SIGINT wait for the signal thread below: every thread started from here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  serve::ApiOptions api_options;
  api_options.predictor_dir = options.predictor_dir;
  Api api(api_options);
  WorkerPool pool(options.threads, options.queue);
  api.metrics().extra = [&pool, &options] {
    size_t queued = 0, busy = 0;
    pool.counts(queued, busy);
    return "# HELP dnncast_queue_depth Requests waiting for a worker.\n# TYPE dnncast_queue_depth gauge\n"
           "dnncast_queue_depth " +
           std::to_string(queued) +
           "\n# HELP dnncast_workers_busy Workers computing an answer.\n# TYPE dnncast_workers_busy gauge\n"
           "dnncast_workers_busy " +
           std::to_string(busy) +
           "\n# HELP dnncast_workers Size of the worker pool (--threads).\n# TYPE dnncast_workers gauge\n"
           "dnncast_workers " +
           std::to_string(options.threads) + "\n";
  };

  httplib::Server server;
  const int connections = options.connections;
  server.new_task_queue = [connections] { return new httplib::ThreadPool(static_cast<size_t>(connections)); };
  // One over the ONNX cap, so that Api::handle answers a body at the cap itself (and httplib above it).
  server.set_payload_max_length(static_cast<size_t>(serve::kMaxOnnxBodyBytes));
  // Headers and body go out as separate writes: without TCP_NODELAY, Nagle's algorithm holds the body until
  // the client's delayed ACK (40 ms on Linux) on every keep-alive answer.
  server.set_tcp_nodelay(true);
  server.set_keep_alive_max_count(100000);
  server.set_keep_alive_timeout(2);
  server.set_read_timeout(5, 0);
  server.set_write_timeout(5, 0);

  auto handler = [&](const httplib::Request& request, httplib::Response& response) {
    const Clock::time_point start = Clock::now();
    HttpRequest ours = to_request(request);
    const serve::Route* route = Api::route_of(ours.path);
    HttpResponse out = answer(api, pool, options, std::move(ours));
    response.status = out.status;
    if (out.status == 429) response.set_header("Retry-After", "1");
    response.set_content(out.body, out.content_type.c_str());
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    api.metrics().record(route ? route->path : "other", out.status, seconds);
  };
  // Every path and method reaches Api::handle, whose route table answers 404 and 405 with the routes it has.
  server.Get(".*", handler);
  server.Post(".*", handler);
  server.Put(".*", handler);
  server.Delete(".*", handler);
  server.Patch(".*", handler);
  // What httplib answers itself (a body over the cap: 413; a request it cannot parse: 400), as JSON too.
  const httplib::Server::HandlerWithResponse on_error = [&api](const httplib::Request& request,
                                                               httplib::Response& response) {
    if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = "bad request";
    if (response.status == 413) message = "body over the cap of " + std::to_string(serve::kMaxOnnxBodyBytes) + " bytes";
    const HttpResponse out = serve::error_response(response.status, message);
    response.set_content(out.body, out.content_type.c_str());
    const serve::Route* route = Api::route_of(request.path);
    api.metrics().record(route ? route->path : "other", response.status, 0);
    return httplib::Server::HandlerResponse::Handled;
  };
  server.set_error_handler(on_error);
  server.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
    const HttpResponse out = serve::error_response(500, "internal error");
    response.status = 500;
    response.set_content(out.body, out.content_type.c_str());
  });

  // httplib listens with a backlog of 5: a burst of new connections (a load generator opening 64) overflows
  // it and waits for SYN retransmits, seconds. The socket is kept here and listened on again with a
  // larger backlog once bound (Linux takes a second listen() as a new backlog).
  int listen_socket = -1;
  server.set_socket_options([&listen_socket](socket_t sock) {
    // SO_REUSEADDR alone: httplib's default adds SO_REUSEPORT, with which a second server on the same port
    // would bind too and take half of the connections instead of failing.
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_socket = sock;
  });
  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port < 0)
    throw InputError("--listen " + options.host + ":" + std::to_string(options.port) +
                     ": cannot bind (address in use, or not an address of this host)");
  if (listen_socket >= 0) ::listen(listen_socket, 1024);
  std::printf("dnncast serve: listening on http://%s:%d (%d workers, queue %d, %d connections)\n", options.host.c_str(),
              port, options.threads, options.queue, options.connections);
  std::fflush(stdout);

  std::atomic<bool> signalled{false}, finished{false};
  std::thread signal_thread([&server, &signalled, &finished, signals] {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (finished) return;  // woken by the end of listening below
    signalled = true;
    std::fprintf(stderr, "dnncast serve: %s: finishing the requests in flight\n",
                 signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
    server.stop();
  });
  server.listen_after_bind();  // returns once stopped, after its connections' threads finished
  finished = true;
  if (!signalled) pthread_kill(signal_thread.native_handle(), SIGTERM);
  pool.shutdown();
  signal_thread.join();
  std::fprintf(stderr, "dnncast serve: stopped\n");
  return 0;
}

}  // namespace dnncast::cli
