#include "store/dataset_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/stats.h"

namespace dnncast::store {

namespace {

using nlohmann::json;

// Values of one column with their run counts, ordered by value.
json column_values(Database& db, const std::string& column, bool numeric) {
  Statement query = db.prepare("SELECT " + column + ", count(*) FROM runs GROUP BY " + column + " ORDER BY " + column);
  json values = json::array();
  while (query.step()) {
    json item;
    if (numeric)
      item["value"] = query.get_int(0);
    else
      item["value"] = query.get_text(0);
    item["runs"] = query.get_int(1);
    values.push_back(item);
  }
  json result;
  if (numeric && !values.empty()) {
    result["min"] = values.front()["value"];
    result["max"] = values.back()["value"];
  }
  result["values"] = values;
  return result;
}

json numeric_range(Database& db, const std::string& column) {
  Statement query = db.prepare("SELECT min(" + column + "), max(" + column + "), avg(" + column + "), count(" + column +
                               ") FROM runs");
  query.step();
  json result;
  result["count"] = query.get_int(3);
  if (query.get_int(3) > 0) {
    result["min"] = query.get_double(0);
    result["max"] = query.get_double(1);
    result["mean"] = query.get_double(2);
  }
  return result;
}

}  // namespace

json dataset_stats(Store& store) {
  Database& db = store.db();
  json stats;
  stats["path"] = store.path();
  stats["schema_version"] = store.schema_version();
  auto count = [&db](const std::string& sql) {
    Statement query = db.prepare(sql);
    query.step();
    return query.get_int(0);
  };
  stats["runs"] = count("SELECT count(*) FROM runs");
  stats["runs_ok"] = count("SELECT count(*) FROM runs WHERE status = 'ok'");
  stats["networks"] = count("SELECT count(*) FROM networks");
  stats["networks_with_ok_runs"] = count("SELECT count(DISTINCT network_id) FROM runs WHERE status = 'ok'");
  stats["synthetic_networks_with_ok_runs"] = count(
      "SELECT count(DISTINCT r.network_id) FROM runs r JOIN networks n ON n.id = r.network_id "
      "WHERE r.status = 'ok' AND n.family = 'synthetic'");
  stats["environments"] = count("SELECT count(*) FROM environments");

  json by_status = json::object();
  for (const std::string& status : records::run_statuses()) by_status[status] = 0;
  Statement statuses = db.prepare("SELECT status, count(*) FROM runs GROUP BY status");
  while (statuses.step()) by_status[statuses.get_text(0)] = statuses.get_int(1);
  stats["by_status"] = by_status;

  json environments = json::array();
  Statement by_environment = db.prepare(
      "SELECT e.hash, e.cpu_model, e.cores, e.threads, e.memory_bytes, e.gpu_name, e.torch_version, e.host, "
      "count(r.id), sum(r.status = 'ok'), e.isa, e.isa_cap, e.cpu_vendor, e.cpu_family, e.cpu_model_number "
      "FROM environments e LEFT JOIN runs r ON r.environment_id = e.id GROUP BY e.id ORDER BY e.id");
  while (by_environment.step()) {
    environments.push_back(
        {{"hash", by_environment.get_text(0)},
         {"cpu_model", by_environment.get_text(1)},
         {"cores", by_environment.get_int(2)},
         {"threads", by_environment.get_int(3)},
         {"memory_bytes", by_environment.get_int(4)},
         {"gpu_name", by_environment.get_text(5)},
         {"torch_version", by_environment.get_text(6)},
         {"host", by_environment.get_text(7)},
         {"runs", by_environment.get_int(8)},
         {"runs_ok", by_environment.get_int(9)},
         // The CPU fingerprint; null = not recorded (environments stored before schema 3).
         {"isa", by_environment.get_text(10).empty() ? json(nullptr) : json(by_environment.get_text(10))},
         {"isa_cap", by_environment.get_text(11)},
         {"cpu_vendor", by_environment.get_text(12)},
         {"cpu_family", by_environment.get_text(12).empty() ? json(nullptr) : json(by_environment.get_int(13))},
         {"cpu_model_number", by_environment.get_text(12).empty() ? json(nullptr) : json(by_environment.get_int(14))}});
  }
  stats["by_environment"] = environments;

  json families = json::array();
  Statement by_family = db.prepare(
      "SELECT n.family, count(DISTINCT n.id), count(r.id), sum(r.status = 'ok'), "
      "count(DISTINCT CASE WHEN r.status = 'ok' THEN n.id END) FROM networks n "
      "LEFT JOIN runs r ON r.network_id = n.id GROUP BY n.family ORDER BY n.family");
  while (by_family.step()) {
    families.push_back({{"family", by_family.get_text(0)},
                        {"networks", by_family.get_int(1)},
                        {"networks_with_ok_runs", by_family.get_int(4)},
                        {"runs", by_family.get_int(2)},
                        {"runs_ok", by_family.get_int(3)}});
  }
  stats["by_family"] = families;

  json plans = json::array();
  Statement by_plan = db.prepare("SELECT plan, count(*), sum(status = 'ok') FROM runs GROUP BY plan ORDER BY plan");
  while (by_plan.step())
    plans.push_back({{"plan", by_plan.get_text(0)}, {"runs", by_plan.get_int(1)}, {"runs_ok", by_plan.get_int(2)}});
  stats["by_plan"] = plans;

  json options;
  options["batch"] = column_values(db, "batch", true);
  options["input"] = column_values(db, "input", false);
  options["seq_len"] = column_values(db, "seq_len", true);
  options["optimizer"] = column_values(db, "optimizer", false);
  options["precision"] = column_values(db, "precision", false);
  options["threads"] = column_values(db, "threads", true);
  options["device"] = column_values(db, "device", false);
  options["repeat_index"] = column_values(db, "repeat_index", true);
  stats["options"] = options;

  json measured;
  for (const char* column : {"time_ms_median", "iterations", "peak_bytes", "load_other_cpus", "wall_s", "energy_j"})
    measured[column] = numeric_range(db, column);
  stats["measurements"] = measured;

  // Noise floor: relative range (max - min) / median of the times of the repeats of one
  // configuration (each repeat a separate process), raw and drift-normalised, and the stretch of
  // time those repeats span.
  auto repeat_spread = [&db](const std::string& column) {
    std::map<std::string, std::vector<double>> repeats;
    Statement ok_runs = db.prepare(
        "SELECT network_id || '|' || environment_id || '|' || batch || '|' || input || '|' || seq_len || '|' || "
        "optimizer || '|' || precision || '|' || threads || '|' || device, " +
        column +
        " FROM runs "
        "WHERE status = 'ok' AND " +
        column + " > 0");
    while (ok_runs.step()) repeats[ok_runs.get_text(0)].push_back(ok_runs.get_double(1));
    std::vector<double> spreads;
    std::vector<std::vector<double>> groups;
    for (auto& [key, times] : repeats) {
      groups.push_back(times);
      if (times.size() < 2) continue;
      double middle = quantile_low_plus_step(times, 0.5);
      spreads.push_back(
          (*std::max_element(times.begin(), times.end()) - *std::min_element(times.begin(), times.end())) / middle);
    }
    json spread;
    spread["configurations"] = spreads.size();
    if (!spreads.empty()) {
      spread["median_rel_range"] = quantile_low_plus_step(spreads, 0.5);
      spread["p90_rel_range"] = quantile_low_plus_step(spreads, 0.9);
      std::vector<double> errors = noise_floor_errors(groups);
      double sum = 0;
      for (double error : errors) sum += error;
      spread["runs"] = errors.size();
      spread["floor_mre"] = errors.empty() ? 0.0 : sum / static_cast<double>(errors.size());
    }
    return spread;
  };
  stats["repeat_spread"] = repeat_spread("time_ms_median");
  stats["repeat_spread_normalised"] = repeat_spread("time_ms_normalised");
  return stats;
}

std::string format_stats(const json& stats) {
  std::ostringstream out;
  char line[512];
  out << stats["path"].get<std::string>() << " (schema " << stats["schema_version"].get<int>() << ")\n";
  std::snprintf(line, sizeof line,
                "runs %lld (ok %lld), networks %lld (%lld with ok runs, %lld synthetic), environments %lld\n",
                stats["runs"].get<long long>(), stats["runs_ok"].get<long long>(), stats["networks"].get<long long>(),
                stats["networks_with_ok_runs"].get<long long>(),
                stats["synthetic_networks_with_ok_runs"].get<long long>(), stats["environments"].get<long long>());
  out << line << "\nstatus:";
  for (const auto& item : stats["by_status"].items()) out << "  " << item.key() << " " << item.value().get<long long>();
  out << "\n\nenvironments:\n";
  for (const json& environment : stats["by_environment"]) {
    std::snprintf(line, sizeof line,
                  "  %s  %s, %lld cores (%lld usable), %.1f GiB%s%s, torch %s, host %s: %lld runs, %lld ok\n",
                  environment["hash"].get<std::string>().c_str(), environment["cpu_model"].get<std::string>().c_str(),
                  environment["cores"].get<long long>(), environment["threads"].get<long long>(),
                  static_cast<double>(environment["memory_bytes"].get<long long>()) / (1 << 30),
                  environment["gpu_name"].get<std::string>().empty() ? "" : ", ",
                  environment["gpu_name"].get<std::string>().c_str(),
                  environment["torch_version"].get<std::string>().empty()
                      ? "-"
                      : environment["torch_version"].get<std::string>().c_str(),
                  environment["host"].get<std::string>().c_str(), environment["runs"].get<long long>(),
                  environment["runs_ok"].get<long long>());
    out << line;
    std::string cpu = "    isa ";
    if (environment["isa"].is_null()) {
      cpu += "not recorded";
    } else {
      cpu += environment["isa"].get<std::string>();
      if (!environment["isa_cap"].get<std::string>().empty())
        cpu += " (capped by ONEDNN_MAX_CPU_ISA=" + environment["isa_cap"].get<std::string>() + ")";
    }
    cpu += ", cpu family/model ";
    cpu += environment["cpu_family"].is_null() ? std::string("not recorded")
                                               : std::to_string(environment["cpu_family"].get<long long>()) + "/" +
                                                     std::to_string(environment["cpu_model_number"].get<long long>()) +
                                                     " (" + environment["cpu_vendor"].get<std::string>() + ")";
    out << cpu << "\n";
  }
  out << "\nfamilies:                  networks   runs     ok\n";
  for (const json& family : stats["by_family"]) {
    std::snprintf(line, sizeof line, "  %-24s %8lld %6lld %6lld\n", family["family"].get<std::string>().c_str(),
                  family["networks"].get<long long>(), family["runs"].get<long long>(),
                  family["runs_ok"].get<long long>());
    out << line;
  }
  out << "\nplans:\n";
  for (const json& plan : stats["by_plan"]) {
    std::snprintf(line, sizeof line, "  %-24s %6lld runs, %lld ok\n", plan["plan"].get<std::string>().c_str(),
                  plan["runs"].get<long long>(), plan["runs_ok"].get<long long>());
    out << line;
  }
  out << "\noptions (value: runs):\n";
  for (const auto& option : stats["options"].items()) {
    out << "  " << option.key() << ":";
    for (const json& value : option.value()["values"]) {
      std::string text = value["value"].is_string() ? value["value"].get<std::string>() : value["value"].dump();
      out << " " << (text.empty() ? "-" : text) << ":" << value["runs"].get<long long>();
    }
    out << "\n";
  }
  out << "\nmeasurements:\n";
  for (const auto& item : stats["measurements"].items()) {
    const json& range = item.value();
    if (range["count"].get<long long>() == 0) {
      out << "  " << item.key() << ": none\n";
      continue;
    }
    // Counts and bytes as integers, times and loads with 4 significant digits.
    bool whole = item.key() == "iterations" || item.key() == "peak_bytes";
    std::snprintf(line, sizeof line,
                  whole ? "  %-18s min %.0f  max %.0f  mean %.0f  (%lld runs)\n"
                        : "  %-18s min %.4g  max %.4g  mean %.4g  (%lld runs)\n",
                  item.key().c_str(), range["min"].get<double>(), range["max"].get<double>(),
                  range["mean"].get<double>(), range["count"].get<long long>());
    out << line;
  }
  for (const char* key : {"repeat_spread", "repeat_spread_normalised"}) {
    if (!stats.contains(key)) continue;
    const json& spread = stats[key];
    if (spread["configurations"].get<long long>() == 0) continue;
    std::snprintf(
        line, sizeof line,
        "%snoise floor%s: %.1f%% (a repeat vs. its configuration's mean, over %lld runs: what `dnncast evaluate` "
        "reports); repeats of %lld configurations differ by %.1f%% (median), %.1f%% (p90) of the median time\n",
        std::string(key) == "repeat_spread" ? "\n" : "",
        std::string(key) == "repeat_spread" ? "" : " (drift-normalised)", 100 * spread["floor_mre"].get<double>(),
        spread["runs"].get<long long>(), spread["configurations"].get<long long>(),
        100 * spread["median_rel_range"].get<double>(), 100 * spread["p90_rel_range"].get<double>());
    out << line;
  }
  return out.str();
}

std::vector<double> noise_floor_errors(const std::vector<std::vector<double>>& repeats) {
  std::vector<double> errors;
  for (const std::vector<double>& values : repeats) {
    if (values.size() < 2) continue;
    double sum = 0;
    for (double value : values) sum += value;
    const double k = static_cast<double>(values.size());
    const double scale = std::sqrt((k - 1) / k);
    for (double value : values) {
      if (!(value > 0)) continue;
      const double others = (sum - value) / (k - 1);
      errors.push_back(scale * std::abs(others - value) / value);
    }
  }
  return errors;
}

}  // namespace dnncast::store
