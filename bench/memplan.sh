#!/usr/bin/env bash
# Offset planning on the memory-planning instances (MiniMalloc CSVs): peak / max-live and time of
# greedy-by-size (the reference figures of SOURCE.txt), of the heuristics alone (the planner before
# the search: --steps 0) and of the heuristics plus search (default steps), in one run. Prints a
# Markdown table for BENCHMARKS.md. With BASELINE_CLI=PATH (a sextant-cli built from an earlier
# commit) a column shows that binary's heuristics + search on the same files in the same run.
# usage: [BASELINE_CLI=OLD] bench/memplan.sh [SEXTANT_CLI] [DIR]   (default: build/app/sextant-cli ../shared/memplan)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cli=${1:-$here/../build/app/sextant-cli}
dir=${2:-$here/../../shared/memplan}
[ -x "$cli" ] || { echo "no sextant-cli at $cli (build it first)"; exit 2; }
[ -d "$dir" ] || { echo "no instances at $dir"; exit 2; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
base=${BASELINE_CLI:-}
[ -z "$base" ] || [ -x "$base" ] || { echo "BASELINE_CLI $base is not executable"; exit 2; }
echo "| instance | buffers | max-live | greedy-by-size | heuristics (--steps 0) |${base:+ baseline search |} heuristics + search | wall (search) | CPU (search) | proven optimal |"
echo "|---|---|---|---|---|${base:+---|}---|---|---|---|"
for f in "$dir"/*.csv; do
    name=$(basename "$f" .csv); key=${name%%.*}; [ "$key" = example ] && key=example.12
    greedy=$(grep -E "^ *$key: " "$dir/SOURCE.txt" | sed -E 's/.*greedy +([0-9]+).*/\1/' || true)
    old=$("$cli" plan-offsets "$f" --steps 0)
    cpu_file=$(mktemp)
    new=$( { TIMEFORMAT='%U %S'; time "$cli" plan-offsets "$f" 2>&1; } 2>"$cpu_file" )
    cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$cpu_file"); rm -f "$cpu_file"
    field() { echo "$1" | sed -E "s/.*$2.*/\1/"; }
    buffers=$(field "$new" 'buffers ([0-9]+),')
    live=$(field "$new" 'max-live ([0-9]+),')
    b=""; [ -z "$base" ] || b=" $("$base" plan-offsets "$f" | sed -E 's/.*\(([0-9.]+) x\).*/\1/')x |"
    g="-"; [ -n "$greedy" ] && g=$(awk -v a="$greedy" -v b="$live" 'BEGIN { printf "%.3fx", a / b }')
    echo "| $name | $buffers | $live | $g | $(field "$old" '\(([0-9.]+) x\)')x |$b $(field "$new" '\(([0-9.]+) x\)')x | $(field "$new" ', ([0-9.]+) s$') s | $cpu s | $(field "$new" 'optimal ([a-z]+),') |"
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
