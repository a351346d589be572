#include "core/option_names.h"

#include "core/error.h"

namespace dnncast {

std::string option_name(const std::string& keyword, OptionStyle style) {
  struct Spelling {
    const char* keyword;
    const char* flag;
    const char* field;  // nullptr: the keyword
  };
  static const Spelling kSpellings[] = {{"batch", "--batch", nullptr},
                                        {"input_shape", "--input", "input"},
                                        {"seq", "--seq", nullptr},
                                        {"classes", "--classes", nullptr},
                                        {"lora", "--lora", nullptr},
                                        {"quantize", "--quantize", nullptr},
                                        {"expert_balance", "--expert-balance", nullptr},
                                        {"attention", "--attention", nullptr},
                                        {"optimizer", "--optimizer", nullptr},
                                        {"precision", "--precision", nullptr},
                                        {"device", "--device", nullptr},
                                        {"cuda_context", "--cuda-context", nullptr},
                                        {"fits", "--fits", nullptr},
                                        {"max_batch_bytes", "--max-batch", nullptr},
                                        {"framework", "--framework", nullptr},
                                        {"max_batch", "--max-batch", nullptr},
                                        {"calibration", "--calibration", nullptr},
                                        {"phase", "--phase", nullptr},
                                        {"sharding", "--sharding", nullptr},
                                        {"gpus", "--gpus", nullptr},
                                        {"gpus_per_node", "--gpus-per-node", nullptr},
                                        {"parallel", "--parallel", nullptr},
                                        {"micro_batches", "--micro-batches", nullptr},
                                        {"max_seq_bytes", "--max-seq", nullptr},
                                        {"epoch_tokens", "--epoch-tokens", nullptr},
                                        {"epoch_samples", "--epoch-samples", nullptr},
                                        {"grad_accum", "--grad-accum", nullptr},
                                        {"paged_optimizer", "--paged-optimizer", nullptr}};
  for (const Spelling& spelling : kSpellings) {
    if (keyword != spelling.keyword) continue;
    if (style == OptionStyle::Flag) return spelling.flag;
    return style == OptionStyle::Field && spelling.field != nullptr ? spelling.field : spelling.keyword;
  }
  DNNCAST_ASSERT(false);  // every option a request names is in the table
  return keyword;
}

}  // namespace dnncast
