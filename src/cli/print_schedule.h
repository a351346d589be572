// The terminal output of `dnncast schedule`: the assignments by GPU, a Gantt chart (one row per GPU, one
// mark per job, '.' idle) and the solvers side by side.
#pragma once

#include "decide/schedule_jobs.h"

namespace dnncast::cli {

void print_schedule(const apps::Schedule& schedule);

}  // namespace dnncast::cli
