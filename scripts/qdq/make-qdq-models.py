#!/usr/bin/python3
"""Makes int8 QDQ versions of float ONNX models, the way onnxruntime's static quantization lays
them out, calibrated on each model's own test input; onnxruntime-node's outputs on the quantized
model are its oracle. Used by the quantized-model tests (tests/models), run at test time into the
build folder; nothing it writes is checked in.

  make-qdq-models.py --ort-node DIR --out OUT MODELS_DIR FOLDER/STEM...

For FOLDER/STEM (ort-examples/mnist) it writes OUT/FOLDER/STEM_qdq.onnx and
OUT/FOLDER/test_data/STEM_qdq/test_data_set_0/{input_N.pb, output_N.pb}, the layout of
../shared/models.

The quantization (onnxruntime's defaults for static QDQ, per-channel weights):
- every Conv, Gemm (transA 0) and MatMul whose weight (input 1) is a float initializer;
- its activation (input 0) and its output (after the Relu or Clip that follows it, if one does,
  as onnxruntime fuses them): uint8, asymmetric, per tensor, from the range the float model gives
  on the test input (0 always inside it): QuantizeLinear -> DequantizeLinear after the tensor's
  producer, read by every node that read the tensor (onnxruntime then runs DequantizeLinear ->
  Conv -> QuantizeLinear as one int8 QLinearConv);
- its weight: int8, symmetric ([-127, 127], zero point 0), per output channel (axis 0 of a Conv's
  [M, C, k...] and of a transposed Gemm's [N, K], axis 1 of a [K, N] weight), stored quantized
  with a DequantizeLinear;
- its bias (Conv's input 2, Gemm's 1-D C): int32 at scale x_scale * w_scale, zero point 0.
A model below opset 13 (per-axis Q/DQ) is converted to opset 13 first (onnx.version_converter).
Beside the test data it writes OUT/FOLDER/test_data/STEM_qdq/atol.txt: the tolerance of the
outputs, STEPS quantization steps of the coarsest DequantizeLinear an output is computed from
(found walking back from it through at most a few float ops).
Needs /usr/bin/python3 with onnx and numpy, node, and onnxruntime-node installed in DIR/node_modules.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference, version_converter, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
NP_TO_ORT = {np.float32: "float32", np.float64: "float64", np.int64: "int64", np.int32: "int32",
             np.int8: "int8", np.uint8: "uint8", np.bool_: "bool"}
ORT_TO_NP = {v: k for k, v in NP_TO_ORT.items()}


def fail(msg):
    sys.exit(f"make-qdq-models: {msg}")


def ai_onnx_opset(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 1


def run_ort(ort_node, model_path, inputs, outputs, work):
    """Runs model_path in onnxruntime-node on {name: array}; returns [array] in `outputs` order."""
    spec = {"inputs": [], "outputs": outputs}
    for k, (name, arr) in enumerate(inputs.items()):
        f = os.path.join(work, f"in{k}.bin")
        np.ascontiguousarray(arr).tofile(f)
        spec["inputs"].append({"name": name, "dtype": NP_TO_ORT[arr.dtype.type], "dims": list(arr.shape), "file": f})
    spec_path = os.path.join(work, "spec.json")
    with open(spec_path, "w") as fh:
        json.dump(spec, fh)
    out_dir = os.path.join(work, "out")
    shutil.rmtree(out_dir, ignore_errors=True)
    env = dict(os.environ, NODE_PATH=os.path.join(ort_node, "node_modules"))
    r = subprocess.run(["node", os.path.join(HERE, "ort-run.js"), model_path, spec_path, out_dir], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"onnxruntime-node could not run {model_path}: {r.stderr.strip()}")
    with open(os.path.join(out_dir, "outputs.json")) as fh:
        written = json.load(fh)
    return [np.fromfile(w["file"], dtype=ORT_TO_NP[w["dtype"]]).reshape(w["dims"]) for w in written]


def read_inputs(model, data_dir):
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    feeds = {}
    for k, name in enumerate(names):
        path = os.path.join(data_dir, f"input_{k}.pb")
        if not os.path.exists(path):
            fail(f"{data_dir} has no input_{k}.pb for input '{name}'")
        t = onnx.TensorProto()
        with open(path, "rb") as fh:
            t.ParseFromString(fh.read())
        feeds[name] = numpy_helper.to_array(t)
    return feeds


def constants_as_initializers(model):
    """Constant nodes (a tensor `value`) and Reshapes of initializers by constant shapes become
    initializers, so weights exported either way are found (PaddleOCR's are Constant nodes, the
    mnist MatMul's weight a Reshape of one)."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    kept = []
    for n in g.node:
        attrs = {a.name: a for a in n.attribute}
        if n.op_type == "Constant" and "value" in attrs and len(n.output) == 1:
            t = onnx.TensorProto()
            t.CopyFrom(attrs["value"].t)
            t.name = n.output[0]
            g.initializer.append(t)
            inits[t.name] = t
            continue
        if n.op_type == "Reshape" and len(n.input) == 2 and n.input[0] in inits and n.input[1] in inits:
            data = numpy_helper.to_array(inits[n.input[0]])
            shape = numpy_helper.to_array(inits[n.input[1]]).astype(np.int64)
            shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
            t = numpy_helper.from_array(data.reshape(shape), n.output[0])
            g.initializer.append(t)
            inits[t.name] = t
            continue
        kept.append(n)
    del g.node[:]
    g.node.extend(kept)


def quantizable(model):
    """The nodes to quantize: Conv, Gemm (transA 0), MatMul with a float initializer weight."""
    inits = {i.name: i for i in model.graph.initializer}
    picked = []
    for n in model.graph.node:
        if n.op_type not in ("Conv", "Gemm", "MatMul") or len(n.input) < 2:
            continue
        w = inits.get(n.input[1])
        if w is None or w.data_type != TensorProto.FLOAT:
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "Gemm" and attrs.get("transA", 0):
            continue
        if n.op_type == "MatMul" and len(w.dims) != 2:
            continue
        picked.append(n)
    return picked


def output_point(model, node):
    """Where onnxruntime quantizes a quantized op's output: after the Relu or Clip that is its only
    reader, else the output itself."""
    readers = [n for n in model.graph.node if node.output[0] in n.input]
    if len(readers) == 1 and readers[0].op_type in ("Relu", "Clip") and \
            node.output[0] not in {o.name for o in model.graph.output}:
        return readers[0].output[0]
    return node.output[0]


def activation_params(lo, hi):
    lo, hi = min(0.0, float(lo)), max(0.0, float(hi))
    scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    zp = np.uint8(np.clip(np.rint(-lo / scale), 0, 255))
    return scale, zp


def weight_axis(node, rank):
    if node.op_type == "Conv":
        return 0
    if node.op_type == "Gemm":
        trans_b = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    return rank - 1  # MatMul [K, N]: per output column


def quantize(model, ranges):
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    picked = quantizable(model)
    front, after = [], {}  # nodes before everything; nodes after the producer of a tensor
    new_inits = []
    dq_of = {}  # activation -> its dequantized name

    producers = {o: n.name or f"node{k}" for k, n in enumerate(g.node) for o in n.output}
    for t, (lo, hi) in ranges.items():
        scale, zp = activation_params(lo, hi)
        base = t.replace("/", "_").replace(":", "_")
        s_name, z_name, q_name, d_name = base + "_scale", base + "_zero_point", base + "_quantized", base + "_dequantized"
        new_inits += [numpy_helper.from_array(np.array(scale, np.float32), s_name),
                      numpy_helper.from_array(np.array(zp, np.uint8), z_name)]
        nodes = [helper.make_node("QuantizeLinear", [t, s_name, z_name], [q_name], name=base + "_QuantizeLinear"),
                 helper.make_node("DequantizeLinear", [q_name, s_name, z_name], [d_name], name=base + "_DequantizeLinear")]
        (after.setdefault(t, []) if t in producers else front).extend(nodes)
        dq_of[t] = (d_name, scale)

    # Every node that read a quantized tensor reads its dequantized value (graph outputs stay).
    for n in g.node:
        for i, name in enumerate(n.input):
            if name in dq_of:
                n.input[i] = dq_of[name][0]

    done_weights = {}
    graph_inputs = {i.name for i in g.input}
    drop = set()
    reverse = {d: t for t, (d, _) in dq_of.items()}
    for k, n in enumerate(picked):
        x = reverse.get(n.input[0])
        if x is None:
            continue
        x_scale = dq_of[x][1]
        w_name = n.input[1]
        w = numpy_helper.to_array(inits[w_name]).astype(np.float32)
        axis = weight_axis(n, w.ndim)
        if w_name not in done_weights:
            moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
            w_scale = (np.abs(moved).max(axis=1) / 127.0).astype(np.float32)
            w_scale[w_scale == 0] = 1.0
            shape = [1] * w.ndim
            shape[axis] = -1
            wq = np.clip(np.rint(w / w_scale.reshape(shape)), -127, 127).astype(np.int8)
            base = w_name.replace("/", "_").replace(":", "_")
            new_inits += [numpy_helper.from_array(wq, base + "_quantized"),
                          numpy_helper.from_array(w_scale, base + "_scale"),
                          numpy_helper.from_array(np.zeros(w_scale.shape, np.int8), base + "_zero_point")]
            front.append(helper.make_node("DequantizeLinear", [base + "_quantized", base + "_scale", base + "_zero_point"],
                                          [w_name], name=base + "_DequantizeLinear", axis=axis))
            drop.add(w_name)
            done_weights[w_name] = w_scale
        w_scale = done_weights[w_name]
        if len(n.input) > 2 and n.input[2] in inits and len(inits[n.input[2]].dims) == 1 and \
                inits[n.input[2]].dims[0] == w_scale.shape[0]:
            b = numpy_helper.to_array(inits[n.input[2]]).astype(np.float64)
            b_scale = (np.float32(x_scale) * w_scale).astype(np.float32)
            bq = np.clip(np.rint(b / b_scale.astype(np.float64)), -2**31, 2**31 - 1).astype(np.int32)
            base = f"{n.input[2].replace('/', '_')}_{k}"
            new_inits += [numpy_helper.from_array(bq, base + "_quantized"),
                          numpy_helper.from_array(b_scale, base + "_scale")]
            front.append(helper.make_node("DequantizeLinear", [base + "_quantized", base + "_scale"], [base + "_dequantized"],
                                          name=base + "_DequantizeLinear", axis=0))
            n.input[2] = base + "_dequantized"

    nodes = list(front)
    for n in g.node:
        nodes.append(n)
        for o in n.output:
            nodes.extend(after.get(o, []))
    del g.node[:]
    g.node.extend(nodes)
    kept = [i for i in g.initializer if i.name not in drop]
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    if drop & graph_inputs:  # IR 3: initializers are graph inputs too
        ins = [i for i in g.input if i.name not in drop]
        del g.input[:]
        g.input.extend(ins)
    return model


def output_steps(model):
    """Per graph output, the largest scale of a DequantizeLinear it is computed from, walking back
    through at most four ops (a bias Add, a Reshape, a Sigmoid); None when there is none."""
    producer = {o: n for n in model.graph.node for o in n.output}
    inits = {i.name: i for i in model.graph.initializer}

    def walk(name, depth):
        n = producer.get(name)
        if n is None or depth > 4:
            return None
        if n.op_type == "DequantizeLinear" and n.input[0] not in inits:
            return float(numpy_helper.to_array(inits[n.input[1]]).max())
        found = [walk(i, depth + 1) for i in n.input if i and i not in inits]
        found = [f for f in found if f is not None]
        return max(found) if found else None

    return [walk(o.name, 0) for o in model.graph.output]


def make_one(models_dir, ident, out, ort_node, work, steps):
    folder, stem = ident.split("/", 1)
    src = os.path.join(models_dir, folder, stem + ".onnx")
    data = os.path.join(models_dir, folder, "test_data", stem, "test_data_set_0")
    if not os.path.exists(src):
        fail(f"{src} not found")
    model = onnx.load(src)
    constants_as_initializers(model)
    model.ir_version = max(model.ir_version, 4)  # initializers that are not graph inputs
    if ai_onnx_opset(model) < 13:
        model = version_converter.convert_version(model, 13)
    model = shape_inference.infer_shapes(model)
    feeds = read_inputs(model, data)
    picked = quantizable(model)
    if not picked:
        fail(f"{ident} has no Conv, Gemm or MatMul with a constant weight to quantize")
    acts = sorted({n.input[0] for n in picked} | {output_point(model, n) for n in picked})

    # Calibration: the float model, its activations as extra outputs.
    calib = onnx.ModelProto()
    calib.CopyFrom(model)
    have = {o.name for o in calib.graph.output}
    for a in acts:
        if a not in have:
            calib.graph.output.append(helper.make_tensor_value_info(a, TensorProto.FLOAT, None))
    calib_path = os.path.join(work, "calib.onnx")
    onnx.save(calib, calib_path)
    values = run_ort(ort_node, calib_path, feeds, acts, work)
    ranges = {a: (v.min(), v.max()) for a, v in zip(acts, values)}

    q = quantize(model, ranges)
    # IR 3 wants every initializer to be a graph input too; opset 13 goes with IR 7.
    q.ir_version = max(q.ir_version, 7)
    onnx.checker.check_model(q)
    dst_dir = os.path.join(out, folder)
    os.makedirs(dst_dir, exist_ok=True)
    dst = os.path.join(dst_dir, stem + "_qdq.onnx")
    onnx.save(q, dst)

    outputs = [o.name for o in q.graph.output]
    results = run_ort(ort_node, dst, feeds, outputs, work)
    tdir = os.path.join(dst_dir, "test_data", stem + "_qdq", "test_data_set_0")
    shutil.rmtree(tdir, ignore_errors=True)
    os.makedirs(tdir)
    for k, (name, arr) in enumerate(feeds.items()):
        with open(os.path.join(tdir, f"input_{k}.pb"), "wb") as fh:
            fh.write(numpy_helper.from_array(arr, name).SerializeToString())
    for k, (name, arr) in enumerate(zip(outputs, results)):
        with open(os.path.join(tdir, f"output_{k}.pb"), "wb") as fh:
            fh.write(numpy_helper.from_array(arr, name).SerializeToString())
    found = [f for f in output_steps(q) if f is not None]
    if not found:
        fail(f"{ident}: no output is computed from a DequantizeLinear, so no tolerance follows from the scales")
    atol = steps * max(found)
    with open(os.path.join(dst_dir, "test_data", stem + "_qdq", "atol.txt"), "w") as fh:
        fh.write(f"{atol:.9g}\n")
    print(f"{dst}: {len(picked)} ops quantized, {len(acts)} activations calibrated, outputs' step {max(found):.3g}, "
          f"atol {atol:.3g}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ort-node", required=True, help="folder with node_modules/onnxruntime-node")
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=float, default=2.0,
                   help="the outputs' tolerance in quantization steps of their scale (default 2)")
    p.add_argument("models_dir")
    p.add_argument("ids", nargs="+")
    a = p.parse_args()
    if not os.path.isdir(os.path.join(a.ort_node, "node_modules", "onnxruntime-node")):
        fail(f"onnxruntime-node is not installed in {a.ort_node}/node_modules")
    with tempfile.TemporaryDirectory() as work:
        for ident in a.ids:
            make_one(a.models_dir, ident, a.out, a.ort_node, work, a.steps)


if __name__ == "__main__":
    main()
