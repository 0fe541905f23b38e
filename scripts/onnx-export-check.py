#!/usr/bin/python3
"""The independent check of a compiled graph (issue 23): export a snapshot of MODEL as standard
ONNX with sextant-cli, run it in onnxruntime-node, and compare its outputs with the model's
oracle outputs (onnxruntime on the original model) at shared/models/INVENTORY.md's tolerances:
|got - expected| <= atol + rtol*|expected|, rtol 1e-3, atol 1e-4 * max(1, max|expected|) (1e-4 for
probability-like outputs, 1e-4 of the largest magnitude for unbounded ones).

  onnx-export-check.py --cli SEXTANT_CLI --ort-node DIR --work DIR [--pass final] [--level -O2]
                       [--npu-f16] MODEL DATA_DIR

DATA_DIR holds input_N.pb and output_N.pb. With --npu-f16 the export is --standard-f16 (Casts round
to f16 where the NPU computes in f16) and the outputs are compared, at the same tolerances, with
the simulated NPU's own (sextant-cli run --save-outputs) rather than with the oracle: onnxruntime
then recomputes what the NPU computed, in its own kernels, and (f16 arithmetic and summation order
differing by a rounding here and there) passes at cosine >= --min-cosine (0.9999) per output, the
element counts out of tolerance reported alongside. Prints one line per output and exits 0 when every
output is within tolerance, 1 otherwise (or when a step fails, saying which).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

ORT_TYPES = {np.float32: "float32", np.float64: "float64", np.int64: "int64", np.int32: "int32",
             np.int8: "int8", np.uint8: "uint8", np.bool_: "bool"}
NP_TYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32,
            "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


def load(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def data_set(folder, prefix):
    out = []
    i = 0
    while os.path.exists(os.path.join(folder, f"{prefix}_{i}.pb")):
        out.append(load(os.path.join(folder, f"{prefix}_{i}.pb")))
        i += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--ort-node", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--pass", dest="snapshot", default="final")
    ap.add_argument("--level", default="-O2")
    ap.add_argument("--npu-f16", action="store_true")
    ap.add_argument("--min-cosine", type=float, default=0.9999)
    ap.add_argument("model")
    ap.add_argument("data")
    a = ap.parse_args()

    stem = os.path.splitext(os.path.basename(a.model))[0]
    os.makedirs(a.work, exist_ok=True)
    form = "standard-f16" if a.npu_f16 else "standard"
    exported = os.path.join(a.work, f"{stem}.{form}.onnx")
    cmd = [a.cli, "compile", a.model, a.level, "--inputs", a.data, "--export-onnx",
           f"{a.snapshot}:{exported}", "--" + form]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stdout}{r.stderr}")
        return 1

    inputs = data_set(a.data, "input")
    expected = data_set(a.data, "output")
    if a.npu_f16:
        npu_dir = os.path.join(a.work, f"{stem}.npu")
        cmd = [a.cli, "run", a.model, a.level, "--inputs", a.data, "--save-outputs", npu_dir]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stdout}{r.stderr}")
            return 1
        npu = data_set(npu_dir, "output")
        expected = [(name, arr) for (name, _), (_, arr) in zip(expected, npu)]
    spec = {"inputs": [], "outputs": [], "optimization": "disabled", "skipUnknownInputs": True}
    for k, (name, arr) in enumerate(inputs):
        f = os.path.join(a.work, f"{stem}.input_{k}.bin")
        arr = np.ascontiguousarray(arr)
        arr.tofile(f)
        spec["inputs"].append({"name": name, "dtype": ORT_TYPES[arr.dtype.type], "dims": list(arr.shape), "file": f})
    spec["outputs"] = [name for name, _ in expected]
    spec_path = os.path.join(a.work, f"{stem}.spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    run_dir = os.path.join(a.work, f"{stem}.ort")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "qdq", "ort-run.js")
    env = dict(os.environ, NODE_PATH=os.path.join(a.ort_node, "node_modules"))
    r = subprocess.run(["node", script, exported, spec_path, run_dir], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(f"FAIL: onnxruntime could not run the exported {a.snapshot} snapshot of {a.model}\n{r.stdout}{r.stderr}")
        return 1
    with open(os.path.join(run_dir, "outputs.json")) as f:
        got = json.load(f)

    ok = True
    for (name, want), g in zip(expected, got):
        have = np.fromfile(g["file"], dtype=NP_TYPES[g["dtype"]]).reshape(g["dims"])
        if have.shape != want.shape:
            print(f"output '{name}': FAIL shape {list(have.shape)}, expected {list(want.shape)}")
            ok = False
            continue
        w = want.astype(np.float64)
        h = have.astype(np.float64)
        atol = 1e-4 * max(1.0, float(np.max(np.abs(w))) if w.size else 1.0)
        rtol = 1e-3
        err = np.abs(h - w)
        same_nan = np.isnan(h) & np.isnan(w)
        # A NaN on one side only is a mismatch (a comparison with NaN is false either way).
        bad = int(np.count_nonzero(~((err <= atol + rtol * np.abs(w)) | same_nan)))
        worst = float(np.nanmax(err)) if err.size and not np.all(np.isnan(err)) else 0.0
        norm = float(np.linalg.norm(h) * np.linalg.norm(w))
        cosine = float(np.dot(h.ravel(), w.ravel()) / norm) if norm > 0 else 1.0
        passed = cosine >= a.min_cosine and not np.isnan(cosine) if a.npu_f16 else bad == 0
        verdict = "PASS" if passed else "FAIL"
        print(f"output '{name}': max_abs {worst:.3e} atol {atol:.1e} rtol {rtol:.0e} mismatches {bad} "
              f"cosine {cosine:.6f} {verdict}")
        ok = ok and passed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
