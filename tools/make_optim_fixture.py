#!/usr/bin/python3
"""make_optim_fixture.py — reference runs of tessera's optimizers and lr schedules in PyTorch,
written as safetensors fixtures for tests/test_optim_parity.c.

The model (tiny, odd shapes; parameters in tessera's layout, x @ W):
    h = tanh(x @ dense.weight + dense.bias)                      x [8, 5], dense.weight [5, 7]
    h = layer_norm(h) * LayerNorm.weight + LayerNorm.bias        eps 1e-5, [7]
    loss = cross_entropy(h @ out.weight, labels)                 out.weight [7, 3], labels [8]
Every configuration starts from the same parameters and trains 20 steps on the same batch.

Files written to tests/fixtures/optim/ (safetensors, written by hand: 8-byte little-endian header
length, JSON header, raw little-endian data):
    init.safetensors     the initial parameters, "x" (F32) and "labels" (I32)
    <config>.safetensors for each parameter "<name>" [20, ...]: its value after each step, and
                         "loss" [20]: the loss of each step (computed before that step's update)

Run: /usr/bin/python3 tools/make_optim_fixture.py   (torch 1.13; no other package)
"""
import json
import math
import os
import struct

import torch

STEPS = 20
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "optim")
NO_DECAY = ["bias", "LayerNorm.weight"]  # Hugging Face's convention: substrings of the name

SHAPES = [("dense.weight", (5, 7)), ("dense.bias", (7,)), ("LayerNorm.weight", (7,)),
          ("LayerNorm.bias", (7,)), ("out.weight", (7, 3))]


def write_safetensors(path, tensors):
    """tensors: dict name -> torch tensor (float32 or int32)."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        dt = {torch.float32: "F32", torch.int32: "I32"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def forward(p, x, labels):
    h = torch.tanh(x @ p["dense.weight"] + p["dense.bias"])
    h = torch.nn.functional.layer_norm(h, (7,), p["LayerNorm.weight"], p["LayerNorm.bias"], 1e-5)
    return torch.nn.functional.cross_entropy(h @ p["out.weight"], labels.long())


def groups(params, wd):
    """Parameter groups with weight decay wd, except the NO_DECAY names (wd 0)."""
    dec = [t for n, t in params.items() if not any(s in n for s in NO_DECAY)]
    nodec = [t for n, t in params.items() if any(s in n for s in NO_DECAY)]
    return [{"params": dec, "weight_decay": wd}, {"params": nodec, "weight_decay": 0.0}]


class Lamb:
    """LAMB as tessera's lamb_update states it, by hand:
    t += 1; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
    r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd p;
    trust = ||p|| / ||r|| when both are > 0, else 1;  p -= (lr trust) r."""

    def __init__(self, param_groups, lr, b1=0.9, b2=0.999, eps=1e-6):
        self.param_groups = [dict(g, lr=lr, initial_lr=lr) for g in param_groups]
        self.b1, self.b2, self.eps, self.t = b1, b2, eps, 0
        self.state = {}

    def zero_grad(self):
        for g in self.param_groups:
            for p in g["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self):
        self.t += 1
        bc1, bc2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for grp in self.param_groups:
            lr, wd = grp["lr"], grp["weight_decay"]
            for p in grp["params"]:
                m, v = self.state.setdefault(id(p), (torch.zeros_like(p), torch.zeros_like(p)))
                m.mul_(self.b1).add_(p.grad, alpha=1 - self.b1)
                v.mul_(self.b2).addcmul_(p.grad, p.grad, value=1 - self.b2)
                r = (m / bc1) / ((v / bc2).sqrt() + self.eps) + wd * p
                pn, rn = p.norm(), r.norm()
                trust = torch.where((pn > 0) & (rn > 0), pn / rn, torch.ones_like(pn))
                p.sub_((lr * trust) * r)


# Hugging Face transformers' schedule lambdas (optimization.py), copied formula for formula.
def linear_lambda(warmup, total):
    def f(step):
        if step < warmup:
            return float(step) / float(max(1, warmup))
        return max(0.0, float(total - step) / float(max(1, total - warmup)))
    return f


def cosine_lambda(warmup, total, num_cycles=0.5):
    def f(step):
        if step < warmup:
            return float(step) / float(max(1, warmup))
        progress = float(step - warmup) / float(max(1, total - warmup))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))
    return f


def poly_lambda(warmup, total, lr_init, lr_end, power):
    def f(step):
        if step < warmup:
            return float(step) / float(max(1, warmup))
        elif step > total:
            return lr_end / lr_init
        lr_range = lr_init - lr_end
        decay_steps = total - warmup
        pct_remaining = 1 - (step - warmup) / decay_steps
        decay = lr_range * pct_remaining ** power + lr_end
        return decay / lr_init
    return f


# name -> (make optimizer from params, lr lambda or None, max_grad_norm or None).
# Schedules: 4 warm-up steps, 16 total, so the last steps run past the end of the decay.
CONFIGS = {
    "sgd_momentum": (lambda p: torch.optim.SGD(p.values(), lr=0.1, momentum=0.9, dampening=0.1), None, None),
    "sgd_nesterov_wd": (lambda p: torch.optim.SGD(groups(p, 0.05), lr=0.1, momentum=0.9, nesterov=True),
                        None, None),
    "adamw_nodecay": (lambda p: torch.optim.AdamW(groups(p, 0.1), lr=0.01, betas=(0.9, 0.999), eps=1e-8),
                      None, None),
    "lamb": (lambda p: Lamb(groups(p, 0.1), lr=0.01), None, None),
    "adamw_clip": (lambda p: torch.optim.AdamW(p.values(), lr=0.01, weight_decay=0.01), None, 0.05),
    "sched_linear": (lambda p: torch.optim.AdamW(groups(p, 0.01), lr=0.01), linear_lambda(4, 16), None),
    "sched_cosine": (lambda p: torch.optim.AdamW(groups(p, 0.01), lr=0.01), cosine_lambda(4, 16), None),
    "sched_poly": (lambda p: torch.optim.AdamW(groups(p, 0.01), lr=0.01),
                   poly_lambda(4, 16, 0.01, 1e-4, 2.0), None),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    gen = torch.Generator().manual_seed(1234)
    init = {n: (torch.rand(s, generator=gen) - 0.5) for n, s in SHAPES}
    init["LayerNorm.weight"] += 1.0
    x = torch.randn(8, 5, generator=gen)
    labels = torch.randint(0, 3, (8,), generator=gen, dtype=torch.int32)
    write_safetensors(os.path.join(OUT, "init.safetensors"), dict(init, x=x, labels=labels))

    for name, (make, lam, max_norm) in CONFIGS.items():
        params = {n: t.clone().requires_grad_(True) for n, t in init.items()}
        opt = make(params)
        sched = None
        if lam is not None:
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lam)
        hist = {n: [] for n in params}
        losses = []
        for _ in range(STEPS):
            opt.zero_grad()
            loss = forward(params, x, labels)
            loss.backward()
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm)
            opt.step()
            if sched is not None:
                sched.step()
            losses.append(loss.item())
            for n, t in params.items():
                hist[n].append(t.detach().clone())
        out = {n: torch.stack(v) for n, v in hist.items()}
        out["loss"] = torch.tensor(losses, dtype=torch.float32)
        write_safetensors(os.path.join(OUT, name + ".safetensors"), out)
        print(f"{name}: loss {losses[0]:.6f} -> {losses[-1]:.6f}")


if __name__ == "__main__":
    main()
