#!/usr/bin/env python3
"""compare_runs.py — the shell tests' tensors and runs, with numpy (tests/test_opencl_parity.sh,
tests/test_doc_plugin.sh).

  compare_runs.py inputs OUT.safetensors VOCAB SEQ
      writes tessera run's inputs: input_ids [2, SEQ] (ids 5 .. VOCAB-1), attention_mask of ones,
      token_type_ids of zeros, all I64.
  compare_runs.py compare TOL REF OTHER [REF OTHER ...]
      each pair: two model directories (their model.safetensors and the "loss" of every row of
      metrics.jsonl) or two .safetensors files. Every tensor within TOL relative to its reference,
      |a - b| / max(max |a|, 1e-3) (the floor: the attention's key biases get no gradient — softmax
      ignores a shift of the keys — and hold only rounding noise, which AdamW magnifies on every
      device alike), every loss within TOL relative. One line per pair; exit 1 when any is off.
"""
import json
import os
import struct
import sys

import numpy as np


def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head, data = json.loads(b[8:8 + n]), b[8 + n:]
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        dt = {"F32": np.float32, "I64": np.int64}[v["dtype"]]
        out[k] = np.frombuffer(data[s:e], dtype=dt).reshape(v["shape"]).astype(np.float64)
    return out


def losses(d):
    return [json.loads(l)["loss"] for l in open(os.path.join(d, "metrics.jsonl")) if '"loss"' in l]


def write_inputs(path, vocab, seq):
    ids = (np.arange(2 * seq, dtype=np.int64).reshape(2, seq) * 37) % (vocab - 5) + 5
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    head, off, blobs = {}, 0, []
    for k, v in feeds.items():
        b = v.tobytes()
        head[k] = {"dtype": "I64", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def compare(tol, ref, other):
    is_dir = os.path.isdir(ref)
    a = tensors(os.path.join(ref, "model.safetensors") if is_dir else ref)
    b = tensors(os.path.join(other, "model.safetensors") if is_dir else other)
    if a.keys() != b.keys():
        print("%s: other tensors than %s" % (other, ref))
        return False
    worst = max((float(np.abs(a[k] - b[k]).max() / max(float(np.abs(a[k]).max()), 1e-3)), k) for k in a)
    ok = worst[0] <= tol
    line = "%s: %d tensors, worst %.2e (%s)" % (other, len(a), worst[0], worst[1])
    if is_dir:
        la, lb = losses(ref), losses(other)
        lw = max((abs(x - y) / max(abs(x), 1e-6) for x, y in zip(la, lb)), default=0.0)
        ok = ok and len(la) > 0 and len(la) == len(lb) and lw <= tol
        line += "; %d losses, worst %.2e" % (len(la), lw)
    print(line + (" -> ok" if ok else " -> WRONG (tolerance %g)" % tol))
    return ok


def main(argv):
    if len(argv) == 5 and argv[1] == "inputs":
        write_inputs(argv[2], int(argv[3]), int(argv[4]))
        return 0
    if len(argv) >= 5 and argv[1] == "compare" and len(argv) % 2 == 1:
        tol, pairs = float(argv[2]), argv[3:]
        oks = [compare(tol, pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]
        return 0 if all(oks) else 1
    print(__doc__.split("\n\n")[0] + "\nusage: see the top of tests/compare_runs.py", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
