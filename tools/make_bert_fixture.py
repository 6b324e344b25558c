#!/usr/bin/env python3
"""make_bert_fixture.py — the reference numbers for tests/test_bert_parity.c.

A small BERT for pre-training, written here in plain PyTorch (the Hugging Face `transformers`
package is not installed on these machines), following transformers' BertForPreTraining line
for line, run in float64 so the expected values carry no rounding noise of their own:

  embeddings   x = LayerNorm(word[input_ids] + position[0:T] + token_type[token_type_ids])
  mask         ext = (1 - attention_mask)[B, 1, 1, T] * -10000   (older transformers; newer ones
               use finfo(dtype).min: the same softmax whenever a row keeps at least one key)
  layer        q, k, v = x Wq^T + bq, ...      split into heads [B, nh, T, D], D = C / nh
               a = softmax(q k^T / sqrt(D) + ext) v           merged back to [B, T, C]
               h = LayerNorm(a Wo^T + bo + x)                  (post-LN)
               x = LayerNorm(act(h W1^T + b1) W2^T + b2 + h)
  pooler       pooled = tanh(x[:, 0] Wp^T + bp)
  MLM head     logits = LayerNorm(act(x Wt^T + bt)) E^T + bias      E = word embeddings (tied)
  NSP head     nsp = pooled Wn^T + bn
  loss         CE(logits, labels, ignore -100, mean over kept) + CE(nsp, next_sentence_label)
act is GELU in erf form ("gelu"); dropout is off. Linear weights are [out, in] as in PyTorch.

Parameters are random (weights N(0, 0.05), biases N(0, 0.05), LayerNorm weight 1 + N(0, 0.1),
bias N(0, 0.1)) rather than Hugging Face's initialisation, so a missing bias or a swapped
LayerNorm would show. They are rounded to float32 (what tessera holds), then widened to float64.

Writes into tests/fixtures/bert/ (or the directory given as the only argument):
  config.json              Hugging Face style config (vocab 99, hidden 32, 2 layers, 4 heads,
                           intermediate 37, max_position_embeddings 64, type_vocab_size 2)
  model.safetensors        the float32 weights by Hugging Face name, plus the tied copy
                           cls.predictions.decoder.weight and cls.predictions.decoder.bias that
                           Hugging Face state dicts carry (a loader must ignore them)
  inputs.safetensors       input_ids, token_type_ids, attention_mask, labels (I32 [B, T], B=3,
                           T=11, rows padded to 11 / 7 / 4 tokens, labels -100 except ~1/3 of the
                           real tokens), next_sentence_label (I32 [B])
  expected.safetensors     (float32) last_hidden_state, pooler_output, prediction_logits,
                           seq_relationship_logits, loss, mlm_loss, nsp_loss; "<param>@GRAD" for
                           every parameter at the loaded weights; "<param>@ADAMW3", every
                           parameter after 3 steps of torch.optim.AdamW(lr 1e-3, betas
                           (0.9, 0.999), eps 1e-8, weight_decay 0.01 on every parameter) on the
                           same batch
  expected_gelu_new.safetensors  forward outputs and losses with hidden_act "gelu_new" (tanh
                           GELU), same weights and inputs

Run with Debian's python3 and python3-torch:  /usr/bin/python3 tools/make_bert_fixture.py
The safetensors files are written by hand here (8-byte little-endian header length, JSON header,
raw little-endian data), as no safetensors package is installed.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

CONFIG = {
    "architectures": ["BertForPreTraining"],
    "model_type": "bert",
    "vocab_size": 99,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
}
B, T = 3, 11
LENGTHS = [11, 7, 4]  # real tokens per row; the rest is padding
ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
STEPS = 3


# ------------------------------------------------------------------ safetensors by hand

def save_safetensors(path, tensors, metadata=None):
    """tensors: dict name -> torch tensor (float32 or int32). Sorted by name, contiguous data."""
    codes = {torch.float32: "F32", torch.int32: "I32"}
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        raw = t.numpy().tobytes()  # little-endian hosts only (checked in main)
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in blobs:
            f.write(raw)


# ------------------------------------------------------------------ the model

def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x):  # transformers' gelu_new / gelu_pytorch_tanh
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACT = {"gelu": gelu_erf, "gelu_new": gelu_tanh}


def param_shapes(c):
    C, V, I = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    s = {
        "bert.embeddings.word_embeddings.weight": (V, C),
        "bert.embeddings.position_embeddings.weight": (c["max_position_embeddings"], C),
        "bert.embeddings.token_type_embeddings.weight": (c["type_vocab_size"], C),
        "bert.embeddings.LayerNorm.weight": (C,),
        "bert.embeddings.LayerNorm.bias": (C,),
    }
    for l in range(c["num_hidden_layers"]):
        p = f"bert.encoder.layer.{l}."
        for n in ("attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense"):
            s[p + n + ".weight"], s[p + n + ".bias"] = (C, C), (C,)
        s[p + "attention.output.LayerNorm.weight"] = s[p + "attention.output.LayerNorm.bias"] = (C,)
        s[p + "intermediate.dense.weight"], s[p + "intermediate.dense.bias"] = (I, C), (I,)
        s[p + "output.dense.weight"], s[p + "output.dense.bias"] = (C, I), (C,)
        s[p + "output.LayerNorm.weight"] = s[p + "output.LayerNorm.bias"] = (C,)
    s["bert.pooler.dense.weight"], s["bert.pooler.dense.bias"] = (C, C), (C,)
    s["cls.predictions.transform.dense.weight"] = (C, C)
    s["cls.predictions.transform.dense.bias"] = (C,)
    s["cls.predictions.transform.LayerNorm.weight"] = (C,)
    s["cls.predictions.transform.LayerNorm.bias"] = (C,)
    s["cls.predictions.bias"] = (V,)
    s["cls.seq_relationship.weight"], s["cls.seq_relationship.bias"] = (2, C), (2,)
    return s


def init_params(c, gen):
    P = {}
    for name, shape in param_shapes(c).items():
        if "LayerNorm.weight" in name:
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif "LayerNorm.bias" in name:
            t = 0.1 * torch.randn(shape, generator=gen)
        else:
            t = 0.05 * torch.randn(shape, generator=gen)
        P[name] = t.float().double()  # what an f32 framework holds, widened
    return P


def bert_pretraining(P, c, act, ids, tt, mask, labels, nsp_labels):
    Bn, Tn = ids.shape
    C, nh = c["hidden_size"], c["num_attention_heads"]
    D, eps = C // nh, c["layer_norm_eps"]

    def ln(x, p):
        return F.layer_norm(x, (C,), P[p + ".weight"], P[p + ".bias"], eps)

    def lin(x, p):
        return x @ P[p + ".weight"].T + P[p + ".bias"]

    def heads(t):  # [B, T, C] -> [B, nh, T, D]
        return t.view(Bn, Tn, nh, D).permute(0, 2, 1, 3)

    x = (P["bert.embeddings.word_embeddings.weight"][ids]
         + P["bert.embeddings.position_embeddings.weight"][:Tn]
         + P["bert.embeddings.token_type_embeddings.weight"][tt])
    x = ln(x, "bert.embeddings.LayerNorm")
    ext = (1.0 - mask.double())[:, None, None, :] * -10000.0
    for l in range(c["num_hidden_layers"]):
        p = f"bert.encoder.layer.{l}."
        q = heads(lin(x, p + "attention.self.query"))
        k = heads(lin(x, p + "attention.self.key"))
        v = heads(lin(x, p + "attention.self.value"))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + ext, dim=-1)
        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(Bn, Tn, C)
        h = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        f = lin(act(lin(h, p + "intermediate.dense")), p + "output.dense")
        x = ln(f + h, p + "output.LayerNorm")
    pooled = torch.tanh(lin(x[:, 0], "bert.pooler.dense"))
    t = ln(act(lin(x, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
    logits = t @ P["bert.embeddings.word_embeddings.weight"].T + P["cls.predictions.bias"]
    nsp = lin(pooled, "cls.seq_relationship")
    mlm_loss = F.cross_entropy(logits.reshape(-1, c["vocab_size"]), labels.reshape(-1).long(),
                               ignore_index=-100)
    nsp_loss = F.cross_entropy(nsp, nsp_labels.long())
    return {"last_hidden_state": x, "pooler_output": pooled, "prediction_logits": logits,
            "seq_relationship_logits": nsp, "loss": mlm_loss + nsp_loss, "mlm_loss": mlm_loss,
            "nsp_loss": nsp_loss}


def make_inputs(c, gen):
    V = c["vocab_size"]
    ids = torch.zeros(B, T, dtype=torch.int32)
    tt = torch.zeros(B, T, dtype=torch.int32)
    mask = torch.zeros(B, T, dtype=torch.int32)
    labels = torch.full((B, T), -100, dtype=torch.int32)
    for b, n in enumerate(LENGTHS):
        ids[b, :n] = torch.randint(1, V, (n,), generator=gen, dtype=torch.int32)
        ids[b, 0] = 2  # a [CLS]-like first token
        tt[b, n // 2:n] = 1  # second segment
        mask[b, :n] = 1
        pick = torch.rand(n, generator=gen) < 0.35
        pick[1] = True  # at least one prediction per row
        for j in range(1, n):
            if pick[j]:
                labels[b, j] = int(torch.randint(0, V, (1,), generator=gen))
    nsp = torch.tensor([0, 1, 1], dtype=torch.int32)
    return {"input_ids": ids, "token_type_ids": tt, "attention_mask": mask, "labels": labels,
            "next_sentence_label": nsp}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.normpath(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "bert"))
    assert sys.byteorder == "little", "writes the host's bytes as little-endian data"
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(20240611)
    c = CONFIG
    P = init_params(c, gen)
    inp = make_inputs(c, gen)
    args = (inp["input_ids"].long(), inp["token_type_ids"].long(), inp["attention_mask"],
            inp["labels"], inp["next_sentence_label"])

    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    weights = {n: t.float() for n, t in P.items()}
    weights["cls.predictions.decoder.weight"] = weights["bert.embeddings.word_embeddings.weight"]
    weights["cls.predictions.decoder.bias"] = weights["cls.predictions.bias"]
    save_safetensors(os.path.join(out_dir, "model.safetensors"), weights, {"format": "pt"})
    save_safetensors(os.path.join(out_dir, "inputs.safetensors"), inp)

    # forward and gradients at the loaded weights
    leaves = {n: t.clone().requires_grad_(True) for n, t in P.items()}
    out = bert_pretraining(leaves, c, gelu_erf, *args)
    out["loss"].backward()
    expected = {n: v.detach().float() for n, v in out.items()}
    for n, t in leaves.items():
        expected[n + "@GRAD"] = t.grad.float()

    # 3 AdamW steps on the same batch
    opt = torch.optim.AdamW(list(leaves.values()), **ADAMW)
    for step in range(STEPS):
        opt.zero_grad()
        bert_pretraining(leaves, c, gelu_erf, *args)["loss"].backward()
        opt.step()
    for n, t in leaves.items():
        expected[n + "@ADAMW3"] = t.detach().float()
    save_safetensors(os.path.join(out_dir, "expected.safetensors"), expected)

    # tanh GELU: forward only
    with torch.no_grad():
        out = bert_pretraining(P, c, gelu_tanh, *args)
    save_safetensors(os.path.join(out_dir, "expected_gelu_new.safetensors"),
                     {n: v.float() for n, v in out.items()})

    print(f"wrote {out_dir}: {len(P)} parameters, loss {float(expected['loss']):.6f} "
          f"(mlm {float(expected['mlm_loss']):.6f}, nsp {float(expected['nsp_loss']):.6f})")


if __name__ == "__main__":
    main()
