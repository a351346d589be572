// `predict`'s host check (forecast/host_check.h): runs `dnncast host-check` as a child process -- the measuring
// program, dnncast-measure, where libtorch runs -- with its output on stderr, and waits for it. Its failure is said
// on stderr in one line; the forecast goes on without a check.
#pragma once

namespace dnncast::cli {

void run_host_check_command();

}  // namespace dnncast::cli
