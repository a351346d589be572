#include "forecast/host_match.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json_limits.h"
#include "features/featurizer.h"
#include "forecast/predictor.h"
#include "hardware/cpu_conv.h"
#include "hardware/fingerprint.h"
#include "hardware/hardware.h"
#include "records/records.h"

namespace dnncast::forecast {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kNotRecorded = "not recorded";

int64_t memory_gib(int64_t bytes) { return (bytes + (int64_t{1} << 29)) >> 30; }  // as EnvironmentRecord::hash

// One compared field: its value on either side, "" where not recorded; `shown`: the trained side
// as the difference names it, when not its value (an unrecorded ISA, compared as the assumed one).
struct Field {
  std::string name, host, trained;
  std::string shown = {};
};

// An environment that did not record its ISA ran some AVX-512 level (its peaks follow the AVX-512
// rules: docs/DATASET.md): it matches a host of any AVX-512 level, and is compared as avx512_core
// with any other.
std::string effective_isa_name(const records::EnvironmentRecord& environment, const std::string& host_isa) {
  if (!environment.isa.empty()) return environment.isa;
  if (hardware::is_avx512(hardware::parse_isa(host_isa))) return host_isa;
  return hardware::isa_name(features::kUnrecordedIsa);
}

std::string number_or_empty(int64_t value) { return value > 0 ? std::to_string(value) : ""; }

std::vector<Field> compared_fields(const records::EnvironmentRecord& host, const records::EnvironmentRecord& trained) {
  // cpuid's family / model / stepping are recorded together with the vendor (a model may be 0).
  auto cpuid = [](const records::EnvironmentRecord& environment, int64_t value) {
    return environment.cpu_vendor.empty() ? std::string() : std::to_string(value);
  };
  return {
      {"isa", host.isa.empty() ? "unknown" : host.isa, effective_isa_name(trained, host.isa), isa_text(trained)},
      {"cpu_model", host.cpu_model, trained.cpu_model},
      {"cores", number_or_empty(host.cores), number_or_empty(trained.cores)},
      {"memory_gib", number_or_empty(memory_gib(host.memory_bytes)), number_or_empty(memory_gib(trained.memory_bytes))},
      {"cpu_vendor", host.cpu_vendor, trained.cpu_vendor},
      {"cpu_family", cpuid(host, host.cpu_family), cpuid(trained, trained.cpu_family)},
      {"cpu_model_number", cpuid(host, host.cpu_model_number), cpuid(trained, trained.cpu_model_number)},
      {"cpu_stepping", cpuid(host, host.cpu_stepping), cpuid(trained, trained.cpu_stepping)},
      {"aten_capability", host.aten_capability, trained.aten_capability},
      {"l2_bytes", number_or_empty(host.l2_bytes), number_or_empty(trained.l2_bytes)},
      {"l3_bytes", number_or_empty(host.l3_bytes), number_or_empty(trained.l3_bytes)},
  };
}

// The differences of one environment: disagreements first, then what only the host records.
struct Comparison {
  std::vector<FieldDifference> disagree, unrecorded;
};

Comparison compare(const std::vector<Field>& fields) {
  Comparison result;
  for (const Field& field : fields) {
    if (field.host.empty()) continue;
    if (field.trained.empty())
      result.unrecorded.push_back({field.name, field.host, kNotRecorded});
    else if (field.host != field.trained)
      result.disagree.push_back({field.name, field.host, field.shown.empty() ? field.trained : field.shown});
  }
  return result;
}

HostMatch best_of(const std::vector<Comparison>& comparisons, const std::vector<records::EnvironmentRecord>& trained) {
  size_t best = 0;
  for (size_t index = 1; index < comparisons.size(); ++index) {
    const Comparison& candidate = comparisons[index];
    const Comparison& current = comparisons[best];
    if (candidate.disagree.size() < current.disagree.size() ||
        (candidate.disagree.size() == current.disagree.size() &&
         candidate.unrecorded.size() < current.unrecorded.size()))
      best = index;
  }
  HostMatch match;
  match.environment = trained.empty() ? "" : trained[best].hash();
  match.exact = comparisons[best].disagree.empty();
  if (!match.exact) {
    match.differs = comparisons[best].disagree;
    match.differs.insert(match.differs.end(), comparisons[best].unrecorded.begin(), comparisons[best].unrecorded.end());
  }
  return match;
}

}  // namespace

json HostMatch::to_json() const {
  json fields = json::array();
  for (const FieldDifference& difference : differs)
    fields.push_back({{"field", difference.field}, {"host", difference.host}, {"predictor", difference.predictor}});
  json out = {
      {"match", exact ? "exact" : "nearest"}, {"environment", environment}, {"differs", fields}, {"remedy", remedy}};
  if (!speed.is_null()) out["speed"] = speed;
  return out;
}

records::EnvironmentRecord host_environment(hardware::CpuIsa isa) {
  const hardware::HostInfo& host = hardware::detect_host();
  records::EnvironmentRecord environment;
  environment.cpu_model = host.cpu_model;
  environment.cores = host.logical_cores;
  environment.memory_bytes = host.memory_bytes;
  records::set_cpu_fingerprint(environment, hardware::host_cpu_fingerprint());
  if (isa != hardware::CpuIsa::Unknown) {
    environment.isa = hardware::isa_name(isa);
    // ATen's own choice on a CPU that reaches this ISA (hardware::highest_aten_capability).
    environment.aten_capability = hardware::is_avx512(isa)        ? "avx512"
                                  : isa >= hardware::CpuIsa::Avx2 ? "avx2"
                                                                  : "default";
    environment.isa_cap.clear();
  }
  return environment;
}

std::string isa_text(const records::EnvironmentRecord& environment) {
  if (!environment.isa.empty()) return environment.isa;
  return std::string("(not recorded; an AVX-512 level, assumed ") + hardware::isa_name(features::kUnrecordedIsa) + ")";
}

HostMatch match_host(const records::EnvironmentRecord& host, const std::vector<records::EnvironmentRecord>& trained) {
  std::vector<Comparison> comparisons;
  if (trained.empty()) comparisons.push_back(compare(compared_fields(host, records::EnvironmentRecord{})));
  for (const records::EnvironmentRecord& environment : trained)
    comparisons.push_back(compare(compared_fields(host, environment)));
  return best_of(comparisons, trained);
}

HostMatch match_isa(const std::string& isa, const std::vector<records::EnvironmentRecord>& trained) {
  auto fields_of = [&](const records::EnvironmentRecord& environment) {
    return std::vector<Field>{
        {"isa", isa.empty() ? "unknown" : isa, effective_isa_name(environment, isa), isa_text(environment)}};
  };
  std::vector<Comparison> comparisons;
  if (trained.empty()) comparisons.push_back(compare(fields_of(records::EnvironmentRecord{})));
  for (const records::EnvironmentRecord& environment : trained) comparisons.push_back(compare(fields_of(environment)));
  return best_of(comparisons, trained);
}

namespace {

// A word as a POSIX shell reads it back: unchanged when it holds only safe characters, else single-quoted.
std::string shell_word(const std::string& word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string("-_./:=+,@").find(c) != std::string::npos;
  });
  if (safe) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::string calibrate_remedy(const std::string& predictor_dir, const std::string& model, int64_t batch,
                             const std::string& input) {
  std::string command = "dnncast calibrate " + shell_word(model) + " --batch " + std::to_string(batch);
  if (!input.empty()) command += (input.find('x') != std::string::npos ? " --input " : " --seq ") + input;
  if (!predictor_dir.empty()) command += " --predictor " + shell_word(predictor_dir);
  return command + " --minutes " + std::to_string(kCalibrateMinutes) + " (" + std::to_string(kCalibrateMinutes) +
         " minutes of this host's time: the model's own layers and a few real iterations timed here; later "
         "forecasts on this host use it)";
}

std::string host_match_note(const HostMatch& match) {
  std::string disagree, unrecorded;
  for (const FieldDifference& difference : match.differs) {
    if (difference.predictor == kNotRecorded) {
      unrecorded += (unrecorded.empty() ? "" : ", ") + difference.field + " " + difference.host;
    } else {
      disagree +=
          (disagree.empty() ? "" : ", ") + difference.field + " " + difference.host + " vs " + difference.predictor;
    }
  }
  std::string fields = disagree;
  if (!unrecorded.empty()) fields += (fields.empty() ? "" : ", ") + unrecorded + " vs not recorded";
  std::string note = "no predictor was trained on this host (" + fields + "); using the nearest, environment " +
                     (match.environment.empty() ? std::string("(none recorded)") : match.environment) + ".";
  if (!match.remedy.empty()) note += " To adapt it: " + match.remedy;
  return note;
}

HostMatch simulator_isa_match(hardware::CpuIsa simulated, const std::string& measure_command) {
  // The simulator's rules follow the ISA alone; which ISAs they were checked on is memory's fact.
  HostMatch match;
  match.exact = !hardware::conv_rules_evidence(simulated).empty();
  if (!match.exact) {
    match.differs.push_back({"isa", hardware::isa_name(simulated), "avx2 or an AVX-512 level"});
    match.remedy = measure_command;
  }
  return match;
}

std::string simulator_isa_note(const HostMatch& match, const std::string& source) {
  std::string simulated = match.differs.empty() ? "" : match.differs.front().host;
  std::string note = "the simulator followed isa " + simulated + " (" + source +
                     "); its convolution rules were checked on measured runs under avx2 and AVX-512 only.";
  if (!match.remedy.empty()) note += " To check it here: " + match.remedy;
  return note;
}

std::vector<records::EnvironmentRecord> manifest_environments(const std::string& bundle_dir) {
  std::vector<records::EnvironmentRecord> environments;
  fs::path manifest = fs::path(bundle_dir) / "manifest.json";
  if (!fs::exists(manifest)) manifest = fs::path(bundle_dir) / "time" / "manifest.json";
  std::ifstream file(manifest);
  if (!file) return environments;
  const std::string text = read_all(file);
  if (json_nesting(text) > kMaxJsonNesting) return environments;
  json document = json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.contains("environments") || !document["environments"].is_array())
    return environments;
  try {
    for (const json& environment : document["environments"])
      environments.push_back(records::environment_from_json(environment));
  } catch (const json::exception&) {
    environments.clear();
  }
  return environments;
}

}  // namespace dnncast::forecast
