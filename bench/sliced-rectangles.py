#!/usr/bin/env python3
"""Offset-planning instances whose optimum is known: a 1 MiB x T rectangle cut at random into
150-450 rectangles, each cut across time or across addresses. Every piece is a buffer (its
time range, its height in bytes), so the pieces tile the rectangle and the optimum is max-live
(1 MiB) with no slack anywhere. Instances that were not looked at while the search was tuned:
a check that it generalises beyond ../shared/memplan.

With HOLES (a fraction such as 0.06), that share of the pieces is taken out at random (files
H00.csv ...): the rest still fits in 1 MiB, where the pieces were, so a plan of at most 1 MiB
exists, while max-live may be lower. D and J of ../shared/memplan are of this kind (max-live
below the 1 MiB they were made for).

usage: bench/sliced-rectangles.py OUT_DIR [COUNT [HOLES [FIRST_SEED]]]
       (writes S00.csv ..., one file per seed from FIRST_SEED (0) on, in MiniMalloc's format)
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
    holes = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    os.makedirs(out, exist_ok=True)
    for seed in range(first, first + count):
        pieces = instance(seed)
        if holes > 0:
            rng = random.Random(seed * 7 + 1)
            pieces = [p for p in pieces if rng.random() >= holes]
        name = f"{'H' if holes > 0 else 'S'}{seed:02d}.csv"
        with open(os.path.join(out, name), "w") as f:
            f.write("id,lower,upper,size\n")
            for k, (t0, t1, o0, o1) in enumerate(pieces):
                f.write(f"{k},{t0},{t1},{(o1 - o0) * 1024}\n")


if __name__ == "__main__":
    main()
