#!/usr/bin/env python3
"""make_onnx_import_fixtures.py — write the ONNX importer's test models, laid out as ONNX's node
tests are (NAME/model.onnx, NAME/test_data_set_0/input_K.pb, output_K.pb), under
tests/fixtures/onnx_import/, and three models for the API tests in tests/fixtures/onnx_api/. Each
model of the first kind exercises what ONNX's single-op node tests do not: shape arithmetic folded at import (Shape -> Gather -> Concat -> Reshape), Conv + BatchNormalization
folding, initializers and Constant nodes, the opset-9 forms of the PaddleOCR recognizer's ops
(Softmax flattened to 2-D, attribute Slice / Squeeze / ReduceMean), the detector's (opset 11
Resize with constant scales, ConvTranspose, Clip with input bounds, HardSigmoid). The expected
outputs are computed here with numpy, independently of any ONNX runtime.

    /usr/bin/python3 tools/make_onnx_import_fixtures.py     (needs python3-onnx and numpy)

The files are checked in; run this only to regenerate them after changing it.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "onnx_import")
rng = np.random.default_rng(1234)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def save(name, nodes, inputs, outputs, inits, feeds, expected, opset):
    graph = h.make_graph(nodes, name, inputs, outputs, initializer=[nh.from_array(v, k) for k, v in inits.items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="tessera-fixtures")
    model.ir_version = 7
    onnx.checker.check_model(model)
    d = os.path.join(ROOT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (n, v) in enumerate(feeds.items()):
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as fh:
            fh.write(nh.from_array(v, n).SerializeToString())
    for k, (n, v) in enumerate(expected.items()):
        with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as fh:
            fh.write(nh.from_array(np.asarray(v), n).SerializeToString())


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def conv2d(x, w, b, stride, pad):
    n, c, hh, ww = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (hh + 2 * pad - kh) // stride + 1, (ww + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return (y + b[None, :, None, None]).astype(np.float32)


def conv_transpose2d(x, w, stride):
    n, c, hh, ww = x.shape
    _, o, kh, kw = w.shape
    y = np.zeros((n, o, (hh - 1) * stride + kh, (ww - 1) * stride + kw), np.float64)
    for i in range(hh):
        for j in range(ww):
            y[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += np.einsum("nc,cokl->nokl", x[:, :, i, j], w)
    return y.astype(np.float32)


def fold_reshape():
    """[N, 3, 4] -> [N, 12] through a shape computed from Shape(x); N is dynamic."""
    x = f32(2, 3, 4)
    save("fold_reshape", [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Constant", [], ["i0"], value=nh.from_array(np.array([0], np.int64))),
        h.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        h.make_node("Slice", ["s", "one", "three"], ["tail"]),
        h.make_node("ReduceProd", ["tail"], ["flat"], keepdims=1),
        h.make_node("Concat", ["n", "flat"], ["shape"], axis=0),
        h.make_node("Reshape", ["x", "shape"], ["r"]),
        h.make_node("Unsqueeze", ["r", "ax"], ["u"]),
        h.make_node("Squeeze", ["u", "ax"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, ["N", 3, 4])], [h.make_tensor_value_info("y", T.FLOAT, ["N", 12])],
        {"ax": np.array([1], np.int64), "one": np.array([1], np.int64), "three": np.array([3], np.int64)},
        {"x": x}, {"y": x.reshape(2, 12)}, 13)


def conv_bn():
    """Conv + BatchNormalization (folded into it), ReLU, GlobalAveragePool, Flatten, Gemm."""
    x = f32(2, 2, 5, 5)
    w, b, g, be, mu, var = f32(3, 2, 3, 3), f32(3), f32(3), f32(3), f32(3), np.abs(f32(3)) + 0.5
    fc, fcb = f32(4, 3), f32(4)
    c = conv2d(x, w, b, 2, 1)
    bn = (c - mu[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-3) * g[None, :, None, None] + be[None, :, None, None]
    p = np.maximum(bn, 0).mean(axis=(2, 3))
    save("conv_bn", [
        h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2], kernel_shape=[3, 3]),
        h.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["bn"], epsilon=1e-3, momentum=0.9),
        h.make_node("Relu", ["bn"], ["r"]),
        h.make_node("GlobalAveragePool", ["r"], ["p"]),
        h.make_node("Flatten", ["p"], ["fl"]),
        h.make_node("Gemm", ["fl", "fc", "fcb"], ["y"], transB=1)],
        [h.make_tensor_value_info("x", T.FLOAT, ["N", 2, 5, 5])], [h.make_tensor_value_info("y", T.FLOAT, ["N", 4])],
        {"w": w, "b": b, "g": g, "be": be, "mu": mu, "var": var, "fc": fc, "fcb": fcb},
        {"x": x}, {"y": (p @ fc.T + fcb).astype(np.float32)}, 13)


def attention():
    """MatMul, Transpose, a masked Softmax over a non-last axis (Where on a constant mask),
    ReduceSum with axes as an input."""
    x, wq = f32(2, 3, 4), f32(4, 4)
    mask = np.tril(np.ones((3, 3), bool))
    q = x @ wq
    s = q @ q.transpose(0, 2, 1)
    sm = np.where(mask, s, np.float32(-1e9))
    save("attention", [
        h.make_node("MatMul", ["x", "wq"], ["q"]),
        h.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1]),
        h.make_node("MatMul", ["q", "qt"], ["s"]),
        h.make_node("Where", ["mask", "s", "neg"], ["sm"]),
        h.make_node("Softmax", ["sm"], ["p"], axis=1),
        h.make_node("ReduceSum", ["p", "axes"], ["y"], keepdims=0)],
        [h.make_tensor_value_info("x", T.FLOAT, ["N", 3, 4])], [h.make_tensor_value_info("y", T.FLOAT, ["N", 3])],
        {"wq": wq, "mask": mask, "neg": np.array(-1e9, np.float32), "axes": np.array([2], np.int64)},
        {"x": x}, {"y": softmax(sm, 1).sum(axis=2).astype(np.float32)}, 13)


def opset9_rec():
    """The recognizer's opset-9 forms: attribute Slice and Squeeze, Pow, ReduceMean with axes,
    Sqrt, Div, Softmax flattened to 2-D from axis 1, Shape -> Cast -> Gather."""
    x = f32(1, 2, 3, 4)
    q = x[:, 1:2].squeeze(1)
    nrm = q / np.sqrt((q ** 2).mean(axis=-1, keepdims=True))
    sm = softmax(nrm.reshape(1, 12), 1).reshape(1, 3, 4)
    save("opset9_rec", [
        h.make_node("Slice", ["x"], ["s"], starts=[1], ends=[2], axes=[1]),
        h.make_node("Squeeze", ["s"], ["q"], axes=[1]),
        h.make_node("Constant", [], ["two"], value=nh.from_array(np.array(2.0, np.float32))),
        h.make_node("Pow", ["q", "two"], ["p2"]),
        h.make_node("ReduceMean", ["p2"], ["m"], axes=[-1], keepdims=1),
        h.make_node("Sqrt", ["m"], ["r"]),
        h.make_node("Div", ["q", "r"], ["nrm"]),
        h.make_node("Softmax", ["nrm"], ["sm"], axis=1),
        h.make_node("Shape", ["x"], ["shp"]),
        h.make_node("Cast", ["shp"], ["shpf"], to=T.FLOAT),
        h.make_node("Constant", [], ["i3"], value=nh.from_array(np.array(3, np.int64))),
        h.make_node("Gather", ["shpf", "i3"], ["w"], axis=0),
        h.make_node("Mul", ["sm", "w"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 2, 3, 4])], [h.make_tensor_value_info("y", T.FLOAT, [1, 3, 4])],
        {}, {"x": x}, {"y": (sm * 4.0).astype(np.float32)}, 9)


def opset11_det():
    """The detector's opset-11 forms: ConvTranspose (stride 2), Clip with bounds as inputs,
    HardSigmoid, Resize with constant scales (nearest, asymmetric, floor), Concat, Sigmoid."""
    x, w = f32(1, 2, 3, 3), f32(2, 3, 2, 2)
    ct = conv_transpose2d(x, w, 2)
    cl = np.clip(ct, 0, 6)
    hs = np.clip(cl * 0.2 + 0.5, 0, 1) * cl
    rs = hs.repeat(2, axis=2).repeat(2, axis=3)
    y = 1 / (1 + np.exp(-np.concatenate([rs, rs], axis=1)))
    save("opset11_det", [
        h.make_node("ConvTranspose", ["x", "w"], ["ct"], strides=[2, 2], kernel_shape=[2, 2], pads=[0, 0, 0, 0], group=1,
                    dilations=[1, 1]),
        h.make_node("Clip", ["ct", "lo", "hi"], ["cl"]),
        h.make_node("HardSigmoid", ["cl"], ["hsg"], alpha=0.2, beta=0.5),
        h.make_node("Mul", ["cl", "hsg"], ["hs"]),
        h.make_node("Resize", ["hs", "roi", "scales"], ["rs"], mode="nearest", coordinate_transformation_mode="asymmetric",
                    nearest_mode="floor"),
        h.make_node("Concat", ["rs", "rs"], ["cc"], axis=1),
        h.make_node("Sigmoid", ["cc"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 2, 3, 3])], [h.make_tensor_value_info("y", T.FLOAT, [1, 6, 12, 12])],
        {"w": w, "lo": np.array(0, np.float32), "hi": np.array(6, np.float32), "roi": np.zeros(0, np.float32),
         "scales": np.array([1, 1, 2, 2], np.float32)},
        {"x": x}, {"y": y.astype(np.float32)}, 11)


API = os.path.join(ROOT, "..", "onnx_api")


def save_model(name, nodes, inputs, outputs, inits, opset=13):
    graph = h.make_graph(nodes, name, inputs, outputs, initializer=[nh.from_array(v, k) for k, v in inits.items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="tessera-fixtures")
    model.ir_version = 7
    os.makedirs(API, exist_ok=True)
    onnx.save(model, os.path.join(API, name + ".onnx"))


def api_models():
    """Models for tests/test_onnx.c (tests/fixtures/onnx_api/): refusals collected over a whole
    graph, and graph outputs that are an input or an initializer themselves."""
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 3])
    save_model("refusals", [
        h.make_node("Relu", ["x"], ["a"], name="r1", foo=1),                # an attribute no mapping reads
        h.make_node("Sigmoid", ["a"], ["b"], name="after_r1"),              # reads a refused output: not reported
        h.make_node("LayerNormalization", ["x", "g"], ["c"], name="ln", stash_type=0),
        h.make_node("Transpose", ["x"], ["d"], name="tr", perm=[0, 0]),      # not a permutation: invalid
        h.make_node("Add", ["b", "c"], ["e"], name="sum"),
        h.make_node("Add", ["e", "d"], ["y"], name="sum2")],
        [x], [h.make_tensor_value_info("y", T.FLOAT, None)], {"g": np.ones(3, np.float32)}, opset=17)
    save_model("passthrough", [h.make_node("Relu", ["x"], ["y"])],
               [x], [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("x", T.FLOAT, None),
                     h.make_tensor_value_info("w", T.FLOAT, None)],
               {"w": np.arange(4, dtype=np.float32)})
    # a Split with no outputs (fuzz/fuzz_onnx found it dividing by zero): an invalid model
    save_model("split_no_outputs", [h.make_node("Split", ["x"], [], name="sp", axis=1),
                                    h.make_node("Relu", ["x"], ["y"])],
               [x], [h.make_tensor_value_info("y", T.FLOAT, None)], {})


def main():
    if len(sys.argv) > 1:
        sys.exit("usage: make_onnx_import_fixtures.py (no arguments)")
    for make in (fold_reshape, conv_bn, attention, opset9_rec, opset11_det):
        make()
    api_models()
    print(f"make_onnx_import_fixtures: wrote 5 models under {os.path.normpath(ROOT)} and 3 under {os.path.normpath(API)}")


if __name__ == "__main__":
    main()
