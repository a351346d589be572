// Subcommands of `dnncast`. Each takes the arguments after its name and returns the exit code;
// bad input is thrown as InputError and becomes one line on stderr and exit code 2 in main().
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dnncast::cli {

using Args = std::vector<std::string>;

int run_inspect(const Args& args);
int run_profile(const Args& args);
int run_dataset(const Args& args);  // dataset stats | export | import | merge
int run_bench_layers(const Args& args);
int run_campaign(const Args& args);
int run_train(const Args& args);
int run_evaluate(const Args& args);
int run_predict(const Args& args);
int run_host_check(const Args& args);
int run_memory(const Args& args);
int run_transfer(const Args& args);
int run_calibrate(const Args& args);
// calibrate MODEL --batch N --minutes M (cmd_calibrate_model.cpp): run_calibrate hands a MODEL argument on to it,
// --layer-bench to run_calibrate_cross_host and --refit to run_calibrate_refit (cmd_calibrate_forms.cpp).
int run_calibrate_model(const Args& args);
int run_calibrate_cross_host(const Args& args);
int run_calibrate_refit(const Args& args);
// True when ARGS are one of those three forms (exit_code: its), after printing their help before the plan form's.
bool calibrate_other_form(const Args& args, int& exit_code);
// The line of a calibration's report saying how it carries the configurations it did not measure (its "anchors").
void print_anchors(const nlohmann::json& report);
// The lines of the real runs a calibration left out for sharing their CPU with another process ("whole_runs_left_out").
void print_left_out(const nlohmann::json& report);
int run_devices(const Args& args);                // devices [--instances]: the GPU catalogue and cloud instances
int run_calibrate_gpu_kernels(const Args& args);  // fit and judge the per-kernel GPU model
int run_calibrate_gpus(const Args& args);         // fit and judge the GPU time model on the public tables
int run_calibrate_gpu_memory(const Args& args);   // fit and judge the GPU memory model on GPUMemNet's measurements
int run_calibrate_collectives(const Args& args);  // fit the NCCL collective model to Vidur's measured times
int run_compare(const Args& args);                // compare MODEL --batch N: time and cost per cloud instance
int run_schedule(const Args& args);               // schedule JOBS --cluster C: place jobs on GPUs (genetic algorithm)
int run_schedule_study(const Args& args);         // the scheduler against the exact optimum, baselines, a replay
int run_serve(const Args& args);                  // serve [--listen HOST:PORT]: the forecast API over HTTP

}  // namespace dnncast::cli
