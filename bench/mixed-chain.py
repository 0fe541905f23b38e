#!/usr/bin/python3
"""Writes the scale benchmarks' mixed graph as an ONNX model, for the CLI and the GUI (issue 19):
stages of residual blocks (Conv 3x3, BatchNormalization, Relu, Conv 3x3, BatchNormalization, Add of
the block's input, Relu) and attention blocks on the H*W tokens of width C (q, k, v MatMuls, k
Transposed, scaled Softmax, the residual Add, and LayerNorm written out as ReduceMean, Sub, Pow,
ReduceMean, Add, Sqrt, Div, Mul, Add), joined by Reshape and Transpose. The same graph as
bench/SyntheticGraph.cpp builds in memory (`Compile/mixed/N`), with the same names; its weights are
drawn from the same ranges by numpy (seeded), not the same numbers. Stops after the first stage
that reaches NODES nodes. Opset 13. Needs Debian's python3-onnx.
usage: bench/mixed-chain.py NODES OUT.onnx [--attention-only]    (5000 and 20000: issue 19's sizes)
With --attention-only each stage is attention blocks alone (no residual blocks)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CHANNELS, SIZE = 16, 16  # issue 19's sizes: C = 16 at 16 x 16, so 256 tokens of width 16
RESIDUAL_PER_STAGE, ATTENTION_PER_STAGE = 4, 4


class Builder:
    def __init__(self):
        self.nodes, self.inits, self.rng = [], [], np.random.default_rng(12345)

    def weight(self, name, shape, lo, hi):
        self.inits.append(numpy_helper.from_array(self.rng.uniform(lo, hi, shape).astype(np.float32), name))
        return name

    def scalar(self, name, value):
        self.inits.append(numpy_helper.from_array(np.array(value, np.float32), name))
        return name

    def shape(self, name, dims):
        self.inits.append(numpy_helper.from_array(np.array(dims, np.int64), name))
        return name

    def node(self, op, name, inputs, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name


def residual_block(b, x, p, c):
    cur = x
    for i in range(2):
        q = f'{p}_{i}'
        w = b.weight(q + '_w', (c, c, 3, 3), -0.2, 0.2)
        bias = b.weight(q + '_b', (c,), -0.1, 0.1)
        gamma = b.weight(q + '_gamma', (c,), 0.5, 1.5)
        beta = b.weight(q + '_beta', (c,), -0.1, 0.1)
        mean = b.weight(q + '_mean', (c,), -0.1, 0.1)
        var = b.weight(q + '_var', (c,), 0.5, 1.5)
        cur = b.node('Conv', q + '_conv', [cur, w, bias], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        cur = b.node('BatchNormalization', q + '_bn', [cur, gamma, beta, mean, var], epsilon=1e-5)
        if i == 0:
            cur = b.node('Relu', q + '_relu', [cur])
    total = b.node('Add', p + '_add', [cur, x])
    return b.node('Relu', p + '_relu', [total])


def attention_block(b, t, p, d):
    wq = b.weight(p + '_wq', (d, d), -0.3, 0.3)
    wk = b.weight(p + '_wk', (d, d), -0.3, 0.3)
    wv = b.weight(p + '_wv', (d, d), -0.3, 0.3)
    scale = b.scalar(p + '_scale', 1.0 / np.sqrt(d))
    q = b.node('MatMul', p + '_q', [t, wq])
    k = b.node('MatMul', p + '_k', [t, wk])
    kt = b.node('Transpose', p + '_kt', [k], perm=[0, 2, 1])
    v = b.node('MatMul', p + '_v', [t, wv])
    s = b.node('MatMul', p + '_qk', [q, kt])
    ss = b.node('Mul', p + '_scaled', [s, scale])
    pr = b.node('Softmax', p + '_softmax', [ss], axis=-1)
    o = b.node('MatMul', p + '_pv', [pr, v])
    r = b.node('Add', p + '_residual', [o, t])
    two = b.scalar(p + '_two', 2.0)
    eps = b.scalar(p + '_eps', 1e-5)
    gamma = b.weight(p + '_ln_gamma', (d,), 0.5, 1.5)
    beta = b.weight(p + '_ln_beta', (d,), -0.1, 0.1)
    mean = b.node('ReduceMean', p + '_ln_mean', [r], axes=[-1], keepdims=1)
    centred = b.node('Sub', p + '_ln_sub', [r, mean])
    sq = b.node('Pow', p + '_ln_pow', [centred, two])
    var = b.node('ReduceMean', p + '_ln_var', [sq], axes=[-1], keepdims=1)
    ve = b.node('Add', p + '_ln_addeps', [var, eps])
    sd = b.node('Sqrt', p + '_ln_sqrt', [ve])
    nrm = b.node('Div', p + '_ln_div', [centred, sd])
    sc = b.node('Mul', p + '_ln_mul', [nrm, gamma])
    return b.node('Add', p + '_ln_add', [sc, beta])


def main():
    args = [a for a in sys.argv[1:] if a != '--attention-only']
    if len(args) != 2 or not args[0].isdigit() or int(args[0]) < 1:
        sys.exit(__doc__)
    target, out = int(args[0]), args[1]
    residual = 0 if '--attention-only' in sys.argv else RESIDUAL_PER_STAGE
    c, s = CHANNELS, SIZE * SIZE
    b = Builder()
    to_tokens = b.shape('tokens_shape', [1, c, s])
    to_image = b.shape('image_shape', [1, c, SIZE, SIZE])
    cur, stage = 'image', 0
    while len(b.nodes) < target:
        sp = f's{stage:04d}'
        for i in range(residual):
            cur = residual_block(b, cur, f'{sp}_res{i}', c)
        cur = b.node('Reshape', sp + '_flatten', [cur, to_tokens])
        cur = b.node('Transpose', sp + '_to_tokens', [cur], perm=[0, 2, 1])
        for i in range(ATTENTION_PER_STAGE):
            cur = attention_block(b, cur, f'{sp}_att{i}', c)
        cur = b.node('Transpose', sp + '_to_channels', [cur], perm=[0, 2, 1])
        cur = b.node('Reshape', sp + '_unflatten', [cur, to_image])
        stage += 1
    shape = [1, c, SIZE, SIZE]
    graph = helper.make_graph(b.nodes, f'mixed_{target}', [helper.make_tensor_value_info('image', TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(cur, TensorProto.FLOAT, shape)], b.inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)]), out)
    print(f'{out}: {len(b.nodes)} nodes in {stage} stages')


if __name__ == '__main__':
    main()
