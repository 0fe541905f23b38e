#!/usr/bin/env python3
"""Offset-planning instances at the sizes where listing conflicts stops working: N buffers over a
horizon of N steps, each starting at a random step and alive for a random number of steps up
to N, so that their overlapping pairs grow with N squared (about N^2 / 3: 3 million for N =
3,000, 190 million for 24,000). Sizes are multiples of 64 bytes up to 4 KiB. Seeded: the same N
gives the same file.

usage: bench/long-lived-intervals.py N OUT.csv
"""
import random
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    n = int(sys.argv[1])
    rng = random.Random(n)
    with open(sys.argv[2], "w") as out:
        out.write("id,lower,upper,size\n")
        for i in range(n):
            lower = rng.randrange(n)
            upper = lower + 1 + rng.randrange(n)
            out.write(f"{i},{lower},{upper},{64 * rng.randint(1, 64)}\n")


if __name__ == "__main__":
    main()
