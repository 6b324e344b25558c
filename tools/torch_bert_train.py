#!/usr/bin/env python3
"""torch_bert_train.py — the PyTorch peer of bench/train_memory.c: BERT pre-training steps in
plain PyTorch, as a PyTorch user would write them, so the bench can measure its peak resident
memory and step time in the same run as tessera's.

The model is BERT for pre-training (MLM tied to the word embeddings + next-sentence), written
with torch.nn modules to transformers' BertForPreTraining architecture (post-LN encoder, GELU,
pooler, MLM transform), as the `transformers` package is not installable here. Inputs are random
token ids (every sequence full length, no padding), 15% of positions carry MLM labels, the rest
-100. The optimizer is torch.optim.AdamW (lr 1e-4, weight decay 0.01), f32, dropout 0.1.

Usage: /usr/bin/python3 tools/torch_bert_train.py [--steps N] [--batch B] [--seq T] [--layers L]
                                                  [--threads N]
Prints one JSON line: {"steps": N, "step_s": [...], "loss": [...], "threads": n}. Peak resident
memory is measured by the caller (wait4's ru_maxrss), so both frameworks are measured alike.
Needs Debian's python3-torch.
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Layer(nn.Module):
    def __init__(self, c, heads, ffn, p):
        super().__init__()
        self.heads = heads
        self.qkv = nn.ModuleList([nn.Linear(c, c) for _ in range(3)])
        self.out = nn.Linear(c, c)
        self.ln1 = nn.LayerNorm(c, eps=1e-12)
        self.fc1 = nn.Linear(c, ffn)
        self.fc2 = nn.Linear(ffn, c)
        self.ln2 = nn.LayerNorm(c, eps=1e-12)
        self.drop = nn.Dropout(p)

    def forward(self, x, ext):
        b, t, c = x.shape
        d = c // self.heads
        q, k, v = (l(x).view(b, t, self.heads, d).transpose(1, 2) for l in self.qkv)
        s = q @ k.transpose(-1, -2) / math.sqrt(d) + ext
        a = self.drop(F.softmax(s, dim=-1)) @ v
        a = a.transpose(1, 2).reshape(b, t, c)
        h = self.ln1(x + self.drop(self.out(a)))
        return self.ln2(h + self.drop(self.fc2(F.gelu(self.fc1(h)))))


class BertForPreTraining(nn.Module):
    def __init__(self, vocab, c, layers, heads, ffn, positions, p):
        super().__init__()
        self.word = nn.Embedding(vocab, c)
        self.pos = nn.Embedding(positions, c)
        self.tok_type = nn.Embedding(2, c)
        self.ln = nn.LayerNorm(c, eps=1e-12)
        self.drop = nn.Dropout(p)
        self.layers = nn.ModuleList([Layer(c, heads, ffn, p) for _ in range(layers)])
        self.pool = nn.Linear(c, c)
        self.transform = nn.Linear(c, c)
        self.tln = nn.LayerNorm(c, eps=1e-12)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab))
        self.nsp = nn.Linear(c, 2)

    def encode(self, ids, types, mask):
        """BertModel's last_hidden_state [B, T, C]."""
        t = ids.shape[1]
        x = self.word(ids) + self.pos(torch.arange(t)) + self.tok_type(types)
        x = self.drop(self.ln(x))
        ext = (1.0 - mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, ext)
        return x

    def forward(self, ids, types, mask, labels, nsp_label, positions=None):
        """The pre-training loss; with positions [B, P] the MLM head runs on those positions only
        (labels [B, P]), as Google's run_pretraining.py gathers its masked positions."""
        x = self.encode(ids, types, mask)
        pooled = torch.tanh(self.pool(x[:, 0]))
        if positions is not None:
            x = x.gather(1, positions[:, :, None].expand(-1, -1, x.shape[-1]))
        # Under CPU autocast (torch 1.13) layer_norm runs in its input's dtype and refuses a bf16
        # input with f32 weights; the encoder's LayerNorms get f32 from their residual adds, this
        # one takes a bf16 product, so it is widened (a no-op in f32).
        h = self.tln(F.gelu(self.transform(x)).float())
        logits = h @ self.word.weight.t() + self.mlm_bias
        mlm = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100)
        return mlm + F.cross_entropy(self.nsp(pooled), nsp_label)


def init_weights(m):
    """transformers' BertPreTrainedModel._init_weights: N(0, 0.02) weights, zero biases."""
    if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.normal_(m.weight, std=0.02)
    if isinstance(m, nn.Linear) and m.bias is not None:
        nn.init.zeros_(m.bias)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--threads", type=int, default=0, help="0: PyTorch's default (physical cores)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    vocab = 30522
    model = BertForPreTraining(vocab, 768, a.layers, 12, 3072, 512, 0.1)
    model.apply(init_weights)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (a.batch, a.seq), generator=g)
    types = (torch.arange(a.seq) >= a.seq // 2).long().expand(a.batch, a.seq).contiguous()
    mask = torch.ones(a.batch, a.seq, dtype=torch.long)
    labels = torch.where(torch.rand(a.batch, a.seq, generator=g) < 0.15, ids, torch.full_like(ids, -100))
    nsp = torch.randint(0, 2, (a.batch,), generator=g)
    times, losses = [], []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(ids, types, mask, labels, nsp)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    print(json.dumps({"steps": a.steps, "step_s": times, "loss": losses, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
