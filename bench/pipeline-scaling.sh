#!/usr/bin/env bash
# Issue 4 item 9: how the O2 pipeline's time grows from the 5k-node to the 20k-node synthetic graph.
#
#   bench/pipeline-scaling.sh [BENCH_BINARY...]      (default: build-bench/bench/sextant-bench)
#
# On a shared machine one pair of numbers says little: the 20k graph's working set is several times
# the 5k one's, so other processes' use of the caches moves it far more. This runs each binary at
# each size, in fresh processes, for ROUNDS rounds (binaries interleaved, so a slow spell hits all
# of them), REPS repetitions per process, and prints per binary and size the minimum and the median
# of all repetitions, the time per node, and t(20k)/t(5k) from both. Give two binaries to compare
# builds.
#
# Environment: ROUNDS (default 4), REPS (default 5), MIN_TIME (seconds per repetition, default 0.4),
# SIZES (default "5000 20000"; the benchmark has 1250 2500 5000 10000 20000 40000: all of them show
# how the time per node grows with the graph).
set -euo pipefail

ROUNDS=${ROUNDS:-4}
REPS=${REPS:-5}
MIN_TIME=${MIN_TIME:-0.4}
SIZES=${SIZES:-5000 20000}
. "$(dirname "$0")/bench-binaries.sh"
bench_binaries pipeline-scaling "$@"
set -- "${BENCH_BINARIES[@]}"

samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
for round in $(seq "$ROUNDS"); do
    for i in $(seq $#); do
        bin=${!i}
        for n in $SIZES; do
            # CSV: a header naming the columns (the counter "nodes" among them), then
            # name,iterations,real_time,...; keep the repetitions, not the aggregates Google
            # Benchmark appends.
            "$bin" --benchmark_filter="^PipelineO2/synthetic/$n/" --benchmark_repetitions="$REPS" \
                --benchmark_min_time="$MIN_TIME" --benchmark_format=csv 2>/dev/null |
                awk -F, -v b="$i" -v n="$n" '
                    $1 == "name" { for (c = 1; c <= NF; ++c) if ($c == "\"nodes\"") col = c; next }
                    $1 ~ /synthetic/ && $1 !~ /_(mean|median|stddev|cv|min)"?$/ { print b, n, $3, $col }' \
                >>"$samples"
        done
    done
    echo "round $round of $ROUNDS done" >&2
done

names=$(printf '%s\n' "$@")
sort -k1,1n -k2,2n -k3,3g "$samples" | awk -v names="$names" '
    BEGIN { split(names, binary, "\n") }
    function flush() {
        if (count == 0) return
        med = (count % 2) ? v[(count + 1) / 2] : (v[count / 2] + v[count / 2 + 1]) / 2
        printf "  %5d nodes: min %7.1f ms, median %7.1f ms, %5.2f us per node from the minimum (%d runs)\n",
            nodes, v[1], med, 1000 * v[1] / nodes, count
        lo[cb, cn] = v[1]; mid[cb, cn] = med
        count = 0
    }
    function ratio(b) {
        if ((b, 5000) in lo && (b, 20000) in lo)
            printf "  t(20k) / t(5k): %.2f from the minimums, %.2f from the medians\n",
                lo[b, 20000] / lo[b, 5000], mid[b, 20000] / mid[b, 5000]
    }
    {
        if ($1 != cb || $2 != cn) {
            flush()
            if ($1 != cb) { if (cb) ratio(cb); print binary[$1] }
            cb = $1; cn = $2
        }
        v[++count] = $3; nodes = $4
    }
    END { flush(); if (cb) ratio(cb) }'
