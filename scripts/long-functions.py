#!/usr/bin/env python3
"""Lists the functions in core/ longer than a limit (default 80 lines), longest first.

usage: scripts/long-functions.py [LIMIT] [DIR...]

A function is a line at namespace or class level (indented 0 or 4 spaces) that ends with '{'
after a parameter list, up to the '}' at the same indentation. It is a heuristic made for this
code base's formatting, not a parser. A function whose comment block above it says "Long:"
gives the reason for its length and is listed apart.
"""
import os
import re
import sys

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 80
dirs = sys.argv[2:] or ["core"]
start = re.compile(r"^( {0,4})(?!(if|for|while|switch|else|do|return|case|namespace|struct|class|enum)\b)[A-Za-z_~].*\)\s*(const)?\s*(override|final)?\s*(->\s*[^{]+)?\{\s*$")
found, explained = [], []
for top in dirs:
    for root, _, files in os.walk(top):
        for name in sorted(files):
            if not name.endswith((".cpp", ".h")):
                continue
            path = os.path.join(root, name)
            lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
            i = 0
            while i < len(lines):
                m = start.match(lines[i])
                if not m:
                    i += 1
                    continue
                indent = m.group(1)
                j = i + 1
                while j < len(lines) and not re.match("^" + indent + r"\}", lines[j]):
                    j += 1
                length = j - i + 1
                if length > limit:
                    k = i - 1
                    comment = []
                    while k >= 0 and lines[k].strip().startswith("//"):
                        comment.append(lines[k])
                        k -= 1
                    entry = (length, f"{path}:{i + 1}", lines[i].strip()[:90])
                    (explained if any("Long:" in c for c in comment) else found).append(entry)
                i = j + 1
for length, where, what in sorted(found, reverse=True):
    print(f"{length:5d} {where}  {what}")
print(f"{len(found)} functions over {limit} lines without a reason above them"
      + (f"; {len(explained)} with one ('Long:')" if explained else ""))
