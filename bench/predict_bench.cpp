// Prediction speed (issue goals: resnet50 forecast including featurization under 100 us; a batch
// sweep of one graph over 100,000 configurations a second). Uses the first shipped predictor set
// in data/predictors, or else an XGBoost model with the default hyperparameters fitted here on
// zoo feature rows (the same size of model AutoML usually picks).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "core/error.h"
#include "features/featurizer.h"
#include "features/layer_features.h"
#include "forecast/forecast.h"
#include "forecast/layer_model.h"
#include "gpu/gpu_calibration.h"
#include "gpu/gpu_forecast.h"
#include "import/model_source.h"
#include "models/zoo.h"
#include "serve/serve_api.h"
#include "study/training.h"

namespace {

using namespace dnncast;

features::HardwareFeatures bench_hardware() { return {2, false, 0, 0, int64_t{8} << 30}; }

std::unique_ptr<forecast::Predictor> make_predictor() {
  std::string root = forecast::default_predictor_root();
  std::vector<std::string> sets = forecast::shipped_predictor_sets(root);
  if (!sets.empty()) {
    try {
      return std::make_unique<forecast::Predictor>(forecast::Predictor::load(sets.front() + "/time"));
    } catch (const InputError& error) {
      std::fprintf(stderr, "predict_bench: %s; timing a stand-in predictor instead\n", error.what());
    }
  }
  // Fallback: rows of a few zoo models x batches, a smooth made-up target.
  std::vector<std::vector<double>> rows;
  std::vector<double> targets;
  for (const char* name : {"resnet18", "resnet50", "vgg11", "mobilenet_v2", "squeezenet1_1", "densenet121"}) {
    models::ModelSpec spec;
    spec.input = {3, 64, 64};
    features::GraphFeatures graph = features::graph_features(models::build_zoo_model(name, spec));
    for (int64_t batch = 1; batch <= 64; batch *= 2)
      for (int64_t threads : {1, 2}) {
        features::TrainingConfig config;
        config.batch = batch;
        config.threads = threads;
        rows.push_back(features::featurize(graph, config, bench_hardware()));
        targets.push_back(
            1e-7 * graph.flops_train_per_sample * static_cast<double>(batch) / static_cast<double>(threads) + 2);
      }
  }
  learn::Matrix x(static_cast<int64_t>(rows.size()), static_cast<int64_t>(features::feature_count()));
  for (size_t row = 0; row < rows.size(); ++row)
    for (size_t col = 0; col < rows[row].size(); ++col)
      x(static_cast<int64_t>(row), static_cast<int64_t>(col)) = rows[row][col];
  forecast::Manifest manifest;
  manifest.target = "time";
  manifest.unit = "ms";
  manifest.feature_version = features::kFeatureVersion;
  manifest.features = features::feature_names();
  manifest.columns = study::varying_columns(x);
  learn::Matrix selected(x.rows(), static_cast<int64_t>(manifest.columns.size()));
  for (size_t index = 0; index < manifest.columns.size(); ++index)
    selected.col(static_cast<int64_t>(index)) = x.col(manifest.columns[index]);
  learn::Vector y = Eigen::Map<learn::Vector>(targets.data(), static_cast<int64_t>(targets.size())).array().log();
  auto learner = learn::make_learner("xgboost");
  learner->fit(selected, y);
  manifest.learner = "xgboost";
  manifest.hyperparameters = learner->hyperparameters();
  manifest.transform = learn::TargetTransform::log();
  return std::make_unique<forecast::Predictor>(manifest, std::move(learner));
}

forecast::Predictor& predictor() {
  static std::unique_ptr<forecast::Predictor> instance = make_predictor();
  return *instance;
}

// resnet50 at 3x224x224 and batch 32.
const Graph& resnet50() {
  static const Graph graph = [] {
    models::ModelSpec spec;
    spec.batch = 32;
    return models::build_zoo_model("resnet50", spec);
  }();
  return graph;
}

features::TrainingConfig config_at(int64_t batch) {
  features::TrainingConfig config;
  config.batch = batch;
  config.threads = 2;
  return config;
}

// The whole forecast from a built graph: one featurization pass at batch 32, the model.
void BM_PredictResnet50(benchmark::State& state) {
  forecast::Predictor& model = predictor();
  const Graph& graph = resnet50();
  for (auto _ : state) {
    std::vector<double> row = features::featurize_graph(graph, config_at(32), bench_hardware());
    benchmark::DoNotOptimize(model.predict_one(row));
  }
}
BENCHMARK(BM_PredictResnet50)->Unit(benchmark::kMicrosecond);

// The same, also building resnet50 from the zoo (what `dnncast predict resnet50` does).
void BM_PredictResnet50FromZoo(benchmark::State& state) {
  forecast::Predictor& model = predictor();
  for (auto _ : state) {
    models::ModelSpec spec;
    spec.batch = 32;
    Graph graph = import::load_model("resnet50", spec);
    std::vector<double> row = features::featurize_graph(graph, config_at(32), bench_hardware());
    benchmark::DoNotOptimize(model.predict_one(row));
  }
}
BENCHMARK(BM_PredictResnet50FromZoo)->Unit(benchmark::kMicrosecond);

// resnet50 at 224 px, batch 32 as `predict` makes it at the largest trained input with the shipped set's
// corrected layer-wise model (forecast/forecast.cpp): the layer sites, the layer-wise sum over them, one
// featurization pass and the corrected predictor. Skipped when the first shipped set has none.
void BM_PredictResnet50Corrected(benchmark::State& state) {
  static const std::optional<forecast::PredictorSet> set = []() -> std::optional<forecast::PredictorSet> {
    std::vector<std::string> sets = forecast::shipped_predictor_sets(forecast::default_predictor_root());
    if (sets.empty()) return std::nullopt;
    try {
      return forecast::load_predictor_set(sets.front());
    } catch (const InputError& error) {
      std::fprintf(stderr, "predict_bench: %s\n", error.what());
      return std::nullopt;
    }
  }();
  if (!set || !set->corrected || !set->layers) {
    state.SkipWithError("the first shipped predictor set has no corrected layer-wise model");
    return;
  }
  const Graph& graph = resnet50();
  const int column = features::feature_index("est.layers_ms");
  for (auto _ : state) {
    const features::LayerSites sites = features::layer_sites(graph);
    std::vector<double> row = features::featurize_graph(graph, config_at(32), bench_hardware());
    row[static_cast<size_t>(column)] = set->layers->iteration_ms(sites, config_at(32), false);
    benchmark::DoNotOptimize(set->corrected->predict_one(row));
  }
}
BENCHMARK(BM_PredictResnet50Corrected)->Unit(benchmark::kMicrosecond);

// Parts of it: the single featurization pass, and the batch-independent split a sweep uses.
void BM_FeaturizeResnet50(benchmark::State& state) {
  const Graph& graph = resnet50();
  for (auto _ : state) benchmark::DoNotOptimize(features::featurize_graph(graph, config_at(32), bench_hardware()));
}
BENCHMARK(BM_FeaturizeResnet50)->Unit(benchmark::kMicrosecond);

void BM_LayerSitesResnet50(benchmark::State& state) {
  const Graph& graph = resnet50();
  for (auto _ : state) benchmark::DoNotOptimize(features::layer_sites(graph));
}
BENCHMARK(BM_LayerSitesResnet50)->Unit(benchmark::kMicrosecond);

void BM_GraphFeaturesResnet50(benchmark::State& state) {
  const Graph& graph = resnet50();
  for (auto _ : state) benchmark::DoNotOptimize(features::graph_features(graph));
}
BENCHMARK(BM_GraphFeaturesResnet50)->Unit(benchmark::kMicrosecond);

void BM_PredictOneCachedGraph(benchmark::State& state) {
  forecast::Predictor& model = predictor();
  features::GraphFeatures graph_part = features::graph_features(resnet50());
  int64_t batch = 1;
  for (auto _ : state) {
    std::vector<double> row = features::featurize(graph_part, config_at(batch), bench_hardware());
    benchmark::DoNotOptimize(model.predict_one(row));
    batch = batch % 256 + 1;
  }
}
BENCHMARK(BM_PredictOneCachedGraph)->Unit(benchmark::kMicrosecond);

// A batch sweep of one graph: featurize every configuration (fixed + batch x per-sample part) into
// one row-major block of 1024 rows and predict the block at once.
void BM_BatchSweep(benchmark::State& state) {
  forecast::Predictor& model = predictor();
  features::GraphFeatures graph_part = features::graph_features(resnet50());
  int64_t configs = state.range(0);
  const int64_t block = 1024;
  size_t columns = features::feature_count();
  std::vector<double> rows(static_cast<size_t>(block) * columns);
  std::vector<forecast::Estimate> forecasts(static_cast<size_t>(block));
  for (auto _ : state) {
    for (int64_t start = 0; start < configs; start += block) {
      int64_t count = std::min(block, configs - start);
      for (int64_t index = 0; index < count; ++index)
        features::featurize(graph_part, config_at(start + index + 1), bench_hardware(), rows.data() + index * columns);
      model.predict_rows(rows.data(), count, forecasts.data());
      benchmark::DoNotOptimize(forecasts.data());
    }
  }
  state.SetItemsProcessed(state.iterations() * configs);
}
BENCHMARK(BM_BatchSweep)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

// Issue 37: a distinct forecast the way `serve` and Python make one, whole: apps::forecast() on the shipped set
// (loaded once per process, apps::cached_predictor_set), a new batch every iteration so that nothing is reused but
// the set (graph built, featurized, the corrected layer-wise model at 224 px, memory simulated, host matched).
// Since the layer-wise model caches its rows across requests, the walk goes on across the benchmark's runs (a
// static counter) over 2,048 configurations (batches 1-1024, SGD then Adam), so that one process of fewer
// iterations never repeats one: what is cached is what distinct requests share (the sums at the largest trained
// batch, repeated layers), not whole answers.
void distinct_forecast(benchmark::State& state, int64_t size) {
  forecast::ForecastRequest request;
  request.model.name = "resnet50";
  request.model.spec.input = {3, size, size};
  static int64_t walked = 0;
  for (auto _ : state) {
    request.model.spec.batch = 1 + walked % 1024;
    request.optimizer = (walked / 1024) % 2 == 0 ? Optimizer::Sgd : Optimizer::Adam;
    ++walked;
    benchmark::DoNotOptimize(forecast::forecast(request).time_ms);
  }
}
void BM_ForecastDistinctResnet50At224(benchmark::State& state) { distinct_forecast(state, 224); }
BENCHMARK(BM_ForecastDistinctResnet50At224)->Unit(benchmark::kMicrosecond);
void BM_ForecastDistinctResnet50At64(benchmark::State& state) { distinct_forecast(state, 64); }
BENCHMARK(BM_ForecastDistinctResnet50At64)->Unit(benchmark::kMicrosecond);

// The same through serve's request handler without sockets (JSON body in, JSON answer out, the response cache
// missed every time).
void BM_ServeDistinctPredict(benchmark::State& state) {
  serve::Api api(serve::ApiOptions{});
  serve::HttpRequest request;
  request.method = "POST";
  request.path = "/v1/predict";
  request.content_type = "application/json";
  static int64_t batch = 1;  // a new batch across the benchmark's runs too (as above)
  for (auto _ : state) {
    request.body = "{\"model\": \"resnet50\", \"batch\": " + std::to_string(batch) + ", \"input\": \"3x224x224\"}";
    batch = batch % 4096 + 1;
    const serve::HttpResponse response = api.handle(request);
    if (response.status != 200) state.SkipWithError(response.body.c_str());
    benchmark::DoNotOptimize(response.body.size());
  }
}
BENCHMARK(BM_ServeDistinctPredict)->Unit(benchmark::kMicrosecond);

// Issue 37: a distinct GPU forecast as `serve --distinct --device a100-40gb` asks it: resnet50 at 224 px through the
// per-kernel GPU time model, a new batch each time (1-1024), memory simulated.
void BM_GpuForecastDistinctResnet50(benchmark::State& state) {
  gpu::GpuForecastRequest request;
  request.model.name = "resnet50";
  request.gpu = hardware::shipped_catalogue().gpu("a100-40gb");
  static int64_t batch = 1;
  for (auto _ : state) {
    request.model.spec.batch = batch;
    batch = batch % 1024 + 1;
    benchmark::DoNotOptimize(gpu::forecast_gpu(request).time_ms);
  }
}
BENCHMARK(BM_GpuForecastDistinctResnet50)->Unit(benchmark::kMicrosecond);

// `predict CONFIG --device GPU` for a Hugging Face config (issue 34's goal: under 1 ms): the config read and
// parsed, the graph built, every kernel timed by the per-kernel model, memory simulated; a new batch each time.
void gpu_config_forecast(benchmark::State& state, const char* config, int64_t seq) {
  const gpu::GpuCalibration calibration = gpu::load_gpu_calibration();
  gpu::GpuForecastRequest request;
  request.model.name = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/" + config;
  request.model.spec.seq_len = seq;
  request.gpu = hardware::shipped_catalogue().gpu("h100");
  int64_t batch = 1;
  for (auto _ : state) {
    request.model.spec.batch = batch;
    batch = batch % 64 + 1;
    benchmark::DoNotOptimize(gpu::forecast_gpu(request, calibration).time_ms);
  }
}
void BM_GpuForecastGpt2Config(benchmark::State& state) { gpu_config_forecast(state, "gpt2.json", 1024); }
BENCHMARK(BM_GpuForecastGpt2Config)->Unit(benchmark::kMicrosecond);
void BM_GpuForecastLlama2Config(benchmark::State& state) { gpu_config_forecast(state, "llama-2-7b-hf.json", 2048); }
BENCHMARK(BM_GpuForecastLlama2Config)->Unit(benchmark::kMicrosecond);

// `predict llama-2-70b-hf.json --gpus 8 --parallel tp=8 --device a100-40gb --precision bf16` (issue 48's goal: under
// 10 ms): the config read and the graph built, each node's tensor-parallel part found, the GPU's share timed by the
// per-kernel model, the all-reduces by the collective model; a new batch each time.
void BM_ParallelForecastLlama70bTp8(benchmark::State& state) {
  const gpu::GpuCalibration calibration = gpu::load_gpu_calibration();
  gpu::GpuForecastRequest request;
  request.model.name = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-2-70b-hf.json";
  request.model.spec.seq_len = 4096;
  request.gpu = hardware::shipped_catalogue().gpu("a100-40gb");
  request.precision = gpu::GpuPrecision::Bf16;
  request.optimizer = Optimizer::AdamW;
  request.parallel = gpu::parse_parallel("tp=8", 8, 1, 8);
  int64_t batch = 1;
  for (auto _ : state) {
    request.model.spec.batch = batch;
    batch = batch % 8 + 1;
    benchmark::DoNotOptimize(gpu::forecast_gpu(request, calibration).time_ms);
  }
}
BENCHMARK(BM_ParallelForecastLlama70bTp8)->Unit(benchmark::kMillisecond);

// `memory CONFIG --device GPU` for a 7B Hugging Face config (issue 35's goal: under 10 ms): the config read and
// parsed, the graph built (LoRA applied), the training step simulated through the caching-allocator model and
// the GPU's overheads; a new batch each time. Arg 1: also one GPU's share under FSDP over 8 GPUs.
void BM_MemoryLlama2Config(benchmark::State& state) {
  forecast::MemoryOptions options;
  options.device = "a100-80gb";
  options.optimizer = "adamw";
  if (state.range(0) == 1) {
    options.sharding = "fsdp";
    options.gpus = 8;
  }
  models::ModelSpec spec;
  spec.seq_len = 2048;
  spec.lora = "r=16,targets=q,k,v,o";
  const std::string model = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-2-7b-hf.json";
  int64_t batch = 1;
  int64_t required = 0;
  for (auto _ : state) {
    spec.batch = batch;
    batch = batch % 8 + 1;
    const forecast::MemoryForecast forecast =
        forecast::forecast_memory(forecast::make_memory_request({model, spec, {}}, options, OptionStyle::Flag));
    required = forecast.sharded ? forecast.sharded->required_bytes : forecast.report.required_bytes;
    benchmark::DoNotOptimize(required);
  }
  state.counters["GiB"] = static_cast<double>(required) / (1 << 30);
}
BENCHMARK(BM_MemoryLlama2Config)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Issue 47's goal: `memory llama-2-7b-hf.json --seq 512 --lora r=16 --quantize nf4 --precision bf16 --device rtx4090
// --max-batch gpu` under 10 ms: the QLoRA forecast and the search for the largest batch that fits (each a
// simulation of the training step). Arg 0: LoRA alone, 1: QLoRA (nf4).
void BM_MemoryLlama2QloraMaxBatch(benchmark::State& state) {
  forecast::MemoryOptions options;
  options.device = "rtx4090";
  options.precision = "bf16";
  options.max_batch = "gpu";
  models::ModelSpec spec;
  spec.seq_len = 512;
  spec.lora = "r=16";
  if (state.range(0) == 1) spec.quantize = "nf4";
  const std::string model = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-2-7b-hf.json";
  int64_t largest = 0, simulations = 0;
  for (auto _ : state) {
    const forecast::MemoryForecast forecast =
        forecast::forecast_memory(forecast::make_memory_request({model, spec, {}}, options, OptionStyle::Flag));
    largest = forecast.max_batch.batch;
    simulations = forecast.max_batch.simulations;
    benchmark::DoNotOptimize(largest);
  }
  state.counters["largest_batch"] = static_cast<double>(largest);
  state.counters["searched"] = static_cast<double>(simulations);
}
BENCHMARK(BM_MemoryLlama2QloraMaxBatch)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
