#!/usr/bin/python3
"""make_onnx_cnn_fixture.py — a small CNN exported from PyTorch to ONNX, and what 10 steps of
plain SGD do to it in PyTorch, as fixtures for tests/test_onnx_train.c (train what you import).

The model (NCHW, 1 x 8 x 8 inputs, 3 classes; 337 parameters, 1.3 KB):
    conv1  Conv2d(1, 4, 3, padding=1) -> ReLU -> MaxPool2d(2)      [N, 4, 4, 4]
    conv2  Conv2d(4, 6, 3, padding=1) -> ReLU -> MaxPool2d(2)      [N, 6, 2, 2]
    flatten -> fc Linear(24, 3) = logits                          [N, 3]
exported with torch.onnx.export (opset 13, eval mode, input "x" [8, 1, 8, 8], output "logits"),
so the file holds Conv / Relu / MaxPool / Flatten / Gemm nodes and the initializers conv1.weight,
conv1.bias, conv2.weight, conv2.bias, fc.weight, fc.bias.

Training: one fixed batch (x [8, 1, 8, 8] normal, labels [8] in 0..2), mean cross-entropy,
torch.optim.SGD(lr=0.1) (no momentum, no weight decay), 10 steps from the exported weights:
  - every parameter trained;
  - again with conv1 frozen (requires_grad False), the others trained.

Files written to tests/fixtures/onnx/:
    cnn.onnx               the exported model (the initial weights)
    cnn_train.safetensors  "x" (F32), "labels" (I32), "loss" [10] (each step's loss, before its
                           update), "<param>" after 10 steps, "frozen.<param>" after 10 steps with
                           conv1 frozen, "logits" [8, 3] of the trained model on x

Run: /usr/bin/python3 tools/make_onnx_cnn_fixture.py   (torch 1.13 and onnx, Debian's python3-torch
and python3-onnx; onnx only checks the exported file)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_bert_fixture import save_safetensors  # noqa: E402  (the safetensors writer by hand)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "onnx")
BATCH, CLASSES, SIDE = 8, 3, 8
STEPS, LR = 10, 0.1


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 6, 3, padding=1)
        self.fc = torch.nn.Linear(6 * 2 * 2, CLASSES)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def train(model, x, labels, frozen=()):
    """STEPS of plain SGD on (x, labels); returns each step's loss (before its update)."""
    for name, p in model.named_parameters():
        p.requires_grad_(not any(name.startswith(f) for f in frozen))
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=LR)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), labels.long())
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(20260513)
    model = SmallCNN().eval()
    x = torch.randn(BATCH, 1, SIDE, SIDE)
    labels = torch.randint(0, CLASSES, (BATCH,), dtype=torch.int32)
    init = {n: p.detach().clone() for n, p in model.named_parameters()}

    os.makedirs(OUT, exist_ok=True)
    onnx_path = os.path.join(OUT, "cnn.onnx")
    torch.onnx.export(model, (x,), onnx_path, opset_version=13, input_names=["x"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.EVAL, do_constant_folding=True)
    import onnx
    m = onnx.load(onnx_path)
    onnx.checker.check_model(m)
    names = sorted(i.name for i in m.graph.initializer)
    assert names == sorted(init), f"initializers {names} are not the parameters {sorted(init)}"
    print("cnn.onnx:", [n.op_type for n in m.graph.node], os.path.getsize(onnx_path), "bytes")

    out = {"x": x, "labels": labels}
    losses = train(model, x, labels)
    out["loss"] = torch.tensor(losses, dtype=torch.float32)
    for n, p in model.named_parameters():
        out[n] = p.detach().clone()
    with torch.no_grad():
        out["logits"] = model(x)

    model.load_state_dict(init)  # again from the exported weights, conv1 frozen
    train(model, x, labels, frozen=("conv1.",))
    for n, p in model.named_parameters():
        out["frozen." + n] = p.detach().clone()
    assert torch.equal(out["frozen.conv1.weight"], init["conv1.weight"])

    save_safetensors(os.path.join(OUT, "cnn_train.safetensors"), out)
    print(f"cnn_train.safetensors: loss {losses[0]:.6f} -> {losses[-1]:.6f} over {STEPS} steps of SGD lr {LR}")


if __name__ == "__main__":
    main()
