#include "core/training_setup.h"

#include <array>
#include <cctype>
#include <tuple>

#include "core/error.h"

namespace dnncast {

namespace {

// One row per value, in enum order (checked at start-up by check_order below and by
// tests/core/training_setup_test.cpp).
struct OptimizerEntry {
  Optimizer value;
  const char* name;
  std::array<const char*, 2> aliases;  // nullptr-terminated
  int state_per_param;                 // momentum buffer; exp_avg and exp_avg_sq
  const char* note;                    // what help says of it beside its name ("" = nothing)
  const char* torch_class;             // torch.optim's class of it (the Python package maps optimizers by it)
};
constexpr std::array<OptimizerEntry, kOptimizerCount> kOptimizerTable{{
    {Optimizer::Sgd, "sgd", {nullptr, nullptr}, 1, "momentum 0.9", "SGD"},
    {Optimizer::Adam, "adam", {nullptr, nullptr}, 2, "", "Adam"},
    {Optimizer::AdamW, "adamw", {nullptr, nullptr}, 2, "", "AdamW"},
}};

struct PrecisionEntry {
  Precision value;
  const char* name;
  std::array<const char*, 2> aliases;
  int bytes;
};
constexpr std::array<PrecisionEntry, kPrecisionCount> kPrecisionTable{{
    {Precision::Fp32, "fp32", {"f32", nullptr}, 4},
    {Precision::Bf16, "bf16", {nullptr, nullptr}, 2},
    {Precision::Fp16, "fp16", {"f16", nullptr}, 2},
    {Precision::Bf16Pure, "bf16-pure", {"pure-bf16", nullptr}, 2},
}};

struct DeviceEntry {
  Device value;
  const char* name;
  std::array<const char*, 2> aliases;
};
constexpr std::array<DeviceEntry, kDeviceCount> kDeviceTable{{
    {Device::Cpu, "cpu", {nullptr, nullptr}},
    {Device::Cuda, "cuda", {nullptr, nullptr}},
}};

static_assert(static_cast<size_t>(Optimizer::AdamW) + 1 == kOptimizerCount, "kOptimizerTable misses an optimizer");
static_assert(static_cast<size_t>(Precision::Bf16Pure) + 1 == kPrecisionCount, "kPrecisionTable misses a precision");
static_assert(static_cast<size_t>(Device::Cuda) + 1 == kDeviceCount, "kDeviceTable misses a device");

template <typename Table>
constexpr bool in_enum_order(const Table& table) {
  for (size_t index = 0; index < table.size(); ++index)
    if (static_cast<size_t>(table[index].value) != index) return false;
  return true;
}
static_assert(in_enum_order(kOptimizerTable), "kOptimizerTable rows must follow the enum's order");
static_assert(in_enum_order(kPrecisionTable), "kPrecisionTable rows must follow the enum's order");
static_assert(in_enum_order(kDeviceTable), "kDeviceTable rows must follow the enum's order");

std::string lower(const std::string& text) {
  std::string result = text;
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

template <typename Table>
std::string joined_names(const Table& table) {
  std::string joined;
  for (const auto& entry : table) joined += (joined.empty() ? "" : ", ") + std::string(entry.name);
  return joined;
}

template <typename Table>
auto parse(const Table& table, const std::string& text, const std::string& what) {
  std::string wanted = lower(text);
  for (const auto& entry : table) {
    if (wanted == entry.name) return entry.value;
    for (const char* alias : entry.aliases)
      if (alias != nullptr && wanted == alias) return entry.value;
  }
  throw InputError(what + " " + quote(text) + ": expected one of " + joined_names(table));
}

template <typename Table>
const std::string& name_in(const Table& table, size_t index) {
  static const auto names = [&table] {
    std::array<std::string, std::tuple_size<Table>::value> result;
    for (size_t row = 0; row < table.size(); ++row) result[row] = table[row].name;
    return result;
  }();
  DNNCAST_ASSERT(index < names.size());
  return names[index];
}

template <typename Value, typename Table>
std::vector<Value> values_of(const Table& table) {
  std::vector<Value> values;
  for (const auto& entry : table) values.push_back(entry.value);
  return values;
}

}  // namespace

bool operator==(const TrainingSetup& a, const TrainingSetup& b) {
  return std::tie(a.optimizer, a.precision, a.device) == std::tie(b.optimizer, b.precision, b.device);
}
bool operator<(const TrainingSetup& a, const TrainingSetup& b) {
  return std::tie(name(a.optimizer), name(a.precision), name(a.device)) <
         std::tie(name(b.optimizer), name(b.precision), name(b.device));
}

const std::string& name(Optimizer optimizer) { return name_in(kOptimizerTable, static_cast<size_t>(optimizer)); }
const std::string& name(Precision precision) { return name_in(kPrecisionTable, static_cast<size_t>(precision)); }
const std::string& name(Device device) { return name_in(kDeviceTable, static_cast<size_t>(device)); }

Optimizer parse_optimizer(const std::string& text, const std::string& what) {
  return parse(kOptimizerTable, text, what);
}
Precision parse_precision(const std::string& text, const std::string& what) {
  return parse(kPrecisionTable, text, what);
}
Device parse_device(const std::string& text, const std::string& what) { return parse(kDeviceTable, text, what); }

const std::vector<Optimizer>& all_optimizers() {
  static const std::vector<Optimizer> values = values_of<Optimizer>(kOptimizerTable);
  return values;
}
const std::vector<Precision>& all_precisions() {
  static const std::vector<Precision> values = values_of<Precision>(kPrecisionTable);
  return values;
}
const std::vector<Device>& all_devices() {
  static const std::vector<Device> values = values_of<Device>(kDeviceTable);
  return values;
}
std::string optimizer_names() { return joined_names(kOptimizerTable); }
std::string precision_names() { return joined_names(kPrecisionTable); }
std::string device_names() { return joined_names(kDeviceTable); }

std::string optimizer_help() {
  std::string help;
  for (const OptimizerEntry& entry : kOptimizerTable) {
    help += (help.empty() ? "" : " | ") + std::string(entry.name);
    if (*entry.note != '\0') help += std::string(" (") + entry.note + ")";
  }
  return help + " (default " + kOptimizerTable[0].name + ")";
}

std::string torch_class(Optimizer optimizer) { return kOptimizerTable[static_cast<size_t>(optimizer)].torch_class; }

int optimizer_state_per_param(Optimizer optimizer) {
  return kOptimizerTable[static_cast<size_t>(optimizer)].state_per_param;
}
bool is_autocast(Precision precision) { return precision == Precision::Bf16 || precision == Precision::Fp16; }
int precision_bytes(Precision precision) { return kPrecisionTable[static_cast<size_t>(precision)].bytes; }

void check_grad_accum(int64_t micro_batches, const std::string& what) {
  if (micro_batches < 1 || micro_batches > kMaxGradAccum)
    throw InputError(what + " must be an integer in [1, " + std::to_string(kMaxGradAccum) + "], got " +
                     std::to_string(micro_batches));
}

}  // namespace dnncast
