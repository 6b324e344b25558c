#!/bin/bash
# test_doc_plugin.sh — docs/backend-abi.md's minimal plugin, as a backend author would use it:
# the C block between the "test_doc_plugin" markers is cut out of the document, checked to be
# under 200 lines, and built against an installed tessera (cmake --install into a temporary
# prefix; cflags from its tessera.pc) with -Wall -Wextra -Werror -Wl,--no-undefined, so it uses
# nothing but the installed headers and libc. Then a 2-layer BERT is pretrained, fine-tuned and
# run through it with the command (--backend-plugin, --devices mydev: three kernels on the
# plugin, the rest on the CPU fallback) and compared with the same commands on the CPU: every
# tensor of model.safetensors and of run's outputs, and every loss, within 1e-5 relative per
# tensor (|a - b| / max(max|a|, 1e-3): the floor because the attention's key biases get no
# gradient and hold only rounding noise, as in test_opencl_parity.sh; the plugin's naive matmul
# sums in another order than oneDNN). With MYDEV_CLAIM=none the plugin claims no node: the runs
# must then equal the CPU's byte for byte. Exit 77 (skipped) without python3's numpy.
# usage: test_doc_plugin.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
skip() {
  echo "test_doc_plugin: skipped: $1"
  if [ "${CI:-}" = true ]; then echo "(CI=true: a skip is a failure)"; exit 1; fi
  exit 77
}
fail() { echo "test_doc_plugin: FAIL: $1"; exit 1; }
py=/usr/bin/python3
[ -x $py ] && $py -c 'import numpy' 2> /dev/null || py=python3
$py -c 'import numpy' 2> /dev/null || skip "no python3 with numpy to compare the tensors"
T=$build/tessera
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# the document's plugin
awk '/<!-- test_doc_plugin: begin mydev.c -->/ {on = 1; next} /<!-- test_doc_plugin: end mydev.c -->/ {on = 0}
     on && !/^```/' "$src/docs/backend-abi.md" > mydev.c
lines=$(wc -l < mydev.c)
[ "$lines" -gt 50 ] || fail "no plugin between the markers of docs/backend-abi.md ($lines lines)"
[ "$lines" -lt 200 ] || fail "the document's plugin has $lines lines, not under 200"
cmake --install "$build" --prefix "$tmp/prefix" > install.log 2>&1 || { cat install.log; fail "cmake --install"; }
pc=$(dirname "$(find "$tmp/prefix" -name tessera.pc | head -1)")
[ -d "$pc" ] || fail "the install has no tessera.pc"
grep -q "^plugindir=" "$pc/tessera.pc" || fail "tessera.pc has no plugindir"
! grep -E "^(Libs|Libs.private):.* /" "$pc/tessera.pc" || fail "tessera.pc names an absolute library path"
! find "$tmp/prefix" -name 'libtessera-cpuplugin.so' | grep -q . || fail "the test plugin was installed"
cflags=$(PKG_CONFIG_PATH=$pc pkg-config --cflags tessera)
cc -std=c11 -Wall -Wextra -Werror -O2 -shared -fPIC $cflags mydev.c -Wl,--no-undefined -o libtessera-mydev.so \
  || fail "the document's plugin does not build against the installed headers"
echo "test_doc_plugin: built the document's plugin ($lines lines) against $tmp/prefix"

# data: a small corpus and labelled rows, made here
for d in 0 1 2 3 4 5 6 7; do
  for s in 0 1 2 3 4 5; do echo "the cat $d runs and the dog $s sleeps quickly near the river bank $((d * s))."; done
  echo
done > corpus.txt
{ echo "label	text"; for i in $(seq 0 39); do
    if [ $((i % 2)) = 1 ]; then echo "pos	the cat and the dog play $i times"; else echo "neg	the fish swims alone $i times"; fi
  done; } > data.tsv
$T vocab --out vocab.txt --size 120 corpus.txt > /dev/null
$py "$src/tests/compare_runs.py" inputs in.safetensors 85 24

# pretrain, fine-tune (from the CPU's pretrained model) and run, on device $1 with plugin args
runs() {
  local tag=$1 dev=$2
  shift 2
  $T "$@" pretrain --vocab vocab.txt --corpus corpus.txt --out pre_$tag --layers 2 --hidden 32 --heads 2 \
    --intermediate 64 --max-len 24 --batch 4 --max-steps 4 --dropout 0.1 --threads 1 --devices $dev \
    --eval-every 4 --eval-batches 1 > pre_$tag.log 2>&1 || { cat pre_$tag.log; fail "pretrain on $dev ($tag)"; }
  $T "$@" finetune --model pre_cpu --train data.tsv --out ft_$tag --max-steps 4 --batch 4 --max-len 24 \
    --threads 1 --devices $dev > ft_$tag.log 2>&1 || { cat ft_$tag.log; fail "finetune on $dev ($tag)"; }
  $T "$@" run --model ft_cpu --inputs in.safetensors --outputs out_$tag.safetensors --device $dev \
    > run_$tag.log 2>&1 || { cat run_$tag.log; fail "run on $dev ($tag)"; }
}
runs cpu cpu
runs mydev mydev --backend-plugin "$tmp/libtessera-mydev.so"
for l in pre_mydev ft_mydev run_mydev; do
  grep -q "placement: mydev runs [1-9][0-9]* of" $l.log || { cat $l.log; fail "no node ran on mydev ($l)"; }
done
MYDEV_CLAIM=none runs none mydev --backend-plugin "$tmp/libtessera-mydev.so"
grep -q "placement: mydev runs 0 of" pre_none.log || { cat pre_none.log; fail "MYDEV_CLAIM=none: mydev ran nodes"; }

$py "$src/tests/compare_runs.py" compare 1e-5 pre_cpu pre_mydev ft_cpu ft_mydev out_cpu.safetensors \
  out_mydev.safetensors || fail "the plugin's runs differ from the CPU's (above)"
for f in pre_%s/model.safetensors ft_%s/model.safetensors out_%s.safetensors; do
  cmp -s "$(printf "$f" cpu)" "$(printf "$f" none)" || fail "$(printf "$f" none): a plugin claiming nothing differs from the CPU"
done
echo "test_doc_plugin: a plugin claiming no op gives the CPU's bytes (pretrain, finetune, run)"
echo "test_doc_plugin: PASS"
