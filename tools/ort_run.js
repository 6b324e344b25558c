#!/usr/bin/env node
// ort_run.js — run an ONNX model in ONNX Runtime (onnxruntime-node) on inputs read from a
// safetensors file and write every output, by name, to another safetensors file: the reference
// run the ONNX tests compare tessera with (tests/test_onnx_export.c, tests/test_onnx_train.c).
//
//   node tools/ort_run.js MODEL.onnx INPUTS.safetensors OUTPUTS.safetensors
//
// Each model input is read from the tensor of the same name (converted between the integer
// types, or float32 / float64, when the model declares another type); tensors the model does not
// take are ignored. Outputs keep ONNX Runtime's types (F32, F64, I32, I64, U8, BOOL).
// onnxruntime-node is looked up in $TS_ORT_MODULES (a node_modules directory), else in
// tools/ort/node_modules, where `bash scripts/install-deps.sh` installs it
// (`npm install --ignore-scripts`: the package ships its native binding for linux-x64 in bin/,
// so no install script has to run). Exit 0 done, 1 failed, 2 bad arguments, 3 no onnxruntime-node.
'use strict';
const fs = require('fs');
const path = require('path');

const TYPES = { // safetensors dtype <-> ONNX Runtime tensor type and typed array
  F32: ['float32', Float32Array], F64: ['float64', Float64Array], I32: ['int32', Int32Array],
  I64: ['int64', BigInt64Array], U8: ['uint8', Uint8Array], BOOL: ['bool', Uint8Array],
};

function fail(code, msg) {
  process.stderr.write(`ort_run: ${msg}\n`);
  process.exit(code);
}

function loadOrt() {
  const dirs = [process.env.TS_ORT_MODULES, path.join(__dirname, 'ort', 'node_modules')].filter(Boolean);
  for (const d of dirs) {
    const p = path.join(d, 'onnxruntime-node');
    if (fs.existsSync(path.join(p, 'package.json'))) return { ort: require(p), version: require(path.join(p, 'package.json')).version };
  }
  fail(3, `onnxruntime-node is not installed (looked in ${dirs.join(', ')}); ` +
          'run: bash scripts/install-deps.sh (or npm install --ignore-scripts in tools/ort)');
}

// A safetensors file as {name: {dtype, shape, data (a typed array)}}.
function readSafetensors(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 8) fail(1, `${file}: shorter than a safetensors header`);
  const n = Number(buf.readBigUInt64LE(0));
  if (8 + n > buf.length) fail(1, `${file}: header length ${n} runs past the end of the file`);
  const header = JSON.parse(buf.toString('utf8', 8, 8 + n));
  const out = {};
  for (const [name, e] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const t = TYPES[e.dtype];
    if (!t) fail(1, `${file}: tensor "${name}" has dtype ${e.dtype}, which this script does not read`);
    const [b, end] = e.data_offsets;
    const bytes = buf.subarray(8 + n + b, 8 + n + end);
    const copy = new Uint8Array(bytes); // aligned copy
    out[name] = { dtype: e.dtype, shape: e.shape, data: new t[1](copy.buffer, 0, copy.length / t[1].BYTES_PER_ELEMENT) };
  }
  return out;
}

// Write {name: {dtype, shape, data}} as safetensors: names sorted, header padded to 8 bytes.
function writeSafetensors(file, tensors) {
  const header = {};
  const blobs = [];
  let off = 0;
  for (const name of Object.keys(tensors).sort()) {
    const t = tensors[name];
    const bytes = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + bytes.length] };
    blobs.push(bytes);
    off += bytes.length;
  }
  let h = JSON.stringify(header);
  h += ' '.repeat((8 - (Buffer.byteLength(h) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(h)));
  const tmp = `${file}.tmp.${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([len, Buffer.from(h), ...blobs]));
  fs.renameSync(tmp, file);
}

// The values of typed array `src` in the typed array class `To` (BigInt <-> Number as needed).
function convert(src, To) {
  if (src instanceof To) return src;
  const big = To === BigInt64Array, fromBig = src instanceof BigInt64Array;
  const out = new To(src.length);
  for (let i = 0; i < src.length; i++) out[i] = big ? BigInt(fromBig ? src[i] : Math.trunc(src[i])) : Number(src[i]);
  return out;
}

async function main() {
  const [model, inFile, outFile] = process.argv.slice(2);
  if (!model || !inFile || !outFile) fail(2, 'usage: node tools/ort_run.js MODEL.onnx INPUTS.safetensors OUTPUTS.safetensors');
  const { ort, version } = loadOrt();
  const inputs = readSafetensors(inFile);
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], intraOpNumThreads: 1 });
  const feeds = {};
  for (const meta of session.inputMetadata) {
    const t = inputs[meta.name];
    if (!t) fail(1, `${inFile}: no tensor "${meta.name}" for the model's input of that name (it has: ${Object.keys(inputs).join(', ')})`);
    const entry = Object.values(TYPES).find(([ortType]) => ortType === meta.type);
    if (!entry) fail(1, `${model}: input "${meta.name}" has type ${meta.type}, which this script does not feed`);
    feeds[meta.name] = new ort.Tensor(meta.type, convert(t.data, entry[1]), t.shape);
  }
  const results = await session.run(feeds);
  const out = {};
  for (const name of session.outputNames) {
    const r = results[name];
    const dtype = Object.keys(TYPES).find((k) => TYPES[k][0] === r.type);
    if (!dtype) fail(1, `${model}: output "${name}" has type ${r.type}, which safetensors here cannot hold`);
    out[name] = { dtype, shape: r.dims.map(Number), data: r.data };
  }
  writeSafetensors(outFile, out);
  console.log(`ort_run: ${path.basename(model)} (onnxruntime-node ${version}):` +
              ` ${session.outputNames.map((n) => `${n} [${out[n].shape.join(', ')}]`).join(', ')} -> ${outFile}`);
}

module.exports = { loadOrt, readSafetensors, writeSafetensors }; // for tools/make_speech_fixtures.js
if (require.main === module) main().catch((e) => fail(1, e && e.message ? e.message : String(e)));
