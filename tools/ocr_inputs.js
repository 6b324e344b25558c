#!/usr/bin/env node
// ocr_inputs.js — helper of tools/make_ocr_fixtures.sh: raw RGB images (as ImageMagick writes
// `rgb:` files) normalised into the NCHW f32 batch a PaddleOCR model takes, as safetensors; and
// the merge of several safetensors files into one.
//
//   node tools/ocr_inputs.js det|rec|cls W H OUT.safetensors IMG.rgb...   one input "x" [n, 3, H, W]
//   node tools/ocr_inputs.js merge OUT.safetensors A.safetensors B.safetensors ...
//
// Normalisation, per channel c of a pixel v in [0, 255]:
//   det: (v / 255 - mean[c]) / std[c], mean 0.485 0.456 0.406, std 0.229 0.224 0.225, the
//        channels in BGR order (PaddleOCR reads images with OpenCV, which gives BGR);
//   rec, cls: (v / 255 - 0.5) / 0.5, BGR as well.
'use strict';
const fs = require('fs');
const path = require('path');

function readST(file) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.toString('utf8', 8, 8 + n));
  const out = {};
  for (const [name, e] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [b, end] = e.data_offsets;
    out[name] = { dtype: e.dtype, shape: e.shape, bytes: Buffer.from(buf.subarray(8 + n + b, 8 + n + end)) };
  }
  return out;
}

function writeST(file, tensors) {
  const header = {};
  let off = 0;
  const blobs = [];
  for (const name of Object.keys(tensors).sort()) {
    const t = tensors[name];
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.bytes.length] };
    blobs.push(t.bytes);
    off += t.bytes.length;
  }
  let h = JSON.stringify(header);
  h += ' '.repeat((8 - (Buffer.byteLength(h) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(h)));
  fs.writeFileSync(file, Buffer.concat([len, Buffer.from(h), ...blobs]));
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === 'merge') {
  const [out, ...ins] = rest;
  const all = {};
  for (const f of ins) Object.assign(all, readST(f));
  writeST(out, all);
} else if (['det', 'rec', 'cls'].includes(mode)) {
  const [w, h, out, ...imgs] = rest;
  const W = Number(w), H = Number(h);
  const mean = mode === 'det' ? [0.485, 0.456, 0.406] : [0.5, 0.5, 0.5];
  const std = mode === 'det' ? [0.229, 0.224, 0.225] : [0.5, 0.5, 0.5];
  const x = new Float32Array(imgs.length * 3 * H * W);
  imgs.forEach((f, n) => {
    const px = fs.readFileSync(f);
    if (px.length !== W * H * 3) throw new Error(`${path.basename(f)}: ${px.length} bytes, not ${W} x ${H} RGB`);
    for (let c = 0; c < 3; c++) {       // output channel c is BGR's c: RGB channel 2 - c
      for (let i = 0; i < H * W; i++) x[(n * 3 + c) * H * W + i] = (px[i * 3 + (2 - c)] / 255 - mean[c]) / std[c];
    }
  });
  writeST(out, { x: { dtype: 'F32', shape: [imgs.length, 3, H, W], bytes: Buffer.from(x.buffer) } });
} else {
  process.stderr.write('usage: ocr_inputs.js det|rec|cls W H OUT IMG.rgb... | merge OUT IN...\n');
  process.exit(2);
}
