# mnist_mlp.py — a two-layer perceptron on MNIST written with tessera's graph API from Python:
# build the graph, add the backward pass and AdamW, compile a training and an inference
# program, feed numpy batches, and measure the accuracy on held-out digits.
#   python3 mnist_mlp.py [DATA_DIR] [STEPS]     (default data/mnist, 1500 steps)
import os
import sys

import numpy as np

import tessera

here = os.path.dirname(os.path.abspath(__file__))
data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "data", "mnist")
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
B, HIDDEN = 64, 256


def idx(path, header):  # an IDX file: a big-endian header, then bytes
    with open(path, "rb") as f:
        return np.frombuffer(f.read()[header:], np.uint8)


images = idx(os.path.join(data, "images-idx3-ubyte"), 16).reshape(-1, 784).astype(np.float32) / 255
labels = idx(os.path.join(data, "labels-idx1-ubyte"), 8).astype(np.int32)
order = np.random.default_rng(0).permutation(len(labels))
test, train = order[-2000:], order[:-2000]


def model(g):  # x [B, 784] -> logits [B, 10]
    x = g.input("x", [B, 784])
    h = g.relu(x @ g.param("fc1.weight", [784, HIDDEN], "normal", 0.05) + g.param("fc1.bias", [HIDDEN], "zeros"))
    logits = h @ g.param("fc2.weight", [HIDDEN, 10], "normal", 0.05) + g.param("fc2.bias", [10], "zeros")
    return g.name(logits, "logits")


g = tessera.Graph(seed=1)
loss = g.name(g.cross_entropy(model(g), g.input("y", [B], "i32")), "loss")
g.backward(loss)
g.optimizer("adamw", g.lr_schedule("cosine", 2e-3, warmup_steps=50, total_steps=steps), weight_decay=0.01)
trainer = g.compile(["loss"])
infer = tessera.Graph(seed=1)
model(infer)
predictor = infer.compile(["logits"], inference=True)

rng = np.random.default_rng(1)
for step in range(1, steps + 1):
    rows = rng.choice(train, B, replace=False)
    out = trainer.run({"x": images[rows], "y": labels[rows]}, fetches=["loss"])
    if step % 250 == 0 or step == steps:
        print("step %d  loss %.4f" % (step, out["loss"]))

predictor.copy_params_from(trainer)
right = 0
for s in range(0, len(test) - B + 1, B):
    rows = test[s:s + B]
    logits = predictor.run({"x": images[rows]}, fetches=["logits"])["logits"]
    right += int((logits.argmax(1) == labels[rows]).sum())
accuracy = right / (len(test) // B * B)
print("test accuracy %.2f%% on %d digits" % (100 * accuracy, len(test) // B * B))
sys.exit(0 if accuracy >= 0.9 else 1)
