#!/usr/bin/env bash
# Offset planning on the memory-planning instances (MiniMalloc CSVs): peak / max-live and time of
# greedy-by-size (the reference figures of SOURCE.txt), of the heuristics alone (the planner before
# the search: --steps 0) and of the heuristics plus search (default steps), in one run. Prints a
# Markdown table for BENCHMARKS.md.
# usage: bench/memplan.sh [SEXTANT_CLI] [DIR]   (default: build/app/sextant-cli ../shared/memplan)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cli=${1:-$here/../build/app/sextant-cli}
dir=${2:-$here/../../shared/memplan}
[ -x "$cli" ] || { echo "no sextant-cli at $cli (build it first)"; exit 2; }
[ -d "$dir" ] || { echo "no instances at $dir"; exit 2; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| instance | buffers | max-live | greedy-by-size | heuristics (--steps 0) | heuristics + search | wall (search) | CPU (search) | proven optimal |"
echo "|---|---|---|---|---|---|---|---|---|"
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
    g="-"; [ -n "$greedy" ] && g=$(awk -v a="$greedy" -v b="$live" 'BEGIN { printf "%.3fx", a / b }')
    echo "| $name | $buffers | $live | $g | $(field "$old" '\(([0-9.]+) x\)')x | $(field "$new" '\(([0-9.]+) x\)')x | $(field "$new" ', ([0-9.]+) s$') s | $cpu s | $(field "$new" 'optimal ([a-z]+),') |"
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
