#!/usr/bin/env bash
# What a user sees, for every model in ../shared/models and the sample, written to one folder so
# that two builds can be compared file by file (scripts/compare-user-outputs.sh does that).
#
# usage: scripts/user-outputs.sh SEXTANT_CLI OUT_DIR [SHARED_DIR]
#
# Per model, OUT_DIR/<stem>/ gets:
#   artifact/            compile -o (manifest.json, tasks.bin, weights.bin)
#   print-changed.txt    compile --print-changed (the IR after every pass that changed it)
#   report.json          compile --report, with the wall-clock fields ("millis") removed
#   run.txt              run on the simulated NPU against onnxruntime's outputs, with the exit code
#   trace.json           export-trace of that run's profile database (Chrome Trace Event JSON)
#   reference.txt        run --reference (float64) against onnxruntime's outputs
# A command that fails keeps its stderr and exit code in the file instead, so an error message
# that changes is a difference too. Nothing here depends on time or on the environment, except the
# "blas:" header line of run --reference, which names the OpenBLAS kernels and is dropped.
set -u
cli=$(readlink -f "$1")
out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${3:-$here/../shared}
[ -x "$cli" ] || { echo "error: $1 is not an executable sextant-cli" >&2; exit 2; }
mkdir -p "$out"
out=$(readlink -f "$out")

# Models with symbolic input dims compile at their test inputs' shapes.
shape_of() {
    case $1 in
    ch_PP-OCRv4_det_infer) echo x=1x3x320x320 ;;
    ch_PP-OCRv4_rec_infer) echo x=1x3x48x320 ;;
    ch_ppocr_mobile_v2.0_cls_infer) echo x=1x3x48x192 ;;
    esac
}

# strip_millis FILE: removes every "millis" member of a JSON file (pretty-printed, one per line).
strip_millis() {
    python3 - "$1" <<'EOF'
import json, sys
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("millis", "seconds", "timestamp")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
path = sys.argv[1]
with open(path) as f:
    doc = json.load(f)
with open(path, "w") as f:
    json.dump(strip(doc), f, indent=1, sort_keys=True)
    f.write("\n")
EOF
}

# one MODEL DATA_DIR: every output of one model into $out/<stem>.
one() {
    local model data stem dir shape
    model=$(readlink -f "$1")
    data=$(readlink -f "$2")
    stem=$(basename "$model" .onnx)
    dir="$out/$stem"
    rm -rf "$dir"
    mkdir -p "$dir"
    shape=()
    [ -n "$(shape_of "$stem")" ] && shape=(--shape "$(shape_of "$stem")")
    echo "$stem" >&2
    # Inside the model's folder, with relative names: the lines that name a written file read the
    # same whichever OUT_DIR was given.
    (
        cd "$dir" || exit 2
        "$cli" compile "$model" "${shape[@]}" -o artifact --print-changed >print-changed.txt 2>&1
        echo "exit $?" >>print-changed.txt
        if "$cli" compile "$model" "${shape[@]}" --report report.json >/dev/null 2>report.err; then
            strip_millis report.json
            rm -f report.err
        fi
        "$cli" run "$model" --inputs "$data" --expected "$data" --profile run.db >run.txt 2>&1
        echo "exit $?" >>run.txt
        if [ -f run.db ]; then
            "$cli" export-trace run.db -o trace.json >/dev/null 2>trace.err && rm -f trace.err
            rm -f run.db run.db-wal run.db-shm
        fi
        "$cli" run "$model" --reference --inputs "$data" --expected "$data" 2>&1 | grep -v '^blas: ' >reference.txt
        echo "exit ${PIPESTATUS[0]}" >>reference.txt
    )
}

one "$here/samples/residual_cnn.onnx" "$here/samples/residual_cnn"
if [ -d "$shared/models" ]; then
    for model in "$shared"/models/*/*.onnx; do
        one "$model" "$(dirname "$model")/test_data/$(basename "$model" .onnx)/test_data_set_0"
    done
else
    echo "note: $shared/models not found: only the sample was run" >&2
fi
