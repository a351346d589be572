// Predictor bundle manifest reader (src/forecast/predictor.h): the bytes are a manifest.json in a bundle folder
// beside small valid models of every learner, so that a manifest that parses reaches its learner's loader and a
// prediction.
//
// The models are fitted here at start-up (kColumns columns, as the seeds' manifests select; a few trees for
// XGBoost): the shipped XGBoost model (2 MB, 400 trees) took 1.4 s to load under ASan, and each seed that
// parsed paid it. An XGBoost model loads two ways: from its xgboost.trees beside the JSON (what save() writes
// and the shipped bundles hold) or, without that file, through XGBoost's JSON loader; an input of even size
// reads the bundle that has the trees file, an odd size the one without.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "features/featurizer.h"
#include "forecast/predictor.h"
#include "fuzz_common.h"
#include "learn/learner.h"

namespace {

constexpr int64_t kColumns = 332, kRows = 64;

// One folder per process (libFuzzer's -fork/-jobs workers each get theirs), removed when the process exits
// normally (libFuzzer's -max_total_time and -runs end with exit(); a crash leaves it beside its artifact).
struct ScratchFolder {
  std::string path;
  ScratchFolder() {
    char pattern[] = "/tmp/dnncast-fuzz-bundle-XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) std::abort();
    path = made;
  }
  ~ScratchFolder() {
    std::error_code error;
    std::filesystem::remove_all(path, error);
  }
};

const std::string& with_trees_dir() {
  static const ScratchFolder folder;
  return folder.path;
}

const std::string& json_only_dir() {
  static const ScratchFolder folder;
  return folder.path;
}

// Each registered learner fitted on the same small table and saved into both folders (XGBoost and the random
// forest share xgboost.json: the first written stays).
void save_small_models() {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  dnncast::learn::Matrix x(kRows, kColumns);
  dnncast::learn::Vector y(kRows);
  for (int64_t row = 0; row < kRows; ++row) {
    for (int64_t column = 0; column < kColumns; ++column) x(row, column) = uniform(random);
    y(row) = 1.0 + x(row, 0) + 2.0 * x(row, 1);
  }
  for (const dnncast::learn::LearnerInfo& info : dnncast::learn::learner_registry()) {
    nlohmann::json small = nlohmann::json::object();
    if (info.name == "xgboost") small = {{"rounds", 8}, {"max_depth", 3}};
    if (info.name == "random_forest") small = {{"trees", 8}, {"max_depth", 4}};
    try {
      std::unique_ptr<dnncast::learn::Learner> learner = dnncast::learn::make_learner(info.name, small);
      learner->fit(x, y);
      for (const std::string& dir : {with_trees_dir(), json_only_dir()})
        if (!std::ifstream(dir + "/" + learner->model_file())) learner->save(dir);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "fuzz_predictor_manifest: no %s model (%s)\n", info.name.c_str(), error.what());
    }
  }
  std::remove((json_only_dir() + "/xgboost.trees").c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  save_small_models();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = size % 2 == 0 ? with_trees_dir() : json_only_dir();
  return dnncast::fuzz::run_one([&] {
    {
      std::ofstream manifest(dir + "/manifest.json", std::ios::binary | std::ios::trunc);
      manifest.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    dnncast::forecast::Predictor predictor = dnncast::forecast::Predictor::load(dir);
    predictor.predict_one(std::vector<double>(dnncast::features::feature_count(), 1.0));
  });
}
