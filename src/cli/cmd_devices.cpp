// `dnncast devices [--instances] [--catalogue FILE] [--json]`: the GPU catalogue (data/hardware/gpus.csv)
// with the source of every row, or the cloud instances that rent those GPUs (data/hardware/instances.csv).
// Reads CSV files only; docs/DEVICES.md says what the catalogue holds and how to extend it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "decide/catalogue_json.h"
#include "gpu/kernel_model.h"
#include "hardware/catalogue.h"

namespace dnncast::cli {

namespace {

using nlohmann::ordered_json;

bool from_specs(const hardware::GpuSpec& gpu, const std::string& field) {
  for (const hardware::SpecsReference& reference : gpu.from_gpu_specs)
    for (const std::string& claimed : reference.fields)
      if (claimed == field) return true;
  return false;
}

// A value for the table: "-" when unknown, a '*' after it when copied from gpu_specs.csv.
std::string cell(const hardware::GpuSpec& gpu, const std::string& field, const std::optional<double>& value) {
  if (!value) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%g%s", *value, from_specs(gpu, field) ? "*" : "");
  return text;
}

void print_gpus(const hardware::Catalogue& catalogue) {
  std::printf("%-18s %-13s %8s %8s %8s %8s %7s %8s %5s %6s %6s  %s\n", "name", "architecture", "fp32", "tf32", "fp16",
              "bf16", "mem_GiB", "GB/s", "SMs", "L2_MiB", "TDP_W", "source (date)");
  for (const hardware::GpuSpec& gpu : catalogue.gpus()) {
    std::optional<double> sms = gpu.sm_count ? std::optional<double>(static_cast<double>(*gpu.sm_count)) : std::nullopt;
    std::printf("%-18s %-13s %8s %8s %8s %8s %7s %8s %5s %6s %6s  %s (%s)\n", gpu.name.c_str(),
                gpu.architecture.c_str(), cell(gpu, "fp32_tflops", gpu.fp32_tflops).c_str(),
                cell(gpu, "tf32_tensor_tflops", gpu.tf32_tensor_tflops).c_str(),
                cell(gpu, "fp16_tensor_tflops", gpu.fp16_tensor_tflops).c_str(),
                cell(gpu, "bf16_tensor_tflops", gpu.bf16_tensor_tflops).c_str(),
                cell(gpu, "memory_gib", gpu.memory_gib).c_str(), cell(gpu, "bandwidth_gbs", gpu.bandwidth_gbs).c_str(),
                cell(gpu, "sm_count", sms).c_str(), cell(gpu, "l2_mib", gpu.l2_mib).c_str(),
                cell(gpu, "tdp_w", gpu.tdp_w).c_str(), gpu.source_url.c_str(), gpu.date.c_str());
  }
  std::printf(
      "\n%zu GPUs. Dense peak TFLOP/s (tf32/fp16/bf16 on tensor cores); - unknown; * copied from "
      "gpu_specs.csv (../shared/data/public/gpu_benchmarks), the rest from the source. Files: ",
      catalogue.gpus().size());
  for (size_t index = 0; index < catalogue.files().size(); ++index)
    std::printf("%s%s", index == 0 ? "" : ", ", catalogue.files()[index].c_str());
  std::printf("\nNeuSight's test GPUs (%s), in no fit dnncast ships, so their forecasts are blind:",
              gpu::kTestGpusInWords);
  for (const hardware::GpuSpec& gpu : catalogue.gpus())
    if (gpu::is_held_out_test_gpu(gpu.name)) std::printf(" %s", gpu.name.c_str());
  std::printf("\n");
}

void print_instances(const hardware::Catalogue& catalogue) {
  std::printf("%-8s %-30s %-16s %5s %9s %9s  %s\n", "provider", "instance", "gpu", "count", "usd/h", "spot/h",
              "region");
  for (const hardware::CloudInstance& instance : catalogue.instances()) {
    char spot[32] = "-";
    if (instance.spot_price_usd_per_hour) std::snprintf(spot, sizeof spot, "%.4f", *instance.spot_price_usd_per_hour);
    std::printf("%-8s %-30s %-16s %5lld %9.4f %9s  %s\n", instance.provider.c_str(),
                instance.instance_type.empty() ? "(gpu only)" : instance.instance_type.c_str(), instance.gpu.c_str(),
                static_cast<long long>(instance.gpu_count), instance.price_usd_per_hour, spot, instance.region.c_str());
  }
  std::printf(
      "\n%zu instances: on-demand and spot USD per hour, a snapshot of SkyPilot's public catalog "
      "(data/hardware/instances.README.md), not a quote. gcp rows price the GPUs alone, without the host.\n",
      catalogue.instances().size());
}

}  // namespace

int run_devices(const Args& args) {
  CLI::App app(
      "The GPU catalogue: peak throughput, memory, bandwidth, SMs, L2 and TDP of every GPU dnncast knows, each\n"
      "row with its source and date (data/hardware/gpus.csv, docs/DEVICES.md); --instances: the cloud instances\n"
      "that rent them, with on-demand and spot prices (data/hardware/instances.csv).",
      "dnncast devices");
  bool instances = false, as_json = false;
  std::vector<std::string> extra_files;
  app.add_flag("--instances", instances, "list the cloud instances instead of the GPUs");
  app.add_option("--catalogue", extra_files,
                 "a CSV in gpus.csv's format (adds GPUs; a catalogued name is replaced) or instances.csv's (adds "
                 "instances); may repeat");
  app.add_flag("--json", as_json, "print JSON instead of a table");
  if (!parse_args(app, args, "devices")) return 0;

  const hardware::Catalogue catalogue = hardware::Catalogue::load(extra_files);
  if (as_json) {
    std::cout << decide::devices_json(catalogue, instances).dump(2) << "\n";
  } else if (instances) {
    print_instances(catalogue);
  } else {
    print_gpus(catalogue);
  }
  return 0;
}

}  // namespace dnncast::cli
