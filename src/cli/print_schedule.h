// The terminal output of `dnncast schedule`: the assignments by GPU, a Gantt chart (one row per GPU, one
// mark per job, '.' idle) and the solvers side by side.
#pragma once

#include <string>

#include "decide/schedule_jobs.h"

namespace dnncast::cli {

// The table as text (fuzz/fuzz_schedule_files.cpp reads it so); print_schedule writes it to stdout.
std::string format_schedule(const decide::Schedule& schedule);
void print_schedule(const decide::Schedule& schedule);

}  // namespace dnncast::cli
