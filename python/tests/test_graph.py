# test_graph.py — the graph API: build, compile, feed, run and fetch against numpy; training with
# backward and an optimizer; profile and memory reports; parameters saved and loaded; and the
# misuses that must raise tessera.Error, never crash: a wrong shape, a wrong dtype, a graph freed
# while its program lives (the program goes on), a freed program or graph used again.
import gc

import numpy as np
import pytest

import tessera


def mlp(seed=1, train=True):
    g = tessera.Graph(seed=seed)
    x = g.input("x", [8, 4])
    y = g.input("y", [8], "i32")
    w1 = g.param("fc1.weight", [4, 16], "uniform", -0.5, 0.5)
    b1 = g.param("fc1.bias", [16], "zeros")
    w2 = g.param("fc2.weight", [16, 3], "normal", 0.3)
    h = g.relu(x @ w1 + b1)
    logits = g.name(g.matmul(h, w2), "logits")
    loss = g.name(g.cross_entropy(logits, y), "loss")
    if train:
        g.backward(loss)
        g.sgd(0.1, momentum=0.9)
    return g


def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((8, 4)).astype(np.float32), (np.arange(8) % 3).astype(np.int32)


def test_forward_matches_numpy():
    g = mlp(train=False)
    p = g.compile(["logits"], devices=["cpu:0"], inference=True)
    x, y = data()
    out = p.run({"x": x, "y": y}, fetches=["logits"])["logits"]
    w = p.params()
    want = np.maximum(x @ w["fc1.weight"] + w["fc1.bias"], 0) @ w["fc2.weight"]
    assert out.shape == (8, 3) and out.dtype == np.float32
    assert np.allclose(out, want, atol=1e-5)
    assert g["logits"].shape == (8, 3) and g["y"].dtype == "i32"


def test_training_lowers_the_loss_and_reports():
    g = mlp()
    p = g.compile(["loss"], threads=1, profile=True)
    x, y = data()
    losses = [float(p.run({"x": x, "y": y}, fetches=["loss"])["loss"]) for _ in range(30)]
    assert losses[-1] < losses[0] * 0.5, losses
    assert p.step == 30
    m = p.memory()
    assert m["params"] == (4 * 16 + 16 + 16 * 3) * 4 and m["optimizer_state"] > 0 and m["nodes"] > 0
    rep = p.profile_report()
    assert "30 runs" in rep and "matmul" in rep
    assert "fc1.weight@GRAD" not in p.param_names() and "fc1.weight" in p.param_names()


def test_same_seed_same_bits():
    x, y = data()
    a, b_ = (mlp(seed=7).compile(["loss"], threads=1) for _ in range(2))
    for _ in range(5):
        la, lb = (p.run({"x": x, "y": y}, fetches=["loss"])["loss"] for p in (a, b_))
        assert la.tobytes() == lb.tobytes()


def test_graph_freed_while_program_lives():
    g = mlp()
    p = g.compile(["loss"], threads=1)
    v = g["x"]
    g.free()
    del g
    gc.collect()
    x, y = data()
    assert np.isfinite(p.run({"x": x, "y": y}, fetches=["loss"])["loss"])
    with pytest.raises(tessera.Error, match="freed"):
        v.graph.relu(v)


def test_wrong_shape_and_dtype_raise():
    p = mlp().compile(["loss"], threads=1)
    x, y = data()
    with pytest.raises(tessera.Error) as e:
        p.feed("x", x[:, :3])
    assert e.value.status == "TS_ERR_SHAPE" and "'x'" in str(e.value)
    with pytest.raises(tessera.Error) as e:
        p.feed("x", x.astype(np.int32))
    assert e.value.status == "TS_ERR_DTYPE"
    with pytest.raises(tessera.Error) as e:
        p.feed("x", x.astype(np.float64))
    assert e.value.status == "TS_ERR_DTYPE"
    with pytest.raises(tessera.Error) as e:
        p.feed("nope", x)
    assert e.value.status == "TS_ERR_NOT_FOUND"
    with pytest.raises(tessera.Error):
        p.fetch("nope")
    g = tessera.Graph()
    a = g.input("a", [2, 3])
    with pytest.raises(tessera.Error) as e:
        g.matmul(a, a)
    assert e.value.status == "TS_ERR_SHAPE" and "matmul" in str(e.value)
    with pytest.raises(tessera.Error):
        g.relu(a)  # a graph with an error refuses what follows (ts_graph_status keeps the first)
    g = tessera.Graph()
    a = g.input("a", [2, 3])
    with pytest.raises(tessera.Error):
        g.input("a", [1])  # a name used twice
    g = tessera.Graph()
    a = g.input("a", [2, 3])
    labels = g.input("labels", [2], "i32")
    g.cross_entropy(a, labels)
    with pytest.raises(tessera.Error):
        g.add(labels, a)  # i32 + f32


def test_a_run_time_error_raises():
    g = tessera.Graph()
    table = g.param("table", [4, 2], "ones")
    idx = g.input("idx", [3], "i32")
    g.name(g.gather(table, idx), "rows")
    p = g.compile(["rows"], inference=True)
    assert p.run({"idx": np.array([0, 3, 1], np.int32)}, fetches=["rows"])["rows"].shape == (3, 2)
    with pytest.raises(tessera.Error) as e:
        p.run({"idx": np.array([0, 9, 1], np.int32)})
    assert e.value.status == "TS_ERR_RUNTIME"


def test_freed_program_raises():
    p = mlp().compile(["loss"])
    p.free()
    with pytest.raises(tessera.Error, match="freed"):
        p.run()


def test_save_load_and_safetensors(tmp_path):
    x, y = data()
    a = mlp(seed=1).compile(["loss"], threads=1)
    a.run({"x": x, "y": y})
    a.save(tmp_path / "m.safetensors")
    b_ = mlp(seed=2).compile(["loss"], threads=1)
    assert b_.load(tmp_path / "m.safetensors", strict=True) == 0
    for n in a.param_names():
        assert a.get_param(n).tobytes() == b_.get_param(n).tobytes()
    st = tessera.safetensors.load(tmp_path / "m.safetensors")
    assert sorted(st) == sorted(a.param_names())
    tessera.safetensors.save(tmp_path / "copy.safetensors", st, {"format": "pt"})
    assert (tmp_path / "copy.safetensors").read_bytes() == (tmp_path / "m.safetensors").read_bytes()
    a.save_state(tmp_path / "ckpt", '{"epoch": 1}')
    c = mlp(seed=3).compile(["loss"], threads=1)
    assert c.load_state(tmp_path / "ckpt") == '{"epoch": 1}' and c.step == 1
    with pytest.raises(tessera.Error) as e:
        c.load(tmp_path / "missing.safetensors")
    assert "missing.safetensors" in str(e.value)


def test_fetch_is_a_numpy_view_that_outlives_the_program():
    g = tessera.Graph()
    x = g.input("x", [3])
    g.name(g.scale(x, 2.0, 1.0), "y")
    p = g.compile(["y"], inference=True)
    y = p.run({"x": np.array([1, 2, 3], np.float32)}, fetches=["y"])["y"]
    p.free()
    gc.collect()
    assert y.tolist() == [3.0, 5.0, 7.0]


def test_adamw_and_schedule_and_operators():
    g = tessera.Graph(seed=3)
    x = g.input("x", [4, 2])
    w = g.param("w", [2, 1], "uniform", -1, 1)
    pred = x @ w
    err = pred - g.constant(np.array([[1], [2], [3], [4]], np.float32))
    loss = g.name(g.reduce_mean(err * err), "loss")
    g.backward(loss)
    g.optimizer("adamw", g.lr_schedule("linear", 0.1, warmup_steps=2, total_steps=50), weight_decay=0.0,
                no_decay=["*.bias"])
    p = g.compile(["loss"])
    xs = np.array([[1, 0], [0, 1], [1, 1], [2, 1]], np.float32)
    first = float(p.run({"x": xs}, fetches=["loss"])["loss"])
    for _ in range(40):
        last = float(p.run({"x": xs}, fetches=["loss"])["loss"])
    assert last < first


def gelu_mlp(lean):
    g = tessera.Graph(seed=5)
    x, y = g.input("x", [8, 4]), g.input("y", [8], "i32")
    h = g.gelu(x @ g.param("fc1.weight", [4, 16], "uniform", -0.5, 0.5))
    loss = g.name(g.cross_entropy(g.matmul(h, g.param("fc2.weight", [16, 3], "normal", 0.3)), y), "loss")
    if lean:
        g.recompute_gelu()
        g.recompute_casts()  # no 16-bit casts here: the binding is called, nothing changes
    g.backward(loss)
    g.optimizer("adamw", 0.05, updates_in_backward=int(lean))
    return g


def test_updates_in_backward_and_gelu_recompute_keep_the_bits():
    x, y = data()
    runs = [gelu_mlp(lean).compile(["loss"], threads=1) for lean in (False, True)]
    for _ in range(3):
        a, b_ = (p.run({"x": x, "y": y}, fetches=["loss"])["loss"] for p in runs)
        assert a.tobytes() == b_.tobytes()
    for name in ("fc1.weight", "fc2.weight"):
        assert runs[0].get_param(name).tobytes() == runs[1].get_param(name).tobytes()
    g = tessera.Graph()
    g.backward(g.name(g.reduce_mean(g.input("x", [2]) * g.param("w", [2])), "loss"))
    with pytest.raises(tessera.Error, match="max_grad_norm"):
        g.optimizer("sgd", 0.1, max_grad_norm=1.0, updates_in_backward=1)


def staged_mlp(seed=4):
    g = tessera.Graph(seed=seed)
    x, y = g.input("x", [8, 4]), g.input("y", [8], "i32")
    with g.stage(0):
        h = g.relu(x @ g.param("fc1.weight", [4, 16], "uniform", -0.5, 0.5))
    with g.stage(1):
        with g.recompute():
            logits = g.name(g.matmul(h, g.param("fc2.weight", [16, 3], "normal", 0.3)), "logits")
        loss = g.name(g.cross_entropy(logits, y), "loss")
    g.backward(loss)
    g.optimizer("sgd", 0.1, accumulation_steps=2)  # a pipeline runs a step as M >= 2 micro-batches
    return g


def test_pipeline_over_two_devices_equals_one_device():
    x, y = data()
    xs, ys = np.stack([x, x[::-1]]), np.stack([y, y[::-1]])  # [M, B, ...]: the step's 2 micro-batches
    one = staged_mlp().compile(["loss"], devices=["cpu:0"], threads=1, device_iterations=2)
    two = staged_mlp().compile(["loss"], devices=["cpu:1", "cpu:2"], threads=1, device_iterations=2)
    for _ in range(3):
        a, b_ = (p.run({"x": xs, "y": ys}, fetches=["loss"])["loss"] for p in (one, two))
        assert a.shape == (2,) and a.tobytes() == b_.tobytes()
    with pytest.raises(tessera.Error):
        staged_mlp().compile(["loss"], devices=["cpu:1", "cpu:2"], device_iterations=2, profile=True)


def test_vision_and_index_ops_match_numpy():
    g = tessera.Graph()
    x = g.input("x", [1, 1, 4, 4])
    w = g.constant(np.ones((2, 1, 2, 2), np.float32))
    g.name(g.conv2d(x, w, stride=(2, 2)), "conv")
    g.name(g.max_pool2d(x, (2, 2)), "maxpool")
    g.name(g.avg_pool2d(x, (2, 2)), "avgpool")
    g.name(g.resize2d(x, 8, 8), "up")
    flat = g.reshape(x, [2, 8])
    vals, idx = g.topk(flat, 3)
    g.name(vals, "top"), g.name(idx, "topi")
    a, b_ = g.split(flat, 1, 2)
    g.name(a - b_, "halves")
    g.name(g.pad(flat, [0, 1, 0, 1], value=-1.0), "padded")
    g.name(g.reduce_min(flat, 1), "mins")
    p = g.compile(["conv", "maxpool", "avgpool", "up", "top", "topi", "halves", "padded", "mins"], inference=True)
    xs = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    out = p.run({"x": xs}, fetches="all")
    blocks = xs.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3).reshape(2, 2, 4)
    assert np.array_equal(out["conv"][0, 0], blocks.sum(-1)) and out["conv"].shape == (1, 2, 2, 2)
    assert np.array_equal(out["maxpool"][0, 0], blocks.max(-1))
    assert np.allclose(out["avgpool"][0, 0], blocks.mean(-1))
    assert np.array_equal(out["up"][0, 0], xs[0, 0].repeat(2, 0).repeat(2, 1))
    f = xs.reshape(2, 8)
    assert np.array_equal(out["top"], -np.sort(-f, 1)[:, :3]) and out["topi"].tolist() == [[7, 6, 5]] * 2
    assert np.array_equal(out["halves"], f[:, :4] - f[:, 4:])
    assert out["padded"].shape == (2, 10) and out["padded"][0, 0] == -1
    assert out["mins"].tolist() == [0, 8]


def test_device_options_and_notices():
    # A device option changes what later compiles do, a bad one raises naming what is accepted.
    tessera.set_device_option("cpu", "conv_algorithm", "reference")
    tessera.set_device_option("cpu", "conv_algorithm", "auto")
    with pytest.raises(tessera.Error, match="conv_algorithm"):
        tessera.set_device_option("cpu", "conv_algorithm", "fastest")
    with pytest.raises(tessera.Error):
        tessera.set_device_option("cpu", "no_such_key", "1")
    assert isinstance(tessera.build_features()["core"], list)
    # The notices of a compile on a plugin's device reach the sink, and nothing once it is None.
    import ctypes
    import os
    plugin = os.path.join(os.path.dirname(tessera.library_path), "plugins", "libtessera-cpuplugin.so")
    if not os.path.exists(plugin):
        pytest.skip("the CPU plugin is not built beside the library")
    load = tessera._lib.fn("ts_backend_load", ctypes.c_int, tessera._lib.CP)
    tessera._lib.check(load(plugin.encode()))
    lines = []
    tessera.set_notice_sink(lines.append)
    try:
        mlp(train=False).compile(["logits"], devices=["cpuplugin:0"], inference=True)
    finally:
        tessera.set_notice_sink(None)
    assert any("placement" in line for line in lines), lines
    lines.clear()
    mlp(train=False).compile(["logits"], devices=["cpuplugin:0"], inference=True)
    assert lines == []
