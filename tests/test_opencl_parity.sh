#!/bin/bash
# test_opencl_parity.sh — a model moves to the OpenCL plugin with no change: the same commands
# with --devices opencl:0 and --devices cpu:0 (one program on each) give the same numbers. A
# 2-layer, 64-wide BERT pretrained 20 steps of 2 micro-batches of 8 (dropout 0) from the same
# corpus (the batch these runs had when one device was a pipeline of 2 micro-batches), then
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
export TESSERA_PLUGIN_PATH=$build/plugins
T="$build/tessera --quiet" # no placement line at each compile
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
    --max-len 64 --batch 8 --micro-batches 2 --max-steps 20 --dropout 0 --threads 2 --devices $d --eval-every 20 \
    --eval-batches 1 > pre_$n.log
  $T "${strict[@]}" finetune --model pre_cpu --train mails.tsv --out ft_$n --max-steps 10 --batch 8 --max-len 64 --threads 2 \
    --micro-batches 2 --devices $d > ft_$n.log
done
# a pipeline mixing devices: stage 1 on opencl:0 against the same two stages on cpu:0, cpu:1
for pair in cpu:1 opencl:0; do
  $T pretrain --vocab vocab.txt --corpus corpus.txt --out mix_${pair%%:*} --layers 2 --hidden 64 --heads 2 \
    --intermediate 128 --max-len 64 --batch 8 --max-steps 20 --dropout 0 --threads 2 --devices cpu:0,$pair \
    --stages "0:emb,0 1:1,heads" --eval-every 20 --eval-batches 1 > mix_${pair%%:*}.log
done
# tessera run: the fine-tuned classifier's forward pass on both devices, outputs compared
$py "$src/tests/compare_runs.py" inputs in.safetensors 1905 32
$T run --model ft_cpu --inputs in.safetensors --outputs out_cpu.safetensors --device cpu > /dev/null
$T --strict-device run --model ft_cpu --inputs in.safetensors --outputs out_opencl.safetensors --device opencl:0 > /dev/null
$py "$src/tests/compare_runs.py" compare 1e-4 pre_cpu pre_opencl ft_cpu ft_opencl mix_cpu mix_opencl \
  out_cpu.safetensors out_opencl.safetensors
