// The jobs and cluster files of `dnncast schedule` (src/decide/schedule_jobs.h): the bytes as one JSON
// document, read both as a jobs file and as a cluster file, and each node's GPU looked up in the shipped
// catalogue (data/hardware, found from the source tree that `make fuzz` runs in).
#include <cstdint>
#include <nlohmann/json.hpp>

#include "decide/schedule_jobs.h"
#include "fuzz_common.h"
#include "hardware/catalogue.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json document = nlohmann::json::parse(data, data + size, nullptr, false);
  if (document.is_discarded()) return 0;  // not JSON: read_jobs reports the parser's message
  dnncast::fuzz::run_one([&] { dnncast::apps::parse_jobs(document, "jobs.json"); });
  dnncast::fuzz::run_one([&] {
    for (const dnncast::apps::NodeSpec& node : dnncast::apps::parse_cluster(document, "cluster.json"))
      dnncast::hardware::shipped_catalogue().gpu(node.gpu);
  });
  return 0;
}
