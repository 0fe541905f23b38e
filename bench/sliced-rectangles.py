#!/usr/bin/env python3
"""Offset-planning instances whose optimum is known: a 1 MiB x T rectangle cut at random into
150-450 rectangles, each cut across time or across addresses. Every piece is a buffer (its
time range, its height in bytes), so the pieces tile the rectangle and the optimum is max-live
(1 MiB) with no slack anywhere. Instances that were not looked at while the search was tuned:
a check that it generalises beyond ../shared/memplan.

usage: bench/sliced-rectangles.py OUT_DIR [COUNT]   (writes S00.csv ... in MiniMalloc's format)
"""
import os
import random
import sys


def instance(seed):
    rng = random.Random(seed)
    width = 1024  # in KiB: every size is a multiple of 1024 bytes, as in the MiniMalloc instances
    horizon = rng.choice([500, 2000, 10000])
    pieces = rng.randint(150, 450)
    across_time = rng.choice([0.3, 0.5, 0.7])
    rects = [(0, horizon, 0, width)]
    while len(rects) < pieces:
        i = rng.randrange(len(rects))
        t0, t1, o0, o1 = rects[i]
        if rng.random() < across_time and t1 - t0 > 1:
            c = rng.randint(t0 + 1, t1 - 1)
            rects[i] = (t0, c, o0, o1)
            rects.append((c, t1, o0, o1))
        elif o1 - o0 > 1:
            c = rng.randint(o0 + 1, o1 - 1)
            rects[i] = (t0, t1, o0, c)
            rects.append((t0, t1, c, o1))
    rng.shuffle(rects)
    return rects


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    os.makedirs(out, exist_ok=True)
    for seed in range(count):
        with open(os.path.join(out, f"S{seed:02d}.csv"), "w") as f:
            f.write("id,lower,upper,size\n")
            for k, (t0, t1, o0, o1) in enumerate(instance(seed)):
                f.write(f"{k},{t0},{t1},{(o1 - o0) * 1024}\n")


if __name__ == "__main__":
    main()
