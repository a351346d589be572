// The GPU catalogue (data/hardware/gpus.csv) and the instances (data/hardware/instances.csv) against
// independent sources: the shared gpu_specs.csv and gpu_instances.csv read here with their own columns,
// driver-reported names, and malformed user files.
#include "hardware/catalogue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "cli_run.h"  // ScratchDir
#include "core/csv.h"
#include "core/error.h"

namespace dnncast::hardware {
namespace {

const std::string kPublic = std::string(DNNCAST_SOURCE_DIR) + "/../shared/data/public/";
const std::string kShipped = std::string(DNNCAST_SOURCE_DIR) + "/data/hardware";

// Rows of a CSV with a '#' line 1, as column -> value maps.
std::vector<std::map<std::string, std::string>> read_rows(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<std::string> fields, header;
  std::vector<std::map<std::string, std::string>> rows;
  int64_t line = 0;
  while (read_csv_record(in, fields, line)) {
    if (!fields.empty() && !fields[0].empty() && fields[0][0] == '#') continue;
    if (header.empty()) {
      header = fields;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t index = 0; index < fields.size() && index < header.size(); ++index) row[header[index]] = fields[index];
    rows.push_back(row);
  }
  return rows;
}

const Catalogue& shipped() {
  static const Catalogue catalogue = Catalogue::load({}, kShipped);
  return catalogue;
}

std::string load_error_of_shipped(const std::string& dir) {
  try {
    shipped_catalogue(dir);
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

std::string load_error(const std::vector<std::string>& files) {
  try {
    Catalogue::load(files, kShipped);
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Catalogue, EveryGpuOfGpuSpecsResolves) {
  auto rows = read_rows(kPublic + "gpu_benchmarks/gpu_specs.csv");
  ASSERT_GT(rows.size(), 40u);
  for (const auto& row : rows) EXPECT_NE(shipped().find(row.at("gpu")), nullptr) << row.at("gpu");
}

TEST(Catalogue, EveryInstanceOfTheSharedSnapshotResolvesAndIsCopied) {
  auto rows = read_rows(kPublic + "cloud_prices/gpu_instances.csv");
  ASSERT_EQ(shipped().instances().size(), rows.size());
  // instance_gpus.csv resolves some instances to a more exact GPU than the price list's name.
  std::map<std::string, std::string> resolved;
  for (const auto& row : read_rows(kShipped + "/instance_gpus.csv"))
    resolved[row.at("provider") + " " + row.at("instance_type")] = row.at("gpu");
  size_t overridden = 0;
  for (size_t index = 0; index < rows.size(); ++index) {
    const CloudInstance& instance = shipped().instances()[index];
    const GpuSpec* gpu = shipped().find(rows[index].at("gpu"));
    ASSERT_NE(gpu, nullptr) << rows[index].at("gpu");
    auto exact = resolved.find(rows[index].at("provider") + " " + rows[index].at("instance_type"));
    overridden += exact != resolved.end();
    EXPECT_EQ(instance.gpu, exact != resolved.end() ? exact->second : gpu->name);
    EXPECT_EQ(instance.provider, rows[index].at("provider"));
    EXPECT_EQ(instance.instance_type, rows[index].at("instance_type"));
    EXPECT_EQ(instance.gpu_count, std::stoll(rows[index].at("gpu_count")));
    EXPECT_DOUBLE_EQ(instance.price_usd_per_hour, std::stod(rows[index].at("price_usd_per_hour")));
    // The price list's own memory size (GiB, often of GB sold) is within 10% below the datasheet's.
    if (!rows[index].at("gpu_memory_gib").empty() && gpu->memory_gib) {
      double listed = std::stod(rows[index].at("gpu_memory_gib"));
      EXPECT_LE(listed, *gpu->memory_gib * 1.001) << rows[index].at("gpu") << " -> " << gpu->name;
      EXPECT_GE(listed, *gpu->memory_gib * 0.9) << rows[index].at("gpu") << " -> " << gpu->name;
    }
  }
  EXPECT_EQ(overridden, resolved.size());  // every override names an instance of the snapshot
  EXPECT_GE(resolved.size(), 3u);
}

// Our column -> gpu_specs.csv's column (l2_mib: its note, "L2 40 MB").
double specs_value(const std::map<std::string, std::string>& row, const std::string& field) {
  static const std::map<std::string, std::string> column{{"fp32_tflops", "fp32_TFLOPS"},
                                                         {"fp16_tensor_tflops", "fp16_tensor_TFLOPS"},
                                                         {"memory_gib", "memory_GB"},
                                                         {"bandwidth_gbs", "mem_bw_GBps"},
                                                         {"sm_count", "num_SMs"}};
  std::string text;
  if (field == "l2_mib") {
    std::smatch match;
    const std::string& note = row.at("note");
    if (std::regex_search(note, match, std::regex("L2 ([0-9.]+) MB"))) text = match[1];
  } else if (column.count(field)) {
    text = row.at(column.at(field));
  }
  return text.empty() ? NAN : std::stod(text);
}

TEST(Catalogue, ValuesClaimedFromGpuSpecsEqualThatFile) {
  auto rows = read_rows(kPublic + "gpu_benchmarks/gpu_specs.csv");
  size_t compared = 0;
  for (const GpuSpec& gpu : shipped().gpus()) {
    std::map<std::string, std::optional<double>> ours{
        {"fp32_tflops", gpu.fp32_tflops},
        {"fp16_tensor_tflops", gpu.fp16_tensor_tflops},
        {"memory_gib", gpu.memory_gib},
        {"bandwidth_gbs", gpu.bandwidth_gbs},
        {"l2_mib", gpu.l2_mib},
        {"sm_count", gpu.sm_count ? std::optional<double>(*gpu.sm_count) : std::nullopt}};
    for (const SpecsReference& reference : gpu.from_gpu_specs) {
      const std::map<std::string, std::string>* row = nullptr;
      for (const auto& candidate : rows)
        if (candidate.at("gpu") == reference.gpu && candidate.at("source") == reference.source) row = &candidate;
      ASSERT_NE(row, nullptr) << gpu.name << ": no gpu_specs.csv row " << reference.gpu << "[" << reference.source
                              << "]";
      for (const std::string& field : reference.fields) {
        double theirs = specs_value(*row, field);
        ASSERT_TRUE(ours.count(field) && ours.at(field)) << gpu.name << " " << field << " is claimed but empty";
        EXPECT_NEAR(*ours.at(field), theirs, 1e-9 * std::abs(theirs)) << gpu.name << " " << field;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 80u);
}

// Names as nvidia-smi and torch.cuda.get_device_name report them, most of them no alias of the catalogue.
TEST(Catalogue, DriverReportedNamesFindTheirRows) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"Tesla T4", "t4"},
      {"NVIDIA L4", "l4"},
      {"NVIDIA L40", "l40"},  // words, not substrings: never l4
      {"Tesla V100-SXM2-16GB", "v100-16gb"},
      {"Tesla V100-SXM2-32GB", "v100-32gb"},
      {"Tesla P100-SXM2-16GB", "p100"},
      {"NVIDIA A100-SXM4-40GB", "a100-40gb"},
      {"NVIDIA A100-SXM4-80GB", "a100-80gb"},
      {"NVIDIA A100-PCIE-40GB", "a100-40gb-pcie"},
      {"NVIDIA H100 80GB HBM3", "h100-sxm"},
      {"NVIDIA GeForce RTX 4090", "rtx4090"},
      {"NVIDIA RTX 6000 Ada Generation", "rtx6000-ada"},
      {"AMD Instinct MI300X", "mi300x"},
  };
  for (const auto& [reported, expected] : cases) {
    const GpuSpec* gpu = shipped().match_driver_name(reported);
    ASSERT_NE(gpu, nullptr) << reported;
    EXPECT_EQ(gpu->name, expected) << reported;
  }
  for (const char* unknown : {"Tesla K80", "NVIDIA", "", "unknown"})
    EXPECT_EQ(shipped().match_driver_name(unknown), nullptr) << unknown;
  // One word of a100 and one of h100: a tie is no match, not the first row.
  EXPECT_EQ(shipped().match_driver_name("NVIDIA A100 H100"), nullptr);
  // Every name a row has, the full name included, finds that row.
  for (const GpuSpec& gpu : shipped().gpus()) {
    std::vector<std::string> names{gpu.name, gpu.full_name};
    names.insert(names.end(), gpu.aliases.begin(), gpu.aliases.end());
    for (const std::string& name : names) {
      const GpuSpec* found = shipped().match_driver_name(name);
      EXPECT_EQ(found, &gpu) << name << " finds " << (found ? found->name : "nothing") << ", not " << gpu.name;
    }
  }
}

TEST(Catalogue, ShippedCatalogueIsLoadedOnce) {
  const Catalogue& first = shipped_catalogue(kShipped);
  EXPECT_EQ(&shipped_catalogue(kShipped), &first);
  EXPECT_EQ(first.gpus().size(), shipped().gpus().size());
  EXPECT_NE(std::string(load_error_of_shipped("/nonexistent-dnncast-dir")).find("cannot read catalogue file"),
            std::string::npos);
}

TEST(Catalogue, RowsAreSourcedAndNamesUnique) {
  std::set<std::string> keys;
  for (const GpuSpec& gpu : shipped().gpus()) {
    EXPECT_EQ(gpu.source_url.rfind("https://", 0), 0u) << gpu.name;
    EXPECT_TRUE(std::regex_match(gpu.date, std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}"))) << gpu.name;
    EXPECT_TRUE(keys.insert(catalogue_key(gpu.name)).second) << gpu.name;
    for (const std::string& alias : gpu.aliases) {
      if (catalogue_key(alias) != catalogue_key(gpu.name)) {
        EXPECT_TRUE(keys.insert(catalogue_key(alias)).second) << alias;
      }
    }
  }
}

TEST(Catalogue, AliasesAndCaseFindTheSameGpu) {
  EXPECT_EQ(shipped().gpu("A100").name, "a100-40gb");
  EXPECT_EQ(shipped().gpu("A100-40GB").name, "a100-40gb");
  EXPECT_EQ(shipped().gpu("a100 40gb").name, "a100-40gb");
  EXPECT_EQ(shipped().gpu("NVIDIA A100-SXM4-40GB").name, "a100-40gb");
  EXPECT_EQ(shipped().gpu("RTX 2080 Ti").name, "rtx2080ti");
  EXPECT_EQ(shipped().gpu("H100 SXM").name, "h100-sxm");
  EXPECT_EQ(shipped().gpu("T4g").name, "t4");
  EXPECT_EQ(shipped().find("a10"), &shipped().gpu("A10"));
  EXPECT_NE(shipped().find("a10"), shipped().find("a100"));
  EXPECT_EQ(shipped().find("tpu-v5"), nullptr);
  EXPECT_EQ(shipped().find("--"), nullptr);
}

TEST(Catalogue, UnknownNameListsCloseOnes) {
  try {
    shipped().gpu("a100-40g");
    FAIL() << "no error";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("unknown GPU 'a100-40g'"), std::string::npos) << message;
    EXPECT_NE(message.find("did you mean a100-40gb"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

std::string gpus_header() {
  std::ifstream in(kShipped + "/gpus.csv");
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') return line + "\n";
  return "";
}

std::string write(const cli_test::ScratchDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Catalogue, MalformedUserFilesNameFileLineAndColumn) {
  cli_test::ScratchDir dir("catalogue");
  const std::string good_tail = ",,,,24,500,40,,,,https://example.com/x,2026-01-01,\n";
  std::string bad_number = write(dir, "n.csv", "# mine\n" + gpus_header() + "x1,,nvidia,X,Y,fast" + good_tail);
  EXPECT_EQ(load_error({bad_number}), bad_number + " line 3 column 6 (fp32_tflops): 'fast' is not a positive number");
  std::string negative = write(dir, "m.csv", gpus_header() + "x1,,nvidia,X,Y,-3" + good_tail);
  EXPECT_NE(load_error({negative}).find(negative + " line 2 column 6 (fp32_tflops)"), std::string::npos);
  std::string short_row = write(dir, "s.csv", gpus_header() + "x1,,nvidia\n");
  EXPECT_EQ(load_error({short_row}), short_row + " line 2: 3 fields, the header has 18");
  std::string no_source = write(dir, "u.csv", gpus_header() + "x1,,nvidia,X,Y,1,,,,24,500,40,,,,,2026-01-01,\n");
  EXPECT_EQ(load_error({no_source}), no_source + " line 2 column 16 (source_url): empty; this column is required");
  std::string claim =
      write(dir, "c.csv", gpus_header() + "x1,,nvidia,X,Y,1,,,,24,500,40,,,T4[D]=speed,https://e.x,d,\n");
  EXPECT_NE(load_error({claim}).find("column 15 (from_gpu_specs): unknown field 'speed'"), std::string::npos);
  std::string column = write(dir, "h.csv", "name,aliasses\n");
  EXPECT_NE(load_error({column}).find(column + " line 1 column 2: unknown column 'aliasses' (did you mean aliases"),
            std::string::npos);
  std::string quote = write(dir, "q.csv", gpus_header() + "x1,\"open\n");
  EXPECT_NE(load_error({quote}).find(quote + ": line 2: unterminated quoted field"), std::string::npos);
  std::string taken = write(dir, "t.csv", gpus_header() + "mine,A100,nvidia,X,Y,1" + good_tail);
  EXPECT_NE(load_error({taken}).find("name 'A100' of GPU 'mine' is already GPU 'a100-40gb'"), std::string::npos);
  std::string instance = write(dir, "i.csv",
                               "provider,instance_type,gpu,gpu_count,gpu_memory_gib,vcpus,memory_gib,"
                               "price_usd_per_hour,spot_price_usd_per_hour,region,source_commit\n"
                               "mycloud,big,A1000,1,,,,2.5,,here,\n");
  EXPECT_NE(load_error({instance}).find(instance + " line 2 column 3 (gpu): GPU 'A1000' is not in the catalogue"),
            std::string::npos);
  EXPECT_EQ(load_error({dir.path() + "/absent.csv"}), "cannot read catalogue file '" + dir.path() + "/absent.csv'");
  std::string other = write(dir, "o.csv", "a,b\n1,2\n");
  EXPECT_NE(load_error({other}).find("not a catalogue file"), std::string::npos);
}

TEST(Catalogue, UserFileOverridesAndAddsRows) {
  cli_test::ScratchDir dir("catalogue");
  std::string gpus = write(dir, "g.csv",
                           gpus_header() +
                               "T4,T4g,nvidia,NVIDIA T4 (mine),Turing,7.5,,,,16,300,40,,,,"
                               "https://example.com/t4,2026-02-02,measured\n"
                               "my-gpu,Mine 1;mine-one,acme,Acme One,Z,10,,,,32,1000,50,,,,"
                               "https://example.com/one,2026-02-02,\n");
  std::string instances = write(dir, "i.csv",
                                "provider,instance_type,gpu,gpu_count,gpu_memory_gib,vcpus,memory_gib,"
                                "price_usd_per_hour,spot_price_usd_per_hour,region,source_commit\n"
                                "mycloud,one.x2,Mine 1,2,,8,64,3.25,,home,\n");
  Catalogue catalogue = Catalogue::load({instances, gpus}, kShipped);
  EXPECT_EQ(catalogue.gpus().size(), shipped().gpus().size() + 1);
  EXPECT_DOUBLE_EQ(*catalogue.gpu("t4").fp32_tflops, 7.5);
  EXPECT_EQ(catalogue.gpu("t4").file, gpus);
  EXPECT_EQ(catalogue.find("Tesla T4"), nullptr);  // the replaced row's aliases went with it
  EXPECT_EQ(catalogue.gpu("T4g").name, "t4");
  EXPECT_EQ(catalogue.gpu("MINE-ONE").name, "my-gpu");
  ASSERT_EQ(catalogue.instances().size(), shipped().instances().size() + 1);
  EXPECT_EQ(catalogue.instances().back().gpu, "my-gpu");
  EXPECT_EQ(catalogue.instances().back().gpu_count, 2);
  EXPECT_EQ(catalogue.files().size(),
            6u);  // gpus.csv, the user's GPU file, instances.csv, theirs, instance_gpus.csv, gpu_links.csv
}

}  // namespace
}  // namespace dnncast::hardware
