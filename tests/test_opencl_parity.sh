#!/bin/bash
# test_opencl_parity.sh — a model moves to the OpenCL plugin with no change: the same commands
# with --devices opencl:0 and --devices cpu:0 (both through one pipeline path) give the same
# numbers. A 2-layer, 64-wide BERT pretrained 20 steps (dropout 0) from the same corpus, then
# fine-tuned 10 steps on 200 labelled mails, then run (tessera run) on a batch, and pretrained as a
# 2-stage pipeline with its second stage on opencl:0 (against cpu:0, cpu:1): every loss of metrics.jsonl and every tensor of
# model.safetensors within 1e-4, relative per tensor (|a - b| / max(max|a|, 1e-3): the floor
# because the attention's key biases get no gradient — softmax ignores a shift of the keys — so
# they hold only ~1e-9 of rounding noise that AdamW magnifies, on both devices alike). The OpenCL
# runs are --strict-device: every op they use runs on the device. Exit 77
# (skipped) without the plugin or an OpenCL device; under CI=true that is a failure.
# usage: test_opencl_parity.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
skip() {
  echo "test_opencl_parity: skipped: $1"
  if [ "${CI:-}" = true ]; then echo "(CI=true: a skip is a failure)"; exit 1; fi
  exit 77
}
[ -f "$build/plugins/libtessera-opencl.so" ] || skip "no OpenCL plugin built (install the OpenCL packages: scripts/install-deps.sh)"
command -v clinfo > /dev/null && clinfo -l 2> /dev/null | grep -q Device || skip "no OpenCL device (clinfo -l lists none)"
py=/usr/bin/python3
[ -x $py ] && $py -c 'import numpy' 2> /dev/null || py=python3
$py -c 'import numpy' 2> /dev/null || skip "no python3 with numpy to compare the tensors"
[ -f "$src/data/text/brown.txt" ] && [ -f "$src/data/spam/spam.tsv" ] || skip "no data/ (scripts/install-deps.sh installs it)"
export TESSERA_PLUGIN_PATH=$build/plugins TESSERA_QUIET=1 TESSERA_CHECK_DEVICE_THREADS=1
T=$build/tessera
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
head -3000 "$src/data/text/brown.txt" > corpus.txt
{ head -101 "$src/data/spam/spam.tsv"; grep -m 100 "^spam" "$src/data/spam/spam.tsv"; } > mails.tsv
$T vocab --out vocab.txt --size 2000 corpus.txt > /dev/null
for d in cpu:0 opencl:0; do
  n=${d%%:*}
  strict=()
  [ $n = opencl ] && strict=(--strict-device) # every op of BERT's training native: no CPU fallback
  $T "${strict[@]}" pretrain --vocab vocab.txt --corpus corpus.txt --out pre_$n --layers 2 --hidden 64 --heads 2 --intermediate 128 \
    --max-len 64 --batch 8 --max-steps 20 --dropout 0 --threads 2 --devices $d --eval-every 20 --eval-batches 1 > pre_$n.log
  $T "${strict[@]}" finetune --model pre_cpu --train mails.tsv --out ft_$n --max-steps 10 --batch 8 --max-len 64 --threads 2 \
    --devices $d > ft_$n.log
done
# a pipeline mixing devices: stage 1 on opencl:0 against the same two stages on cpu:0, cpu:1
for pair in cpu:1 opencl:0; do
  $T pretrain --vocab vocab.txt --corpus corpus.txt --out mix_${pair%%:*} --layers 2 --hidden 64 --heads 2 \
    --intermediate 128 --max-len 64 --batch 8 --max-steps 20 --dropout 0 --threads 2 --devices cpu:0,$pair \
    --stages "0:emb,0 1:1,heads" --eval-every 20 --eval-batches 1 > mix_${pair%%:*}.log
done
# tessera run: the fine-tuned classifier's forward pass on both devices, outputs compared
$py - << 'PY'
import json, struct, numpy as np
ids = (np.arange(2 * 32, dtype=np.int64).reshape(2, 32) * 37) % 1900 + 5
tensors = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
head, off, blobs = {}, 0, []
for k, v in tensors.items():
    b = v.tobytes(); head[k] = {"dtype": "I64", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}; off += len(b); blobs.append(b)
h = json.dumps(head).encode(); h += b" " * (-len(h) % 8)
open("in.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
$T run --model ft_cpu --inputs in.safetensors --outputs out_cpu.safetensors --device cpu > /dev/null
$T --strict-device run --model ft_cpu --inputs in.safetensors --outputs out_opencl.safetensors --device opencl:0 > /dev/null
$py - << 'PY'
import json, sys
import numpy as np

def tensors(d):
    b = open(d + "/model.safetensors", "rb").read()
    n = int.from_bytes(b[:8], "little")
    head, data = json.loads(b[8:8 + n]), b[8 + n:]
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        out[k] = np.frombuffer(data[s:e], dtype={"F32": np.float32, "I64": np.int64}[v["dtype"]]).reshape(v["shape"])
    return out

def losses(d):
    return [json.loads(l)["loss"] for l in open(d + "/metrics.jsonl") if '"loss"' in l]

bad = 0
for run, ref, dev in (("pre", "pre_cpu", "pre_opencl"), ("ft", "ft_cpu", "ft_opencl"), ("mix", "mix_cpu", "mix_opencl")):
    a, b = tensors(ref), tensors(dev)
    assert a.keys() == b.keys(), "%s: the devices wrote different tensors" % run
    worst = max((float(np.abs(a[k].astype(np.float64) - b[k]).max() / max(float(np.abs(a[k]).max()), 1e-3)), k) for k in a)
    la, lb = losses(ref), losses(dev)
    assert la and len(la) == len(lb), "%s: %d and %d losses" % (run, len(la), len(lb))
    lw = max(abs(x - y) / max(abs(x), 1e-6) for x, y in zip(la, lb))
    ok = worst[0] <= 1e-4 and lw <= 1e-4
    bad += not ok
    print("%s: %d tensors, worst %.2e (%s); %d losses, worst %.2e -> %s" % (run, len(a), worst[0], worst[1], len(la), lw,
                                                                          "ok" if ok else "WRONG"))
b = open("out_cpu.safetensors", "rb").read(); n = int.from_bytes(b[:8], "little")
head = json.loads(b[8:8 + n]); c = open("out_opencl.safetensors", "rb").read(); m = int.from_bytes(c[:8], "little")
for k, v in head.items():
    if k == "__metadata__":
        continue
    s, e = v["data_offsets"]
    x = np.frombuffer(b[8 + n + s:8 + n + e], np.float32); y = np.frombuffer(c[8 + m + s:8 + m + e], np.float32)
    err = float(np.abs(x - y).max() / max(float(np.abs(x).max()), 1e-3))
    bad += err > 1e-4
    print("run: %s %s, worst %.2e -> %s" % (k, v["shape"], err, "ok" if err <= 1e-4 else "WRONG"))
sys.exit(1 if bad else 0)
PY
