#include "core/training_setup.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"

namespace dnncast {
namespace {

std::string error_of(void (*call)()) {
  try {
    call();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(TrainingSetup, TablesCoverEveryValueWithDistinctNames) {
  EXPECT_EQ(all_optimizers().size(), kOptimizerCount);
  EXPECT_EQ(all_precisions().size(), kPrecisionCount);
  EXPECT_EQ(all_devices().size(), kDeviceCount);
  std::set<std::string> names;
  for (Optimizer optimizer : all_optimizers()) EXPECT_TRUE(names.insert(name(optimizer)).second) << name(optimizer);
  for (Precision precision : all_precisions()) EXPECT_TRUE(names.insert(name(precision)).second) << name(precision);
  for (Device device : all_devices()) EXPECT_TRUE(names.insert(name(device)).second) << name(device);
  EXPECT_EQ(names.size(), kOptimizerCount + kPrecisionCount + kDeviceCount);
}

// The strings the SQLite runs columns, CSV files and manifests hold: they must never change.
TEST(TrainingSetup, StoredNamesAreTheOnesOnDisk) {
  EXPECT_EQ(name(Optimizer::Sgd), "sgd");
  EXPECT_EQ(name(Optimizer::Adam), "adam");
  EXPECT_EQ(name(Optimizer::AdamW), "adamw");
  EXPECT_EQ(name(Precision::Fp32), "fp32");
  EXPECT_EQ(name(Precision::Bf16), "bf16");
  EXPECT_EQ(name(Precision::Fp16), "fp16");
  EXPECT_EQ(name(Precision::Bf16Pure), "bf16-pure");
  EXPECT_EQ(name(Device::Cpu), "cpu");
  EXPECT_EQ(name(Device::Cuda), "cuda");
  EXPECT_EQ(optimizer_names(), "sgd, adam, adamw");
  EXPECT_EQ(precision_names(), "fp32, bf16, fp16, bf16-pure");
  EXPECT_EQ(device_names(), "cpu, cuda");
}

TEST(TrainingSetup, NameParsesBackToItsValue) {
  for (Optimizer optimizer : all_optimizers()) EXPECT_EQ(parse_optimizer(name(optimizer)), optimizer);
  for (Precision precision : all_precisions()) EXPECT_EQ(parse_precision(name(precision)), precision);
  for (Device device : all_devices()) EXPECT_EQ(parse_device(name(device)), device);
}

TEST(TrainingSetup, AliasesAndAnyCaseAreAccepted) {
  EXPECT_EQ(parse_precision("f32"), Precision::Fp32);
  EXPECT_EQ(parse_precision("f16"), Precision::Fp16);
  EXPECT_EQ(parse_precision("F32"), Precision::Fp32);
  EXPECT_EQ(parse_precision("BF16"), Precision::Bf16);
  EXPECT_EQ(parse_precision("pure-bf16"), Precision::Bf16Pure);
  EXPECT_EQ(parse_optimizer("SGD"), Optimizer::Sgd);  // the memory simulator lowered its input
  EXPECT_EQ(parse_optimizer("AdamW"), Optimizer::AdamW);
  EXPECT_EQ(parse_device("CUDA"), Device::Cuda);
}

TEST(TrainingSetup, UnknownNamesListTheValidOnes) {
  try {
    parse_optimizer("adm", "--optimizer");
    FAIL() << "adm parsed";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "--optimizer 'adm': expected one of sgd, adam, adamw");
  }
  EXPECT_EQ(error_of([] { parse_precision("f8"); }), "precision 'f8': expected one of fp32, bf16, fp16, bf16-pure");
  EXPECT_EQ(error_of([] { parse_device("tpu"); }), "device 'tpu': expected one of cpu, cuda");
  // Not the features' extra columns: rmsprop and adagrad are no optimizers dnncast trains or parses.
  EXPECT_NE(error_of([] { parse_optimizer("rmsprop"); }), "");
  EXPECT_NE(error_of([] { parse_optimizer("adagrad"); }), "");
  EXPECT_NE(error_of([] { parse_optimizer(""); }), "");
  // A control character stays escaped, the message on one line.
  EXPECT_EQ(error_of([] { parse_device("cp\nu"); }), "device 'cp\\nu': expected one of cpu, cuda");
}

TEST(TrainingSetup, FactsOfTheTables) {
  EXPECT_EQ(optimizer_state_per_param(Optimizer::Sgd), 1);
  EXPECT_EQ(optimizer_state_per_param(Optimizer::Adam), 2);
  EXPECT_EQ(optimizer_state_per_param(Optimizer::AdamW), 2);
  EXPECT_EQ(precision_bytes(Precision::Fp32), 4);
  EXPECT_EQ(precision_bytes(Precision::Bf16), 2);
  EXPECT_EQ(precision_bytes(Precision::Fp16), 2);
}

// Sets and maps of configs iterate as they did when the fields were strings.
TEST(TrainingSetup, OrdersAsTheNamesDo) {
  auto setup = [](Optimizer optimizer, Precision precision, Device device) {
    TrainingSetup result;
    result.optimizer = optimizer;
    result.precision = precision;
    result.device = device;
    return result;
  };
  std::vector<TrainingSetup> all;
  for (Optimizer optimizer : all_optimizers())
    for (Precision precision : all_precisions())
      for (Device device : all_devices()) all.push_back(setup(optimizer, precision, device));
  for (const TrainingSetup& a : all)
    for (const TrainingSetup& b : all) {
      auto key = [](const TrainingSetup& s) {
        return std::make_tuple(name(s.optimizer), name(s.precision), name(s.device));
      };
      EXPECT_EQ(a < b, key(a) < key(b));
      EXPECT_EQ(a == b, key(a) == key(b));
    }
  EXPECT_TRUE(setup(Optimizer::Adam, Precision::Fp32, Device::Cpu) <
              setup(Optimizer::Sgd, Precision::Fp32, Device::Cpu));
  EXPECT_TRUE(setup(Optimizer::Sgd, Precision::Bf16, Device::Cpu) <
              setup(Optimizer::Sgd, Precision::Fp32, Device::Cpu));
}

}  // namespace
}  // namespace dnncast
