#!/usr/bin/env bash
# Issue 4 item 9, without the noise: how the O2 pipeline's *work* grows from the 5k-node to the
# 20k-node synthetic graph, counted in instructions rather than measured in wall time.
#
#   bench/pipeline-instructions.sh [BENCH_BINARY...]  (default: build-bench/bench/sextant-bench)
#
# Wall time on a shared VM moves by tens of per cent from one minute to the next, and it also
# carries the memory hierarchy: the 20k graph's working set is four times the 5k one's. The number
# of instructions one pipeline run executes has neither: it is the same on every run and every
# machine with the same build, so it shows whether an algorithm in the pipeline grows faster than
# the graph (a quadratic walk would show here as a ratio far above the node ratio) apart from how
# the caches treat the larger graph.
#
# Runs the benchmark under callgrind (Debian package valgrind), counting only inside
# passes::runPipeline, and divides by the number of calls: the timed iterations (one, with
# --benchmark_min_time=0) plus the untimed warm-up call the benchmark makes first. Takes about a
# minute per binary. Prints, per binary and size, instructions per run and per node, and the ratios.
# SIZES (default "5000 20000") picks other sizes of the benchmark (bench/pipeline-scaling.sh).
set -euo pipefail
SIZES=${SIZES:-5000 20000}

if ! command -v valgrind >/dev/null; then
    echo "pipeline-instructions: needs valgrind (apt-get install valgrind)" >&2
    exit 2
fi
. "$(dirname "$0")/bench-binaries.sh"
bench_binaries pipeline-instructions "$@"
set -- "${BENCH_BINARIES[@]}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for bin in "$@"; do
    echo "$bin"
    declare -A ir=() nodes=()
    for n in $SIZES; do
        valgrind --tool=callgrind --callgrind-out-file="$work/cg.$n" \
            --toggle-collect='sextant::passes::runPipeline(*' \
            "$bin" --benchmark_filter="^PipelineO2/synthetic/$n/" --benchmark_min_time=0 \
            --benchmark_format=csv >"$work/out.$n" 2>"$work/err.$n" || {
            echo "pipeline-instructions: callgrind run failed:" >&2
            tail -5 "$work/err.$n" >&2
            exit 1
        }
        total=$(awk '/^totals:/ { print $2; exit }' "$work/cg.$n")
        # From the benchmark's CSV line: iterations (column 2) and the "nodes" counter (the header
        # names the columns).
        read -r iterations nodes[$n] < <(awk -F, '
            /^name,/ { for (i = 1; i <= NF; ++i) if ($i == "\"nodes\"") c = i }
            /synthetic/ && c { print $2, $c + 0; exit }' "$work/out.$n")
        if [ -z "$total" ] || [ -z "${iterations:-}" ]; then
            echo "pipeline-instructions: no count for $n nodes (see $bin's output)" >&2
            exit 1
        fi
        ir[$n]=$(awk -v t="$total" -v i="$iterations" 'BEGIN { printf "%.0f", t / (i + 1) }')
        awk -v n="$n" -v ir="${ir[$n]}" -v nodes="${nodes[$n]}" 'BEGIN {
            printf "  %5d: %d nodes, %.1f M instructions per run, %.1f k per node\n", n, nodes, ir / 1e6, ir / nodes / 1e3 }'
    done
    if [ -n "${ir[5000]:-}" ] && [ -n "${ir[20000]:-}" ]; then
        awk -v a="${ir[5000]}" -v b="${ir[20000]}" -v na="${nodes[5000]}" -v nb="${nodes[20000]}" 'BEGIN {
            printf "  instructions(20k) / instructions(5k): %.2f, for %.2f times the nodes (per node: %.3f)\n",
                   b / a, nb / na, (b / nb) / (a / na) }'
    fi
    unset ir nodes
done
