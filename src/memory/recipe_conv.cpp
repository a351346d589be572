// The memory simulator's recipes for one family of ops (memory/trace_internal.h): Convolutions, batch norm and pooling:
// what libtorch's CPU kernels (hardware/cpu_conv.h) and cuDNN allocate.
#include "memory/trace_internal.h"

namespace dnncast::memory::detail {

Tensor Trace::run_conv(int index, const Node& node, const std::vector<Tensor>& inputs) {
  const Tensor& x = inputs[0];
  const TensorShape& in = graph_.node(node.inputs[0]).shape;
  ConvShape s = conv_shape(graph_, node);
  s.input_grad = x.requires_grad();
  s.channels_last = cpu_ && x.layout.suggests_channels_last(in.dims);
  const int64_t out_bytes = bytes_of(node);
  const int64_t in_bytes = x.bytes;
  // A non-contiguous input (neither plain nor channels-last) is made contiguous first.
  const bool copy_input = cpu_ && !x.contiguous && !x.channels_last;
  int copy = copy_input ? program_.alloc(in_bytes, Category::Transient, "contiguous") : -1;
  std::vector<int> slots;
  run_steps(program_, conv_recipe(index, s).forward, slots, Category::Activation);
  program_.release(copy);
  Tensor out = make_tensor(slots[kSlotOutput], out_bytes, -1);
  const std::vector<int64_t> out_dims = node.shape.dims, in_dims = in.dims;
  if (s.channels_last) with_layout(out, Layout::nhwc(), out_dims);
  out.grad_fn =
      make_node(index, {saved(x)}, {edge_of(x), param_edge(index, 0), s.bias ? param_edge(index, 1) : Edge{}},
                [index, s, copy_input, in_bytes, out_dims, in_dims](Trace& t, const Grad& grad) {
                  ConvShape shape = s;
                  shape.grad_copy =
                      t.cpu() && (shape.channels_last ? !(grad.dense && grad.layout.channels_last_contiguous(out_dims))
                                                      : !grad.contiguous);
                  const ConvRecipe& backward = t.conv_recipe(index, shape);
                  int copy = copy_input ? t.program().alloc(in_bytes, Category::Transient, "contiguous") : -1;
                  std::vector<int> slots;
                  run_steps(t.program(), backward.backward, slots, Category::Transient);
                  t.program().release(copy);
                  slots.resize(kFirstTemp, -1);
                  auto result = [&](int slot) {
                    int buffer = slots[static_cast<size_t>(slot)];
                    return make_grad(buffer, buffer >= 0 ? t.program().bytes(buffer) : 0, true);
                  };
                  Grad gi = result(kSlotGradInput);
                  if (shape.channels_last) with_layout(gi, Layout::nhwc(), in_dims);
                  Grad gw = result(kSlotGradWeight);
                  gw.contiguous = backward.weight_grad_contiguous;
                  return GradList{gi, gw, result(kSlotGradBias)};
                });
  return out;
}

Tensor Trace::run_batchnorm(int index, const Node& node, const std::vector<Tensor>& inputs) {
  const Tensor& x = inputs[0];
  const TensorShape& in = graph_.node(node.inputs[0]).shape;
  const int64_t channel_bytes = in[1] * kF32;
  const int64_t image_size = in.numel() / in[0] / in[1];
  const int64_t bytes = x.bytes;
  const bool cpu = cpu_;
  const int64_t nthreads = threads();
  int mean = -1, invstd = -1;
  if (cpu) {
    program_.temp(kI64, "scalar");  // num_batches_tracked.add_(1): the wrapped integer
    mean = program_.alloc(channel_bytes, Category::Activation, "save_mean");
    invstd = program_.alloc(channel_bytes, Category::Activation, "save_invstd");
    int sum_mean = program_.alloc(channel_bytes, Category::Transient, "mean");
    int var_sum = program_.alloc(channel_bytes, Category::Transient, "var_sum");
    // An N x C x 1 x 1 input takes the channels-last statistics kernel, with a per-thread buffer.
    if (image_size == 1) program_.temp(nthreads * channel_bytes, "stats buffer");
    program_.release(var_sum);
    program_.release(sum_mean);
  } else {
    mean = program_.alloc(channel_bytes, Category::Activation, "save_mean");
    invstd = program_.alloc(channel_bytes, Category::Activation, "save_invstd");
  }
  Tensor out = new_output(bytes);
  if (cpu) {
    int alpha = program_.alloc(channel_bytes, Category::Transient, "alpha");
    program_.temp(channel_bytes, "beta");
    program_.release(alpha);
  }
  out.grad_fn = make_node(index, {saved(x), mean, invstd}, {edge_of(x), param_edge(index, 0), param_edge(index, 1)},
                          [bytes, channel_bytes, image_size, cpu, nthreads](Trace& t, const Grad&) {
                            Program& p = t.program();
                            int first = cpu ? p.alloc(bytes, Category::Transient, "grad_input") : -1;
                            Grad gw = t.new_grad(channel_bytes), gb = t.new_grad(channel_bytes);
                            Grad gi = t.new_grad(bytes);
                            p.release(first);
                            if (cpu && image_size == 1) p.temp(2 * nthreads * channel_bytes, "reduce buffer");
                            return GradList{gi, gw, gb};
                          });
  return out;
}

Tensor Trace::run_max_pool(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  Tensor out = new_output(out_bytes);
  int indices = program_.alloc(node.shape.numel() * kI64, Category::Activation, "indices");
  const int64_t in_bytes = x.bytes;
  out.grad_fn = make_node(index, {saved(x), indices}, {edge_of(x)},
                          [in_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(in_bytes)}; });
  return out;
}

Tensor Trace::run_avg_pool(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  const bool mean = op == "AdaptiveAvgPool2d"sv && node.shape[2] == 1 && node.shape[3] == 1;
  Tensor out = new_output(out_bytes);
  if (mean && cpu_) scalar_temps();  // mean: sum, then div_ by the element count
  const int64_t in_bytes = x.bytes;
  const bool cpu = cpu_;
  out.grad_fn = make_node(index, {saved(x)}, {edge_of(x)}, [in_bytes, mean, cpu](Trace& t, const Grad&) {
    if (!mean || !cpu) return GradList{t.new_grad(in_bytes)};
    // grad.expand(sizes) / count
    int wrapped = t.program().alloc(8, Category::Transient, "scalar");
    int converted = t.program().alloc(4, Category::Transient, "scalar");
    Grad gi = t.new_grad(in_bytes);
    t.program().release(converted);
    t.program().release(wrapped);
    return GradList{gi};
  });
  return out;
}

}  // namespace dnncast::memory::detail
