#!/usr/bin/env python3
"""A wide graph: N parallel branches (Mul by a constant of its own, then Relu) of one [1, W]
input, summed by a tree of Adds: about 3N nodes, whose branches no dependency orders. The chains
of bench/residual-chain.py are the other extreme (every Task after the one before). Used to
measure the memory planners where most buffers may be live together.

usage: /usr/bin/python3 bench/wide-branches.py N W OUT.onnx   (needs the onnx and numpy modules)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    n, width, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    nodes, weights = [], []
    for i in range(n):
        # Constants of their own, so that no branch is a common subexpression of another.
        weights.append(numpy_helper.from_array(np.full((1, width), 0.5 + i * 1e-4, dtype=np.float32), f"c{i}"))
        nodes.append(helper.make_node("Mul", ["X", f"c{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"]))
    level, k = [f"r{i}" for i in range(n)], 0
    while len(level) > 1:
        nxt = []
        for j in range(0, len(level) - 1, 2):
            nodes.append(helper.make_node("Add", [level[j], level[j + 1]], [f"a{k}"]))
            nxt.append(f"a{k}")
            k += 1
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    nodes.append(helper.make_node("Identity", [level[0]], ["Y"]))
    graph = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, width])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), out)


if __name__ == "__main__":
    main()
