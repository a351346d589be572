// Measurement in a child process (fork + exec of this same program), statistics, JSON, repeats.
//
// Why exec and not a bare fork: a forked copy of a process whose OpenMP pool already ran can hang
// in its first parallel region (libgomp is not fork-safe), and a fresh process is what "repeats in
// separate processes" means (fresh allocator state, fresh thread pool). The child is the same
// executable: a static initializer below notices DNNCAST_MEASURE_CHILD in the environment, reads
// the request (graph JSON + config + limits) from the socket it names, measures, writes the
// Measurement as JSON back and exits before main() runs.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <string>

#include "core/error.h"
#include "core/stats.h"
#include "graph/op_registry.h"
#include "import/graph_json.h"
#include "profile/internal.h"

namespace dnncast::profile {

using nlohmann::json;

// --- Configuration -------------------------------------------------------------------------------

void validate_config(const TrainConfig& config) {
  if (config.threads < 0)
    throw InputError("threads must be >= 0 (0 = all allowed CPUs), got " + std::to_string(config.threads));
  auto allowed = static_cast<int64_t>(detail::allowed_cpus().size());
  if (config.threads > allowed)
    throw InputError("threads " + std::to_string(config.threads) + " is more than the " + std::to_string(allowed) +
                     " CPUs this process may use");
  check_grad_accum(config.grad_accum);
  if (config.device == Device::Cpu && config.precision == Precision::Fp16)
    throw InputError("precision fp16 needs device cuda (on cpu libtorch autocasts to bf16 only)");
  if (config.device == Device::Cuda && !detail::cuda_available())
    throw InputError("device cuda: this build's libtorch (" + detail::torch_version() +
                     ") has no CUDA or no GPU is visible; build against a CUDA libtorch with -DTorch_DIR=...");
}

// --- Statistics ----------------------------------------------------------------------------------

namespace detail {

double median_rel_ci(const std::vector<double>& values) {
  size_t count = values.size();
  if (count < 6) return std::numeric_limits<double>::infinity();
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  double spread = 1.96 * std::sqrt(static_cast<double>(count)) / 2;
  auto lower_rank = static_cast<int64_t>(std::floor(static_cast<double>(count) / 2 - spread));
  auto upper_rank = static_cast<int64_t>(std::ceil(static_cast<double>(count) / 2 + spread)) + 1;
  lower_rank = std::max<int64_t>(lower_rank, 1);
  upper_rank = std::min<int64_t>(upper_rank, static_cast<int64_t>(count));
  double median = quantile(sorted, 0.5);
  if (median <= 0) return std::numeric_limits<double>::infinity();
  double half_width = (sorted[static_cast<size_t>(upper_rank - 1)] - sorted[static_cast<size_t>(lower_rank - 1)]) / 2;
  return half_width / median;
}

TimeStats summarize(const std::vector<double>& times_ms) {
  TimeStats stats;
  stats.n = static_cast<int64_t>(times_ms.size());
  if (times_ms.empty()) return stats;
  stats.median = quantile(times_ms, 0.5);
  stats.p10 = quantile(times_ms, 0.1);
  stats.p90 = quantile(times_ms, 0.9);
  stats.mean = std::accumulate(times_ms.begin(), times_ms.end(), 0.0) / static_cast<double>(times_ms.size());
  stats.rel_ci = median_rel_ci(times_ms);
  return stats;
}

}  // namespace detail

// --- JSON ----------------------------------------------------------------------------------------

json to_json(const Environment& env) {
  json doc = records::environment_json(env, true);
  doc["cpus"] = env.cpus;
  return doc;
}

namespace {

Environment environment_from_json(const json& doc) {
  Environment env;
  if (!doc.is_object()) return env;
  static_cast<records::EnvironmentRecord&>(env) = records::environment_from_json(doc);
  env.cpus = doc.value("cpus", "");
  return env;
}

json finite_or_null(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

double number_or(const json& doc, const char* key, double fallback) {
  auto found = doc.find(key);
  return found != doc.end() && found->is_number() ? found->get<double>() : fallback;
}

std::optional<double> optional_number(const json& doc, const char* key) {
  if (doc.contains(key) && doc[key].is_number()) return doc[key].get<double>();
  return std::nullopt;
}

int64_t int_or(const json& doc, const char* key, int64_t fallback) {
  auto found = doc.find(key);
  return found != doc.end() && found->is_number() ? found->get<int64_t>() : fallback;
}

}  // namespace

json to_json(const Measurement& m) {
  bool ok = m.status == "ok";
  json doc;
  doc["status"] = m.status;
  doc["message"] = m.message;
  if (ok) {
    doc["time_ms"] = {{"median", m.time_ms.median}, {"p10", m.time_ms.p10},
                      {"p90", m.time_ms.p90},       {"mean", m.time_ms.mean},
                      {"n", m.time_ms.n},           {"rel_ci", finite_or_null(m.time_ms.rel_ci)}};
    doc["time_ms_normalised"] = m.time_ms_normalised;
    doc["peak_bytes"] = m.peak_bytes;
  } else {
    doc["time_ms"] = nullptr;
    doc["time_ms_normalised"] = nullptr;
    doc["peak_bytes"] = nullptr;
  }
  doc["iteration_ms"] = m.iteration_ms;
  doc["warmup_iterations"] = m.warmup_iterations;
  doc["probe_ms"] = {{"before", m.probe_before_ms}, {"after", m.probe_after_ms}, {"reference", reference_probe_ms()}};
  doc["baseline_bytes"] = m.baseline_bytes;
  doc["peak_reserved_bytes"] = m.peak_reserved_bytes;
  doc["params"] = m.params;
  doc["param_bytes"] = m.param_bytes;
  doc["grad_bytes"] = m.grad_bytes;
  doc["optimizer_state_bytes"] = m.optimizer_state_bytes;
  doc["energy_j"] = m.energy_j ? json(*m.energy_j) : json(nullptr);
  doc["energy_note"] = m.energy_note;
  if (!m.layers.empty()) {
    json layers = json::array();
    for (const LayerTime& layer : m.layers)
      layers.push_back({{"node", layer.node},
                        {"op", layer.op},
                        {"forward_ms", layer.forward_ms},
                        {"backward_ms", layer.backward_ms},
                        {"iteration_forward_ms", layer.iteration_forward_ms},
                        {"iteration_backward_ms", layer.iteration_backward_ms}});
    doc["layers"] = layers;
    doc["layer_sum_ms"] = m.layer_sum_ms;
    doc["optimizer_step_ms"] = m.optimizer_step_ms;
    doc["zero_grad_ms"] = m.zero_grad_ms;
    doc["iteration_step_ms"] = m.iteration_step_ms;
    doc["iteration_zero_grad_ms"] = m.iteration_zero_grad_ms;
    doc["iteration_loss_ms"] = m.iteration_loss_ms;
    doc["layer_gap_ms"] = m.layer_gap_ms;
  }
  doc["load"] = {{"other_cpus", m.load_other_cpus},
                 {"cpu_wait_share", m.cpu_wait_share},
                 {"loadavg_before", m.loadavg_before},
                 {"loadavg_after", m.loadavg_after}};
  doc["wall_s"] = m.wall_s;
  doc["env"] = to_json(m.env);
  return doc;
}

Measurement measurement_from_json(const json& doc) {
  Measurement m;
  m.status = doc.value("status", "error");
  m.message = doc.value("message", "");
  if (doc.contains("time_ms") && doc["time_ms"].is_object()) {
    const json& time = doc["time_ms"];
    m.time_ms.median = number_or(time, "median", 0);
    m.time_ms.p10 = number_or(time, "p10", 0);
    m.time_ms.p90 = number_or(time, "p90", 0);
    m.time_ms.mean = number_or(time, "mean", 0);
    m.time_ms.n = int_or(time, "n", 0);
    m.time_ms.rel_ci = number_or(time, "rel_ci", std::numeric_limits<double>::infinity());
  }
  if (doc.contains("iteration_ms") && doc["iteration_ms"].is_array())
    m.iteration_ms = doc["iteration_ms"].get<std::vector<double>>();
  m.warmup_iterations = int_or(doc, "warmup_iterations", 0);
  if (doc.contains("probe_ms") && doc["probe_ms"].is_object()) {
    m.probe_before_ms = number_or(doc["probe_ms"], "before", 0);
    m.probe_after_ms = number_or(doc["probe_ms"], "after", 0);
  }
  m.time_ms_normalised = number_or(doc, "time_ms_normalised", 0);
  m.baseline_bytes = int_or(doc, "baseline_bytes", 0);
  m.peak_bytes = int_or(doc, "peak_bytes", 0);
  m.peak_reserved_bytes = int_or(doc, "peak_reserved_bytes", 0);
  m.params = int_or(doc, "params", 0);
  m.param_bytes = int_or(doc, "param_bytes", 0);
  m.grad_bytes = int_or(doc, "grad_bytes", 0);
  m.optimizer_state_bytes = int_or(doc, "optimizer_state_bytes", 0);
  m.energy_j = optional_number(doc, "energy_j");
  m.energy_note = doc.value("energy_note", "");
  if (doc.contains("layers") && doc["layers"].is_array()) {
    for (const json& layer : doc["layers"])
      m.layers.push_back({layer.value("node", ""), layer.value("op", ""), number_or(layer, "forward_ms", 0),
                          number_or(layer, "backward_ms", 0), number_or(layer, "iteration_forward_ms", 0),
                          number_or(layer, "iteration_backward_ms", 0)});
    m.layer_sum_ms = number_or(doc, "layer_sum_ms", 0);
    m.optimizer_step_ms = number_or(doc, "optimizer_step_ms", 0);
    m.zero_grad_ms = number_or(doc, "zero_grad_ms", 0);
    m.iteration_step_ms = number_or(doc, "iteration_step_ms", 0);
    m.iteration_zero_grad_ms = number_or(doc, "iteration_zero_grad_ms", 0);
    m.iteration_loss_ms = number_or(doc, "iteration_loss_ms", 0);
    m.layer_gap_ms = number_or(doc, "layer_gap_ms", 0);
  }
  if (doc.contains("load") && doc["load"].is_object()) {
    m.load_other_cpus = number_or(doc["load"], "other_cpus", 0);
    m.cpu_wait_share = number_or(doc["load"], "cpu_wait_share", 0);
    m.loadavg_before = number_or(doc["load"], "loadavg_before", 0);
    m.loadavg_after = number_or(doc["load"], "loadavg_after", 0);
  }
  m.wall_s = number_or(doc, "wall_s", 0);
  if (doc.contains("env")) m.env = environment_from_json(doc["env"]);
  return m;
}

namespace {

json config_to_json(const TrainConfig& config) {
  return json{{"optimizer", name(config.optimizer)}, {"precision", name(config.precision)}, {"threads", config.threads},
              {"device", name(config.device)},       {"per_layer", config.per_layer},       {"seed", config.seed},
              {"grad_accum", config.grad_accum}};
}

TrainConfig config_from_json(const json& doc) {
  TrainConfig config;
  config.optimizer = parse_optimizer(doc.at("optimizer").get<std::string>());
  config.precision = parse_precision(doc.at("precision").get<std::string>());
  config.threads = doc.at("threads").get<int64_t>();
  config.device = parse_device(doc.at("device").get<std::string>());
  config.per_layer = doc.at("per_layer").get<bool>();
  config.seed = doc.at("seed").get<uint64_t>();
  config.grad_accum = doc.value("grad_accum", int64_t{1});
  return config;
}

json limits_to_json(const Limits& limits) {
  return json{{"memory_bytes", limits.memory_bytes},    {"timeout_s", limits.timeout_s},
              {"time_budget_s", limits.time_budget_s},  {"warmup_budget_s", limits.warmup_budget_s},
              {"ci_target", limits.ci_target},          {"min_iterations", limits.min_iterations},
              {"max_iterations", limits.max_iterations}};
}

Limits limits_from_json(const json& doc) {
  Limits limits;
  limits.memory_bytes = doc.at("memory_bytes").get<int64_t>();
  limits.timeout_s = doc.at("timeout_s").get<double>();
  limits.time_budget_s = doc.at("time_budget_s").get<double>();
  limits.warmup_budget_s = doc.at("warmup_budget_s").get<double>();
  limits.ci_target = doc.at("ci_target").get<double>();
  limits.min_iterations = doc.at("min_iterations").get<int64_t>();
  limits.max_iterations = doc.at("max_iterations").get<int64_t>();
  return limits;
}

// --- Child side ----------------------------------------------------------------------------------

constexpr const char* kChildEnv = "DNNCAST_MEASURE_CHILD";

int g_child_fd = -1;
char g_oom_reply[512];
size_t g_oom_reply_size = 0;

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

// An allocation refused inside an OpenMP region cannot unwind (std::terminate -> abort); the
// refusal is still an out-of-memory result, so say so before dying.
void on_abort(int) {
  if (g_child_fd >= 0 && detail::tracked_refused() && g_oom_reply_size > 0) {
    write_all(g_child_fd, g_oom_reply, g_oom_reply_size);
    _exit(0);
  }
  signal(SIGABRT, SIG_DFL);
  raise(SIGABRT);
}

int64_t vm_size_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0) return std::stoll(line.substr(7)) * 1024;
  return 0;
}

[[noreturn]] void child_main(int fd) {
  g_child_fd = fd;
  std::string request;
  char buffer[65536];
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    request.append(buffer, static_cast<size_t>(got));
  }
  Measurement result;
  try {
    json doc = json::parse(request);
    TrainConfig config = config_from_json(doc.at("config"));
    Limits limits = limits_from_json(doc.at("limits"));
    // Pin first, before libtorch starts any thread: the first `threads` CPUs we may use.
    std::vector<int> cpus = detail::allowed_cpus();
    if (config.threads > 0 && static_cast<int64_t>(cpus.size()) > config.threads)
      cpus.resize(static_cast<size_t>(config.threads));
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
    if (config.threads == 0) config.threads = static_cast<int64_t>(cpus.size());

    if (limits.memory_bytes <= 0) limits.memory_bytes = detail::mem_available_bytes() * 9 / 10;
#if defined(__SANITIZE_ADDRESS__)
    constexpr bool kCapAddressSpace = false;  // ASan maps terabytes of shadow: no address-space cap
#else
    constexpr bool kCapAddressSpace = true;
#endif
    if (kCapAddressSpace && config.device == Device::Cpu && limits.memory_bytes > 0) {
      // Backstop for memory outside the tracked tensors (oneDNN/MKL scratch, malloc arenas,
      // thread stacks): address space = what is mapped now + the limit + 2 GiB of slack.
      rlim_t cap = static_cast<rlim_t>(vm_size_bytes() + limits.memory_bytes + (int64_t{2} << 30));
      rlimit rl{cap, cap};
      setrlimit(RLIMIT_AS, &rl);
    }
    int size = std::snprintf(g_oom_reply, sizeof(g_oom_reply),
                             "{\"status\":\"oom\",\"message\":\"tensor memory above the limit of %lld bytes "
                             "(refused inside a parallel region)\"}\n",
                             static_cast<long long>(limits.memory_bytes));
    g_oom_reply_size = size > 0 ? static_cast<size_t>(size) : 0;
    signal(SIGABRT, on_abort);

    if (doc.value("kind", "") == "layers") {
      // One line per case, as each finishes: the parent keeps what came before a crash.
      const json& cases = doc.at("cases");
      for (size_t index = 0; index < cases.size(); ++index) {
        Graph graph = import::graph_from_json(cases[index], "layer case");
        std::string line = to_json(bench_layer_in_process(graph, config, limits)).dump() + "\n";
        if (!write_all(fd, line.data(), line.size())) break;
      }
      ::close(fd);
      _exit(0);
    }
    Graph graph = import::graph_from_json(doc.at("graph"), "measurement request");
    result = measure_in_process(graph, config, limits);
  } catch (const std::exception& error) {
    result = Measurement{};
    result.status = "error";
    result.message = std::string("child: ") + error.what();
  }
  std::string reply = to_json(result).dump() + "\n";
  write_all(fd, reply.data(), reply.size());
  ::close(fd);
  _exit(0);
}

bool child_hook() {
  const char* spec = std::getenv(kChildEnv);
  if (spec == nullptr) return false;
  int fd = std::atoi(spec);
  unsetenv(kChildEnv);
  child_main(fd);
}

// Runs at static initialisation of any program that links this file (the dnncast CLI, tests).
const bool g_is_child = child_hook();

// --- Parent side ---------------------------------------------------------------------------------

std::string signal_text(int number) {
  const char* name = strsignal(number);
  return "signal " + std::to_string(number) + " (" + (name ? name : "?") + ")";
}

std::string tail(const std::string& text, size_t count) {
  std::string trimmed = text.size() > count ? "..." + text.substr(text.size() - count) : text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
  for (char& c : trimmed)
    if (c == '\n') c = ' ';
  return trimmed;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// What a child process left: its reply, its stderr, and how it ended.
struct ChildRun {
  std::string reply, child_stderr;
  bool timed_out = false;
  int wait_status = 0;
  double wall_s = 0;
};

// Starts this executable as a measurement child, sends it `request`, collects its reply. The child
// is killed when `timeout_s` pass without the reply ending; with `on_line`, each complete line of the
// reply is handed over as it arrives (and removed from ChildRun::reply), and restarts the clock.
ChildRun run_child(const std::string& request, double timeout_s,
                   const std::function<void(const std::string&)>& on_line) {
  int sockets[2];
  int err_pipe[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0)
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(sockets[0]);
    ::close(sockets[1]);
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  }
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::string env_entry = std::string(kChildEnv) + "=" + std::to_string(sockets[1]);
  std::vector<char*> child_env;
  child_env.push_back(env_entry.data());
  for (char** entry = environ; *entry != nullptr; ++entry)
    if (std::strncmp(*entry, kChildEnv, std::strlen(kChildEnv)) != 0) child_env.push_back(*entry);
  child_env.push_back(nullptr);
  char exe_name[] = "dnncast-measure";
  char* child_argv[] = {exe_name, nullptr};
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t parent_pid = getpid();

  double start_s = now_s(), deadline_s = start_s + timeout_s;
  pid_t pid = fork();
  if (pid < 0) {
    ::close(sockets[0]);
    ::close(sockets[1]);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    if (devnull >= 0) ::close(devnull);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent_pid) _exit(127);
    if (devnull >= 0) dup2(devnull, 1);
    dup2(err_pipe[1], 2);
    fcntl(sockets[1], F_SETFD, 0);  // keep the socket across exec
    execve("/proc/self/exe", child_argv, child_env.data());
    _exit(127);
  }
  ::close(sockets[1]);
  ::close(err_pipe[1]);
  if (devnull >= 0) ::close(devnull);
  int channel = sockets[0];
  fcntl(channel, F_SETFL, fcntl(channel, F_GETFL) | O_NONBLOCK);
  fcntl(err_pipe[0], F_SETFL, fcntl(err_pipe[0], F_GETFL) | O_NONBLOCK);

  ChildRun run;
  std::string& reply = run.reply;
  std::string& child_stderr = run.child_stderr;
  size_t sent = 0;
  bool channel_open = true, err_open = true;
  bool& timed_out = run.timed_out;
  char buffer[65536];
  while (channel_open || err_open) {
    double left_s = deadline_s - now_s();
    if (left_s <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd fds[2];
    nfds_t count = 0;
    if (channel_open) fds[count++] = {channel, static_cast<short>(POLLIN | (sent < request.size() ? POLLOUT : 0)), 0};
    if (err_open) fds[count++] = {err_pipe[0], POLLIN, 0};
    int ready = poll(fds, count, static_cast<int>(std::min(left_s * 1000 + 1, 1000.0)));
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t index = 0; index < count && ready > 0; ++index) {
      if (fds[index].revents == 0) continue;
      if (fds[index].fd == channel) {
        if ((fds[index].revents & POLLOUT) && sent < request.size()) {
          ssize_t written = send(channel, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
          if (written > 0) sent += static_cast<size_t>(written);
          if (sent == request.size()) shutdown(channel, SHUT_WR);
          if (written < 0 && errno != EAGAIN && errno != EINTR) sent = request.size();  // child gone
        }
        if (fds[index].revents & (POLLIN | POLLHUP | POLLERR)) {
          ssize_t got = ::read(channel, buffer, sizeof(buffer));
          if (got > 0) {
            reply.append(buffer, static_cast<size_t>(got));
            if (on_line) {
              size_t end;
              while ((end = reply.find('\n')) != std::string::npos) {
                on_line(reply.substr(0, end));
                reply.erase(0, end + 1);
                deadline_s = now_s() + timeout_s;
              }
            }
          } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
            channel_open = false;
          }
        }
      } else {
        ssize_t got = ::read(err_pipe[0], buffer, sizeof(buffer));
        if (got > 0) {
          child_stderr.append(buffer, static_cast<size_t>(got));
          if (child_stderr.size() > 65536) child_stderr.erase(0, child_stderr.size() - 16384);
        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
          err_open = false;
        }
      }
    }
  }
  ::close(channel);
  ::close(err_pipe[0]);
  while (waitpid(pid, &run.wait_status, 0) < 0 && errno == EINTR) {
  }
  run.wall_s = now_s() - start_s;

  return run;
}

}  // namespace

Measurement measure_isolated(const Graph& graph, const TrainConfig& config_in, const Limits& limits) {
  (void)g_is_child;
  TrainConfig config = config_in;
  validate_config(config);
  check_supported(graph);
  if (limits.timeout_s <= 0) throw InputError("timeout must be positive");
  if (limits.memory_bytes < 0) throw InputError("memory limit must be >= 0 bytes");

  std::string request = json{{"graph", import::graph_to_json(graph)},
                             {"config", config_to_json(config)},
                             {"limits", limits_to_json(limits)}}
                            .dump();

  ChildRun run = run_child(request, limits.timeout_s, {});
  const std::string& reply = run.reply;
  const std::string& child_stderr = run.child_stderr;
  const int wait_status = run.wait_status;
  const bool timed_out = run.timed_out;
  const double wall_s = run.wall_s;
  Measurement result;
  if (timed_out) {
    result.status = "timeout";
    result.message = "killed after the timeout of " + std::to_string(limits.timeout_s) + " s";
    if (!child_stderr.empty()) result.message += "; stderr: " + tail(child_stderr, 300);
  } else {
    bool parsed = false;
    if (!reply.empty()) {
      try {
        result = measurement_from_json(json::parse(reply));
        parsed = true;
      } catch (const std::exception&) {
        parsed = false;
      }
    }
    if (!parsed) {
      result = Measurement{};
      if (WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL) {
        result.status = "oom";
        result.message = "child killed by SIGKILL without a result (the kernel's out-of-memory killer?)";
      } else if (WIFSIGNALED(wait_status)) {
        result.status = "error";
        result.message = "child died with " + signal_text(WTERMSIG(wait_status));
      } else {
        result.status = "error";
        result.message = "child exited with code " +
                         std::to_string(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1) + " without a result";
      }
      if (!child_stderr.empty()) result.message += "; stderr: " + tail(child_stderr, 600);
    }
  }
  result.wall_s = wall_s;
  if (result.env.cpu_model.empty()) result.env = detect_environment(config);
  return result;
}

json to_json(const LayerBench& b) {
  json doc{{"status", b.status},
           {"message", b.message},
           {"forward_ms", b.forward_ms},
           {"backward_ms", b.backward_ms},
           {"cold_forward_ms", b.cold_forward_ms},
           {"cold_backward_ms", b.cold_backward_ms},
           {"reps", b.reps},
           {"peak_bytes", b.peak_bytes},
           {"wall_s", b.wall_s}};
  for (auto [key, value] :
       {std::pair{"backward_data_ms", &b.backward_data_ms}, std::pair{"backward_weight_ms", &b.backward_weight_ms}})
    doc[key] = *value ? json(**value) : json(nullptr);
  return doc;
}

LayerBench layer_bench_from_json(const json& doc) {
  LayerBench b;
  b.status = doc.value("status", "error");
  b.message = doc.value("message", "");
  b.forward_ms = number_or(doc, "forward_ms", 0);
  b.backward_ms = number_or(doc, "backward_ms", 0);
  b.cold_forward_ms = number_or(doc, "cold_forward_ms", 0);
  b.cold_backward_ms = number_or(doc, "cold_backward_ms", 0);
  b.reps = int_or(doc, "reps", 0);
  b.peak_bytes = int_or(doc, "peak_bytes", 0);
  b.wall_s = number_or(doc, "wall_s", 0);
  b.backward_data_ms = optional_number(doc, "backward_data_ms");
  b.backward_weight_ms = optional_number(doc, "backward_weight_ms");
  return b;
}

void bench_layers_isolated(const std::vector<Graph>& cases, const TrainConfig& config_in, const Limits& limits,
                           const std::function<void(size_t, const LayerBench&)>& on_result) {
  TrainConfig config = config_in;
  validate_config(config);
  if (limits.timeout_s <= 0) throw InputError("timeout must be positive");
  if (limits.memory_bytes < 0) throw InputError("memory limit must be >= 0 bytes");
  for (const Graph& graph : cases) check_layer_case(graph);
  constexpr size_t kCasesPerChild = 200;  // a fresh process now and then: fresh allocator, no drift
  size_t next = 0;
  while (next < cases.size()) {
    size_t end = std::min(cases.size(), next + kCasesPerChild);
    json list = json::array();
    for (size_t index = next; index < end; ++index) list.push_back(import::graph_to_json(cases[index]));
    std::string request =
        json{
            {"kind", "layers"}, {"cases", list}, {"config", config_to_json(config)}, {"limits", limits_to_json(limits)}}
            .dump();
    size_t done = next;
    ChildRun run = run_child(request, limits.timeout_s, [&](const std::string& line) {
      if (done >= end) return;
      LayerBench bench;
      try {
        bench = layer_bench_from_json(json::parse(line));
      } catch (const std::exception& error) {
        bench.status = "error";
        bench.message = std::string("unreadable reply from the child: ") + error.what();
      }
      on_result(done++, bench);
    });
    if (done < end) {  // the child died inside case `done`
      LayerBench lost;
      if (run.timed_out) {
        lost.status = "timeout";
        lost.message = "killed after the timeout of " + std::to_string(limits.timeout_s) + " s";
      } else if (WIFSIGNALED(run.wait_status) && WTERMSIG(run.wait_status) == SIGKILL) {
        lost.status = "oom";
        lost.message = "child killed by SIGKILL without a result (the kernel's out-of-memory killer?)";
      } else {
        lost.status = "error";
        lost.message = WIFSIGNALED(run.wait_status) ? "child died with " + signal_text(WTERMSIG(run.wait_status))
                                                    : std::string("child ended without a result");
      }
      if (!run.child_stderr.empty()) lost.message += "; stderr: " + tail(run.child_stderr, 600);
      lost.wall_s = run.wall_s;
      on_result(done++, lost);
    }
    next = done;
  }
}

std::vector<Measurement> measure_repeats(const Graph& graph, const TrainConfig& config, const Limits& limits,
                                         int64_t repeats) {
  if (repeats < 1) throw InputError("repeat must be >= 1, got " + std::to_string(repeats));
  std::vector<Measurement> results;
  for (int64_t index = 0; index < repeats; ++index) results.push_back(measure_isolated(graph, config, limits));
  return results;
}

Measurement combine_repeats(const std::vector<Measurement>& repeats) {
  DNNCAST_ASSERT(!repeats.empty());
  std::vector<const Measurement*> ok;
  for (const Measurement& m : repeats)
    if (m.status == "ok") ok.push_back(&m);
  Measurement combined;
  for (const Measurement& m : repeats) {
    if (m.status != "ok") {
      combined.status = m.status;
      combined.message = m.message;
      break;
    }
  }
  double wall = 0;
  for (const Measurement& m : repeats) wall += m.wall_s;
  if (ok.empty()) {
    combined.env = repeats.front().env;
    combined.energy_note = repeats.front().energy_note;
    combined.wall_s = wall;
    return combined;
  }
  auto median_of = [&](auto field) {
    std::vector<double> values;
    for (const Measurement* m : ok) values.push_back(field(*m));
    return quantile(values, 0.5);
  };
  auto mean_of = [&](auto field) {
    double sum = 0;
    for (const Measurement* m : ok) sum += field(*m);
    return sum / static_cast<double>(ok.size());
  };
  const Measurement& first = *ok.front();
  std::string status = combined.status, message = combined.message;
  combined = Measurement{};
  combined.status = status;
  combined.message = message;
  if (ok.size() != repeats.size())
    combined.message = std::to_string(repeats.size() - ok.size()) + " of " + std::to_string(repeats.size()) +
                       " repeats failed (first: " + status + ": " + message + "); statistics over the others";
  combined.time_ms.median = median_of([](const Measurement& m) { return m.time_ms.median; });
  combined.time_ms.p10 = median_of([](const Measurement& m) { return m.time_ms.p10; });
  combined.time_ms.p90 = median_of([](const Measurement& m) { return m.time_ms.p90; });
  combined.time_ms.mean = mean_of([](const Measurement& m) { return m.time_ms.mean; });
  combined.time_ms.rel_ci = median_of([](const Measurement& m) { return m.time_ms.rel_ci; });
  for (const Measurement* m : ok) combined.time_ms.n += m->time_ms.n;
  combined.time_ms_normalised = median_of([](const Measurement& m) { return m.time_ms_normalised; });
  combined.warmup_iterations = first.warmup_iterations;
  combined.probe_before_ms = mean_of([](const Measurement& m) { return m.probe_before_ms; });
  combined.probe_after_ms = mean_of([](const Measurement& m) { return m.probe_after_ms; });
  for (const Measurement* m : ok) {
    combined.peak_bytes = std::max(combined.peak_bytes, m->peak_bytes);
    combined.peak_reserved_bytes = std::max(combined.peak_reserved_bytes, m->peak_reserved_bytes);
  }
  combined.baseline_bytes = first.baseline_bytes;
  combined.params = first.params;
  combined.param_bytes = first.param_bytes;
  combined.grad_bytes = first.grad_bytes;
  combined.optimizer_state_bytes = first.optimizer_state_bytes;
  bool all_energy = std::all_of(ok.begin(), ok.end(), [](const Measurement* m) { return m->energy_j.has_value(); });
  if (all_energy) combined.energy_j = mean_of([](const Measurement& m) { return *m.energy_j; });
  combined.energy_note = first.energy_note;
  combined.layers = first.layers;
  for (size_t index = 0; index < combined.layers.size(); ++index) {
    bool same = std::all_of(ok.begin(), ok.end(), [&](const Measurement* m) {
      return m->layers.size() == first.layers.size() && m->layers[index].node == first.layers[index].node;
    });
    if (!same) break;
    combined.layers[index].forward_ms = median_of([&](const Measurement& m) { return m.layers[index].forward_ms; });
    combined.layers[index].backward_ms = median_of([&](const Measurement& m) { return m.layers[index].backward_ms; });
    combined.layers[index].iteration_forward_ms =
        median_of([&](const Measurement& m) { return m.layers[index].iteration_forward_ms; });
    combined.layers[index].iteration_backward_ms =
        median_of([&](const Measurement& m) { return m.layers[index].iteration_backward_ms; });
  }
  if (!combined.layers.empty()) {
    combined.layer_sum_ms = 0;
    for (const LayerTime& layer : combined.layers) combined.layer_sum_ms += layer.forward_ms + layer.backward_ms;
    combined.optimizer_step_ms = median_of([](const Measurement& m) { return m.optimizer_step_ms; });
    combined.zero_grad_ms = median_of([](const Measurement& m) { return m.zero_grad_ms; });
    combined.iteration_step_ms = median_of([](const Measurement& m) { return m.iteration_step_ms; });
    combined.iteration_zero_grad_ms = median_of([](const Measurement& m) { return m.iteration_zero_grad_ms; });
    combined.iteration_loss_ms = median_of([](const Measurement& m) { return m.iteration_loss_ms; });
    combined.layer_gap_ms =
        combined.time_ms.median - combined.layer_sum_ms - combined.optimizer_step_ms - combined.zero_grad_ms;
  }
  combined.load_other_cpus = mean_of([](const Measurement& m) { return m.load_other_cpus; });
  combined.cpu_wait_share = mean_of([](const Measurement& m) { return m.cpu_wait_share; });
  combined.loadavg_before = first.loadavg_before;
  combined.loadavg_after = ok.back()->loadavg_after;
  combined.wall_s = wall;
  combined.env = first.env;
  return combined;
}

int64_t graph_param_count(const Graph& graph) {
  int64_t total = 0;
  for (int index = 0; index < graph.size(); ++index) total += node_cost(graph, index).params;
  return total;
}

}  // namespace dnncast::profile
