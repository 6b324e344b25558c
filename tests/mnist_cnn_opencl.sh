#!/bin/bash
# mnist_cnn_opencl.sh — the MNIST CNN (examples/mnist_cnn.c) trained the same 25 steps on the CPU
# and on the OpenCL plugin (--device opencl:0, nothing else changed): their held-out accuracies
# within 0.5 points. Exit 77 (skipped) without data, the plugin or an OpenCL device; with
# CI=true a skip is a failure.
# usage: mnist_cnn_opencl.sh MNIST_CNN PLUGIN_DIR DATA_DIR
set -euo pipefail
exe=$1 plugins=$2 data=$3
skip() {
  echo "mnist_cnn_opencl: skipped: $1"
  if [ "${CI:-}" = true ]; then echo "(CI=true: a skip is a failure)"; exit 1; fi
  exit 77
}
[ -f "$data/images-idx3-ubyte" ] || skip "no $data (scripts/install-deps.sh fetches MNIST)"
[ -f "$plugins/libtessera-opencl.so" ] || skip "no OpenCL plugin built"
command -v clinfo > /dev/null && clinfo -l 2> /dev/null | grep -q Device || skip "no OpenCL device"
export TESSERA_PLUGIN_PATH=$plugins
acc() { "$exe" "$data" --epochs 1 --steps 25 --target 0 --device "$1" | sed -n 's/^final test accuracy: \([0-9.]*\)%.*/\1/p'; }
cpu=$(acc cpu)
ocl=$(acc opencl:0)
echo "mnist_cnn_opencl: 25 steps: held-out accuracy cpu $cpu%, opencl:0 $ocl%"
awk -v a="$cpu" -v b="$ocl" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 0.5) }'
