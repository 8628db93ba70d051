#!/usr/bin/python3
"""Writes a CLIP export with the real architecture and shapes but random weights, to measure
`lever embed compute` throughput on a machine that cannot fetch real weights:

  /usr/bin/python3 bench/clip_shaped.py b32 /tmp/clip-b32-shaped   # ViT-B/32: 88 M + 63 M parameters, 0.6 GB
  /usr/bin/python3 bench/clip_shaped.py l14 /tmp/clip-l14-shaped   # ViT-L/14: 304 M + 123 M parameters, 1.7 GB
  LEVER_CLIP_B32=/tmp/clip-b32-shaped npm run bench -- embed.bench

The graphs follow Hugging Face's CLIPVisionModelWithProjection / CLIPTextModelWithProjection (patch
convolution, class token, positions, pre-LayerNorm, pre-norm transformer layers with quick-GELU MLPs,
final LayerNorm, pooled token, projection; the text side with a causal mask, pooled at the end-of-text
token = argmax of input_ids), so the work per image and per question is the real one; the embeddings
mean nothing. The tokenizer and preprocessor files are copied from the tiny test fixture with the
image size raised to 224 (the tokenizer's small vocabulary does not change the cost per token).
Needs Debian's python3-onnx and python3-numpy.
"""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VARIANTS = {
    # vision width, layers, heads, patch; text width, layers, heads; projection
    "b32": dict(vw=768, vl=12, vh=12, patch=32, tw=512, tl=12, th=8, proj=512),
    "l14": dict(vw=1024, vl=24, vh=16, patch=14, tw=768, tl=12, th=12, proj=768),
}
IMAGE, VOCAB, MAX_POS = 224, 49408, 77
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "fixtures", "tiny-clip", "model")


class Graph:
    def __init__(self, seed):
        self.nodes, self.inits, self.count = [], [], 0
        self.rng = np.random.default_rng(seed)

    def name(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def weight(self, *shape, scale=0.02):
        name = self.name("w")
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(self, array):
        name = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def linear(self, x, n_in, n_out, bias=True):
        y = self.op("MatMul", [x, self.weight(n_in, n_out)])
        return self.op("Add", [y, self.weight(n_out, scale=0.0)]) if bias else y

    def layer_norm(self, x, width):
        return self.op("LayerNormalization", [x, self.const(np.ones(width, np.float32)), self.const(np.zeros(width, np.float32))], axis=-1, epsilon=1e-5)

    def encoder_layer(self, x, width, heads, mask=None):
        """Pre-norm transformer layer: x + attn(LN(x)), then + MLP(LN(x)) with quick-GELU."""
        h = self.layer_norm(x, width)
        split = self.const(np.array([0, 0, heads, width // heads], np.int64))
        def project(z):
            return self.op("Transpose", [self.op("Reshape", [self.linear(z, width, width), split])], perm=[0, 2, 1, 3])
        q, k, v = project(h), project(h), project(h)
        scores = self.op("Mul", [self.op("MatMul", [q, self.op("Transpose", [k], perm=[0, 1, 3, 2])]), self.const(np.float32((width // heads) ** -0.5))])
        if mask is not None:
            scores = self.op("Add", [scores, mask])
        attn = self.op("MatMul", [self.op("Softmax", [scores], axis=-1), v])
        merged = self.op("Reshape", [self.op("Transpose", [attn], perm=[0, 2, 1, 3]), self.const(np.array([0, 0, width], np.int64))])
        x = self.op("Add", [x, self.linear(merged, width, width)])
        h = self.linear(self.layer_norm(x, width), width, 4 * width)
        h = self.op("Mul", [h, self.op("Sigmoid", [self.op("Mul", [h, self.const(np.float32(1.702))])])])
        return self.op("Add", [x, self.linear(h, 4 * width, width)])

    def save(self, inputs, outputs, path):
        graph = helper.make_graph(self.nodes, "clip_shaped", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        with open(path, "wb") as f:
            f.write(model.SerializeToString())


def vision(v, path):
    g, w, p = Graph(1), v["vw"], v["patch"]
    grid = IMAGE // p
    patches = g.op("Conv", ["pixel_values", g.weight(w, 3, p, p)], kernel_shape=[p, p], strides=[p, p])
    tokens = g.op("Transpose", [g.op("Reshape", [patches, g.const(np.array([0, w, -1], np.int64))])], perm=[0, 2, 1])
    batch = g.op("Slice", [g.op("Shape", ["pixel_values"]), g.const(np.array([0], np.int64)), g.const(np.array([1], np.int64))])
    cls_shape = g.op("Concat", [batch, g.const(np.array([1, w], np.int64))], axis=0)
    cls = g.op("Expand", [g.weight(1, 1, w), cls_shape])
    x = g.op("Add", [g.op("Concat", [cls, tokens], axis=1), g.weight(grid * grid + 1, w)])
    x = g.layer_norm(x, w)
    for _ in range(v["vl"]):
        x = g.encoder_layer(x, w, v["vh"])
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    pooled = g.layer_norm(g.op("Gather", [x, g.const(np.array(0, np.int64))], axis=1), w)
    g.nodes.append(helper.make_node("MatMul", [pooled, g.weight(w, v["proj"])], ["image_embeds"]))
    g.save([helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3, IMAGE, IMAGE])],
           [helper.make_tensor_value_info("image_embeds", TensorProto.FLOAT, ["batch", v["proj"]]),
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", grid * grid + 1, w])], path)


def text(v, path):
    g, w = Graph(2), v["tw"]
    seq = g.op("Slice", [g.op("Shape", ["input_ids"]), g.const(np.array([1], np.int64)), g.const(np.array([2], np.int64))])
    positions = g.op("Slice", [g.weight(MAX_POS, w), g.const(np.array([0], np.int64)), seq])
    x = g.op("Add", [g.op("Gather", [g.weight(VOCAB, w), "input_ids"]), positions])
    causal = np.triu(np.full((MAX_POS, MAX_POS), -1e4, np.float32), 1)
    mask = g.op("Slice", [g.const(causal), g.const(np.array([0, 0], np.int64)), g.op("Concat", [seq, seq], axis=0)])
    for _ in range(v["tl"]):
        x = g.encoder_layer(x, w, v["th"], mask)
    x = g.layer_norm(x, w)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    end = g.op("ArgMax", ["input_ids"], axis=1, keepdims=1)  # [batch, 1]: the end-of-text position
    index = g.op("Expand", [g.op("Unsqueeze", [end, g.const(np.array([2], np.int64))]), g.op("Concat", [g.op("Shape", [end]), g.const(np.array([w], np.int64))], axis=0)])
    pooled = g.op("Squeeze", [g.op("GatherElements", [x, index], axis=1), g.const(np.array([1], np.int64))])
    g.nodes.append(helper.make_node("MatMul", [pooled, g.weight(w, v["proj"])], ["text_embeds"]))
    g.save([helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
           [helper.make_tensor_value_info("text_embeds", TensorProto.FLOAT, ["batch", v["proj"]]),
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", w])], path)


def main():
    variant, out = sys.argv[1], sys.argv[2]
    v = VARIANTS[variant]
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    for name in ["config.json", "tokenizer.json", "tokenizer_config.json"]:
        shutil.copy(os.path.join(FIXTURE, name), os.path.join(out, name))
    with open(os.path.join(FIXTURE, "preprocessor_config.json")) as f:
        pre = json.load(f)
    pre.update(size={"shortest_edge": IMAGE}, crop_size={"height": IMAGE, "width": IMAGE})
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(pre, f, indent=1)
    vision(v, os.path.join(out, "onnx", "vision_model.onnx"))
    text(v, os.path.join(out, "onnx", "text_model.onnx"))


if __name__ == "__main__":
    main()
