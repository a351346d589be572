// The parts of `dnncast compare` after the forecasts (decide/compare.h): the Pareto front against a
// sweep written apart from it, totals against price x time, the instance filters against
// data/hardware/instances.csv read here line by line, and the fits-nowhere verdict.
#include "decide/compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "report/html_report.h"

namespace dnncast::decide {
namespace {

const std::string kInstancesCsv = std::string(DNNCAST_SOURCE_DIR) + "/data/hardware/instances.csv";

// The Pareto front by a sort and a sweep (not the pairwise check of compare.cpp): in order of cost,
// then time, a row is beaten when an earlier, strictly cheaper row is no slower, or an earlier row
// of equal cost is strictly faster.
std::vector<bool> front_by_sweep(const std::vector<CompareRow>& rows) {
  std::vector<size_t> order;
  for (size_t index = 0; index < rows.size(); ++index)
    if (rows[index].fits.value_or(false)) order.push_back(index);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rows[a].total_usd != rows[b].total_usd) return rows[a].total_usd < rows[b].total_usd;
    return rows[a].total_hours < rows[b].total_hours;
  });
  std::vector<bool> front(rows.size(), false);
  double best_cheaper_hours = 1e300;  // over rows strictly cheaper than the current cost group
  size_t group_start = 0;
  for (size_t position = 0; position < order.size(); ++position) {
    const CompareRow& row = rows[order[position]];
    if (rows[order[group_start]].total_usd != row.total_usd) {
      for (size_t earlier = group_start; earlier < position; ++earlier)
        best_cheaper_hours = std::min(best_cheaper_hours, rows[order[earlier]].total_hours);
      group_start = position;
    }
    const double group_best_hours = rows[order[group_start]].total_hours;  // sorted: the group's fastest
    front[order[position]] = !(best_cheaper_hours <= row.total_hours) && !(group_best_hours < row.total_hours);
  }
  return front;
}

TEST(ComparePareto, AgreesWithASweepOnRandomRowsWithTies) {
  std::mt19937 random(19);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<CompareRow> rows(1 + random() % 25);
    for (CompareRow& row : rows) {
      // Few distinct values, so that equal costs and equal times happen often.
      row.total_usd = 1 + static_cast<double>(random() % 8);
      row.total_hours = 1 + static_cast<double>(random() % 8);
      const int fit = random() % 5;
      row.fits = fit == 0 ? std::optional<bool>() : std::optional<bool>(fit != 1);
    }
    mark_pareto_front(rows);
    const std::vector<bool> expected = front_by_sweep(rows);
    bool any_fits = false;
    for (size_t index = 0; index < rows.size(); ++index) {
      ASSERT_EQ(rows[index].on_pareto_front, expected[index]) << "trial " << trial << " row " << index;
      any_fits = any_fits || rows[index].fits.value_or(false);
    }
    // A non-empty set of fitting rows always has a front: its cheapest-then-fastest row.
    EXPECT_EQ(any_fits, std::count(expected.begin(), expected.end(), true) > 0);
  }
}

TEST(ComparePareto, RowsThatDoNotFitAreNeverOnTheFront) {
  std::vector<CompareRow> rows(2);
  rows[0].total_usd = 1, rows[0].total_hours = 1, rows[0].fits = false;  // best on both, but does not fit
  rows[1].total_usd = 5, rows[1].total_hours = 5, rows[1].fits = true;
  mark_pareto_front(rows);
  EXPECT_FALSE(rows[0].on_pareto_front);
  EXPECT_TRUE(rows[1].on_pareto_front);
}

TEST(CompareRun, IterationsRoundUpPerEpochAndSplitOverGpus) {
  EXPECT_EQ(run_iterations(32, 1, 1, 0), kIterationsWithoutEpochs);
  EXPECT_EQ(run_iterations(32, 1, 1, 50000), 1563);      // 50000 / 32 = 1562.5
  EXPECT_EQ(run_iterations(32, 1, 3, 50000), 3 * 1563);  // each epoch ends on its own partial batch
  EXPECT_EQ(run_iterations(32, 8, 2, 50000), 2 * 196);   // 256 samples per iteration: 195.3
  EXPECT_EQ(run_iterations(1, 1, 1, 1), 1);
}

// A forecast as forecast_gpu() would return it, made by hand.
gpu::GpuForecast forecast(const std::string& gpu, double time_ms, std::optional<bool> fits, int64_t memory_gib = 16) {
  gpu::GpuForecast out;
  out.device = gpu;
  out.device_name = "full name of " + gpu;
  out.graph = "resnet18";
  out.input = "3x224x224";
  out.time_ms = time_ms;
  out.time_ms_low = time_ms * 0.8;
  out.time_ms_high = time_ms * 1.3;
  out.basis = "specs";
  out.required_bytes = int64_t{20} << 30;
  out.device_memory_bytes = memory_gib << 30;
  out.fits = fits;
  out.max_batch = fits.value_or(false) ? 64 : 12;
  return out;
}

hardware::CloudInstance instance(const std::string& provider, const std::string& gpu, int64_t count, double price) {
  hardware::CloudInstance out;
  out.provider = provider;
  out.instance_type = provider + "-" + gpu + "-" + std::to_string(count);
  out.gpu = gpu;
  out.gpu_count = count;
  out.price_usd_per_hour = price;
  return out;
}

TEST(CompareRows, TotalCostIsPriceTimesHoursAndRowsSortByCost) {
  CompareRequest request;
  request.forecast.model.spec.batch = 32;
  request.epochs = 2;
  request.forecast.epoch_samples = 10000;
  const std::vector<hardware::CloudInstance> instances = {
      instance("aws", "t4", 1, 0.5), instance("gcp", "a100", 1, 3.0), instance("lambda", "a100", 1, 1.5),
      instance("aws", "a100", 4, 12.0)};
  // The 4-GPU instance's collectives take no time here (the test of linear scaling); ComparesMultiGpu adds some.
  MultiGpuStep step;
  step.fits = true;
  step.collective_ms = 0;
  const Comparison comparison = assemble_comparison(
      request, instances, {forecast("t4", 300, true), forecast("a100", 60, true, 40)}, {}, {{{"a100", 4}, step}});
  ASSERT_EQ(comparison.rows.size(), 4u);
  for (size_t index = 0; index < comparison.rows.size(); ++index) {
    const CompareRow& row = comparison.rows[index];
    const double time_ms = row.gpu == "t4" ? 300 : 60;
    const int64_t per_epoch = (10000 + 32 * row.gpu_count - 1) / (32 * row.gpu_count);
    EXPECT_EQ(row.iterations, 2 * per_epoch) << row.instance_type;
    EXPECT_DOUBLE_EQ(row.total_hours, 2.0 * per_epoch * time_ms / 3.6e6);
    EXPECT_DOUBLE_EQ(row.total_usd, row.price_usd_per_hour * row.total_hours);
    EXPECT_DOUBLE_EQ(row.total_usd_low, row.price_usd_per_hour * row.total_hours_low);
    EXPECT_DOUBLE_EQ(row.total_usd_high, row.price_usd_per_hour * row.total_hours_high);
    EXPECT_LT(row.total_usd_low, row.total_usd);
    EXPECT_GT(row.total_usd_high, row.total_usd);
    ASSERT_TRUE(row.epoch_s.has_value());
    EXPECT_DOUBLE_EQ(*row.epoch_s, per_epoch * time_ms / 1e3);
    if (index > 0) {
      EXPECT_LE(comparison.rows[index - 1].total_usd, row.total_usd);
    }
  }
  EXPECT_FALSE(comparison.fits_nowhere);
  EXPECT_EQ(comparison.bases, std::vector<std::string>{"specs"});
  // The 4-GPU instance at 3 $/h per GPU, as gcp's one: a quarter of the iterations (79 for 313) at
  // about the same cost: it (fastest) and lambda's (cheapest) are on the front; gcp's is beaten by lambda's.
  std::map<std::string, bool> front;
  for (const CompareRow& row : comparison.rows) front[row.instance_type] = row.on_pareto_front;
  EXPECT_TRUE(front["lambda-a100-1"]);
  EXPECT_TRUE(front["aws-a100-4"]);
  EXPECT_FALSE(front["gcp-a100-1"]);
}

TEST(CompareRows, AModelThatFitsNowhereNamesTheMemoryItNeeds) {
  CompareRequest request;
  request.forecast.model.spec.batch = 512;
  const Comparison comparison = assemble_comparison(
      request, {instance("aws", "t4", 1, 0.5), instance("aws", "l4", 1, 0.8), instance("aws", "x", 1, 0.8)},
      {forecast("t4", 300, false, 16), forecast("l4", 200, false, 24), forecast("x", 100, std::nullopt, 8)});
  EXPECT_TRUE(comparison.fits_nowhere);
  ASSERT_TRUE(comparison.required_bytes.has_value());
  EXPECT_EQ(*comparison.required_bytes, int64_t{20} << 30);
  EXPECT_EQ(*comparison.largest_memory_bytes, int64_t{24} << 30);
  for (const CompareRow& row : comparison.rows) EXPECT_FALSE(row.on_pareto_front);
  bool named = false;
  for (const std::string& note : comparison.notes) named = named || note.find("20.00 GiB") != std::string::npos;
  EXPECT_TRUE(named) << "no note names the 20 GiB one GPU needs";
  EXPECT_EQ(comparison.rows.front().iterations, kIterationsWithoutEpochs);
}

TEST(CompareRows, AnInstanceWhoseGpuHasNoForecastIsLeftOutWithTheReason) {
  CompareRequest request;
  request.forecast.model.spec.batch = 8;
  const Comparison comparison =
      assemble_comparison(request, {instance("aws", "t4", 1, 0.5), instance("azure", "mi25", 1, 0.2)},
                          {forecast("t4", 300, true)}, {{"mi25", "GPU mi25: no fp32 peak"}});
  ASSERT_EQ(comparison.rows.size(), 1u);
  ASSERT_EQ(comparison.left_out.size(), 1u);
  EXPECT_EQ(comparison.left_out[0].instance_type, "azure-mi25-1");
  EXPECT_EQ(comparison.left_out[0].reason, "GPU mi25: no fp32 peak");
  EXPECT_TRUE(comparison.rows[0].on_pareto_front);
}

// instances.csv read here with a plain split: provider, gpu_count and spot price of each row.
struct CsvInstance {
  std::string provider;
  int64_t gpu_count = 0;
  bool has_spot = false;
};
std::vector<CsvInstance> read_instances_csv() {
  std::ifstream in(kInstancesCsv);
  std::vector<CsvInstance> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::vector<std::string> fields;
    std::stringstream stream(line);
    for (std::string field; std::getline(stream, field, ',');) fields.push_back(field);
    EXPECT_GE(fields.size(), 9u) << line;
    if (fields.size() < 9) continue;
    rows.push_back({fields[0], std::stoll(fields[3]), !fields[8].empty()});
  }
  return rows;
}

TEST(CompareFilters, ProvidersSpotAndMultiGpuSelectWhatTheCsvHolds) {
  const hardware::Catalogue catalogue = hardware::Catalogue::load();
  const std::vector<CsvInstance> csv = read_instances_csv();
  ASSERT_GT(csv.size(), 100u);
  auto count = [&](const std::string& provider, bool multi, bool spot) {
    return std::count_if(csv.begin(), csv.end(), [&](const CsvInstance& row) {
      return (provider.empty() || row.provider == provider) && (multi || row.gpu_count == 1) && (!spot || row.has_spot);
    });
  };
  std::vector<std::string> notes;
  CompareRequest request;
  EXPECT_EQ(static_cast<long>(select_instances(request, catalogue, notes).size()), count("", false, false));
  request.providers = {"AWS", "lambda"};
  EXPECT_EQ(static_cast<long>(select_instances(request, catalogue, notes).size()),
            count("aws", false, false) + count("lambda", false, false));
  request.providers = {"aws"};
  request.multi_gpu = true;
  EXPECT_EQ(static_cast<long>(select_instances(request, catalogue, notes).size()), count("aws", true, false));
  request.spot = true;
  const std::vector<hardware::CloudInstance> spot = select_instances(request, catalogue, notes);
  EXPECT_EQ(static_cast<long>(spot.size()), count("aws", true, true));
  for (const hardware::CloudInstance& row : spot) EXPECT_EQ(row.price_usd_per_hour, *row.spot_price_usd_per_hour);
}

TEST(CompareFilters, GpusByAliasAndUnknownNamesAreOneClearLine) {
  const hardware::Catalogue catalogue = hardware::Catalogue::load();
  std::vector<std::string> notes;
  CompareRequest request;
  request.gpus = {"T4"};
  const std::vector<hardware::CloudInstance> t4 = select_instances(request, catalogue, notes);
  ASSERT_FALSE(t4.empty());
  for (const hardware::CloudInstance& row : t4) EXPECT_EQ(row.gpu, catalogue.gpu("T4").name);

  request.gpus = {"a100-40gbx"};
  try {
    select_instances(request, catalogue, notes);
    FAIL() << "an unknown GPU was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("a100-40gb"), std::string::npos) << error.what();
  }
  request.gpus.clear();
  request.providers = {"awz"};
  try {
    select_instances(request, catalogue, notes);
    FAIL() << "an unknown provider was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("aws"), std::string::npos) << error.what();
  }
  // lambda lists no spot prices: nothing is left, said so.
  request.providers = {"lambda"};
  request.spot = true;
  EXPECT_THROW(select_instances(request, catalogue, notes), InputError);
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

TEST(CompareReport, EveryTextIsEscapedAndEveryRowIsATableRowAndAPoint) {
  EXPECT_EQ(report::html_escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  CompareRequest request;
  request.forecast.model.name = "<script>alert(1)</script>.onnx";
  request.forecast.model.spec.batch = 8;
  hardware::CloudInstance hostile = instance("aws", "t4", 1, 0.5);
  hostile.instance_type = "g4dn\"'><img src=x>";
  const Comparison comparison =
      assemble_comparison(request, {hostile, instance("lambda", "a100", 1, 1.5), instance("gcp", "a100", 1, 3.0)},
                          {forecast("t4", 300, true), forecast("a100", 60, false)});
  const std::string html = report::render_html(comparison);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;.onnx"), std::string::npos);
  EXPECT_EQ(count_of(html, "<tr class='instance"), comparison.rows.size());
  EXPECT_EQ(count_of(html, "<circle class='point"), comparison.rows.size());
  EXPECT_EQ(count_of(html, "<circle class='pareto-mark'"), 1u);  // only the T4 fits
  EXPECT_EQ(html.find("http"), std::string::npos) << "no URL: the report fetches nothing";
}

}  // namespace
}  // namespace dnncast::decide
