#include "memory/program.h"

#include "core/error.h"

namespace dnncast::memory {

const char* category_name(Category category) {
  switch (category) {
    case Category::Parameter:
      return "parameters";
    case Category::State:
      return "buffers+inputs";
    case Category::Gradient:
      return "gradients";
    case Category::OptimizerState:
      return "optimizer_state";
    case Category::Activation:
      return "activations";
    case Category::Transient:
      return "transient";
  }
  return "?";
}

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::Setup:
      return "setup";
    case Phase::Forward:
      return "forward";
    case Phase::Loss:
      return "loss";
    case Phase::Backward:
      return "backward";
    case Phase::Optimizer:
      return "optimizer";
  }
  return "?";
}

int Program::alloc(int64_t bytes, Category category, const char* what) {
  DNNCAST_ASSERT(bytes >= 0);
  if (bytes == 0) return -1;
  int id = static_cast<int>(buffers_.size());
  buffers_.push_back({bytes, 1, category});
  events_.push_back({Event::Alloc, category, phase_, iteration_, node_, id, bytes, what});
  return id;
}

void Program::retain(int buffer) {
  if (buffer < 0) return;
  Buffer& entry = buffers_.at(static_cast<size_t>(buffer));
  DNNCAST_ASSERT(entry.refs > 0);
  ++entry.refs;
}

void Program::release(int buffer) {
  if (buffer < 0) return;
  Buffer& entry = buffers_.at(static_cast<size_t>(buffer));
  DNNCAST_ASSERT(entry.refs > 0);
  if (--entry.refs == 0)
    events_.push_back({Event::Free, entry.category, phase_, iteration_, node_, buffer, entry.bytes, ""});
}

void Program::relabel(int buffer, Category category) {
  if (buffer < 0) return;
  Buffer& entry = buffers_.at(static_cast<size_t>(buffer));
  DNNCAST_ASSERT(entry.refs > 0);
  if (entry.category == category) return;
  events_.push_back({Event::Relabel, category, phase_, iteration_, node_, buffer, entry.bytes, ""});
  entry.category = category;
}

}  // namespace dnncast::memory
