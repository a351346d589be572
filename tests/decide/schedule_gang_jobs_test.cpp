// Jobs of several GPUs in `dnncast schedule` (decide/schedule_jobs.h, issue 48): "gpus", "parallel" and
// "micro_batches" read as `predict --gpus --parallel` reads them, a gang placed on a node that holds it, its
// iteration the time `predict` gives for the same plan on that GPU (run here through predict's own API), and bad
// values as one line naming the file, the job and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "decide/schedule_jobs.h"
#include "forecast/predict.h"

namespace dnncast::decide {
namespace {

using nlohmann::json;

std::vector<JobSpec> jobs_of(const std::string& text) { return parse_jobs(json::parse(text), "jobs.json"); }

std::string error_of(const std::string& text) {
  try {
    jobs_of(text);
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

// The per-iteration time `dnncast predict MODEL --device GPU --batch B --seq S --precision P --gpus N --parallel
// PLAN` prints, through predict's API.
double predict_ms(const std::string& model, int64_t batch, int64_t seq, const std::string& gpu, int64_t gpus,
                  const std::string& parallel) {
  models::ModelSpec spec;
  spec.batch = batch;
  spec.seq_len = seq;
  forecast::PredictOptions options;
  options.forecast.device = gpu;
  options.forecast.precision = "amp";
  options.gpus = gpus;
  options.parallel = parallel;
  const forecast::Prediction prediction = forecast::predict({model, spec, {}}, options, OptionStyle::Flag);
  return prediction.gpu.value().time_ms;
}

TEST(ScheduleGangJobs, GangFieldsParseAsPredictsOptions) {
  const std::vector<JobSpec> jobs = jobs_of(R"({"jobs": [
    {"name": "one", "model": "gpt2_small", "batch": 8, "iterations": 10},
    {"name": "dp", "model": "gpt2_small", "batch": 8, "gpus": 4, "epochs": 1, "samples": 100},
    {"name": "mixed", "model": "gpt2_small", "batch": 8, "gpus": 8, "parallel": "tp=2,pp=2",
     "micro_batches": 4, "iterations": 10}]})");
  EXPECT_EQ(jobs[0].gpus, 1);
  EXPECT_EQ(jobs[0].parallel.gpus(), 1);
  EXPECT_EQ(plan_label(jobs[0]), "1");
  EXPECT_EQ(jobs[1].parallel.dp, 4);  // "dp" when none is given
  EXPECT_EQ(jobs[1].iterations, 4);   // ceil(100 / (8 x 4)): the batch is each replica's
  EXPECT_EQ(plan_label(jobs[1]), "dp4");
  EXPECT_EQ(jobs[2].parallel.dp, 2);
  EXPECT_EQ(jobs[2].parallel.tp, 2);
  EXPECT_EQ(jobs[2].parallel.pp, 2);
  EXPECT_EQ(jobs[2].parallel.micro_batches, 4);
  EXPECT_EQ(jobs[2].parallel.gpus_per_node, 8);  // the gang's one node
  EXPECT_EQ(plan_label(jobs[2]), "dp2 tp2 pp2 mb4");
}

TEST(ScheduleGangJobs, BadGangFieldsAreOneLineNamingFileJobAndField) {
  EXPECT_EQ(error_of(R"({"jobs": [{"name": "g", "model": "gpt2_small", "batch": 8, "gpus": 0, "iterations": 1}]})"),
            "jobs.json: job 1 ('g'): field 'gpus' must be an integer from 1 to 10000, got 0");
  EXPECT_EQ(error_of(R"({"jobs": [{"name": "g", "model": "gpt2_small", "batch": 8, "gpus": 2, "parallel": "xp",
                                   "iterations": 1}]})"),
            "jobs.json: job 1 ('g'): field 'parallel' 'xp': expected dp, tp, pp or degrees such as tp=2,pp=2");
  EXPECT_EQ(error_of(R"({"jobs": [{"name": "g", "model": "gpt2_small", "batch": 8, "gpus": 2, "parallel": "tp=3",
                                   "iterations": 1}]})"),
            "jobs.json: job 1 ('g'): field 'parallel' 'tp=3': field 'gpus' 2 is not a multiple of 3 (tp x pp)");
  EXPECT_EQ(error_of(R"({"jobs": [{"name": "g", "model": "gpt2_small", "batch": 6, "gpus": 2, "parallel": "pp",
                                   "micro_batches": 4, "iterations": 1}]})"),
            "jobs.json: job 1 ('g'): field 'batch' 6 is not a multiple of field 'micro_batches' 4");
  EXPECT_EQ(error_of(R"({"jobs": [{"name": "g", "model": "gpt2_small", "batch": 8, "gpus": 2, "parallel": 2,
                                   "iterations": 1}]})"),
            "jobs.json: job 1 ('g'): field 'parallel' must be a non-empty string");
}

ScheduleRequest gang_request(const std::string& parallel, int64_t gpus) {
  ScheduleRequest request;
  request.jobs = jobs_of(R"({"jobs": [{"name": "gpt", "model": "gpt2_small", "batch": 8, "seq": 512,
    "precision": "amp", "iterations": 1000, "gpus": )" +
                         std::to_string(gpus) + R"(, "parallel": ")" + parallel + R"("},
    {"name": "solo", "model": "gpt2_small", "batch": 8, "seq": 512, "precision": "amp", "iterations": 1000}]})");
  // The one-GPU node first: a gang that ignored node sizes would be placed there.
  request.nodes = parse_cluster(json::parse(R"({"nodes": [{"name": "single", "gpu": "a100-80gb", "count": 1},
    {"name": "pair", "gpu": "a100-80gb", "count": 2}]})"),
                                "cluster.json");
  request.ga.generations = 10;
  return request;
}

TEST(ScheduleGangJobs, ATensorParallelGangRunsOnTheNodeThatHoldsItAtPredictsTime) {
  const Schedule schedule = decide::schedule(gang_request("tp", 2));
  ASSERT_EQ(schedule.placed_jobs.size(), 2u);
  EXPECT_EQ(schedule.problem.needs(0), 2);
  const ClusterGpu& first = schedule.gpus[schedule.genetic.plan.gpu[0]];
  EXPECT_EQ(first.node, "pair");
  EXPECT_EQ(first.gang_label(2), "pair/0-1");
  // Its iteration is predict's for the same plan on that GPU, and its run that times its iterations.
  const JobOnType& on = schedule.forecasts[0][first.type];
  const double predicted = predict_ms("gpt2_small", 8, 512, "a100-80gb", 2, "tp");
  EXPECT_DOUBLE_EQ(*on.time_ms, predicted);
  const sched::Timeline& timeline = schedule.genetic.timeline;
  EXPECT_DOUBLE_EQ(timeline.end_s[0] - timeline.start_s[0], predicted / 1e3 * 1000);
  // The one-GPU job's time is predict's without a plan, and differs from the gang's.
  EXPECT_DOUBLE_EQ(*schedule.forecasts[1][first.type].time_ms, predict_ms("gpt2_small", 8, 512, "a100-80gb", 1, ""));
  EXPECT_NE(*schedule.forecasts[1][first.type].time_ms, predicted);
  // Cost: the gang pays for both GPUs.
  const double price = schedule.types[first.type].price_per_hour;
  const double cost =
      ((timeline.end_s[0] - timeline.start_s[0]) * 2 + (timeline.end_s[1] - timeline.start_s[1])) * price / 3600;
  EXPECT_NEAR(timeline.cost_usd, cost, 1e-9 * cost);
  // The JSON names the gang and its plan.
  const nlohmann::ordered_json out = to_json(schedule);
  EXPECT_EQ(out["assignments"][0]["gpu"], "pair/0-1");
  EXPECT_EQ(out["assignments"][0]["gpus"], 2);
  EXPECT_EQ(out["assignments"][0]["parallel"], "tp2");
  EXPECT_EQ(out["assignments"][1]["gpus"], 1);
  EXPECT_TRUE(out["assignments"][1]["parallel"].is_null());
}

TEST(ScheduleGangJobs, AGangLargerThanEveryNodeOrAnImpossibleSplitIsRefused) {
  try {
    decide::schedule(gang_request("dp", 3));
    FAIL();
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "jobs.json: job 1 ('gpt'): field 'gpus' 3: no node of the cluster has that many GPUs (the largest has "
                 "2; a job of "
                 "several GPUs runs within one node)");
  }
  // GPT-2 small's 12 heads do not split over 8 GPUs: the same on every GPU type, so the schedule's error.
  ScheduleRequest request = gang_request("tp", 8);
  request.nodes = parse_cluster(json::parse(R"({"nodes": [{"gpu": "a100-80gb", "count": 8}]})"), "cluster.json");
  try {
    decide::schedule(request);
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("job 'gpt': ", 0), 0u) << error.what();
  }
  // --exact solves one-GPU jobs only.
  request = gang_request("tp", 2);
  request.exact = true;
  try {
    decide::schedule(request);
    FAIL();
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "--exact places one-GPU jobs only: job 'gpt' needs 2 GPUs");
  }
}

}  // namespace
}  // namespace dnncast::decide
