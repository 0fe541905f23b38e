#!/usr/bin/env bash
# Generates ONNX's node conformance tests (node/test_*/model.onnx + test_data_set_*/{input,output}_N.pb)
# into OUTDIR with Debian's python3-onnx. Idempotent: does nothing when OUTDIR is already complete.
#
# Usage: scripts/gen-onnx-node-tests.sh OUTDIR
# Exit codes: 0 generated (or already there), 77 python3-onnx missing (ctest reports a skip), 1 failure.
#
# Debian's onnx 1.12 generator still uses numpy aliases that numpy 1.24 removed (np.float, ...), so
# they are put back before it runs. Generation writes to a temporary folder next to OUTDIR and
# renames it, so an interrupted run never leaves a half-written OUTDIR that looks complete.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
stamp="$out/.complete"
if [ -f "$stamp" ] && [ -d "$out/node" ]; then
  echo "onnx node tests already in $out ($(cat "$stamp"))"
  exit 0
fi
py=/usr/bin/python3
if ! "$py" -c "import onnx, numpy" 2>/dev/null; then
  echo "python3-onnx or python3-numpy is not installed (run make deps): skipping ONNX node tests" >&2
  exit 77
fi
parent=$(dirname "$out")
mkdir -p "$parent"
tmp=$(mktemp -d "$parent/.onnx-node-tests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp" <<'PY'
import sys
import warnings
warnings.simplefilter("ignore", FutureWarning)
import numpy as np
for alias, real in (("float", float), ("int", int), ("bool", bool), ("object", object), ("complex", complex)):
    if not hasattr(np, alias):
        setattr(np, alias, real)
from onnx.backend.test.cmd_tools import main
sys.argv = ["backend-test-tools", "generate-data", "-o", sys.argv[1]]
main()
PY
count=$(find "$tmp/node" -mindepth 1 -maxdepth 1 -type d -name 'test_*' | wc -l)
if [ "$count" -eq 0 ]; then
  echo "the onnx generator wrote no node tests into $tmp" >&2
  exit 1
fi
version=$("$py" -c "import onnx; print(onnx.__version__)")
echo "onnx $version: $count node cases" > "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "generated $count onnx node cases (onnx $version) into $out"
