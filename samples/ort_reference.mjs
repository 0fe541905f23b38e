// Writes onnxruntime's output for the sample model, the sample's independent numerical oracle:
//   samples/residual_cnn/input_0.pb --onnxruntime--> samples/residual_cnn/output_0.pb
// Run after changing make_residual_cnn.cpp (and commit the new output_0.pb):
//   mkdir -p /tmp/ortnode && cd /tmp/ortnode && npm init -y &&
//     ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0
//   NODE_PATH=/tmp/ortnode/node_modules node samples/ort_reference.mjs samples
// Only float32 tensors are handled: that is all the sample uses.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');

function readVarint(buf, pos) {
  let result = 0n, shift = 0n;
  for (;;) {
    const b = buf[pos++];
    result |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [result, pos];
    shift += 7n;
  }
}

// Minimal onnx.TensorProto reader: dims (1), data_type (2), name (8), raw_data (9).
function readTensor(file) {
  const buf = fs.readFileSync(file);
  const t = { dims: [], dataType: 0, name: '', raw: null };
  let pos = 0;
  while (pos < buf.length) {
    let key; [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) {
      let v; [v, pos] = readVarint(buf, pos);
      if (field === 1) t.dims.push(Number(v));
      else if (field === 2) t.dataType = Number(v);
    } else if (wire === 2) {
      let len; [len, pos] = readVarint(buf, pos);
      const bytes = buf.subarray(pos, pos + Number(len));
      pos += Number(len);
      if (field === 1) { // packed dims
        let p = 0;
        while (p < bytes.length) { let v; [v, p] = readVarint(bytes, p); t.dims.push(Number(v)); }
      } else if (field === 8) t.name = bytes.toString('utf8');
      else if (field === 9) t.raw = Buffer.from(bytes);
    } else throw new Error(`${file}: unexpected wire type ${wire}`);
  }
  if (t.dataType !== 1 || !t.raw) throw new Error(`${file}: expected a float tensor with raw_data`);
  return t;
}

function varint(n) {
  const out = [];
  let v = BigInt(n);
  do { let b = Number(v & 0x7fn); v >>= 7n; if (v) b |= 0x80; out.push(b); } while (v);
  return out;
}

function writeTensor(file, name, dims, floats) {
  const parts = [];
  for (const d of dims) parts.push(Buffer.from([0x08, ...varint(d)]));
  parts.push(Buffer.from([0x10, 1])); // FLOAT
  const nameBytes = Buffer.from(name, 'utf8');
  parts.push(Buffer.from([0x42, ...varint(nameBytes.length)]), nameBytes);
  const raw = Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength);
  parts.push(Buffer.from([0x4a, ...varint(raw.length)]), raw);
  fs.writeFileSync(file, Buffer.concat(parts));
}

const dir = process.argv[2] ?? 'samples';
const input = readTensor(path.join(dir, 'residual_cnn', 'input_0.pb'));
const session = await ort.InferenceSession.create(path.join(dir, 'residual_cnn.onnx'),
                                                  { graphOptimizationLevel: 'disabled' });
const data = new Float32Array(input.raw.buffer.slice(input.raw.byteOffset,
                                                     input.raw.byteOffset + input.raw.length));
const results = await session.run({ [input.name]: new ort.Tensor('float32', data, input.dims) });
session.outputNames.forEach((name, i) => {
  const t = results[name];
  writeTensor(path.join(dir, 'residual_cnn', `output_${i}.pb`), name, t.dims, t.data);
  console.log(`wrote output_${i}.pb: ${name} [${t.dims}] = ${Array.from(t.data).map(v => v.toFixed(6)).join(' ')}`);
});
