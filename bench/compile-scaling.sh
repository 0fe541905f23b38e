#!/usr/bin/env bash
# Issue 19 item 1: how `compile` (pipeline, lowering, artifact) grows from 5k to 20k nodes.
#
#   bench/compile-scaling.sh [BENCH_BINARY]      (default: build-bench/bench/sextant-bench)
#
# Runs Compile/residual/N and Compile/mixed/N (bench/CompileBench.cpp) each in a process of its
# own (so peak_rss_MB is that benchmark's), ROUNDS times, sizes interleaved, and prints per shape
# and size the median wall time and the largest peak RSS, then t(20k)/t(5k).
# Environment: ROUNDS (default 3).
set -euo pipefail
ROUNDS=${ROUNDS:-3}
. "$(dirname "$0")/bench-binaries.sh"
bench_binaries compile-scaling "$@"
bin=${BENCH_BINARIES[0]}

samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
for round in $(seq "$ROUNDS"); do
    for shape in residual mixed; do
        for n in 5000 20000; do
            "$bin" --benchmark_filter="^Compile/$shape/$n/" --benchmark_format=csv 2>/dev/null |
                awk -F, -v shape="$shape" -v n="$n" '$1 ~ /^"Compile/ { print shape, n, $3 }' >>"$samples"
            "$bin" --benchmark_filter="^Compile/$shape/$n/" 2>/dev/null |
                sed -n "s/.*peak_rss_MB=\([0-9.]*\).*/$shape $n rss \1/p" >>"$samples"
        done
    done
done
awk '
    $3 == "rss" { key = $1 " " $2; if ($4 > rss[key]) rss[key] = $4; next }
    { key = $1 " " $2; t[key, ++c[key]] = $3 }
    END {
        printf "%-9s %6s %12s %12s\n", "shape", "nodes", "median ms", "peak RSS MB"
        split("residual mixed", shapes, " ")
        for (s = 1; s <= 2; ++s)
            for (i = 0; i < 2; ++i) {
                n = i == 0 ? 5000 : 20000
                key = shapes[s] " " n
                m = c[key]
                for (a = 1; a <= m; ++a) v[a] = t[key, a]
                for (a = 1; a <= m; ++a) for (b = a + 1; b <= m; ++b) if (v[b] < v[a]) { x = v[a]; v[a] = v[b]; v[b] = x }
                med[key] = m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
                printf "%-9s %6d %12.0f %12.0f\n", shapes[s], n, med[key], rss[key]
            }
        for (s = 1; s <= 2; ++s)
            printf "%s: t(20k)/t(5k) = %.2f\n", shapes[s], med[shapes[s] " 20000"] / med[shapes[s] " 5000"]
    }' "$samples"
