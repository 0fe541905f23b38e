#!/usr/bin/env python3
"""Writes a small opset-21 model with int4 and uint4 tensors, and onnxruntime-node's outputs for
it as test data, so the int4 import and quantization kernels are checked against an independent
runtime (issue 22). Debian's onnx 1.12 does not know INT4 (22) and UINT4 (21): the tensors are
packed by hand, two to a byte, the lower index in the lower nibble, as ONNX specifies.

    make-int4-model.py --ort-node DIR OUT_DIR

OUT_DIR/int4.onnx:  x (f32 [2, 3, 5]) -> QuantizeLinear (scale 0.25, int4 zero point -1)
                    -> DequantizeLinear -> Mul by DequantizeLinear(uint4 weight [3, 5], one scale
                    and zero point per row) -> y;  and the int4 round trip itself as z
OUT_DIR/test_data_set_0/{input_0,output_0,output_1}.pb
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INT4, UINT4 = 22, 21


def packed(name, dtype, dims, values):
    """A TensorProto of 4-bit `values` (already in range), packed two to a byte."""
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    nibbles = [int(v) & 0xF for v in values]
    if len(nibbles) % 2:
        nibbles.append(0)
    t.raw_data = bytes(lo | (hi << 4) for lo, hi in zip(nibbles[0::2], nibbles[1::2]))
    return t


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ort-node", required=True)
    p.add_argument("out")
    a = p.parse_args()
    os.makedirs(os.path.join(a.out, "test_data_set_0"), exist_ok=True)

    w = [3, 15, 0, 8, 7, 1, 2, 9, 14, 5, 0, 4, 11, 6, 13]  # 15 uint4 values: an odd count
    inits = [
        numpy_helper.from_array(np.array(0.25, np.float32), "s"),
        packed("zp", INT4, [], [-1]),
        packed("w", UINT4, [3, 5], w),
        numpy_helper.from_array(np.array([0.5, 0.125, 1.0], np.float32), "ws"),
        packed("wz", UINT4, [3], [8, 7, 0]),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], name="quantize"),
        helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["z"], name="dequantize"),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="weight", axis=0),
        helper.make_node("Mul", ["z", "wd"], ["y"], name="mul"),
    ]
    graph = helper.make_graph(nodes, "int4", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 5]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    path = os.path.join(a.out, "int4.onnx")
    with open(path, "wb") as fh:
        fh.write(model.SerializeToString())

    # Values that round both ways, tie to even, and saturate at -8 and 7.
    x = np.array([0, 0.125, 0.375, -0.375, 1.0, 1.7, 2.1, 100, -100, -2.0, 0.6, -0.6, 1.25, -1.25, 0.3] * 2,
                 np.float32).reshape(2, 3, 5)
    x[1] *= -1
    with tempfile.TemporaryDirectory() as work:
        xf = os.path.join(work, "x.bin")
        x.tofile(xf)
        spec = os.path.join(work, "spec.json")
        with open(spec, "w") as fh:
            json.dump({"inputs": [{"name": "x", "dtype": "float32", "dims": [2, 3, 5], "file": xf}],
                       "outputs": ["y", "z"]}, fh)
        env = dict(os.environ, NODE_PATH=os.path.join(a.ort_node, "node_modules"))
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(["node", os.path.join(here, "ort-run.js"), path, spec, work], check=True, env=env)
        data = os.path.join(a.out, "test_data_set_0")
        with open(os.path.join(data, "input_0.pb"), "wb") as fh:
            fh.write(numpy_helper.from_array(x, "x").SerializeToString())
        for k, name in enumerate(["y", "z"]):
            arr = np.fromfile(os.path.join(work, f"{k}.bin"), np.float32).reshape(2, 3, 5)
            with open(os.path.join(data, f"output_{k}.pb"), "wb") as fh:
                fh.write(numpy_helper.from_array(arr, name).SerializeToString())
    print(f"{path}: int4 and uint4 tensors, onnxruntime's outputs in {a.out}/test_data_set_0")


if __name__ == "__main__":
    sys.exit(main())
