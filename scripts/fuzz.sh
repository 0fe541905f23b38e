#!/usr/bin/env bash
# Fuzzes one of Sextant's readers with libFuzzer under ASan + UBSan, then replays its checked-in corpus.
#
#   scripts/fuzz.sh [SECONDS] [TARGET]     (default 60 s, importer_fuzzer)
#
# TARGET is one of
#   importer_fuzzer   the ONNX importer (import, verify, infer, print, parse back)
#   reference_fuzzer  import, then run small static models on the float64 reference executor
#   artifact_fuzzer   the artifact reader, on manifest.json texts beside a fixed sample's binaries
#   target_fuzzer     the target-file and fusion-switch parsers
#   profile_fuzzer    the profile database reader (every query, the Chrome trace, a comparison)
# Configures FUZZ_BUILD_DIR (default build-fuzz/) with clang and -DSEXTANT_FUZZ=ON, builds only the
# fuzzers TARGET belongs with (and the libraries they link), seeds a working corpus, fuzzes TARGET
# for SECONDS, then runs every checked-in input of TARGET's corpus once more. Seeds and corpora:
#   importer/reference  tests/data/bad, tests/fuzz-corpus/*.onnx, samples/, the small models of
#                       ../shared/models and FUZZ_SEEDS (an extra folder of models, searched
#                       recursively); replayed through both ONNX fuzzers
#   artifact            tests/fuzz-corpus/artifact/ (manifests) and the sample's own manifest
#   target              tests/fuzz-corpus/target/, resources/targets/ and the docs' switch example
#   profile             tests/fuzz-corpus/profile/ (damaged and edited databases) and tests/data/profile-v2
# FUZZ_RUNS and FUZZ_SEED (the ctests set both) make the run reproducible. Exits 0 when nothing was
# found, 1 on a finding (the crashing input is in FUZZ_BUILD_DIR/findings/: copy it into the
# corpus once fixed), 77 when clang or its libFuzzer runtime is missing (ctest reports a skip).
set -euo pipefail
seconds=${1:-60}
target=${2:-importer_fuzzer}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
shared=${SEXTANT_SHARED_DIR:-$root/../shared}
jobs=${FUZZ_JOBS:-2}
corpora=$root/tests/fuzz-corpus

# Per target: the fuzzers built and replayed together, the checked-in inputs, the longest input.
seeds=()
replay=()
case $target in
importer_fuzzer|reference_fuzzer)
    fuzzers=(importer_fuzzer reference_fuzzer)
    max_len=65536
    replay=("$root"/tests/data/bad/*.onnx)
    if compgen -G "$corpora/*.onnx" >/dev/null; then replay+=("$corpora"/*.onnx); fi
    seeds=("${replay[@]}" "$root"/samples/*.onnx)
    if [ -d "$shared/models" ]; then
        while IFS= read -r f; do seeds+=("$f"); done < <(find "$shared/models" -name '*.onnx' -size -64k | sort)
    fi
    ;;
artifact_fuzzer)
    fuzzers=(artifact_fuzzer)
    max_len=262144
    replay=("$corpora"/artifact/*.json)
    seeds=("${replay[@]}" "$root"/tests/data/artifact-fuzz/residual_cnn/manifest.json)
    ;;
target_fuzzer)
    fuzzers=(target_fuzzer)
    max_len=16384
    replay=("$corpora"/target/*.json)
    seeds=("${replay[@]}" "$root"/resources/targets/*.json)
    ;;
profile_fuzzer)
    fuzzers=(profile_fuzzer)
    max_len=1048576
    replay=("$corpora"/profile/*)
    seeds=("${replay[@]}" "$root"/tests/data/profile-v2/*.db)
    ;;
*) echo "fuzz: unknown target '$target'"; exit 2;;
esac

. "$root/scripts/clang-probe.sh"
require_clang fuzzer,address,undefined \
    'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' "$target"

launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" -DSEXTANT_FUZZ=ON \
        -DSEXTANT_BUILD_GUI=OFF -DSEXTANT_BUILD_TESTS=OFF -DSEXTANT_BUILD_BENCH=OFF >"$probe/configure.log" 2>&1 \
        || { cat "$probe/configure.log"; echo "fuzz: configure failed"; exit 1; }
fi
ninja -C "$build" -j"$jobs" "${fuzzers[@]}" >"$build/ninja-$target.log" 2>&1 \
    || { tail -50 "$build/ninja-$target.log"; echo "fuzz: build failed"; exit 1; }
fuzzer=$build/fuzz/$target

# Working corpus: kept between timed runs in the build folder, seeded afresh each time. A counted
# run (FUZZ_RUNS, the ctests) starts from the seeds alone: with what earlier runs added, the same
# seed would explore differently each time.
corpus=$build/corpus-$target
findings=$build/findings
if [ -n "${FUZZ_RUNS:-}" ]; then rm -rf "$corpus"; fi
mkdir -p "$corpus" "$findings"
for f in "${seeds[@]}"; do cp -f "$f" "$corpus/$(basename "$(dirname "$f")")-$(basename "$f")"; done
# FUZZ_SEEDS: an extra folder of models (e.g. the generated ONNX node tests, all named model.onnx:
# each is copied under its folder's name).
if [ "${fuzzers[0]}" = importer_fuzzer ] && [ -n "${FUZZ_SEEDS:-}" ] && [ -d "$FUZZ_SEEDS" ]; then
    while IFS= read -r f; do
        cp -f "$f" "$corpus/$(basename "$(dirname "$f")")-$(basename "$f")"
    done < <(find "$FUZZ_SEEDS" -name '*.onnx' -size -64k | sort)
fi

# Dictionary: words the format is made of, so mutations can turn one op, key or value into another
# instead of only flipping bytes. ONNX: the op table's op names and common attribute keys; JSON
# files: every key and string value of the seeds.
dict=$build/$target.dict
if [ "${fuzzers[0]}" = importer_fuzzer ]; then
    {
        sed -n 's/^SEXTANT_OP([A-Za-z0-9_]*, *"[^"]*", *"\([A-Za-z0-9_]*\)".*/"\1"/p' "$root/core/ir/OpTable.def"
        for w in axis axes strides pads kernel_shape dilations group perm to mode value keepdims \
            auto_pad allowzero alpha beta epsilon split starts ends location offset length ai.onnx; do
            echo "\"$w\""
        done
    } | sort -u >"$dict"
else
    { grep -aohE '"[a-z_][A-Za-z0-9_.-]{0,40}"' "${seeds[@]}" || true; } | sort -u >"$dict"
    printf '"%s"\n' 18446744073709551615 4611686018427387904 1099511627776 -1 0 >>"$dict"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
echo "fuzz: running $target (${FUZZ_RUNS:+$FUZZ_RUNS inputs, seed ${FUZZ_SEED:-random}}${FUZZ_RUNS:-${seconds}s}) (corpus $corpus)"
# FUZZ_RUNS/FUZZ_SEED make the run reproducible: a fixed number of inputs from a fixed seed instead
# of as many as fit in SECONDS, so CI does not turn red at random; exploring for new findings is
# what a timed run of this script is for.
budget=(-max_total_time="$seconds")
if [ -n "${FUZZ_RUNS:-}" ]; then budget=(-runs="$FUZZ_RUNS"); fi
if [ -n "${FUZZ_SEED:-}" ]; then budget+=(-seed="$FUZZ_SEED"); fi
"$fuzzer" "$corpus" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=$max_len \
    -dict="$dict" -artifact_prefix="$findings/" -print_final_stats=1 >"$build/fuzz-$target.log" 2>&1 || status=$?
if [ $status -ne 0 ]; then
    tail -60 "$build/fuzz-$target.log"
    echo "fuzz: FINDING (exit $status); inputs in $findings/"
    exit 1
fi
grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$build/fuzz-$target.log" || true

# Replay: every checked-in input once, each must pass under the sanitizers.
for f in "${fuzzers[@]}"; do
    if ! "$build/fuzz/$f" -runs=1 "${replay[@]}" >"$build/replay-$f.log" 2>&1; then
        tail -60 "$build/replay-$f.log"
        echo "fuzz: FINDING while replaying the checked-in corpus through $f"
        exit 1
    fi
done
echo "fuzz: no findings; replayed ${#replay[@]} checked-in inputs through ${fuzzers[*]}"
