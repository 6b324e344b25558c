#!/usr/bin/env node
// make_speech_fixtures.js — the speech models' parity fixtures (tests/test_speech_parity.c):
// ONNX Runtime (onnxruntime-node, tools/ort/node_modules) runs openWakeWord's melspectrogram,
// embedding model and six keyword heads, and Silero VAD (both files) on synthetic clips made
// here deterministically (no randomness from the runtime: a fixed LCG), and the inputs and
// outputs go to small safetensors files in tests/fixtures/speech/:
//
//   mel.safetensors      samples [1, 20480] (1.28 s at 16 kHz: tones, a chirp, LCG noise, as
//                        int16-valued floats, the scale the mel model takes) and ORT's mel
//                        output `mel` [1, 1, F, 32];
//   embedding.safetensors  `emb` [W, 1, 1, 96]: the embedding model on W windows of 76 frames of
//                        mel * 0.1 + 2 advancing 8 frames (openWakeWord's pipeline), W = 7;
//   heads.safetensors    per head H (alexa_v0.1, ...), `H` [1, 1]: the head on the last T
//                        embeddings, row i being embedding i mod W (T = 16; weather 22, timer 34);
//   silero.safetensors   `audio` [4096] ([-1, 1] floats: a tone burst in noise), and for
//                        each file F (silero_vad, silero_vad_16k_op15): `F.prob` [8] the speech
//                        probability of chunk k (input [1, 576]: the 64 samples before chunk k,
//                        zeros before the start, then its 512), with the state [2, 1, 128]
//                        carried from chunk to chunk from zeros, sr = 16000; `F.state` the last.
//
//   node tools/make_speech_fixtures.js [DATA_DIR]     (DATA_DIR: data/speech)
'use strict';
const fs = require('fs');
const path = require('path');
const { loadOrt, writeSafetensors } = require('./ort_run.js');

const SR = 16000;
const HEADS = { 'alexa_v0.1': 16, 'hey_jarvis_v0.1': 16, 'hey_mycroft_v0.1': 16, 'hey_rhasspy_v0.1': 16, 'weather_v0.1': 22, 'timer_v0.1': 34 };

// A fixed linear congruential generator (Numerical Recipes' constants): uniform in [-1, 1).
function lcg(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2147483648 - 1;
  };
}

// n samples in [-1, 1]: tones at 440 and 1250 Hz, a chirp from 200 to 4000 Hz, noise.
function clip(n, seed) {
  const r = lcg(seed), x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const t = i / SR, T = n / SR;
    const chirp = Math.sin(2 * Math.PI * (200 * t + (3800 / (2 * T)) * t * t));
    x[i] = 0.25 * Math.sin(2 * Math.PI * 440 * t) + 0.15 * Math.sin(2 * Math.PI * 1250 * t) + 0.3 * chirp + 0.1 * r();
  }
  return x;
}

// Silence with LCG noise, then a 1 kHz tone burst with harmonics in the middle.
function vadClip(n, seed) {
  const r = lcg(seed), x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const t = i / SR, on = i > n / 4 && i < (3 * n) / 4 ? 1 : 0;
    x[i] = 0.01 * r() + on * (0.4 * Math.sin(2 * Math.PI * 180 * t) * (0.6 + 0.4 * Math.sin(2 * Math.PI * 4 * t)) +
                              0.2 * Math.sin(2 * Math.PI * 900 * t) + 0.05 * r());
  }
  return x;
}

const f32 = (shape, data) => ({ dtype: 'F32', shape, data: Float32Array.from(data) });

async function main() {
  const data = process.argv[2] || path.join(__dirname, '..', 'data', 'speech');
  const out = path.join(__dirname, '..', 'tests', 'fixtures', 'speech');
  fs.mkdirSync(out, { recursive: true });
  const { ort, version } = loadOrt();
  const open = (f) => ort.InferenceSession.create(f, { executionProviders: ['cpu'], intraOpNumThreads: 1 });
  const oww = (name) => path.join(data, 'openwakeword', `${name}.onnx`);

  // mel
  const samples = clip(20480, 12345).map((v) => Math.round(v * 32767 * 0.5));
  const mel = await open(oww('melspectrogram'));
  const melOut = (await mel.run({ [mel.inputNames[0]]: new ort.Tensor('float32', samples, [1, samples.length]) }))[mel.outputNames[0]];
  const F = melOut.dims[2];
  writeSafetensors(path.join(out, 'mel.safetensors'), { samples: f32([1, samples.length], samples), mel: f32(melOut.dims.map(Number), melOut.data) });

  // embedding on windows of 76 frames every 8
  const W = Math.floor((F - 76) / 8) + 1, win = new Float32Array(W * 76 * 32);
  for (let w = 0; w < W; w++)
    for (let i = 0; i < 76 * 32; i++) win[w * 76 * 32 + i] = melOut.data[w * 8 * 32 + i] * 0.1 + 2;
  const emb = await open(oww('embedding_model'));
  const embOut = (await emb.run({ [emb.inputNames[0]]: new ort.Tensor('float32', win, [W, 76, 32, 1]) }))[emb.outputNames[0]];
  writeSafetensors(path.join(out, 'embedding.safetensors'), { emb: f32(embOut.dims.map(Number), embOut.data) });

  // heads on embedding rows i mod W
  const heads = {};
  for (const [key, T] of Object.entries(HEADS)) {
    const h = await open(oww(key));
    const x = new Float32Array(T * 96);
    for (let i = 0; i < T; i++) x.set(embOut.data.subarray((i % W) * 96, (i % W + 1) * 96), i * 96);
    const y = (await h.run({ [h.inputNames[0]]: new ort.Tensor('float32', x, [1, T, 96]) }))[h.outputNames[0]];
    heads[key] = f32(y.dims.map(Number), y.data);
  }
  writeSafetensors(path.join(out, 'heads.safetensors'), heads);

  // Silero VAD, 8 chunks of 512 with 64 samples of context, the state carried
  const audio = vadClip(8 * 512, 777), sil = { audio: f32([audio.length], audio) };
  for (const file of ['silero_vad', 'silero_vad_16k_op15']) {
    const s = await open(path.join(data, 'silero', `${file}.onnx`));
    let state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
    const probs = new Float32Array(8), sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);
    for (let k = 0; k < 8; k++) {
      const x = new Float32Array(576);
      for (let i = 0; i < 576; i++) { const j = k * 512 + i - 64; x[i] = j >= 0 ? audio[j] : 0; }
      const r = await s.run({ input: new ort.Tensor('float32', x, [1, 576]), state, sr });
      probs[k] = r.output.data[0];
      state = r.stateN;
    }
    sil[`${file}.prob`] = f32([8], probs);
    sil[`${file}.state`] = f32(state.dims.map(Number), state.data);
  }
  writeSafetensors(path.join(out, 'silero.safetensors'), sil);
  console.log(`make_speech_fixtures: onnxruntime-node ${version}: mel [${melOut.dims}], ${W} embeddings, ` +
              `${Object.keys(heads).length} heads, Silero 8 chunks x 2 files -> ${out}`);
}

main().catch((e) => { process.stderr.write(`make_speech_fixtures: ${e && e.message ? e.message : e}\n`); process.exit(1); });
