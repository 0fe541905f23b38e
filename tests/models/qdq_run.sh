#!/usr/bin/env bash
# Quantized (int8 QDQ) versions of real models, made at test time, never checked in (issue 22).
# usage:
#   qdq_run.sh install SHARED_DIR BUILD_DIR
#       installs onnxruntime-node into BUILD_DIR/ort-node (npm) unless it is there. Skips (77)
#       without ../shared.
#   qdq_run.sh generate SHARED_DIR BUILD_DIR
#       installs onnxruntime-node into BUILD_DIR/ort-node (npm) unless it is there, then
#       scripts/qdq/make-qdq-models.py writes BUILD_DIR/qdq/models/<folder>/<stem>_qdq.onnx with
#       onnxruntime's outputs as test data. Skips (77) without ../shared.
#   qdq_run.sh int4 SEXTANT_CLI BUILD_DIR
#       an int4/uint4 model (scripts/qdq/make-int4-model.py) against onnxruntime-node, exactly.
#   qdq_run.sh pool-det SEXTANT_CLI BUILD_DIR
#       LpPool, GlobalLpPool, MaxUnpool, Det and RoiAlign (scripts/qdq/make-pool-det-model.py) against
#       onnxruntime-node, on the reference executor and the simulated NPU.
#   qdq_run.sh CASE MODEL SEXTANT_CLI SHARED_DIR BUILD_DIR
#       CASE reference, npu, float, bisect or onnx-export; MODEL <folder>/<stem> of the float model. Runs the quantized model as
#       a user would and compares with onnxruntime's outputs (and, on the NPU, with the float64
#       reference).
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
case_name=$1

install_ort() {
    ort="$build/ort-node"
    if [ ! -d "$ort/node_modules/onnxruntime-node" ]; then
        echo "installing onnxruntime-node 1.30.0 into $ort"
        mkdir -p "$ort"
        cp "$root/bench/ort/package.json" "$ort/"
        (cd "$ort" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund) ||
            { echo "FAIL: npm could not install onnxruntime-node (the quantized models' oracle, the exports' check)"; exit 1; }
    fi
}

if [ "$case_name" = install ]; then
    shared=$2 build=$3
    [ -d "$shared/models" ] || { echo "../shared not found: skipping onnxruntime-node (no model needs it)"; exit 77; }
    install_ort
    echo "PASS: onnxruntime-node is in $ort"
    exit 0
fi

if [ "$case_name" = generate ]; then
    shared=$2 build=$3
    [ -d "$shared/models" ] || { echo "../shared not found: skipping the quantized models (nothing to quantize)"; exit 77; }
    install_ort
    exec /usr/bin/python3 "$root/scripts/qdq/make-qdq-models.py" --ort-node "$ort" --out "$build/qdq/models" \
        "$shared/models" ort-examples/mnist ort-examples/ultraface_version-RFB-320 \
        blazeface/face_detection_front_128x128_barracuda
fi

# A model a script writes with onnxruntime-node's outputs as its test data (the int4 and pool-det
# cases): sets cli, work, out, err, data and fail(), or skips when onnxruntime-node is missing.
ort_model() { # ort_model CASE SCRIPT CLI BUILD
    cli=$3 build=$4
    local ort="$build/ort-node"
    [ -d "$ort/node_modules/onnxruntime-node" ] ||
        { echo "onnxruntime-node is not installed (models.qdq.generate installs it): skipping $1"; exit 77; }
    work="$build/qdq/$1"
    out="$work/run.out" err="$work/run.err"
    mkdir -p "$work"
    fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
    /usr/bin/python3 "$root/scripts/qdq/$2" --ort-node "$ort" "$work" >"$out" 2>"$err" || fail "$2 failed"
    data="$work/test_data_set_0"
}

if [ "$case_name" = int4 ]; then
    # int4 and uint4 (opset 21): a model the script packs by hand, onnxruntime-node's outputs as the
    # oracle; the reference executor and the simulated NPU must give the same bits.
    ort_model int4 make-int4-model.py "$2" "$3"
    "$cli" run "$work/int4.onnx" --reference --inputs "$data" --expected "$data" --atol 0 --rtol 0 >"$out" 2>"$err" ||
        fail "the reference executor differs from onnxruntime"
    [ "$(grep -c "^output '.*max_abs 0\.0e+00 .* PASS$" "$out")" -eq 2 ] || fail "not both outputs exact"
    "$cli" run "$work/int4.onnx" --inputs "$data" --expected "$data" --atol 0 --rtol 0 >"$out" 2>"$err" ||
        fail "the simulated NPU differs from onnxruntime"
    [ "$(grep -c "^output '.*max_abs 0\.0e+00 .* PASS$" "$out")" -eq 2 ] || fail "not both outputs exact on the NPU"
    echo "PASS: int4"
    exit 0
fi

if [ "$case_name" = pool-det ]; then
    ort_model pool-det make-pool-det-model.py "$2" "$3"
    # float64 against onnxruntime's float32: a few float32 roundings apart.
    "$cli" run "$work/pool-det.onnx" --reference --inputs "$data" --expected "$data" --atol 1e-5 --rtol 1e-5 \
        >"$out" 2>"$err" || fail "the reference executor differs from onnxruntime"
    [ "$(grep -c "^output '.* PASS$" "$out")" -eq 7 ] || fail "not all seven outputs pass on the reference executor"
    "$cli" run "$work/pool-det.onnx" --inputs "$data" --expected "$data" --atol 1e-2 --rtol 1e-2 >"$out" 2>"$err" ||
        fail "the simulated NPU differs from onnxruntime"
    [ "$(grep -c "^output '.* PASS$" "$out")" -eq 7 ] || fail "not all seven outputs pass on the NPU"
    echo "PASS: pool-det"
    exit 0
fi

model=$2 cli=$3 shared=$4 build=$5
stem="$(basename "$model")_qdq"
file="$build/qdq/models/$(dirname "$model")/$stem.onnx"
data="$build/qdq/models/$(dirname "$model")/test_data/$stem/test_data_set_0"
work="$build/qdq/work"
mkdir -p "$work"
out="$work/$stem.$case_name.out"
err="$work/$stem.$case_name.err"
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
expect_line() { grep -Eq -- "$1" "$out" || fail "no output line matches: $1"; }
if [ ! -f "$file" ]; then
    [ -d "$shared/models" ] || { echo "../shared not found: skipping $stem.$case_name"; exit 77; }
    echo "FAIL: $file was not generated (ctest -R models.qdq.generate says why)"
    exit 1
fi
outputs=$(ls "$data" | grep -c '^output_[0-9]*\.pb$')
# The generator's tolerance: two quantization steps of the coarsest scale the outputs come from.
atol=$(cat "$data/../atol.txt") || fail "no atol.txt beside $data"
case $case_name in
reference)
    # The float64 reference executor against onnxruntime's int8 kernels: the same quantized
    # arithmetic, so the outputs agree to within what a rounding tie decided differently.
    "$cli" run "$file" --reference --inputs "$data" --expected "$data" --atol "$atol" --rtol 0 >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    [ -s "$err" ] && fail "unexpected stderr"
    expect_line "^reference \(float64\) vs expected:$"
    [ "$(grep -c "^output '.* PASS$" "$out")" -eq "$outputs" ] || fail "not every one of $outputs outputs passes"
    ;;
npu)
    # On the simulated NPU, all of it on the cores: every Conv, Gemm and MatMul an int8 cube op
    # (fuse-qdq-conv: sextant.Int8Conv, fuse-qdq-matmul: sextant.Int8Gemm; int8 weights, int32
    # accumulation); QuantizeLinear and DequantizeLinear (one scale per tensor) on the vector unit.
    # Against the float64 reference and onnxruntime.
    "$cli" run "$file" --inputs "$data" --compare-reference --expected "$data" --atol "$atol" --rtol 0 >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    [ -s "$err" ] && fail "unexpected stderr"
    expect_line "^simulated '.*' on .*: [0-9]+ tasks on [0-9]+ of [0-9]+ cores$"
    grep -q "^  host: " "$out" && fail "a host step in a model the NPU runs whole"
    [ "$(grep -c "^output '.* PASS$" "$out")" -eq $((2 * outputs)) ] || fail "not every output passes both comparisons"
    "$cli" compile "$file" --stats >"$out" 2>"$err" || fail "compile --stats failed"
    grep -Eq "^  fuse-qdq-conv: ([1-9][0-9]*) / \1 / 0 / 0," "$out" || fail "not every QDQ Conv became an Int8Conv"
    if grep -q "^  fuse-qdq-matmul: [1-9]" "$out"; then
        grep -Eq "^  fuse-qdq-matmul: ([1-9][0-9]*) / \1 / 0 / 0," "$out" || fail "not every QDQ MatMul became an Int8Gemm"
    fi
    grep -Eq " (Conv|FusedConv|MatMul|Gemm|FusedGemm) +(core|cores) " "$out" && fail "a float product is left on the cube"
    # What quantization left unfused is counted with the grey ops: far fewer Q/DQ than imported.
    qdq=$(sed -nE 's/^grey ops .*, quantize\/dequantize ([0-9]+) -> ([0-9]+)$/\1 \2/p' "$out")
    [ -n "$qdq" ] || fail "no quantize/dequantize grey-op count"
    read -r imported left <<<"$qdq"
    [ $((4 * left)) -lt "$imported" ] || fail "quantize/dequantize $imported -> $left: most Q/DQ should have gone into int8 ops"
    ;;
float)
    # Which layers quantization costs the most: the quantized model's tensors against the float
    # model's of the same name, lowest cosine first. The input is the same in both (cosine 1);
    # the first quantized layer already differs; nothing is compared twice.
    "$cli" run "$file" --inputs "$data" --compare-reference --per-tensor --float-model "$shared/models/$model.onnx" \
        >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    [ -s "$err" ] && fail "unexpected stderr"
    expect_line "^per tensor, quantized model vs float model '.*' \(float64 references, matched by name; lowest cosine first\):$"
    matched=$(sed -nE 's/^([0-9]+) tensors matched by name in both models; most quantization error: .*/\1/p' "$out")
    [ -n "$matched" ] && [ "$matched" -ge 5 ] || fail "fewer than 5 tensors matched the float model's"
    first=$(grep -A1 "^per tensor, quantized model vs float model" "$out" | tail -1)
    echo "$first" | grep -Eq "^  cosine 0\.[0-9]{6} " || fail "the first (worst) tensor shows no quantization error: $first"
    # Another model as the float model (its input has another shape) is refused, naming it.
    other="$shared/models/ort-examples/mnist.onnx"
    [ "$model" = ort-examples/mnist ] && other="$shared/models/ort-examples/ultraface_version-RFB-320.onnx"
    "$cli" run "$file" --inputs "$data" --compare-reference --per-tensor --float-model "$other" \
        >"$out" 2>"$err" && fail "a float model with another input was accepted"
    grep -q -- "--float-model '$other': " "$err" || fail "no error naming the float model"
    ;;
bisect)
    # Bisection finds the int8 rewrite: against the float64 reference of the model as imported,
    # at a tolerance below one step, the first application that moves an output is a
    # fuse-qdq-conv (its int32 sum is exact where the float graph's is rounded, so some elements
    # requantise one step apart), named with its node and its IR diff; exit code 1, as for any
    # drift bisect explains.
    "$cli" bisect "$file" --inputs "$data" --atol 1e-6 --rtol 0 >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 1 ] || fail "exit code $rc (1: a culprit found)"
    expect_line "^bisect: [0-9]+ rule applications at -O2; "
    expect_line "^  limit 0: PASS$"
    expect_line "^first bad application: #[0-9]+ fuse-qdq-conv \(pass fuse\) at node '.+'$"
    expect_line "^\+  %.* = sextant.Int8Conv\("
    ;;
onnx-export)
    # The int8 cube ops exported as standard ONNX (Int8Conv as QLinearConv, Int8Gemm as
    # QLinearMatMul) run in onnxruntime and give its outputs for the QDQ model.
    /usr/bin/python3 "$root/scripts/onnx-export-check.py" --cli "$cli" --ort-node "$build/ort-node" \
        --work "$work/$stem.onnx-export" "$file" "$data" >"$out" 2>"$err" || fail "the exported snapshot does not match"
    [ "$(grep -c "^output '.* PASS$" "$out")" -eq "$outputs" ] || fail "not all $outputs outputs compared and passed"
    /usr/bin/python3 -c "
import collections, sys, onnx
ops = collections.Counter(n.op_type for n in onnx.load(sys.argv[1]).graph.node)
assert ops['QLinearConv'] > 0, ops
" "$work/$stem.onnx-export/$stem.standard.onnx" >>"$out" 2>>"$err" || fail "no QLinearConv in the export"
    ;;
*)
    echo "unknown case $case_name"; exit 1 ;;
esac
echo "PASS: $stem.$case_name"
