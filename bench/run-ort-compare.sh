#!/usr/bin/env bash
# Times Sextant's float32 reference executor against onnxruntime-node 1.30.0 on PaddleOCR det,
# PaddleOCR rec and BlazeFace back, both single-threaded, in one run, and prints a table with the
# ratio ours/ort per model. The two sides alternate for ROUNDS rounds, so load from other
# processes on the machine hits both alike; figures are medians over every sample.
#
#   bench/run-ort-compare.sh            # uses build-bench/ (configure it with -DCMAKE_BUILD_TYPE=Release)
#   BUILD=build ROUNDS=5 ORT_RUNS=5 bench/run-ort-compare.sh
#
# onnxruntime-node is installed on first use into $BUILD/ort-node (npm, not checked in), the
# recipe in ../shared/models/INVENTORY.md. Needs node, npm and /usr/bin/python3.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
BUILD="${BUILD:-$root/build-bench}"
case "$BUILD" in /*) ;; *) BUILD="$root/$BUILD" ;; esac
ROUNDS="${ROUNDS:-3}"
ORT_RUNS="${ORT_RUNS:-5}"
OURS_REPS="${OURS_REPS:-3}"
MODELS_DIR="${MODELS_DIR:-$root/../shared/models}"
ORT_DIR="${ORT_DIR:-$BUILD/ort-node}"
bench_bin="$BUILD/bench/sextant-bench"

if [ ! -x "$bench_bin" ]; then
  echo "run-ort-compare: $bench_bin not built (ninja -C $BUILD sextant-bench)" >&2
  exit 1
fi
if [ ! -d "$MODELS_DIR" ]; then
  echo "run-ort-compare: $MODELS_DIR not found: skipping the comparison" >&2
  exit 0
fi
if [ ! -d "$ORT_DIR/node_modules/onnxruntime-node" ]; then
  echo "run-ort-compare: installing onnxruntime-node 1.30.0 into $ORT_DIR" >&2
  mkdir -p "$ORT_DIR"
  cp "$here/ort/package.json" "$ORT_DIR/"
  (cd "$ORT_DIR" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund >&2)
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  echo "run-ort-compare: round $r/$ROUNDS: onnxruntime" >&2
  NODE_PATH="$ORT_DIR/node_modules" node "$here/ort/bench-ort.js" "$MODELS_DIR" --runs "$ORT_RUNS" \
    > "$out/ort_$r.jsonl"
  echo "run-ort-compare: round $r/$ROUNDS: sextant reference f32" >&2
  OPENBLAS_NUM_THREADS=1 "$bench_bin" --benchmark_filter='^Reference/' \
    --benchmark_repetitions="$OURS_REPS" --benchmark_out="$out/ours_$r.json" \
    --benchmark_out_format=json > /dev/null
done

/usr/bin/python3 - "$out" "$ROUNDS" <<'EOF'
import json, statistics, sys, os
out, rounds = sys.argv[1], int(sys.argv[2])
ort, ours, ortCpu, oursCpu = {}, {}, {}, {}
core = "?"
for r in range(1, rounds + 1):
    with open(os.path.join(out, f"ort_{r}.jsonl")) as f:
        for line in f:
            d = json.loads(line)
            if "samples_ms" in d:
                ort.setdefault(d["model"], []).extend(d["samples_ms"])
                ortCpu.setdefault(d["model"], []).extend(d["cpu_samples_ms"])
    with open(os.path.join(out, f"ours_{r}.json")) as f:
        d = json.load(f)
    core = d.get("context", {}).get("openblas", d.get("context", {}).get("openblas_core", core))
    for b in d["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        model = b["run_name"].split("/")[1]  # "Reference/<model>/real_time"
        ours.setdefault(model, []).append(b["real_time"])  # ms per run (Unit ms)
        oursCpu.setdefault(model, []).append(b["cpu_time"])
med = statistics.median
print(f"{'model':<16} {'ours wall ms':>12} {'ort wall ms':>11} {'ratio':>6}   {'ours cpu ms':>11} {'ort cpu ms':>10} {'ratio':>6}  samples (ours, ort)")
for model in ("paddleocr_det", "paddleocr_rec", "blazeface_back"):
    if model not in ours or model not in ort:
        print(f"{model:<16} skipped")
        continue
    a, b = med(ours[model]), med(ort[model])
    ac, bc = med(oursCpu[model]), med(ortCpu[model])
    print(f"{model:<16} {a:12.1f} {b:11.1f} {a / b:6.2f}   {ac:11.1f} {bc:10.1f} {ac / bc:6.2f}  ({len(ours[model])}, {len(ort[model])})")
print("ratio = ours/ort (medians); target <= 3. CPU time is the steadier figure on a loaded machine.")
print(f"BLAS: {core}")
EOF
