#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "graph/builder.h"
#include "memory/trace_internal.h"

namespace dnncast::memory::detail {
namespace {

// A grad node's backward (BackwardFn) holds a recipe's lambda inline up to kInline bytes of captures and on the heap
// past that: either way it is called with what it captured, survives moves (GradNode lists grow and are resized), and
// its captures are destroyed exactly once, as std::function's were. Counted with a shared_ptr captured by each.
TEST(BackwardFn, CallsWhatItCapturedInlineOrOnTheHeapAndDestroysItOnce) {
  const auto owner = std::make_shared<int>(7);
  std::array<int64_t, 20> large{};  // 160 bytes: past kInline
  large[19] = 41;
  static_assert(sizeof(large) > BackwardFn::kInline);
  const std::vector<int64_t> sizes{512, 1024, 2048};
  {
    std::vector<BackwardFn> functions;
    functions.emplace_back([owner, bytes = int64_t{64}](Trace&, const Grad& grad) {
      Grad out = grad;
      out.bytes = bytes + *owner;
      return GradList{out};
    });
    functions.emplace_back([owner, large](Trace&, const Grad& grad) {
      Grad out = grad;
      out.bytes = large[19] + *owner;
      return GradList{out, Grad{}};
    });
    functions.emplace_back([owner, sizes](Trace&, const Grad&) {
      GradList grads;
      for (int64_t bytes : sizes) grads.push_back(make_grad(-1, bytes, true));
      for (int64_t bytes : sizes) grads.push_back(make_grad(-1, bytes * 2, false));  // past 4: onto the heap
      return grads;
    });
    EXPECT_EQ(owner.use_count(), 4);
    for (int grow = 0; grow < 40; ++grow) functions.emplace_back();  // moves the three, maybe several times
    BackwardFn taken = std::move(functions[1]);
    functions[0] = std::move(functions[2]);  // the small one destroyed, the list's moved in
    EXPECT_EQ(owner.use_count(), 3);
    GraphBuilder builder("t", "test");
    builder.act("r", "ReLU", builder.input(TensorShape{2, 8}));
    const Graph graph = builder.finish();
    Trace trace(graph, TraceOptions{});  // the lambdas do not touch it
    Grad in;
    in.bytes = 1;
    const GradList heap = taken(trace, in);
    ASSERT_EQ(heap.size(), 2u);
    EXPECT_EQ(heap[0].bytes, 48);
    EXPECT_EQ(heap[1].buffer, -1);
    const GradList listed = functions[0](trace, in);
    ASSERT_EQ(listed.size(), 6u);
    EXPECT_EQ(listed[2].bytes, 2048);
    EXPECT_EQ(listed[5].bytes, 4096);
    EXPECT_FALSE(listed[5].contiguous);
  }
  EXPECT_EQ(owner.use_count(), 1);
}

}  // namespace
}  // namespace dnncast::memory::detail
