#!/usr/bin/env node
// bert_ort.js — the ONNX Runtime peer of bench/bert.c: forward passes of a BERT-Base ONNX model
// (exported by tessera's exporter, ts_onnx_export, from the same weights tessera's rows load)
// timed in onnxruntime-node, as its user would configure it for speed on a CPU: the CPU execution
// provider, graph optimisation level "all" (ONNX Runtime's own BERT fusions: Gelu, LayerNorm,
// attention), intra-op threads equal to tessera's, one inter-op thread, sequential execution.
//
//   node bench/bert_ort.js MODEL.onnx --runs N --threads N
//
// Feeds random token ids (every sequence full length) of the model's declared input shapes and
// types, runs N forward passes, and prints one JSON line:
//   {"run_s": [...], "create_s": s, "ort": version, "threads": n}
// every run's seconds (the caller drops the warm-up ones). onnxruntime-node is looked up as
// tools/ort_run.js does ($TS_ORT_MODULES, else tools/ort/node_modules). Exit 0 done, 1 failed,
// 2 bad arguments, 3 no onnxruntime-node.
'use strict';

function fail(code, msg) {
  process.stderr.write(`bert_ort: ${msg}\n`);
  process.exit(code);
}

// onnxruntime-node, looked up as tools/ort_run.js does ($TS_ORT_MODULES, else tools/ort/node_modules)
const { loadOrt } = require('../tools/ort_run.js');

function args() {
  const a = { model: null, runs: 6, threads: 0 };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    if (v[i] === '--runs' && i + 1 < v.length) a.runs = Number(v[++i]);
    else if (v[i] === '--threads' && i + 1 < v.length) a.threads = Number(v[++i]);
    else if (!v[i].startsWith('--') && !a.model) a.model = v[i];
    else fail(2, `unknown argument '${v[i]}' (usage: node bench/bert_ort.js MODEL.onnx --runs N --threads N)`);
  }
  if (!a.model || !(a.runs >= 1) || !(a.threads >= 1)) fail(2, 'usage: node bench/bert_ort.js MODEL.onnx --runs N --threads N');
  return a;
}

async function main() {
  const a = args();
  const { ort, version } = loadOrt();
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: a.threads,
    interOpNumThreads: 1, executionMode: 'sequential',
  });
  const createS = Number(process.hrtime.bigint() - t0) / 1e9;
  let seed = 0x12345678;
  const rand = (n) => { seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; return seed % n; };
  const feeds = {};
  for (const meta of session.inputMetadata) {
    const shape = meta.shape.map(Number);
    const n = shape.reduce((x, y) => x * y, 1);
    const t = shape[shape.length - 1];
    const val = (i) => (meta.name === 'input_ids' ? rand(30522) : meta.name === 'token_type_ids' ? Number(i % t >= t / 2) : 1);
    let data;
    if (meta.type === 'int32') data = Int32Array.from({ length: n }, (_, i) => val(i));
    else if (meta.type === 'int64') data = BigInt64Array.from({ length: n }, (_, i) => BigInt(val(i)));
    else if (meta.type === 'float32') data = Float32Array.from({ length: n }, (_, i) => val(i));
    else fail(1, `${a.model}: input "${meta.name}" has type ${meta.type}, which this script does not feed`);
    feeds[meta.name] = new ort.Tensor(meta.type, data, shape);
  }
  const times = [];
  for (let r = 0; r < a.runs; r++) {
    const s = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - s) / 1e9);
  }
  console.log(JSON.stringify({ run_s: times, create_s: createS, ort: version, threads: a.threads }));
}

main().catch((e) => fail(1, e && e.message ? e.message : String(e)));
