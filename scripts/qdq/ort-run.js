#!/usr/bin/env node
// Runs one ONNX model in onnxruntime-node (one thread, all graph optimisations) for
// scripts/make-qdq-models.py: the calibration run (the float model, its activations as extra
// outputs) and the oracle run (the quantized model's outputs).
//
//   node ort-run.js MODEL.onnx SPEC.json OUT_DIR
//
// SPEC.json: {"inputs": [{"name", "dtype", "dims", "file"}], "outputs": ["name", ...]}; each input
// file holds the tensor's elements, raw little-endian. Optional: "optimization" (onnxruntime's
// graphOptimizationLevel, default 'all'); "skipUnknownInputs" (true: inputs the model does not
// have are left out rather than refused). Writes OUT_DIR/<i>.bin (raw) per output
// and OUT_DIR/outputs.json: [{"name", "dtype", "dims", "file"}], in the order asked for.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
};

async function main() {
  const [model, specPath, outDir] = process.argv.slice(2);
  if (!outDir) {
    console.error('usage: ort-run.js MODEL.onnx SPEC.json OUT_DIR');
    process.exit(2);
  }
  const spec = JSON.parse(fs.readFileSync(specPath, 'utf8'));
  const feeds = {};
  for (const i of spec.inputs) {
    const Arr = ARRAYS[i.dtype];
    if (!Arr) throw new Error(`input ${i.name}: dtype ${i.dtype} is not handled`);
    const buf = fs.readFileSync(i.file);
    const copy = new ArrayBuffer(buf.length);
    new Uint8Array(copy).set(buf);
    feeds[i.name] = new ort.Tensor(i.dtype, new Arr(copy), i.dims);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: spec.optimization || 'all',
  });
  if (spec.skipUnknownInputs) {
    for (const name of Object.keys(feeds)) if (!session.inputNames.includes(name)) delete feeds[name];
  }
  const results = await session.run(feeds, spec.outputs);
  fs.mkdirSync(outDir, { recursive: true });
  const written = [];
  spec.outputs.forEach((name, k) => {
    const t = results[name];
    const file = path.join(outDir, `${k}.bin`);
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    written.push({ name, dtype: t.type, dims: t.dims.map(Number), file });
  });
  fs.writeFileSync(path.join(outDir, 'outputs.json'), JSON.stringify(written));
}

main().catch((e) => {
  console.error(`ort-run: ${e.message || e}`);
  process.exit(1);
});
