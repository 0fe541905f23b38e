#!/usr/bin/env bash
# Runs the tests of every reader of outside data under ASan + UBSan: the importer, TensorProto and
# external-data files and the broken-model corpus (test_frontend), the target file and the artifact
# reader (test_backend Target.* and Artifact.*), test data folders (test_runtime ModelInputs.*) and
# the profile database reader and writer (test_profiler).
#
#   scripts/sanitize-readers.sh            (SANITIZE_BUILD_DIR, default build-sanitize/)
#
# Configures the folder with clang and -DSEXTANT_SANITIZE=ON (no GUI, no benchmarks) and builds
# only these test binaries. Exits 0 when every test passed with no sanitizer report, 1 otherwise,
# 77 when clang cannot link a sanitized binary (ctest reports that as skipped).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SANITIZE_BUILD_DIR:-$root/build-sanitize}
jobs=${SANITIZE_JOBS:-2}

. "$root/scripts/clang-probe.sh"
require_clang address,undefined 'int main() { return 0; }' "the sanitized readers' tests"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
        "${launcher[@]}" -DSEXTANT_SANITIZE=ON -DSEXTANT_BUILD_GUI=OFF -DSEXTANT_BUILD_BENCH=OFF \
        -DSEXTANT_BUILD_TESTS=ON >"$probe/configure.log" 2>&1 \
        || { cat "$probe/configure.log"; echo "sanitize: configure failed"; exit 1; }
fi
ninja -C "$build" -j"$jobs" test_frontend test_backend test_runtime test_profiler >"$build/ninja.log" 2>&1 \
    || { tail -50 "$build/ninja.log"; echo "sanitize: build failed"; exit 1; }

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
run() {
    local bin=$1 filter=$2
    echo "== $bin --gtest_filter=$filter"
    "$build/tests/$bin" --gtest_filter="$filter" --gtest_brief=1 || status=1
}
# WeightCopy measures the importer's peak memory, which ASan's shadow memory and quarantine change.
run frontend/test_frontend '-WeightCopy.*'
run backend/test_backend 'Target*:Artifact*'
run runtime/test_runtime 'ModelInputs*'
run profiler/test_profiler '*'
[ $status -eq 0 ] && echo "sanitize: the readers' tests passed under ASan + UBSan"
exit $status
