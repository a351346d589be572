// The libtorch executor's ops (profile/executor_internal.h): views, copies and shape ops.
#include "profile/executor_internal.h"

namespace dnncast::profile::detail {

// Shape ops: views where PyTorch makes views, copies where it copies.
void add_shape_impls(std::map<std::string, OpImpl>& impls) {
  impls["Flatten"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                        return at::flatten(in[0], node.attr_int("start_dim", 1), node.attr_int("end_dim", -1));
                      }};
  impls["Concat"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                       return at::cat(in, node.attr_int("axis", 1));
                     }};
  impls["Reshape"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                        std::vector<int64_t> dims = node.attr_ints("shape");
                        for (size_t axis = 0; axis < dims.size(); ++axis)
                          if (dims[axis] == 0) dims[axis] = in[0].size(static_cast<int64_t>(axis));
                        return at::reshape(in[0], dims);
                      }};
  impls["Permute"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                        at::Tensor out = in[0].permute(node.attr_ints("dims"));
                        return node.attr_int("contiguous", 0) != 0 ? out.contiguous() : out;
                      }};
  impls["Transpose"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                          at::Tensor out = in[0].transpose(node.attr_int("dim0"), node.attr_int("dim1"));
                          return node.attr_int("contiguous", 0) != 0 ? out.contiguous() : out;
                        }};
  impls["Slice"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                      int64_t axis = wrap_axis(node.attr_int("axis"), in[0].dim());
                      int64_t size = in[0].size(axis);
                      int64_t start = node.attr_int("start");
                      int64_t end = node.attr_int("end");
                      if (start < 0) start += size;
                      if (end < 0) end += size;
                      return in[0].slice(axis, start, std::min(end, size));
                    }};
  impls["RepeatInterleave"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                                 // Hugging Face's repeat_kv: expand a new axis after `axis`, then one copy.
                                 const at::Tensor& x = in[0];
                                 int64_t axis = wrap_axis(node.attr_int("axis"), x.dim());
                                 int64_t repeats = node.attr_int("repeats");
                                 std::vector<int64_t> expanded = x.sizes().vec(), merged = x.sizes().vec();
                                 expanded.insert(expanded.begin() + axis + 1, repeats);
                                 merged[static_cast<size_t>(axis)] *= repeats;
                                 return x.unsqueeze(axis + 1).expand(expanded).reshape(merged);
                               }};
  impls["ChannelShuffle"] = {
      no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
        // torchvision shufflenetv2.channel_shuffle: view, transpose, contiguous, view.
        const at::Tensor& x = in[0];
        int64_t groups = node.attr_int("groups");
        int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
        return x.view({n, groups, c / groups, h, w}).transpose(1, 2).contiguous().view({n, c, h, w});
      }};
}

}  // namespace dnncast::profile::detail
