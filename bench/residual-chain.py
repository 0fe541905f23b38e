#!/usr/bin/python3
"""Writes a residual-chain ONNX model for lowering at scale (issue 19): N blocks of Conv 3x3,
BatchNormalization, Relu and an Add of the block's input, 16 channels at 16x16 (4 nodes a block).
Deterministic weights (seeded), opset 13. Needs Debian's python3-onnx.
usage: bench/residual-chain.py BLOCKS OUT.onnx     (312 blocks: 1,248 nodes; 1,250: 5,000; 5,000: 20,000)"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    blocks, out = int(sys.argv[1]), sys.argv[2]
    channels, size = 16, 16
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], 'x'
    for i in range(blocks):
        weight = (rng.standard_normal((channels, channels, 3, 3)) * 0.05).astype(np.float32)
        inits.append(numpy_helper.from_array(weight, f'w{i}'))
        for name, value in (('s', 1.0), ('b', 0.0), ('m', 0.0), ('v', 1.0)):
            inits.append(numpy_helper.from_array(np.full(channels, value, np.float32), f'{name}{i}'))
        nodes.append(helper.make_node('Conv', [x, f'w{i}'], [f'c{i}'], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node('BatchNormalization', [f'c{i}', f's{i}', f'b{i}', f'm{i}', f'v{i}'], [f'bn{i}']))
        nodes.append(helper.make_node('Relu', [f'bn{i}'], [f'r{i}']))
        nodes.append(helper.make_node('Add', [f'r{i}', x], [f'a{i}']))
        x = f'a{i}'
    shape = [1, channels, size, size]
    graph = helper.make_graph(nodes, 'chain', [helper.make_tensor_value_info('x', TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)]), out)


if __name__ == '__main__':
    main()
