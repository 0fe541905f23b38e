#!/usr/bin/env bash
# Real models through the real sextant-cli, as a user would type the commands.
# usage: model_run.sh CASE MODEL COMPUTE SEXTANT_CLI SHARED_DIR WORK_DIR
#   CASE reference: MODEL is <folder>/<stem> under SHARED_DIR/models, COMPUTE f64 or f32;
#   other CASEs (--shape checks) ignore MODEL and COMPUTE.
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE).
set -u
case_name=$1 model=$2 compute=$3 cli=$4 shared=$5 work=$6
models="$shared/models"
tag="$case_name"
[ "$case_name" = reference ] && tag="$(basename "$model").$compute"
[ "$case_name" = modes ] && tag="$(basename "$model").modes"
case $case_name in onnx-export-*) tag="$(basename "$model").$case_name" ;; esac
mkdir -p "$work"
out="$work/$tag.out"
err="$work/$tag.err"
: >"$out"
: >"$err"

fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
# expect_line REGEX: some line of stdout matches the extended regex.
expect_line() { grep -Eq -- "$1" "$out" || fail "no output line matches: $1"; }
# expect_error REGEX: exit code 2 and exactly one stderr line "error: ..." matching REGEX.
expect_error() {
    local rc=$1 regex=$2
    [ "$rc" -eq 2 ] || fail "exit code $rc, expected 2 (bad input)"
    [ "$(wc -l <"$err")" -eq 1 ] || fail "expected exactly one stderr line"
    grep -Eq -- "^error: $regex" "$err" || fail "stderr does not match: error: $regex"
}
need() { [ -f "$1" ] || { echo "../shared not found: skipping $tag ($1 missing)"; exit 77; }; }

rec="$models/paddleocr/ch_PP-OCRv4_rec_infer.onnx"
rec_data="$models/paddleocr/test_data/ch_PP-OCRv4_rec_infer/test_data_set_0"
det="$models/paddleocr/ch_PP-OCRv4_det_infer.onnx"
det_data="$models/paddleocr/test_data/ch_PP-OCRv4_det_infer/test_data_set_0"
cls="$models/paddleocr/ch_ppocr_mobile_v2.0_cls_infer.onnx"
cls_data="$models/paddleocr/test_data/ch_ppocr_mobile_v2.0_cls_infer/test_data_set_0"

case $case_name in
reference)
    file="$models/$model.onnx"
    data="$models/$(dirname "$model")/test_data/$(basename "$model")/test_data_set_0"
    need "$file"
    args=(run "$file" --reference --inputs "$data" --expected "$data")
    heading="reference \(float64\) vs expected:"
    # f32-haswell / f32-prescott: float32 on one OpenBLAS kernel family, forced as a user's
    # environment may force it (with OPENBLAS_L2_SIZE too), so every machine tests the kernels
    # other CPUs run: Haswell's are what AMD Zen and AVX2 Intel CPUs get, Prescott's (SSE3) run
    # anywhere. The plain f32 case runs in whatever environment the suite was started in.
    runner=()
    case $compute in
    f32-haswell)
        grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo ||
            { echo "this CPU has no AVX2+FMA: skipping $tag (OpenBLAS's Haswell kernels need them)"; exit 77; }
        runner=(env OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512) ;;
    f32-prescott) runner=(env OPENBLAS_CORETYPE=Prescott OPENBLAS_L2_SIZE=512) ;;
    esac
    [ ${#runner[@]} -gt 0 ] && compute=f32
    if [ "$compute" = f32 ]; then
        args+=(--float32)
        heading="reference \(float32\) vs expected:"
    fi
    # What a user reads: the recogniser's text, the digit mnist sees.
    case $(basename "$model") in
    ch_PP-OCRv4_rec_infer) args+=(--ctc-keys "$models/paddleocr/ppocr_keys_v1.txt") ;;
    esac
    "${runner[@]}" "$cli" "${args[@]}" >"$out" 2>"$err"
    rc=$?
    [ -s "$err" ] && fail "unexpected stderr"
    expect_line "^$heading$"
    # The onnx-light models' generated weights (ConstantOfShape: every channel alike) grow their
    # logits far past what float32 resolves: SqueezeNet's reach 9.5e9, where float32 numbers are
    # 1024 apart. Their float32 probabilities are then decided by how a kernel rounds each
    # channel's sums: OpenBLAS's SkylakeX and Prescott kernels round all channels alike and
    # match onnxruntime's uniform 0.001, Haswell's (what AMD Zen gets too) do not on SqueezeNet.
    # Every tensor still agrees with float64 to within 5e-6 of its largest value. What is asserted is the
    # model's own fact, the note naming the Softmax and the magnitude, not the verdict.
    unresolved=""
    if [ "$compute" = f32 ]; then
        case $(basename "$model") in
        light_squeezenet) unresolved="Softmax 'n65': 'r65' reaches 9.5e+09, where float32 numbers are 1024 apart" ;;
        light_resnet50) unresolved="Softmax 'n175': 'r174' reaches 1.3e+19, where float32 numbers are 1.1e+12 apart" ;;
        light_vgg19) unresolved="Softmax 'n45': 'r46' reaches 3.7e+31, where float32 numbers are 2.4e+24 apart" ;;
        light_inception_v1) unresolved="Softmax 'n143': 'r143' reaches 1.2e+21, where float32 numbers are 1.4e+14 apart" ;;
        light_bvlc_alexnet) unresolved="Softmax 'n23': 'r24' reaches 3.6e+12, where float32 numbers are 2.6e+05 apart" ;;
        light_zfnet512) unresolved="Softmax 'n21': 'r20' reaches 4.1e+12, where float32 numbers are 2.6e+05 apart" ;;
        esac
    fi
    if [ -n "$unresolved" ]; then
        want="note: float32 cannot resolve the logits of $unresolved, so rounding alone decides its outputs (float64 resolves them)"
        grep -qxF -- "$want" "$out" || fail "no line: $want"
        [ "$(grep -c '^note: ' "$out")" -eq 1 ] || fail "expected exactly one note"
        [ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "exit code $rc"
        echo "PASS: $tag (float32 cannot resolve its logits, as the note says; the verdict is rounding's)"
        exit 0
    fi
    [ $rc -eq 0 ] || fail "exit code $rc"
    grep -q '^note: float32' "$out" && fail "a float32 range note on a model float32 computes"
    # One PASS line per expected output, no FAIL.
    outputs=$(ls "$data" | grep -c '^output_[0-9]*\.pb$')
    passes=$(grep -Ec "^output '.*': max_abs [0-9.e+-]+ max_rel [0-9.e+-]+ cosine [0-9.]+ argmax -?[0-9]+/-?[0-9]+ PASS$" "$out")
    [ "$passes" -eq "$outputs" ] || fail "$passes PASS lines for $outputs outputs"
    grep -q FAIL "$out" && fail "a comparison failed"
    case $(basename "$model") in
    mnist) expect_line "^output 'Plus214_Output_0': .* argmax 7/7 PASS$" ;;
    ch_PP-OCRv4_rec_infer) expect_line '^text: "Hello NPU 2026"$' ;;
    esac
    ;;
shape-errors)
    # A model with symbolic input dims: compile says which input needs --shape, and each bad
    # --shape gets one clear error line (exit 2).
    need "$rec"
    "$cli" compile "$rec" >"$out" 2>"$err"
    expect_error $? "compile: input 'x' has symbolic dims f32\[p2o\.DynamicDimension\.0,3,48,p2o\.DynamicDimension\.1\]: give it a concrete shape with --shape x=Nx3x48xN"
    "$cli" compile "$rec" --shape y=1x3x48x320 >"$out" 2>"$err"
    expect_error $? "compile: cannot specialise 'y': the graph has no input of that name \(inputs: 'x'\)$"
    "$cli" compile "$rec" --shape x=1x3x48 >"$out" 2>"$err"
    expect_error $? "compile: input 'x' has rank 4 .* but the shape \[1,3,48\] has rank 3$"
    "$cli" compile "$rec" --shape x=1x3x32x320 >"$out" 2>"$err"
    expect_error $? "compile: input 'x' dim 2 is fixed to 48 by the model .* gives 32$"
    "$cli" compile "$rec" --shape x=1x3x48x >"$out" 2>"$err"
    expect_error $? "compile: --shape: shape 'x=1x3x48x' ends with 'x'$"
    "$cli" compile "$rec" --shape x=1x3x48x320 --shape x=1x3x48x100 >"$out" 2>"$err"
    expect_error $? "compile: --shape given twice for input 'x'$"
    "$cli" import "$rec" --shape x=1x3x48x-5 >"$out" 2>"$err"
    expect_error $? "import: --shape: shape 'x=1x3x48x-5': dim '-5' is not a non-negative number$"
    "$cli" run "$rec" >"$out" 2>"$err"
    expect_error $? "run: input 'x' has symbolic dims .*--shape x=Nx3x48xN"
    # A shape the model accepts but whose tensors would not fit: named before anything allocates.
    "$cli" run "$rec" --reference --shape x=1x3x48x10000000 >"$out" 2>"$err"
    expect_error $? "run: input 'x' has type f32\[1,3,48,10000000\] \(5760000000 bytes\); tensors over 4294967296 bytes \(4 GiB\) are not supported$"
    "$cli" run "$rec" --reference --shape x=1x3x48x3000000 >"$out" 2>"$err"
    expect_error $? "run: node 'p2o\.Conv\.2' \(Conv\): value '.*' has type f32\[1,32,24,1500000\] .* \(4 GiB\) are not supported$"
    ;;
rec-import)
    # Specialised, every symbolic dim resolves: the recogniser reads 40 time steps of 6625 classes.
    need "$rec"
    "$cli" import "$rec" --summary --shape x=1x3x48x320 >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    expect_line "^  x: f32\[1,3,48,320\]$"
    expect_line "^  softmax_11\.tmp_0: f32\[1,40,6625\]$"
    "$cli" import "$rec" --shape x=1x3x48x320 >"$out" 2>"$err" || fail "import to text failed"
    grep -q 'DynamicDimension' "$out" && fail "a symbolic dim survived specialisation"
    grep -Eq '\[[^]]*\?' "$out" && fail "an unknown dim survived specialisation"
    ;;
rec-compile)
    need "$rec"
    "$cli" compile "$rec" --shape x=1x3x48x320 >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    expect_line "^compiled '.*' for npu-a: [1-9][0-9]* tasks on [1-9] of [0-9]+ cores"
    # --stats: the rules that fired and why others did not; reasons that differ only in the name
    # they quote are counted as one, shown with their first example.
    "$cli" compile "$rec" --shape x=1x3x48x320 --stats >"$out" 2>"$err" || fail "compile --stats failed"
    expect_line "^  fuse-layernorm: 5 / 5 / 0 / 0, "
    expect_line "^  fuse-attention: 2 / 2 / 0 / 0, "
    expect_line "^      rejected [0-9]+x: conv output has 2 users$"
    expect_line "^      rejected [0-9]+x: gemm already has a bias input '[^']*' \(and [0-9]+ more like it\)$"
    # Some of its convolutions sum their input channels in chunks (reduce_chunks), shown per Task.
    expect_line "^ +[0-9-]+ p2o\.Conv\.[0-9]+\[[0-9/-]+\] +FusedConv .* [0-9.]+ KiB, [0-9]+ chunks$"
    ;;
rec-npu)
    # The specialised recogniser on the simulated NPU still reads the text. (Its f16 cube unit
    # puts a few probabilities just outside the 1e-2 tolerance, so the exit code may be 1.)
    need "$rec"
    "$cli" run "$rec" --shape x=1x3x48x320 --inputs "$rec_data" --compare-reference \
        --ctc-keys "$models/paddleocr/ppocr_keys_v1.txt" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "exit code $rc"
    expect_line "^simulated '.*' on npu-a \(async mode\): [1-9][0-9]* tasks"
    expect_line "^output 'softmax_11\.tmp_0': .* cosine (1\.000000|0\.9999[0-9]*) argmax [0-9]+/[0-9]+ "
    expect_line '^text: "Hello NPU 2026"$'
    ;;
levels-no-slower)
    # Optimising never costs time: on every model the NPU runs, -O2's estimated latency is at
    # most -O1's, and -O3's at most -O2's. (It was not, before tiling tried rows before channels: BlazeFace front was
    # 84 % slower at -O2; sextant-cli compare-runs showed which Task.)
    need "$rec"
    est() { "$cli" compile "$@" >"$out" 2>"$err" || fail "compile $* failed"
            grep -Eo 'est\. [0-9]+ cycles' "$out" | grep -Eo '[0-9]+'; }
    while read -r file shape; do
        [ -n "$file" ] || continue
        extra=()
        [ -n "$shape" ] && extra=(--shape "$shape")
        o1=$(est "$models/$file" -O1 "${extra[@]}")
        o2=$(est "$models/$file" -O2 "${extra[@]}")
        o3=$(est "$models/$file" -O3 "${extra[@]}")
        [ -n "$o1" ] && [ -n "$o2" ] && [ -n "$o3" ] || fail "no estimate for $file"
        echo "$file: -O1 $o1 cycles, -O2 $o2 cycles, -O3 $o3 cycles"
        [ "$o2" -le "$o1" ] || fail "$file: -O2 estimates $o2 cycles, more than -O1's $o1"
        [ "$o3" -le "$o2" ] || fail "$file: -O3 estimates $o3 cycles, more than -O2's $o2"
        # The recogniser is where -O3's rules apply (LayerNorm statistics in f16, attention's
        # softmax without max-subtraction): what they trade accuracy for has to show.
        case $file in
        *rec_infer*) [ "$o3" -lt "$o2" ] || fail "$file: -O3 ($o3 cycles) gains nothing over -O2 ($o2)" ;;
        esac
    done <<EOF2
blazeface/face_detection_back_256x256_barracuda.onnx
blazeface/face_detection_front_128x128_barracuda.onnx
onnx-light/light_densenet121.onnx
onnx-light/light_inception_v2.onnx
onnx-light/light_resnet50.onnx
onnx-light/light_shufflenet.onnx
onnx-light/light_squeezenet.onnx
ort-examples/mnist.onnx
ort-examples/ultraface_version-RFB-320.onnx
paddleocr/ch_PP-OCRv4_rec_infer.onnx x=1x3x48x320
paddleocr/ch_PP-OCRv4_det_infer.onnx x=1x3x640x640
EOF2
    ;;
det-compile)
    # Specialised to its test image (and to 640 and 960, PaddleOCR's usual sizes), the detector's
    # output is a full-size map, and it compiles for npu-a: every Task is tiled to fit the 512 KiB
    # SRAM, the head's upsampling Resizes and ConvTransposes and the global poolings (in chunks of
    # their reduction at 960) included.
    need "$det"
    "$cli" import "$det" --summary --shape x=1x3x320x320 >"$out" 2>"$err" || fail "import failed"
    expect_line "^  sigmoid_0\.tmp_0: f32\[1,1,320,320\]$"
    for side in 320 640 960; do
        rm -rf "$work/det$side"
        "$cli" compile "$det" --shape x=1x3x${side}x${side} -o "$work/det$side" >"$out" 2>"$err" ||
            fail "compile at ${side}x${side} failed"
        [ -s "$work/det$side/tasks.bin" ] || fail "no tasks.bin for ${side}x${side}"
    done
    ;;
det-npu)
    # The detector specialised to a small image runs on the simulated NPU and matches the
    # float64 reference of the original (symbolic) graph.
    need "$det"
    "$cli" run "$det" --shape x=1x3x64x64 --compare-reference >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    expect_line "^npu vs reference \(float64, original graph\):$"
    expect_line "^output 'sigmoid_0\.tmp_0': .* PASS$"
    ;;
det-npu-image)
    # On its 320x320 test image the detector's text map from the simulated NPU follows
    # onnxruntime's closely (cosine >= 0.9997). Its f16 cube inputs move a few hundred of the
    # 102,400 probabilities by more than the 1e-2 tolerance, so the exit code may be 1.
    need "$det"
    "$cli" run "$det" --inputs "$det_data" --expected "$det_data" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "exit code $rc"
    expect_line "^simulated '.*' on npu-a \(async mode\): [1-9][0-9]* tasks"
    expect_line "^output 'sigmoid_0\.tmp_0': .* cosine (1\.000000|0\.999[7-9][0-9]*) "
    ;;
rec-bisect)
    # -O3's accuracy trades move the recogniser's probabilities out of onnxruntime's tolerance on
    # the float64 reference executor; bisect names the first application that does it. At -O2
    # there is nothing to find.
    need "$rec"
    "$cli" bisect "$rec" -O3 --inputs "$rec_data" --expected "$rec_data" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 1 ] || fail "exit code $rc, expected 1 (a culprit)"
    expect_line "^first bad application: #[0-9]+ fuse-conv-bn-f16 \(pass fuse\) at node '[^']+'$"
    expect_line "^--- limit [0-9]+$"
    "$cli" bisect "$rec" -O2 --inputs "$rec_data" --expected "$rec_data" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc at -O2, expected 0"
    expect_line "^no drift: "
    ;;
cls-npu)
    # Without --shape, run takes the symbolic dims from the --inputs tensors (1x3x48x192).
    need "$cls"
    "$cli" run "$cls" --inputs "$cls_data" --compare-reference --expected "$cls_data" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    expect_line "^npu vs expected:$"
    expect_line "^output 'softmax_0\.tmp_0': .* PASS$"
    ;;
onnx-export-standard | onnx-export-npu-f16)
    # The independent check (issue 23): the O2 snapshot as standard ONNX, run in onnxruntime-node
    # (installed by models.ort.install), against the oracle or, with f16 Casts, the NPU's outputs.
    file="$models/$model.onnx"
    data="$models/$(dirname "$model")/test_data/$(basename "$model")/test_data_set_0"
    need "$file"
    ort="$(dirname "$work")/../../ort-node"
    [ -d "$ort/node_modules/onnxruntime-node" ] ||
        { echo "onnxruntime-node is not in $ort (models.ort.install installs it): skipping $tag"; exit 77; }
    flags=()
    [ "$case_name" = onnx-export-npu-f16 ] && flags=(--npu-f16)
    root="$(cd "$(dirname "$0")/../.." && pwd)"
    /usr/bin/python3 "$root/scripts/onnx-export-check.py" "${flags[@]}" --cli "$cli" --ort-node "$ort" \
        --work "$work/$tag" "$file" "$data" >"$out" 2>"$err" || fail "the exported snapshot does not match"
    outputs=$(ls "$data" | grep -c '^output_[0-9]*\.pb$')
    [ "$(grep -c "^output '.* PASS$" "$out")" -eq "$outputs" ] || fail "not all $outputs outputs compared and passed"
    cat "$out"
    echo "PASS: $tag"
    ;;
modes)
    # The NPU's strict and async runs of one model (its test-data inputs) write byte-identical
    # output files with --save-outputs: issuing Tasks as the events allow changes when they run,
    # never what they compute. The async run also compares with the float64 reference and
    # onnxruntime's outputs (--compare-reference --expected), which must pass: every model runs
    # to completion on the simulated NPU, with host steps where it needs them.
    file="$models/$model.onnx"
    data="$models/$(dirname "$model")/test_data/$(basename "$model")/test_data_set_0"
    need "$file"
    outputs=$(ls "$data" | grep -c '^output_[0-9]*\.pb$')
    # Six onnx-light models' generated weights grow their activations past f16's range (65504)
    # long before the logits, so the NPU's probabilities are NaN: no direction to compare. What
    # is asserted for them is the model's own fact, the note naming the first tensor that
    # overflows, found by the per-tensor compare.
    overflow=""
    case $(basename "$model") in
    light_bvlc_alexnet) overflow="'r13' (node 'n12')" ;;
    light_inception_v1) overflow="'r37' (node 'n37')" ;;
    light_resnet50) overflow="'r70' (node 'n68')" ;;
    light_squeezenet) overflow="'r43' (node 'n42')" ;;
    light_vgg19) overflow="'r15' (node 'n14')" ;;
    light_zfnet512) overflow="'r13' (node 'n12')" ;;
    esac
    for mode in strict async; do
        rm -rf "$work/$tag.$mode"
        compare=()
        [ $mode = async ] && compare=(--compare-reference --expected "$data")
        [ $mode = async ] && [ -n "$overflow" ] && compare+=(--per-tensor)
        "$cli" run "$file" --inputs "$data" --mode $mode "${compare[@]}" --save-outputs "$work/$tag.$mode" >"$out" 2>"$err"
        rc=$?
        # Exit 1 is a comparison out of tolerance: f16 on the cube and vector units moves some
        # outputs past it (PaddleOCR det's few probabilities; the onnx-light models whose logits
        # overflow f16). The run must still complete, and every output must point the same way as
        # the reference (cosine >= 0.999): a wrong slice or address gives far less. (Where f16
        # overflows, see above.)
        [ $rc -eq 0 ] || { [ $mode = async ] && [ $rc -eq 1 ]; } || fail "$mode run: exit code $rc"
        if [ $mode = async ] && [ -n "$overflow" ]; then
            grep -qF -- "note: f16 overflows first at $overflow: the float64 reference reaches " "$out" ||
                fail "async run: no note that f16 overflows first at $overflow"
            grep -q "^npu vs reference" "$out" || fail "async run: no comparison with the reference"
        elif [ $mode = async ]; then
            grep -q "^note: f16 overflows" "$out" && fail "async run: an f16 overflow note on a model f16 computes"
            low=$(sed -n '/^npu vs reference/,/^npu vs expected/p' "$out" | grep "^output '" |
                  sed -E 's/.* cosine ([-0-9.e+]+) .*/\1/' | awk '$1 < 0.999' | head -1)
            [ -z "$low" ] || fail "async run: an output's cosine against the reference is $low (< 0.999)"
            grep -q "^npu vs reference" "$out" || fail "async run: no comparison with the reference"
        fi
        [ -s "$err" ] && fail "$mode run: unexpected stderr"
        expect_line "^simulated '.*' on .* \($mode mode\): [0-9]+ tasks on "
        expect_line "^outputs: wrote $outputs files? to $work/$tag.$mode \(output_0\.pb \.\.\.\)$"
        [ "$(ls "$work/$tag.$mode" | wc -l)" -eq "$outputs" ] || fail "$mode run: not $outputs files in $work/$tag.$mode"
    done
    for ((i = 0; i < outputs; i++)); do
        f=output_$i.pb
        [ -s "$work/$tag.strict/$f" ] || fail "the strict run wrote no $f"
        cmp -s "$work/$tag.strict/$f" "$work/$tag.async/$f" || fail "$f differs between the strict and the async run"
    done
    # The three nets whose FC weights are a ConstantOfShape too large to fold: the loader fills
    # them (artifact version 7, buffers[i].fill). Compiled to an artifact and run from it, they
    # give the same bytes as the run from the model, and the artifact says what it fills.
    case $(basename "$model") in
    light_bvlc_alexnet | light_zfnet512 | light_vgg19)
        rm -rf "$work/$tag.artifact" "$work/$tag.fromartifact"
        "$cli" compile "$file" -o "$work/$tag.artifact" --report "$work/$tag.report.json" >"$out" 2>"$err" ||
            fail "compile -o: exit code $?"
        /usr/bin/python3 - "$work/$tag.artifact/manifest.json" "$work/$tag.report.json" <<'PY' || fail "no weights the loader fills"
import json, os, sys
m = json.load(open(sys.argv[1]))
filled = [b for b in m["buffers"] if "fill" in b]
assert filled and all(b["kind"] == "weight" for b in filled), filled
assert not any(t["kernel"] == "ConstantOfShape" for t in m["tasks"])
mem = m["memory"]
assert all(mem["weights_base"] + mem["weight_bytes"] <= b["offset"] < mem["io_base"] for b in filled)
assert os.path.getsize(os.path.join(os.path.dirname(sys.argv[1]), "weights.bin")) == mem["weight_bytes"]
assert json.load(open(sys.argv[2]))["memory"]["filled_weight_bytes"] == sum(b["size"] for b in filled)
PY
        "$cli" run "$work/$tag.artifact" --inputs "$data" --save-outputs "$work/$tag.fromartifact" >"$out" 2>"$err" ||
            fail "run of the artifact: exit code $?"
        for ((i = 0; i < outputs; i++)); do
            cmp -s "$work/$tag.async/output_$i.pb" "$work/$tag.fromartifact/output_$i.pb" ||
                fail "output_$i.pb differs between the run of the model and that of its artifact"
        done
        ;;
    esac
    echo "PASS: $tag ($outputs output files byte-identical, strict and async; the async run matches the reference and onnxruntime)"
    ;;
*)
    echo "unknown case $case_name"; exit 1 ;;
esac
echo "PASS: $tag"
