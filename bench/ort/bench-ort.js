#!/usr/bin/env node
// onnxruntime-node baseline for sextant-bench's Reference/<model> benchmarks: the same models, the
// same test_data inputs, one thread (intra 1, inter 1, sequential), graphOptimizationLevel 'all'.
//
//   node bench-ort.js MODELS_DIR [--runs N] [--warmup N] [--model ID]...
//
// Prints one JSON object per model on stdout:
//   {"model":"paddleocr_det","runs":N,"median_ms":..,"mean_ms":..,"min_ms":..,"samples_ms":[..],
//    "median_cpu_ms":..,"cpu_samples_ms":[..]}
// Wall time (hrtime) and CPU time (process.cpuUsage, user + system) of each session.run: on a
// shared machine the CPU time is the steadier figure.
// Inputs are read straight from the ONNX TensorProto files (a small protobuf reader below: only
// the fields a test-data tensor uses).
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const MODELS = [
  { id: 'paddleocr_det', folder: 'paddleocr', stem: 'ch_PP-OCRv4_det_infer' },
  { id: 'paddleocr_rec', folder: 'paddleocr', stem: 'ch_PP-OCRv4_rec_infer' },
  { id: 'blazeface_back', folder: 'blazeface', stem: 'face_detection_back_256x256_barracuda' },
];

// ---- protobuf wire format: just enough for onnx.TensorProto
function readVarint(buf, pos) {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++];
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [result, pos];
    shift += 7n;
  }
}

const ONNX_TYPES = {
  1: { name: 'float32', size: 4, array: Float32Array },
  6: { name: 'int32', size: 4, array: Int32Array },
  7: { name: 'int64', size: 8, array: BigInt64Array },
  11: { name: 'float64', size: 8, array: Float64Array },
};

function parseTensorProto(buf) {
  const dims = [];
  let dataType = 0;
  let name = '';
  let raw = null;
  const floats = [];
  const int64s = [];
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      if (field === 1) dims.push(Number(BigInt.asIntN(64, v)));
      else if (field === 2) dataType = Number(v);
      else if (field === 7) int64s.push(BigInt.asIntN(64, v));
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const end = pos + Number(len);
      const body = buf.subarray(pos, end);
      if (field === 1 || field === 7) { // packed int64 dims / int64_data
        let p = 0;
        while (p < body.length) {
          let v;
          [v, p] = readVarint(body, p);
          if (field === 1) dims.push(Number(BigInt.asIntN(64, v)));
          else int64s.push(BigInt.asIntN(64, v));
        }
      } else if (field === 4) { // packed float_data
        for (let p = 0; p + 4 <= body.length; p += 4) floats.push(body.readFloatLE(p));
      } else if (field === 8) {
        name = body.toString('utf8');
      } else if (field === 9) {
        raw = body;
      }
      pos = end;
    } else if (wire === 5) {
      if (field === 4) floats.push(buf.readFloatLE(pos));
      pos += 4;
    } else if (wire === 1) {
      pos += 8;
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`);
    }
  }
  const t = ONNX_TYPES[dataType];
  if (!t) throw new Error(`tensor '${name}': unsupported data_type ${dataType}`);
  const count = dims.reduce((a, b) => a * b, 1);
  let data;
  if (raw) {
    if (raw.length !== count * t.size) throw new Error(`tensor '${name}': raw_data has ${raw.length} bytes`);
    const copy = new Uint8Array(raw); // aligned copy
    data = new t.array(copy.buffer, 0, count);
  } else if (dataType === 1) {
    data = Float32Array.from(floats);
  } else if (dataType === 7) {
    data = BigInt64Array.from(int64s);
  } else {
    throw new Error(`tensor '${name}': only raw_data, float_data and int64_data are read`);
  }
  return { name, tensor: new ort.Tensor(t.name, data, dims) };
}

function loadInputs(dir) {
  const inputs = [];
  for (let i = 0; ; ++i) {
    const f = path.join(dir, `input_${i}.pb`);
    if (!fs.existsSync(f)) break;
    inputs.push(parseTensorProto(fs.readFileSync(f)));
  }
  return inputs;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length < 1) {
    console.error('usage: node bench-ort.js MODELS_DIR [--runs N] [--warmup N] [--model ID]...');
    process.exit(2);
  }
  const modelsDir = args[0];
  let runs = 10;
  let warmup = 2;
  const only = [];
  for (let i = 1; i < args.length; ++i) {
    if (args[i] === '--runs') runs = Number(args[++i]);
    else if (args[i] === '--warmup') warmup = Number(args[++i]);
    else if (args[i] === '--model') only.push(args[++i]);
    else throw new Error(`unknown argument ${args[i]}`);
  }
  const options = {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    logSeverityLevel: 3, // errors only: tf2onnx models warn about unused initializers
  };
  for (const m of MODELS) {
    if (only.length && !only.includes(m.id)) continue;
    const modelFile = path.join(modelsDir, m.folder, `${m.stem}.onnx`);
    const dataDir = path.join(modelsDir, m.folder, 'test_data', m.stem, 'test_data_set_0');
    if (!fs.existsSync(modelFile)) {
      console.log(JSON.stringify({ model: m.id, skipped: `${modelFile} not found` }));
      continue;
    }
    const session = await ort.InferenceSession.create(modelFile, options);
    const feeds = {};
    const loaded = loadInputs(dataDir);
    session.inputNames.forEach((n, i) => { feeds[n] = loaded[i].tensor; });
    for (let i = 0; i < warmup; ++i) await session.run(feeds);
    const samples = [];
    const cpuSamples = [];
    for (let i = 0; i < runs; ++i) {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
      const c = process.cpuUsage(c0);
      cpuSamples.push((c.user + c.system) / 1e3);
    }
    await session.release();
    console.log(JSON.stringify({
      model: m.id,
      runs,
      median_ms: median(samples),
      mean_ms: samples.reduce((a, b) => a + b, 0) / samples.length,
      min_ms: Math.min(...samples),
      samples_ms: samples.map((x) => Math.round(x * 1000) / 1000),
      median_cpu_ms: median(cpuSamples),
      cpu_samples_ms: cpuSamples.map((x) => Math.round(x * 1000) / 1000),
    }));
  }
}

main().catch((e) => {
  console.error(`bench-ort: ${e.message}`);
  process.exit(1);
});
