// The GPU catalogue and the cloud instances that rent them (docs/DEVICES.md): read from dated, sourced
// CSV files, data/hardware/gpus.csv and data/hardware/instances.csv (a snapshot of SkyPilot's public
// catalog), plus any files the user adds with `--catalogue FILE`. Nothing here is compiled in: the
// rows and their sources live in the CSV. An empty field is unknown (std::nullopt), never zero.
// Predictor lookup and the hardware features of a stored GPU environment read it too (shipped_catalogue()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dnncast::hardware {

// Which values of a GPU row were copied from a row of ../shared/data/public/gpu_benchmarks/gpu_specs.csv.
struct SpecsReference {
  std::string gpu;                  // that file's `gpu` column ("Tesla T4")
  std::string source;               // its `source` letter ("G")
  std::vector<std::string> fields;  // our column names ("fp32_tflops", "bandwidth_gbs")
};

struct GpuSpec {
  std::string name;                  // what users type, lower case ("a100-40gb")
  std::vector<std::string> aliases;  // other accepted names, as written ("A100", "NVIDIA A100-SXM4-40GB")
  std::string vendor;                // "nvidia", "amd"
  std::string full_name;
  std::string architecture;
  // Dense peaks in TFLOP/s: fp32 without tensor cores; the others on tensor (matrix) cores.
  std::optional<double> fp32_tflops, tf32_tensor_tflops, fp16_tensor_tflops, bf16_tensor_tflops;
  std::optional<double> memory_gib;     // as the datasheet states it
  std::optional<double> bandwidth_gbs;  // GB/s (1e9 bytes)
  std::optional<int64_t> sm_count;      // streaming multiprocessors (AMD: compute units)
  std::optional<double> l2_mib;
  std::optional<double> tdp_w;
  std::vector<SpecsReference> from_gpu_specs;
  std::string source_url;  // where every value not in from_gpu_specs comes from
  std::string date;        // when the values were read
  std::string notes;
  // The link between GPUs of one machine (data/hardware/gpu_links.csv): "nvlink", "pcie4", ...; GB/s per
  // direction (1e9 bytes), as the datasheet's bidirectional figure halved. Empty when not catalogued.
  std::string link;
  std::optional<double> link_gbs;
  std::string file;  // the CSV file the row was read from
  int64_t line = 0;  // and its line
};

// One row of instances.csv: an instance type with `gpu_count` GPUs of catalogue GPU `gpu`.
struct CloudInstance {
  std::string provider;       // aws, gcp, azure, lambda, runpod
  std::string instance_type;  // "" for gcp (GPUs are priced apart from the host)
  std::string gpu_listed;     // the GPU as the price list names it ("A100-80GB")
  std::string gpu;            // the catalogue GPU it resolves to ("a100-80gb")
  int64_t gpu_count = 0;
  std::optional<double> gpu_memory_gib, vcpus, memory_gib;
  double price_usd_per_hour = 0;
  std::optional<double> spot_price_usd_per_hour;
  std::string region;
  std::string source_commit;
};

class Catalogue {
 public:
  // The shipped files of `dir` (default: default_catalogue_dir()), then each of `extra_files` in order:
  // a file with gpus.csv's header adds GPUs (a row whose name is already catalogued replaces it), one
  // with instances.csv's header adds instances; instance_gpus.csv (when present) then resolves the
  // instances whose listed GPU name is looser than the card (lambda gpu_1x_h100_pcie lists "H100"). Malformed rows
  // throw InputError naming file, line and column; an instance whose GPU is not catalogued throws too.
  static Catalogue load(const std::vector<std::string>& extra_files = {}, const std::string& dir = "");

  // Sorted by name.
  const std::vector<GpuSpec>& gpus() const { return gpus_; }
  // In file order.
  const std::vector<CloudInstance>& instances() const { return instances_; }
  // Files read, in order.
  const std::vector<std::string>& files() const { return files_; }

  // By name or alias: case, spaces, '-' and '_' do not matter ("A100 40GB" finds a100-40gb).
  const GpuSpec* find(const std::string& name) const;
  // As find(); an unknown name throws InputError listing the closest catalogued names.
  const GpuSpec& gpu(const std::string& name) const;
  // The GPU a driver-reported name stands for ("NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB"), or
  // nullptr: find() first; else the GPU one of whose names (name, alias, full name) has all its words
  // among the reported name's (words: runs of letters and digits, any case, less nvidia, tesla,
  // geforce, amd, instinct), the name with the most words winning, so that "NVIDIA L40" is l40, never l4,
  // and "Tesla V100-SXM2-32GB" v100-32gb. Two GPUs tied for the most words: no match.
  const GpuSpec* match_driver_name(const std::string& reported) const;

 private:
  void add_gpu_file(const std::string& path);
  void add_instance_file(const std::string& path);
  // data/hardware/instance_gpus.csv: instances whose listed GPU name is looser than the card they rent.
  void apply_instance_gpus(const std::string& path);
  // data/hardware/gpu_links.csv: the link between GPUs of one machine, per GPU.
  void apply_gpu_links(const std::string& path);
  void add_gpu(GpuSpec spec);

  std::vector<GpuSpec> gpus_;
  std::vector<CloudInstance> instances_;
  std::vector<std::string> files_;
};

// Key under which names and aliases are looked up: lower case, letters and digits only.
std::string catalogue_key(const std::string& name);

// data/hardware of this source tree: $DNNCAST_HARDWARE, else the nearest data/hardware above the
// executable; "" when neither exists.
std::string default_catalogue_dir();

// Catalogue::load({}, dir), read once per process per folder (`dir` "": default_catalogue_dir()) and
// kept; thread-safe. Throws InputError as load() does, and tries again on the next call.
const Catalogue& shipped_catalogue(const std::string& dir = "");

}  // namespace dnncast::hardware
