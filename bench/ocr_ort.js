#!/usr/bin/env node
// ocr_ort.js — the ONNX Runtime peer of bench/ocr.c: PaddleOCR's PP-OCRv4 detector in
// onnxruntime-node on one [1, 3, S, S] image (synthetic: the timing does not depend on it), CPU
// execution provider, graph optimisation "all", intra-op threads as given, one inter-op thread.
//
//   node bench/ocr_ort.js MODEL.onnx --size S --threads N --runs R
//
// Prints one JSON line: {"ms": the median of R runs after 2 warm-up runs, "ort": version}.
// Exit 0 done, 1 failed, 2 bad arguments, 3 no onnxruntime-node.
'use strict';

function fail(code, msg) {
  process.stderr.write(`ocr_ort: ${msg}\n`);
  process.exit(code);
}

const { loadOrt } = require('../tools/ort_run.js');

async function main() {
  const v = process.argv.slice(2);
  const a = { model: null, size: 960, threads: 2, runs: 7 };
  for (let i = 0; i < v.length; i++) {
    if (v[i] === '--size' && i + 1 < v.length) a.size = Number(v[++i]);
    else if (v[i] === '--threads' && i + 1 < v.length) a.threads = Number(v[++i]);
    else if (v[i] === '--runs' && i + 1 < v.length) a.runs = Number(v[++i]);
    else if (!a.model) a.model = v[i];
    else fail(2, `unknown argument '${v[i]}'`);
  }
  if (!a.model || !(a.size > 0) || !(a.runs > 0)) fail(2, 'usage: node bench/ocr_ort.js MODEL.onnx --size S --threads N --runs R');
  const { ort, version } = loadOrt();
  const s = await ort.InferenceSession.create(a.model, { executionProviders: ['cpu'], graphOptimizationLevel: 'all',
    intraOpNumThreads: a.threads, interOpNumThreads: 1, executionMode: 'sequential' });
  const n = 3 * a.size * a.size;
  const x = new ort.Tensor('float32', Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.001)), [1, 3, a.size, a.size]);
  const feeds = { [s.inputNames[0]]: x };
  for (let i = 0; i < 2; i++) await s.run(feeds);
  const times = [];
  for (let i = 0; i < a.runs; i++) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((p, q) => p - q);
  console.log(JSON.stringify({ ms: times[times.length >> 1], ort: version, threads: a.threads }));
}

main().catch((e) => fail(1, e && e.message ? e.message : String(e)));
