// The page `dnncast serve` answers at `/` (issue 49): a form for one training question (model by zoo name, Hub id,
// or synthetic:SEED; batch, sequence or image size, precision, optimizer, LoRA / QLoRA, checkpointing, a GPU of the
// catalogue or this CPU) whose answers come from the server's own /v1/predict and /v1/memory, as the CLI's --json
// gives them: time per iteration with its interval, memory as a bar of its parts against the GPU's memory, the
// largest batch that fits, the equivalent `dnncast` command lines and a link that asks the same question again.
// Plain HTML and JavaScript in the binary: no build step, nothing from another host (its Content-Security-Policy
// lets the page's requests go only to the server that served it).
#pragma once

#include <string_view>

namespace dnncast::serve {

std::string_view serve_page();

}  // namespace dnncast::serve
