"""Writes a small opset-18 model with LpPool, GlobalLpPool, MaxPool -> MaxUnpool, Det and RoiAlign, and
onnxruntime-node's outputs for it as test data, so those kernels are checked against an
independent runtime as the int4 model is (ops ONNX 1.12's node suite has few or no cases for).

    make-pool-det-model.py --ort-node DIR OUT_DIR

OUT_DIR/pool-det.onnx:  x (f32 [1, 3, 8, 10])
    -> LpPool p=3, kernel 3x2, strides 2x2, dilations 2x1, pads 1,0,1,1   -> lp
    -> LpPool p=2 (default), kernel 3x3, strides 2x2, auto_pad SAME_UPPER    -> lp_same
    -> GlobalLpPool p=2                                                    -> glp
    -> MaxPool 2x2 stride 2 (values, indices) -> MaxUnpool, output_shape x's  -> unpooled
       (x's shape is the unpooled one: where output_shape is larger, ONNX's reference and
       onnxruntime place the values differently)
    m (f32 [4, 3, 3]) -> Det                                               -> det
    x, three regions -> RoiAlign avg (half_pixel, adaptive sampling)       -> roi_avg
                     -> RoiAlign max (output_half_pixel, 2 x 2 samples)    -> roi_max
OUT_DIR/test_data_set_0/{input_0,input_1,output_0..6}.pb
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUTPUTS = [("lp", [1, 3, 3, 5]), ("lp_same", [1, 3, 4, 5]), ("glp", [1, 3, 1, 1]), ("unpooled", [1, 3, 8, 10]), ("det", [4]), ("roi_avg", [3, 3, 2, 3]), ("roi_max", [3, 3, 2, 3])]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ort-node", required=True)
    p.add_argument("out")
    a = p.parse_args()
    os.makedirs(os.path.join(a.out, "test_data_set_0"), exist_ok=True)
    nodes = [
        helper.make_node("LpPool", ["x"], ["lp"], name="lppool", p=3, kernel_shape=[3, 2], strides=[2, 2],
                         dilations=[2, 1], pads=[1, 0, 1, 1]),
        helper.make_node("LpPool", ["x"], ["lp_same"], name="lppool_same", kernel_shape=[3, 3], strides=[2, 2],
                         auto_pad="SAME_UPPER"),
        helper.make_node("GlobalLpPool", ["x"], ["glp"], name="globallppool", p=2),
        helper.make_node("MaxPool", ["x"], ["mp", "mpi"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxUnpool", ["mp", "mpi", "shape"], ["unpooled"], name="maxunpool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Det", ["m"], ["det"], name="det"),
        helper.make_node("RoiAlign", ["x", "rois", "batch"], ["roi_avg"], name="roialign_avg", output_height=2,
                         output_width=3, sampling_ratio=0, spatial_scale=0.5),
        helper.make_node("RoiAlign", ["x", "rois", "batch"], ["roi_max"], name="roialign_max", mode="max",
                         output_height=2, output_width=3, sampling_ratio=2, spatial_scale=0.5,
                         coordinate_transformation_mode="output_half_pixel"),
    ]
    graph = helper.make_graph(
        nodes, "pool-det",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 10]),
         helper.make_tensor_value_info("m", TensorProto.FLOAT, [4, 3, 3])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, dims) for name, dims in OUTPUTS],
        [numpy_helper.from_array(np.array([1, 3, 8, 10], np.int64), "shape"),
         # Regions inside, across the edge and partly off the map (in input pixels, scale 0.5).
         numpy_helper.from_array(np.array([[2, 1, 14, 11], [-3, 4, 9, 20], [10, 0, 30, 6]], np.float32), "rois"),
         numpy_helper.from_array(np.array([0, 0, 0], np.int64), "batch")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    path = os.path.join(a.out, "pool-det.onnx")
    with open(path, "wb") as fh:
        fh.write(model.SerializeToString())

    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (1, 3, 8, 10)).astype(np.float32)
    m = rng.uniform(-1, 1, (4, 3, 3)).astype(np.float32)
    m[3, 2] = m[3, 0] + m[3, 1]  # a singular matrix: its determinant is (close to) zero
    with tempfile.TemporaryDirectory() as work:
        inputs = []
        for name, arr in (("x", x), ("m", m)):
            f = os.path.join(work, name + ".bin")
            arr.tofile(f)
            inputs.append({"name": name, "dtype": "float32", "dims": list(arr.shape), "file": f})
        spec = os.path.join(work, "spec.json")
        with open(spec, "w") as fh:
            json.dump({"inputs": inputs, "outputs": [name for name, _ in OUTPUTS]}, fh)
        env = dict(os.environ, NODE_PATH=os.path.join(a.ort_node, "node_modules"))
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(["node", os.path.join(here, "ort-run.js"), path, spec, work], check=True, env=env)
        data = os.path.join(a.out, "test_data_set_0")
        for k, (name, arr) in enumerate((("x", x), ("m", m))):
            with open(os.path.join(data, f"input_{k}.pb"), "wb") as fh:
                fh.write(numpy_helper.from_array(arr, name).SerializeToString())
        for k, (name, dims) in enumerate(OUTPUTS):
            arr = np.fromfile(os.path.join(work, f"{k}.bin"), np.float32).reshape(dims)
            with open(os.path.join(data, f"output_{k}.pb"), "wb") as fh:
                fh.write(numpy_helper.from_array(arr, name).SerializeToString())
    print(f"{path}: LpPool, GlobalLpPool, MaxUnpool, Det, RoiAlign; onnxruntime's outputs in {a.out}/test_data_set_0")


if __name__ == "__main__":
    sys.exit(main())
