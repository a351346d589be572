// Predictor bundle manifest reader (src/forecast/predictor.h): the bytes are a manifest.json in a
// bundle folder beside a small valid XGBoost model, so that a manifest that parses reaches the
// learner's loader and a prediction.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "forecast/predictor.h"
#include "features/featurizer.h"
#include "fuzz_common.h"

namespace {

// One folder per process (libFuzzer's -fork/-jobs workers each get theirs).
const std::string& bundle_dir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/dnncast-fuzz-bundle-XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) std::abort();
    return std::string(made);
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The shipped bundle's model, when the fuzzer runs from the source tree (make fuzz does).
  const char* source = std::getenv("DNNCAST_FUZZ_MODEL");
  std::string model = source ? source : "data/predictors/amd-epyc-2cpu/time/xgboost.json";
  std::ifstream in(model, std::ios::binary);
  std::ofstream out(bundle_dir() + "/xgboost.json", std::ios::binary);
  if (in) out << in.rdbuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return dnncast::fuzz::run_one([&] {
    {
      std::ofstream manifest(bundle_dir() + "/manifest.json", std::ios::binary | std::ios::trunc);
      manifest.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    dnncast::apps::Predictor predictor = dnncast::apps::Predictor::load(bundle_dir());
    predictor.predict_one(std::vector<double>(dnncast::features::feature_count(), 1.0));
  });
}
