#!/usr/bin/env bash
# Fuzzes the ONNX importer with libFuzzer under ASan + UBSan, then replays the checked-in corpus.
#
#   scripts/fuzz-importer.sh [SECONDS] [TARGET]     (default 60 s, importer_fuzzer)
#
# TARGET is importer_fuzzer (import, verify, infer, print, parse back) or reference_fuzzer (import,
# then run small static models on the float64 reference executor, as `run --reference` does), or
# profile_fuzzer (the profile database reader; seeds and replay: tests/fuzz-corpus/profile and
# tests/data/profile-v2, nothing of the importer's).
# Configures FUZZ_BUILD_DIR (default build-fuzz/) with clang and -DSEXTANT_FUZZ=ON, builds only the
# fuzzers (ir + frontend), seeds a working corpus from tests/data/bad, tests/fuzz-corpus,
# samples/ and the small real models in ../shared/models, fuzzes TARGET for SECONDS, then runs
# every file of tests/fuzz-corpus and tests/data/bad once more through both fuzzers. FUZZ_SEEDS
# names an optional extra folder of seed models (searched recursively). Exits 0 when nothing was
# found, 1 on a finding (the crashing input is in FUZZ_BUILD_DIR/findings/: copy it into
# tests/fuzz-corpus/ once fixed), 77 when clang or its libFuzzer runtime is missing (ctest reports
# that as skipped).
set -euo pipefail
seconds=${1:-60}
target=${2:-importer_fuzzer}
case $target in importer_fuzzer|reference_fuzzer|profile_fuzzer) ;; *) echo "fuzz: unknown target '$target'"; exit 2;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
shared=${SEXTANT_SHARED_DIR:-$root/../shared}
jobs=${FUZZ_JOBS:-2}

if ! command -v clang++ >/dev/null 2>&1; then
    echo "clang++ not found: skipping the importer fuzzer (scripts/install-deps.sh installs clang)"
    exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
    >"$probe/probe.cpp"
if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" 2>"$probe/err"; then
    echo "clang++ cannot link a libFuzzer binary (libclang-rt-dev missing?): skipping the importer fuzzer"
    cat "$probe/err"
    exit 77
fi

launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" -DSEXTANT_FUZZ=ON \
        -DSEXTANT_BUILD_GUI=OFF -DSEXTANT_BUILD_TESTS=OFF -DSEXTANT_BUILD_BENCH=OFF >"$probe/configure.log" 2>&1 \
        || { cat "$probe/configure.log"; echo "fuzz: configure failed"; exit 1; }
fi
replayers=(importer_fuzzer reference_fuzzer)
if [ "$target" = profile_fuzzer ]; then replayers=(profile_fuzzer); fi
ninja -C "$build" -j"$jobs" "${replayers[@]}" >"$build/ninja.log" 2>&1 \
    || { tail -50 "$build/ninja.log"; echo "fuzz: build failed"; exit 1; }
fuzzer=$build/fuzz/$target

# Working corpus: kept between runs in the build folder, seeded afresh each time.
corpus=$build/corpus-$target
findings=$build/findings
mkdir -p "$corpus" "$findings"
seeds=("$root"/tests/data/bad/*.onnx "$root"/samples/*.onnx)
if compgen -G "$root/tests/fuzz-corpus/*.onnx" >/dev/null; then seeds+=("$root"/tests/fuzz-corpus/*.onnx); fi
if [ "$target" = profile_fuzzer ]; then seeds=("$root"/tests/fuzz-corpus/profile/* "$root"/tests/data/profile-v2/*.db); shared=/nonexistent; unset FUZZ_SEEDS; fi
if [ -d "$shared/models" ]; then
    while IFS= read -r f; do seeds+=("$f"); done \
        < <(find "$shared/models" -name '*.onnx' -size -64k | sort)
fi
cp -f "${seeds[@]}" "$corpus/"
# FUZZ_SEEDS: an extra folder of models (e.g. the generated ONNX node tests, all named model.onnx:
# each is copied under its folder's name).
if [ -n "${FUZZ_SEEDS:-}" ] && [ -d "$FUZZ_SEEDS" ]; then
    while IFS= read -r f; do
        cp -f "$f" "$corpus/$(basename "$(dirname "$f")")-$(basename "$f")"
    done < <(find "$FUZZ_SEEDS" -name '*.onnx' -size -64k | sort)
fi

# Dictionary: the op names of the op table and common attribute / external-data keys, so mutations
# can turn one op into another instead of only flipping bytes.
dict=$build/onnx.dict
{
    sed -n 's/^SEXTANT_OP([A-Za-z0-9_]*, *"[^"]*", *"\([A-Za-z0-9_]*\)".*/"\1"/p' "$root/core/ir/OpTable.def"
    for w in axis axes strides pads kernel_shape dilations group perm to mode value keepdims \
        auto_pad allowzero alpha beta epsilon split starts ends location offset length ai.onnx; do
        echo "\"$w\""
    done
} | sort -u >"$dict"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
echo "fuzz: running $target (${FUZZ_RUNS:+$FUZZ_RUNS inputs, seed ${FUZZ_SEED:-random}}${FUZZ_RUNS:-${seconds}s}) (corpus $corpus)"
# FUZZ_RUNS/FUZZ_SEED (the ctest sets both) make the run reproducible: a fixed number of inputs from
# a fixed seed instead of as many as fit in SECONDS, so CI does not turn red at random; exploring
# for new findings is what a timed run of this script is for.
budget=(-max_total_time="$seconds")
if [ -n "${FUZZ_RUNS:-}" ]; then budget=(-runs="$FUZZ_RUNS"); fi
if [ -n "${FUZZ_SEED:-}" ]; then budget+=(-seed="$FUZZ_SEED"); fi
"$fuzzer" "$corpus" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -dict="$dict" -artifact_prefix="$findings/" -print_final_stats=1 >"$build/fuzz.log" 2>&1 || status=$?
if [ $status -ne 0 ]; then
    tail -60 "$build/fuzz.log"
    echo "fuzz: FINDING (exit $status); inputs in $findings/"
    exit 1
fi
grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$build/fuzz.log" || true

# Replay: every checked-in input once, each must pass under the sanitizers.
replay=("$root"/tests/data/bad/*.onnx)
if compgen -G "$root/tests/fuzz-corpus/*.onnx" >/dev/null; then replay+=("$root"/tests/fuzz-corpus/*.onnx); fi
if [ "$target" = profile_fuzzer ]; then replay=("$root"/tests/fuzz-corpus/profile/*); fi
for f in "${replayers[@]}"; do
    if ! "$build/fuzz/$f" -runs=1 "${replay[@]}" >"$build/replay-$f.log" 2>&1; then
        tail -60 "$build/replay-$f.log"
        echo "fuzz: FINDING while replaying the checked-in corpus through $f"
        exit 1
    fi
done
echo "fuzz: no findings; replayed ${#replay[@]} checked-in inputs through ${replayers[*]}"
