#!/usr/bin/env bash
# The GUI's headless mode (--screenshot) exits as sextant-cli does: 2 with an "error: ..." line on
# a model it cannot open or compile, or a bad option; 0 with the picture written otherwise.
#   gui_headless.sh SEXTANT_BINARY SOURCE_DIR WORK_DIR
gui=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; cat "$work/err" 2>/dev/null; exit 1; }
export QT_QPA_PLATFORM=offscreen
expect_bad() {
    "$gui" "$@" --screenshot "$work/bad.png" >"$work/out" 2>"$work/err"
    rc=$?
    [ $rc -eq 2 ] || fail "exit code $rc (want 2) for: $*"
    grep -q "^error: " "$work/err" || fail "no 'error: ' line for: $*"
    [ ! -e "$work/bad.png" ] || fail "a screenshot was written for: $*"
}
printf 'not an onnx model' >"$work/junk.onnx"
expect_bad "$work/junk.onnx"
expect_bad "$work/missing.onnx"
expect_bad "$src/tests/data/bad/cycle.onnx"
expect_bad "$src/samples/residual_cnn.onnx" --target "$work"
grep -q "is a folder, not a target file" "$work/err" || fail "the folder given as a target is not named"
"$gui" "$src/samples/residual_cnn.onnx" --screenshot "$work/good.png" >"$work/out" 2>"$work/err" || fail "exit $? on the sample"
[ -s "$work/good.png" ] || fail "no screenshot of the sample"
"$gui" "$src/samples/residual_cnn.onnx" --screenshot "$work/first.png" --first-graph --select block1_conv \
    >"$work/out" 2>"$work/err" || fail "exit $? with --first-graph --select"
[ -s "$work/first.png" ] || fail "no screenshot with --first-graph --select"
grep -q "^first graph shown and saved after [0-9.]* s$" "$work/err" || fail "--first-graph did not say when"
echo "PASS: gui headless exit codes"
