#!/usr/bin/python3
"""Writes the broken-model corpus (tests/data/bad/) and the external-data model (tests/data/external/).

Each file in tests/data/bad/ is broken in exactly one way; tests/frontend/BadModelsTest.cpp maps it
to the error the importer must give. The files are committed; re-run this script after changing it:

    /usr/bin/python3 scripts/make-bad-models.py [REPO_ROOT]

Uses Debian's python3-onnx helper API (call /usr/bin/python3: the pyenv python has no onnx). Output
is deterministic: the same script writes the same bytes.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BAD = os.path.join(ROOT, "tests", "data", "bad")
EXT = os.path.join(ROOT, "tests", "data", "external")
OPSET = 13


def model(nodes, inputs, outputs, initializers=(), value_info=(), opsets=None, name="bad"):
    graph = helper.make_graph(list(nodes), name, list(inputs), list(outputs), list(initializers),
                              value_info=list(value_info))
    imports = opsets or [helper.make_opsetid("", OPSET)]
    m = helper.make_model(graph, opset_imports=imports, producer_name="sextant-make-bad-models")
    m.ir_version = 8
    return m


def f32(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.SerializeToString())


def weights(name, shape, start=0.0):
    n = int(np.prod(shape))
    return numpy_helper.from_array((np.arange(n, dtype=np.float32) * 0.25 + start).reshape(shape), name)


def valid_conv_model():
    """A small valid Conv+Relu model; the truncated file is cut from it."""
    return model([helper.make_node("Conv", ["x", "conv1.weight"], ["y"], name="conv1", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["y"], ["z"], name="relu1")],
                 [f32("x", [1, 3, 8, 8])], [f32("z", [1, 4, 8, 8])],
                 [weights("conv1.weight", [4, 3, 3, 3])])


def external(tensor, location, offset=None, length=None):
    """Marks `tensor` as stored in `location` (no payload left in the model)."""
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = tensor.external_data.add()
            entry.key = key
            entry.value = str(value)
    return tensor


def ext_model(location, offset=None, length=None, name="fc.weight"):
    w = external(weights(name, [2, 2]), location, offset, length)
    return model([helper.make_node("MatMul", ["x", name], ["y"], name="fc")],
                 [f32("x", [1, 2])], [f32("y", [1, 2])], [w])


def bad_models():
    good = valid_conv_model().SerializeToString()
    write(BAD, "truncated.onnx", good[: len(good) // 2])
    write(BAD, "not_protobuf.onnx", b"this is a text file, not an ONNX model\n")

    # Conv's weight names an initializer that the file does not hold (its type is still declared).
    write(BAD, "missing_initializer.onnx",
          model([helper.make_node("Conv", ["x", "conv1.weight"], ["y"], name="conv1")],
                [f32("x", [1, 3, 8, 8])], [f32("y", [1, 4, 6, 6])],
                value_info=[f32("conv1.weight", [4, 3, 3, 3])]))
    # A node reads a value no node, input or initializer produces.
    write(BAD, "undefined_input.onnx",
          model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add1")],
                [f32("x", [2, 3])], [f32("y", [2, 3])]))
    # The graph output names a value nothing computes.
    write(BAD, "undefined_output.onnx",
          model([helper.make_node("Relu", ["x"], ["y"], name="relu1")],
                [f32("x", [2, 3])], [f32("nowhere", [2, 3])]))
    # a = Add(x, b); b = Relu(a).
    write(BAD, "cycle.onnx",
          model([helper.make_node("Add", ["x", "b"], ["a"], name="loop_add"),
                 helper.make_node("Relu", ["a"], ["b"], name="loop_relu")],
                [f32("x", [2, 3])], [f32("b", [2, 3])]))
    write(BAD, "unknown_op.onnx",
          model([helper.make_node("Frobnicate", ["x"], ["y"], name="frob1")],
                [f32("x", [2, 3])], [f32("y", [2, 3])]))
    write(BAD, "unknown_domain.onnx",
          model([helper.make_node("Relu", ["x"], ["y"], name="secret_relu", domain="com.example.secret")],
                [f32("x", [2, 3])], [f32("y", [2, 3])],
                opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.example.secret", 1)]))
    # Conv strides given as a float instead of ints.
    conv = helper.make_node("Conv", ["x", "conv1.weight"], ["y"], name="conv1")
    conv.attribute.append(helper.make_attribute("strides", 2.0))
    write(BAD, "wrong_attribute_type.onnx",
          model([conv], [f32("x", [1, 3, 8, 8])], [f32("y", [1, 4, 3, 3])],
                [weights("conv1.weight", [4, 3, 3, 3])]))
    write(BAD, "shape_mismatch_add.onnx",
          model([helper.make_node("Add", ["a", "b"], ["y"], name="add1")],
                [f32("a", [2, 3]), f32("b", [4, 5])], [f32("y", [2, 3])]))
    # Input has 3 channels, the weight expects 5.
    write(BAD, "shape_mismatch_conv.onnx",
          model([helper.make_node("Conv", ["x", "conv1.weight"], ["y"], name="conv1")],
                [f32("x", [1, 3, 8, 8])], [f32("y", [1, 4, 6, 6])],
                [weights("conv1.weight", [4, 5, 3, 3])]))
    # A graph input with a dim of 2^40: nothing may try to allocate it.
    write(BAD, "huge_input_dim.onnx",
          model([helper.make_node("Relu", ["x"], ["y"], name="relu1")],
                [f32("x", [1, 2 ** 40])], [f32("y", [1, 2 ** 40])]))
    # An initializer that claims 2^40 elements but carries none.
    big = TensorProto(name="big.weight", data_type=TensorProto.FLOAT, dims=[2 ** 40])
    write(BAD, "huge_initializer_dim.onnx",
          model([helper.make_node("Add", ["x", "big.weight"], ["y"], name="add1")],
                [f32("x", [1])], [f32("y", [2 ** 40])], [big]))
    # A Reshape whose constant target shape is 2^40 x 2^40 (the element count overflows int64).
    shape = numpy_helper.from_array(np.array([2 ** 40, 2 ** 40], dtype=np.int64), "target_shape")
    write(BAD, "huge_reshape.onnx",
          model([helper.make_node("Reshape", ["x", "target_shape"], ["y"], name="reshape1")],
                [f32("x", [2, 3])], [f32("y", [2 ** 40, 2 ** 40])], [shape]))

    # A BatchNormalization whose epsilon is NaN: every output would be NaN.
    bn = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn1", epsilon=float("nan"))
    write(BAD, "nan_epsilon.onnx",
          model([bn], [f32("x", [1, 2, 2, 2])], [f32("y", [1, 2, 2, 2])],
                [weights("s", [2]), weights("b", [2]), weights("m", [2]), weights("v", [2], 1.0)]))

    # The graph lists output 'y' twice.
    write(BAD, "duplicate_output.onnx",
          model([helper.make_node("Relu", ["x"], ["y"], name="relu1")],
                [f32("x", [2, 3])], [f32("y", [2, 3]), f32("y", [2, 3])]))
    # The declared output shape [1, 2^31] contradicts the computed [1, 10].
    write(BAD, "output_dim_contradicts.onnx",
          model([helper.make_node("Gemm", ["x", "w"], ["y"], name="fc1")],
                [f32("x", [1, 4])], [f32("y", [1, 2 ** 31])], [weights("w", [4, 10])]))

    # External data: the file is missing; the path leaves the model folder; an absolute path;
    # offset/length past the end of a 16-byte file; length that disagrees with the tensor's size.
    write(BAD, "ext_small.bin", np.arange(4, dtype=np.float32).tobytes())
    write(BAD, "ext_missing_file.onnx", ext_model("missing_weights.bin"))
    write(BAD, "ext_escapes_folder.onnx", ext_model("../external/ext_weights.bin"))
    write(BAD, "ext_absolute_path.onnx", ext_model("/etc/passwd"))
    write(BAD, "ext_out_of_range.onnx", ext_model("ext_small.bin", offset=8, length=16))
    write(BAD, "ext_wrong_length.onnx", ext_model("ext_small.bin", offset=0, length=8))
    write(BAD, "ext_no_location.onnx", ext_model(None, offset=0, length=16))


def external_model():
    """fc: y = x @ W + B with W (3x4) and B (4) in ext_weights.bin, saved by onnx itself."""
    w = weights("fc.weight", [3, 4])
    b = weights("fc.bias", [4], start=100.0)
    m = model([helper.make_node("MatMul", ["x", "fc.weight"], ["xw"], name="fc_matmul"),
               helper.make_node("Add", ["xw", "fc.bias"], ["y"], name="fc_add")],
              [f32("x", [1, 3])], [f32("y", [1, 4])], [w, b], name="external")
    for f in ("ext_weights.onnx", "ext_weights.bin"):
        path = os.path.join(EXT, f)
        if os.path.exists(path):
            os.remove(path)
    os.makedirs(EXT, exist_ok=True)
    onnx.save_model(m, os.path.join(EXT, "ext_weights.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="ext_weights.bin", size_threshold=0)


if __name__ == "__main__":
    bad_models()
    external_model()
    print("wrote", BAD, "and", EXT)
