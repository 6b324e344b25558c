#!/usr/bin/env bash
# scripts/gpu-check.sh — the OpenCL plugin's acceptance checks on every OpenCL GPU of this machine
# (issue 25): for each device opencl:N that is a GPU (CL_DEVICE_TYPE_GPU), the op conformance suite
# (build/test_backend_ops on that device through the plugin) and the BERT parity (a tiny
# `tessera pretrain`, 2 layers x 64 hidden, 20 steps, dropout 0, on opencl:N and on the CPU: the
# losses and the final parameters, per tensor, must agree to 1e-4 relative). Prints a summary per GPU; exits 1 when a
# check failed, 0 when all passed or when the machine has no OpenCL GPU (it says so).
#
# Usage: scripts/gpu-check.sh [--include-cpu] [--build DIR] [--steps N]
#   --include-cpu  treat CPU OpenCL devices (PoCL) as targets too, to test the script on a
#                  machine without a GPU
#   --build DIR    the build folder (default build/; built with `make` when the plugin is missing)
#   --steps N      pretraining steps of the parity check (default 20)
# opencl:N is the plugin's numbering: platforms in the ICD loader's order, each platform's devices
# in order (backends/opencl/plugin.c); a small C lister built here enumerates them the same way.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=build
INCLUDE_CPU=0
STEPS=20
while [ $# -gt 0 ]; do
    case "$1" in
        --include-cpu) INCLUDE_CPU=1 ;;
        --build) BUILD=${2:?--build needs a folder}; shift ;;
        --steps) STEPS=${2:?--steps needs a number}; shift ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac

say() { printf 'gpu-check: %s\n' "$*"; }

# 1. The OpenCL devices, as clinfo sees them (informative; the lister below decides).
if command -v clinfo >/dev/null 2>&1; then
    say "OpenCL devices (clinfo -l):"
    clinfo -l || say "clinfo -l failed"
else
    say "clinfo is not installed (apt-get install clinfo); listing devices with the plugin's enumeration only"
fi

WORK=$(mktemp -d /tmp/tessera-gpu-check-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# 2. Build when needed.
PLUGIN=$BUILD/plugins/libtessera-opencl.so
if [ ! -f "$PLUGIN" ] || [ ! -x "$BUILD/tessera" ] || [ ! -x "$BUILD/test_backend_ops" ]; then
    say "building ($BUILD)"
    make BUILD="$BUILD" >"$WORK/build.log" 2>&1 || {
        say "the build failed; the end of its log:"
        tail -20 "$WORK/build.log" >&2
        exit 1
    }
fi
if [ ! -f "$PLUGIN" ]; then
    say "no OpenCL plugin at $PLUGIN: the OpenCL headers (ocl-icd-opencl-dev) or CLBlast (libclblast-dev) are missing"
    if command -v clinfo >/dev/null 2>&1 && clinfo --raw 2>/dev/null | grep -q 'CL_DEVICE_TYPE_GPU'; then
        say "clinfo lists an OpenCL GPU, but without the plugin nothing can be checked: failed"
        exit 1
    fi
    say "nothing to check"
    exit 0
fi
[ -x "$BUILD/tessera" ] || { say "missing $BUILD/tessera after the build"; exit 1; }
[ -x "$BUILD/test_backend_ops" ] || say "missing $BUILD/test_backend_ops after the build (tests/test_backend_ops.c): the op suite fails"

# 3. opencl:N -> type and name, enumerated as the plugin does.
LISTER=$BUILD/gpu-check-devices
cat >"$BUILD/gpu-check-devices.c" <<'EOF'
/* Prints "N<TAB>TYPE<TAB>NAME" for each OpenCL device, numbered as the tessera OpenCL plugin does. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
int main(void) {
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS) return 0;
    int n = 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id ds[64];
        cl_uint nd = 0;
        if (clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, 64, ds, &nd) != CL_SUCCESS) continue;
        for (cl_uint i = 0; i < nd && i < 64; i++) {
            cl_device_type t = 0;
            char name[256] = "?";
            clGetDeviceInfo(ds[i], CL_DEVICE_TYPE, sizeof t, &t, NULL);
            clGetDeviceInfo(ds[i], CL_DEVICE_NAME, sizeof name - 1, name, NULL);
            printf("%d\t%s\t%s\n", n++, t & CL_DEVICE_TYPE_GPU ? "GPU" : t & CL_DEVICE_TYPE_CPU ? "CPU"
                                        : t & CL_DEVICE_TYPE_ACCELERATOR ? "ACCELERATOR" : "OTHER", name);
        }
    }
    return 0;
}
EOF
${CC:-cc} -O1 -o "$LISTER" "$BUILD/gpu-check-devices.c" -lOpenCL || { say "cannot build the device lister"; exit 1; }
DEVICES=$("$LISTER")
if [ -z "$DEVICES" ]; then
    say "no OpenCL device found (no platform, or no ICD installed): nothing to check"
    exit 0
fi
say "the plugin's devices:"
printf '%s\n' "$DEVICES" | while IFS=$'\t' read -r idx type name; do printf '  opencl:%s  %-11s %s\n' "$idx" "$type" "$name"; done

TARGETS=()
while IFS=$'\t' read -r idx type name; do
    if [ "$type" = GPU ] || { [ "$INCLUDE_CPU" = 1 ] && [ "$type" = CPU ]; }; then TARGETS+=("$idx"); fi
done <<<"$DEVICES"
if [ ${#TARGETS[@]} -eq 0 ]; then
    say "no OpenCL GPU on this machine: nothing to check (--include-cpu checks CPU OpenCL devices too)"
    exit 0
fi

# 4. The CPU reference of the parity check, once.
CORPUS=$ROOT/data/text/brown.txt
VOCAB=$ROOT/data/bert/vocab.txt
PARITY_OK=1
if [ ! -f "$CORPUS" ] || [ ! -f "$VOCAB" ]; then
    say "no $CORPUS or $VOCAB (bash scripts/install-deps.sh fetches them): the BERT parity is skipped"
    PARITY_OK=0
else
    head -n 3000 "$CORPUS" >"$WORK/corpus.txt"
fi
export TESSERA_PLUGIN_PATH=$BUILD/plugins${TESSERA_PLUGIN_PATH:+:$TESSERA_PLUGIN_PATH}
pretrain() { # DEVICE OUTDIR: a 2 x 64 BERT, STEPS steps, dropout 0, fixed seed
    "$BUILD/tessera" pretrain --vocab "$VOCAB" --corpus "$WORK/corpus.txt" --out "$2" --layers 2 --hidden 64 \
        --heads 2 --intermediate 128 --max-len 32 --batch 4 --max-steps "$STEPS" --dropout 0 --seed 1 \
        --eval-every 5 --eval-batches 1 --threads 1 --devices "$1" >"$2.log" 2>&1
}
if [ "$PARITY_OK" = 1 ]; then
    say "parity reference: tessera pretrain on cpu:0 ($STEPS steps)"
    if ! pretrain cpu:0 "$WORK/cpu"; then
        say "the CPU reference run failed:"; tail -5 "$WORK/cpu.log" >&2
        PARITY_OK=0
    fi
fi

# Compares two pretraining runs (DIR and DIR.log of each): every "*loss*" value of metrics.jsonl
# (each step's losses, the held-out MLM loss at each --eval-every step), the "train loss" of each
# progress line, and the final parameters in model.safetensors, per tensor (||diff|| / ||cpu||, L2);
# prints a line, exit 1 when a relative difference exceeds 1e-4 or the two runs logged other steps.
compare_losses() {
    python3 - "$1" "$2" <<'EOF'
import json, re, sys
def losses(d):
    out = {}
    for line in open(d + "/metrics.jsonl"):
        try: r = json.loads(line)
        except ValueError: continue
        for k, v in r.items():
            if "step" in r and "loss" in k and isinstance(v, (int, float)): out[(r["step"], k)] = float(v)
    for m in re.finditer(r"step (\d+): train loss ([-0-9.naif]+)", open(d + ".log").read()):
        out[(int(m.group(1)), "train_loss")] = float(m.group(2))
    return out
ref, dev = losses(sys.argv[1]), losses(sys.argv[2])
if not ref or sorted(ref) != sorted(dev):
    print(f"the runs logged other losses: cpu {len(ref)} values, the device {len(dev)}"); sys.exit(1)
rel = {k: abs(dev[k] - ref[k]) / max(abs(ref[k]), 1e-12) for k in ref}
worst = max(rel, key=rel.get)
key = "loss" if any(k[1] == "loss" for k in ref) else worst[1]
last = max(k for k in ref if k[1] == key)
# the final parameters (model.safetensors), per tensor: ||device - cpu|| / ||cpu|| (L2)
import array
def tensors(d):
    raw = open(d + "/model.safetensors", "rb").read()
    n = int.from_bytes(raw[:8], "little")
    head, out = json.loads(raw[8:8 + n]), {}
    for name, t in head.items():
        if name == "__metadata__": continue
        b, e = t["data_offsets"]
        data = raw[8 + n + b:8 + n + e]
        out[name] = array.array("f", data) if t["dtype"] == "F32" else data
    return out
tr, td = tensors(sys.argv[1]), tensors(sys.argv[2])
if sorted(tr) != sorted(td):
    print("the two model.safetensors hold other tensors"); sys.exit(1)
# An attention key bias has a zero gradient in exact arithmetic (softmax is shift-invariant per
# query), so AdamW's normalised step turns rounding noise into lr-sized moves there: left out.
prel, pname, kbias = 0.0, "", 0.0
for name, a in tr.items():
    b = td[name]
    if isinstance(a, bytes): r = 0.0 if a == b else float("inf")
    else: r = (sum((x - y) ** 2 for x, y in zip(a, b)) / max(sum(x * x for x in a), 1e-60)) ** 0.5
    if name.endswith("attention.self.key.bias"): kbias = max(kbias, r)
    elif r > prel: prel, pname = r, name
print(f"{len(ref)} losses, {last[1]} at step {last[0]} {dev[last]:.6f} vs cpu {ref[last]:.6f}, "
      f"worst relative difference {rel[worst]:.2e} ({worst[1]}, step {worst[0]}); {len(tr)} final parameters, "
      f"worst per-tensor relative L2 difference {prel:.2e}{' (' + pname + ')' if pname else ''}, "
      f"key biases left out ({kbias:.2e}: their gradient is 0 but for rounding)")
sys.exit(0 if rel[worst] <= 1e-4 and prel <= 1e-4 else 1)
EOF
}

# 5. Each target device: the op suite, then the parity.
SUMMARY=()
FAILED=0
for idx in "${TARGETS[@]}"; do
    dev=opencl:$idx
    name=$(printf '%s\n' "$DEVICES" | awk -F'\t' -v i="$idx" '$1 == i { print $3 }')
    say "=== $dev ($name)"
    ops="FAIL"
    if [ ! -x "$BUILD/test_backend_ops" ]; then
        ops="FAIL (no $BUILD/test_backend_ops)"; FAILED=1
    else
        say "op suite: $BUILD/test_backend_ops --plugin $PLUGIN --device $dev"
        if "$BUILD/test_backend_ops" --plugin "$PLUGIN" --device "$dev" >"$WORK/ops-$idx.log" 2>&1; then ops="pass"; fi
        tail -3 "$WORK/ops-$idx.log" | sed 's/^/  /'
        [ "$ops" = pass ] || { FAILED=1; say "op suite failed on $dev; the end of its log:"; tail -20 "$WORK/ops-$idx.log" >&2; }
    fi
    say "parity: tessera pretrain --devices $dev ($STEPS steps) against cpu:0"
    parity="skipped"
    if [ "$PARITY_OK" = 1 ]; then
        if pretrain "$dev" "$WORK/ocl$idx"; then
            if ! grep -q "\"device\": \"$dev\"" "$WORK/ocl$idx/metrics.jsonl"; then
                parity="FAIL (metrics.jsonl does not show the run on $dev)"; FAILED=1
            elif line=$(compare_losses "$WORK/cpu" "$WORK/ocl$idx"); then parity="pass ($line)"
            else parity="FAIL ($line)"; FAILED=1; fi
        else
            parity="FAIL (tessera pretrain --devices $dev exited non-zero: $(tail -1 "$WORK/ocl$idx.log"))"
            FAILED=1
        fi
    fi
    say "  parity: $parity"
    SUMMARY+=("$dev ($name): op suite $ops; BERT parity $parity")
done

say "summary"
for s in "${SUMMARY[@]}"; do printf '  %s\n' "$s"; done
exit "$FAILED"
