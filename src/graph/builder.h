// GraphBuilder: appends nodes and infers each shape at once, so model code can ask for the
// channels of what it just built. Used by the zoo and the synthetic generator.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace dnncast {

class GraphBuilder {
 public:
  GraphBuilder(std::string name, std::string family);

  // Generic: any registered op. Throws InputError (naming the node) on a bad shape.
  int op(const std::string& name, const std::string& op_name, std::vector<int> inputs,
         std::map<std::string, AttrValue> attrs = {});

  int input(const TensorShape& shape, DType dtype = DType::F32, const std::string& name = "input");
  int conv(const std::string& name, int x, int64_t out_channels, int64_t kernel, int64_t stride = 1,
           int64_t padding = 0, int64_t groups = 1, bool bias = true, int64_t dilation = 1);
  // Non-square kernels/padding (inception's 1x7, 7x1).
  int conv2(const std::string& name, int x, int64_t out_channels, std::vector<int64_t> kernel,
            std::vector<int64_t> stride, std::vector<int64_t> padding, int64_t groups = 1, bool bias = true);
  // momentum: the running statistics' update rate (PyTorch's default 0.1; an attribute only when not 0.1).
  int batchnorm(const std::string& name, int x, double eps = 1e-5, double momentum = 0.1);
  int act(const std::string& name, const std::string& op_name, int x);  // ReLU, SiLU, ...
  int linear(const std::string& name, int x, int64_t out_features, bool bias = true);
  int maxpool(const std::string& name, int x, int64_t kernel, int64_t stride, int64_t padding = 0,
              bool ceil_mode = false);
  int avgpool(const std::string& name, int x, int64_t kernel, int64_t stride, int64_t padding = 0,
              bool ceil_mode = false, bool count_include_pad = true);
  int adaptive_avgpool(const std::string& name, int x, int64_t height, int64_t width);
  int flatten(const std::string& name, int x, int64_t start_dim = 1);
  int add(const std::string& name, int a, int b);
  int mul(const std::string& name, int a, int b);
  int concat(const std::string& name, std::vector<int> xs, int64_t axis = 1);
  int dropout(const std::string& name, int x, double p);

  // Nodes added from begin_block(index) until end_block() carry the attribute block=index: the transformer
  // layer they belong to, the unit activation checkpointing recomputes (graph/checkpoint.h).
  void begin_block(int64_t index) { block_ = index; }
  void end_block() { block_ = -1; }

  const TensorShape& shape(int index) const { return graph_.node(index).shape; }
  int64_t channels(int index) const { return graph_.node(index).shape[1]; }
  const Graph& graph() const { return graph_; }

  // Validates and hands the graph over.
  Graph finish();

 private:
  Graph graph_;
  int64_t block_ = -1;
};

}  // namespace dnncast
