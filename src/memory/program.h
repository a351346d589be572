// Internals of src/memory: the allocation program of a training run and how it is recorded.
// A Program is the ordered list of allocations and releases that libtorch makes (as replayed by
// trace_training, training_trace.cpp); allocator models (allocators.h) turn it into peaks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dnncast::memory {

// What a buffer holds, for the breakdown at the peak.
enum class Category : uint8_t {
  Parameter,       // trainable parameters (baseline)
  State,           // buffers, graph inputs, loss targets (baseline)
  Gradient,        // parameter gradients (.grad, kept across iterations)
  OptimizerState,  // momentum buffers, Adam moments
  Activation,      // forward tensors: kept for backward or still to be consumed
  Transient,       // activation gradients, workspaces, reorders, scratch, temporaries
};
inline constexpr int kCategoryCount = 6;
const char* category_name(Category category);

enum class Phase : uint8_t { Setup, Forward, Loss, Backward, Optimizer };
const char* phase_name(Phase phase);

struct Event {
  enum Kind : uint8_t { Alloc, Free, Relabel };
  Kind kind;
  Category category;  // Alloc: the buffer's category; Relabel: its new category; Free: its last one
  Phase phase;
  uint8_t iteration;  // 0 = setup, 1.. = training iterations
  int32_t node;       // IR node index, -1 when none (loss, optimizer, engine)
  int32_t buffer;
  int64_t bytes;     // requested bytes (what libtorch asks the allocator for)
  const char* what;  // static label ("output", "reorder", "scratchpad", ...)
};

// Buffers with reference counts: an allocation happens at alloc(), the release when the last
// holder lets go, as with c10::Storage. Zero-byte requests are dropped (nothing is allocated).
class Program {
 public:
  // Returns the buffer id holding one reference, or -1 for a zero-byte request.
  int alloc(int64_t bytes, Category category, const char* what);
  void retain(int buffer);   // -1 ignored
  void release(int buffer);  // -1 ignored; the last release records the free
  void relabel(int buffer, Category category);
  // A temporary: allocated and released at once.
  void temp(int64_t bytes, const char* what) { release(alloc(bytes, Category::Transient, what)); }

  void set_context(int iteration, Phase phase, int node) {
    iteration_ = static_cast<uint8_t>(iteration);
    phase_ = phase;
    node_ = node;
  }
  void set_node(int node) { node_ = node; }

  int64_t bytes(int buffer) const { return buffers_.at(static_cast<size_t>(buffer)).bytes; }
  int refs(int buffer) const { return buffers_.at(static_cast<size_t>(buffer)).refs; }
  const std::vector<Event>& events() const { return events_; }
  void reserve(size_t events) {
    events_.reserve(events);
    buffers_.reserve(events / 2);
  }
  size_t buffer_count() const { return buffers_.size(); }

 private:
  struct Buffer {
    int64_t bytes;
    int32_t refs;
    Category category;
  };
  std::vector<Buffer> buffers_;
  std::vector<Event> events_;
  uint8_t iteration_ = 0;
  Phase phase_ = Phase::Setup;
  int32_t node_ = -1;
};

}  // namespace dnncast::memory
