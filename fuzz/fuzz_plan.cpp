// Campaign plan reader (src/data/plan): parse, validate and expand, with small bounds so that one
// input stays fast (the CLI's bounds are PlanLimits' defaults), then shard the entries.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "measure/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return dnncast::fuzz::run_one([&] {
    nlohmann::json document;
    try {
      document = nlohmann::json::parse(dnncast::fuzz::text_of(data, size));
    } catch (const nlohmann::json::exception&) {
      return;  // load_plan turns these into InputError
    }
    dnncast::measure::PlanLimits limits;
    limits.max_networks = 64;
    limits.max_configurations = 20000;
    // Graph files are resolved against a folder that does not exist: only the error paths run.
    dnncast::measure::Plan plan =
        dnncast::measure::parse_plan(document, "fuzz-plan.json", "/nonexistent-fuzz-dir", limits);
    dnncast::measure::shard_entries(plan, dnncast::measure::parse_shard("1/3"));
    plan.run_count();
  });
}
