// The training setup every module shares: which optimizer, at which precision, on which device.
// One enum each, one name table each (training_setup.cpp): the names are what the SQLite `runs`
// columns, CSV files, JSON outputs and predictor manifests store ("sgd", "fp32", "cpu"), and the
// aliases are the other spellings an input may use ("f32"). Parsing ignores case ("SGD", "CUDA").
//
// Adding an optimizer: its entry in kOptimizerTable (training_setup.cpp) with its facts, its
// implementation in profile/executor.cpp (make_optimizer), and its optimizer-step recipe in
// memory/training_trace.cpp (step()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dnncast {

enum class Optimizer { Sgd, Adam, AdamW };  // sgd has momentum 0.9 (libtorch's torch::optim)
// bf16 / fp16: autocast mixed precision; bf16-pure: parameters, activations, gradients and optimizer states in bf16
enum class Precision { Fp32, Bf16, Fp16, Bf16Pure };
enum class Device { Cpu, Cuda };
constexpr size_t kOptimizerCount = 3;
constexpr size_t kPrecisionCount = 4;
constexpr size_t kDeviceCount = 2;

// What a run trains with. The run, profile, feature, memory and trace configs derive from it, so
// that one of them converts to another by copying this part (`TrainingSetup& to = a; to = b;`).
struct TrainingSetup {
  Optimizer optimizer = Optimizer::Sgd;
  Precision precision = Precision::Fp32;
  Device device = Device::Cpu;

  // Copies the setup of another config (a RunConfig into a TrainConfig, ...), leaving the rest.
  void set_setup(const TrainingSetup& other) { *this = other; }
};
bool operator==(const TrainingSetup& a, const TrainingSetup& b);
// Orders as the stored names do ("adam" < "sgd", "bf16" < "fp32"): sets and maps of configs iterate
// in the order they did when these were strings.
bool operator<(const TrainingSetup& a, const TrainingSetup& b);

// The stored name: "sgd", "adamw"; "fp32", "bf16"; "cpu", "cuda".
const std::string& name(Optimizer optimizer);
const std::string& name(Precision precision);
const std::string& name(Device device);

// Name or alias (any case) -> value. Throws InputError naming `what` (the flag or JSON path) and the
// valid names: "--optimizer 'adm': expected one of sgd, adam, adamw".
Optimizer parse_optimizer(const std::string& text, const std::string& what = "optimizer");
Precision parse_precision(const std::string& text, const std::string& what = "precision");
Device parse_device(const std::string& text, const std::string& what = "device");

// Every value in table order, and its names joined: "sgd, adam, adamw".
const std::vector<Optimizer>& all_optimizers();
const std::vector<Precision>& all_precisions();
const std::vector<Device>& all_devices();
std::string optimizer_names();
std::string precision_names();
std::string device_names();

// The --optimizer help every command shows, from the table: "sgd (momentum 0.9) | adam | adamw (default sgd)".
std::string optimizer_help();

// Facts of the table.
bool is_autocast(Precision precision);               // bf16, fp16: torch.autocast over the forward and the loss
std::string torch_class(Optimizer optimizer);        // torch.optim's class: "SGD", "Adam", "AdamW"
int optimizer_state_per_param(Optimizer optimizer);  // persistent state tensors per parameter: sgd 1 (momentum), adam 2
int precision_bytes(Precision precision);            // bytes per element of the compute type: fp32 4, bf16 / fp16 2

// Gradient accumulation: micro-batches of forward + backward per optimizer step, 1 (none) to kMaxGradAccum.
constexpr int64_t kMaxGradAccum = 4096;
// Throws InputError "`what` must be an integer in [1, 4096], got 0".
void check_grad_accum(int64_t micro_batches, const std::string& what = "grad-accum");

}  // namespace dnncast
