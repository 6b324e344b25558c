#!/usr/bin/env python3
"""bert_torch.py — the PyTorch peer of bench/bert.c: BERT-Base training steps and forward passes
timed in plain PyTorch, as a PyTorch user would run them, on the same shapes as tessera's rows.

The model is tools/torch_bert_train.py's (transformers' BertForPreTraining architecture written
with torch.nn, as `transformers` is not installable here): vocabulary 30522, C 768, 12 heads, FFN
3072, post-LN, erf GELU, dropout 0.1 in training. Inputs are random token ids, every sequence full
length.

  --mode train   AdamW (torch.optim.AdamW, lr 1e-4, weight decay 0.01) steps of the pre-training
                 loss; --positions P > 0: the MLM head on P gathered positions per sequence (all
                 labelled), 0: on every position with 15% labelled.
  --mode infer   the encoder's last_hidden_state under torch.inference_mode().
  --dtype bf16   torch.autocast("cpu", dtype=torch.bfloat16) around the forward (PyTorch's mixed
                 precision: matmuls in bf16, f32 weights and optimizer).

The first --warmup runs are not timed separately from the rest: every run's seconds are printed and
the caller (bench/bert.c) drops the warm-up ones. Prints one JSON line:
  {"run_s": [...], "threads": n, "torch": version, "blas": ...}
Run it the way bench/bert.c does, at PyTorch's best on this machine: OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE unset, OMP_WAIT_POLICY=passive, --threads equal to tessera's. Needs Debian's
python3-torch (and libopenblas0-pthread).
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from torch_bert_train import BertForPreTraining, init_weights  # noqa: E402

VOCAB = 30522


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["train", "infer"], required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--positions", type=int, default=20)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--threads", type=int, required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = BertForPreTraining(VOCAB, 768, a.layers, 12, 3072, 512, 0.1)
    model.apply(init_weights)
    g = torch.Generator().manual_seed(1)
    b, t = a.batch, a.seq
    ids = torch.randint(0, VOCAB, (b, t), generator=g)
    types = (torch.arange(t) >= t // 2).long().expand(b, t).contiguous()
    mask = torch.ones(b, t, dtype=torch.long)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16")
    times = []
    if a.mode == "train":
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
        nsp = torch.randint(0, 2, (b,), generator=g)
        if a.positions > 0:
            positions = torch.stack([torch.randperm(t, generator=g)[: a.positions] for _ in range(b)])
            labels = ids.gather(1, positions)
        else:
            positions = None
            labels = torch.where(torch.rand(b, t, generator=g) < 0.15, ids, torch.full_like(ids, -100))
        for _ in range(a.runs):
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            with autocast:
                loss = model(ids, types, mask, labels, nsp, positions)
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
    else:
        model.eval()
        with torch.inference_mode():
            for _ in range(a.runs):
                t0 = time.perf_counter()
                with autocast:
                    y = model.encode(ids, types, mask)
                float(y[0, 0, 0])
                times.append(time.perf_counter() - t0)
    # Debian's torch calls whichever libblas.so.3 the alternatives system points at: OpenBLAS
    # with libopenblas0-pthread, else the reference BLAS (some 25 times slower here).
    with open("/proc/self/maps") as f:
        maps = f.read()
    blas = "OpenBLAS" if "openblas" in maps else "reference BLAS (install libopenblas0-pthread)"
    print(json.dumps({"run_s": times, "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "blas": blas}))


if __name__ == "__main__":
    main()
