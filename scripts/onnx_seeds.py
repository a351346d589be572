#!/usr/bin/python3
# Writes the hand-built seed corpus of fuzz/fuzz_onnx.cpp (fuzz/corpus/onnx/, a few hundred bytes
# each, weights as shapes with zero values): a conv block, an attention block, a shape chain.
# Run: /usr/bin/python3 scripts/onnx_seeds.py fuzz/corpus/onnx
import sys
import numpy as np
from onnx import helper as h, numpy_helper, TensorProto as T

def weight(name, *dims):
    return numpy_helper.from_array(np.zeros(dims, dtype=np.float32), name)

def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

def save(name, nodes, inits, shape, elem=T.FLOAT):
    graph = h.make_graph(nodes, name, [h.make_tensor_value_info("x", elem, shape)],
                         [h.make_tensor_value_info("y", T.FLOAT, None)], initializer=inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    open(sys.argv[1] + "/" + name + ".onnx", "wb").write(model.SerializeToString())

save("conv_block", [
    h.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    h.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"], name="bn", epsilon=1e-5),
    h.make_node("Clip", ["n", "lo", "hi"], ["r"], name="relu6"),
    h.make_node("Sigmoid", ["r"], ["s"], name="sig"),
    h.make_node("Mul", ["r", "s"], ["a"], name="silu"),
    h.make_node("GlobalAveragePool", ["a"], ["p"], name="gap"),
    h.make_node("Flatten", ["p"], ["f"], name="flat"),
    h.make_node("Gemm", ["f", "fc"], ["y"], name="fc", transB=1)],
    [weight("w", 4, 3, 3, 3), weight("g", 4), weight("b", 4), weight("m", 4), weight("v", 4),
     numpy_helper.from_array(np.array(0, dtype=np.float32), "lo"), numpy_helper.from_array(np.array(6, dtype=np.float32), "hi"),
     weight("fc", 5, 4)], ["batch", 3, 8, 8])

save("attention", [
    h.make_node("Gather", ["table", "x"], ["e"], name="embed"),
    h.make_node("MatMul", ["e", "wq"], ["q0"], name="q"),
    h.make_node("Reshape", ["q0", "heads"], ["q1"], name="qr"),
    h.make_node("Transpose", ["q1"], ["q"], name="qt", perm=[0, 2, 1, 3]),
    h.make_node("Transpose", ["q1"], ["kt"], name="kt", perm=[0, 2, 3, 1]),
    h.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
    h.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
    h.make_node("MatMul", ["p", "q"], ["o"], name="context"),
    h.make_node("Transpose", ["o"], ["o1"], name="merge", perm=[0, 2, 1, 3]),
    h.make_node("Reshape", ["o1", "flat"], ["o2"], name="merge_view"),
    h.make_node("ReduceMean", ["o2"], ["mu"], name="ln_mean", axes=[-1]),
    h.make_node("Sub", ["o2", "mu"], ["d"], name="ln_sub"),
    h.make_node("Pow", ["d", "two"], ["d2"], name="ln_pow"),
    h.make_node("ReduceMean", ["d2"], ["var"], name="ln_var", axes=[-1]),
    h.make_node("Add", ["var", "eps"], ["ve"], name="ln_eps"),
    h.make_node("Sqrt", ["ve"], ["sd"], name="ln_sqrt"),
    h.make_node("Div", ["d", "sd"], ["y"], name="ln_div")],
    [weight("table", 10, 8), weight("wq", 8, 8), ints("heads", [0, 0, 2, 4]), ints("flat", [0, 0, 8]),
     numpy_helper.from_array(np.array(2, dtype=np.float32), "two"), numpy_helper.from_array(np.array(1e-5, dtype=np.float32), "eps")],
    ["batch", 6], T.INT64)

save("shape_chain", [
    h.make_node("Shape", ["x"], ["s"], name="shape"),
    h.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
    h.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsq"),
    h.make_node("Concat", ["n1", "minus1"], ["target"], name="cat", axis=0),
    h.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
    h.make_node("Split", ["r"], ["a", "b"], name="split", axis=1),
    h.make_node("Add", ["a", "b"], ["y"], name="add")],
    [ints("zero", 0), ints("axes", [0]), ints("minus1", [-1])], ["batch", 2, 4, 4])
