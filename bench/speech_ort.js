#!/usr/bin/env node
// speech_ort.js — the ONNX Runtime peer of bench/speech.c: openWakeWord's pipeline and Silero VAD
// run in onnxruntime-node on the same models, hop by hop as openWakeWord streams them: per 80 ms
// hop, melspectrogram.onnx on [1, 1760] samples, embedding_model.onnx on one [1, 76, 32, 1]
// window, one head on [1, 16, 96]; per 32 ms chunk, silero_vad.onnx on [1, 576] with its state
// carried and sr = 16000. CPU execution provider, graph optimisation "all", intra-op threads as
// given, one inter-op thread. Inputs are synthetic (the timing does not depend on them).
//
//   node bench/speech_ort.js MODELS_DIR --seconds S --threads N --head NAME
//
// Prints one JSON line: {"kws_s": seconds for S s of audio, "vad_chunk_s": median seconds per
// chunk, "ort": version}. Exit 0 done, 1 failed, 2 bad arguments, 3 no onnxruntime-node.
'use strict';
const path = require('path');

function fail(code, msg) {
  process.stderr.write(`speech_ort: ${msg}\n`);
  process.exit(code);
}

// onnxruntime-node, looked up as tools/ort_run.js does ($TS_ORT_MODULES, else tools/ort/node_modules)
const { loadOrt } = require('../tools/ort_run.js');

async function main() {
  const v = process.argv.slice(2);
  const a = { dir: null, seconds: 10, threads: 2, head: 'hey_jarvis_v0.1' };
  for (let i = 0; i < v.length; i++) {
    if (v[i] === '--seconds' && i + 1 < v.length) a.seconds = Number(v[++i]);
    else if (v[i] === '--threads' && i + 1 < v.length) a.threads = Number(v[++i]);
    else if (v[i] === '--head' && i + 1 < v.length) a.head = v[++i];
    else if (!a.dir) a.dir = v[i];
    else fail(2, `unknown argument '${v[i]}'`);
  }
  if (!a.dir) fail(2, 'usage: node bench/speech_ort.js MODELS_DIR --seconds S --threads N --head NAME');
  const { ort, version } = loadOrt();
  const opts = { executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: a.threads,
    interOpNumThreads: 1, executionMode: 'sequential' };
  const open = (f) => ort.InferenceSession.create(path.join(a.dir, f), opts);
  const mel = await open('openwakeword/melspectrogram.onnx');
  const emb = await open('openwakeword/embedding_model.onnx');
  const head = await open(`openwakeword/${a.head}.onnx`);
  const vad = await open('silero/silero_vad.onnx');
  const f32 = (shape, f) => new ort.Tensor('float32', Float32Array.from({ length: shape.reduce((x, y) => x * y, 1) }, (_, i) => f(i)), shape);
  const x = f32([1, 1760], (i) => 3000 * Math.sin(i * 0.07));
  const hops = Math.round(a.seconds * 16000 / 1280);
  const once = async () => {
    const m = await mel.run({ [mel.inputNames[0]]: x });
    const w = f32([1, 76, 32, 1], (i) => m[mel.outputNames[0]].data[i % 256] / 10 + 2);
    const e = await emb.run({ [emb.inputNames[0]]: w });
    const h = f32([1, 16, 96], (i) => e[emb.outputNames[0]].data[i % 96]);
    await head.run({ [head.inputNames[0]]: h });
  };
  for (let i = 0; i < 5; i++) await once();
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < hops; i++) await once();
  const kwsS = Number(process.hrtime.bigint() - t0) / 1e9;
  let state = f32([2, 1, 128], () => 0);
  const sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);
  const chunk = f32([1, 576], (i) => 0.1 * Math.sin(i * 0.05));
  const times = [];
  for (let i = 0; i < Math.round(a.seconds * 16000 / 512) + 5; i++) {
    t0 = process.hrtime.bigint();
    const r = await vad.run({ input: chunk, state, sr });
    state = r.stateN;
    if (i >= 5) times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  times.sort((p, q) => p - q);
  console.log(JSON.stringify({ kws_s: kwsS, vad_chunk_s: times[times.length >> 1], ort: version, threads: a.threads }));
}

main().catch((e) => fail(1, e && e.message ? e.message : String(e)));
