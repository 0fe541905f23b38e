#!/usr/bin/env bash
# On-chip memory figures for every model of ../shared/models that lowers to the NPU, before and
# after (two sextant-cli binaries, run in turn in one go): DRAM traffic / compulsory bytes
# (weights + graph inputs + outputs), estimated and simulated latency / the roofline bound
# max(FLOPs / peak, compulsory bytes / DRAM bandwidth), the highest SRAM peak of any core, and
# where the simulated critical path's time goes (after only). Prints Markdown for BENCHMARKS.md.
# usage: bench/sram.sh BEFORE_CLI AFTER_CLI [MODELS_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
before=${1:?usage: bench/sram.sh BEFORE_CLI AFTER_CLI [MODELS_DIR]}
after=${2:?usage: bench/sram.sh BEFORE_CLI AFTER_CLI [MODELS_DIR]}
dir=${3:-$here/../../shared/models}
[ -d "$dir" ] || { echo "no models at $dir"; exit 2; }
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Models with symbolic input dims, at the shapes their test data uses.
shape_of() {
    case "$1" in
    *ch_PP-OCRv4_det_infer*) echo "--shape x=1x3x320x320" ;;
    *ch_PP-OCRv4_rec_infer*) echo "--shape x=1x3x48x320" ;;
    *ch_ppocr_mobile_v2.0_cls_infer*) echo "--shape x=1x3x48x192" ;;
    *) echo "" ;;
    esac
}

# Figures of one compile and run: traffic, compulsory, flops, est, sim, sram peak, critical path.
measure() { # cli model out
    local cli=$1 model=$2 out=$3 shape
    shape=$(shape_of "$model")
    # shellcheck disable=SC2086
    "$cli" compile "$model" $shape --report "$out.json" >/dev/null 2>&1 || return 1
    # shellcheck disable=SC2086
    "$cli" run "$model" $shape --critical-path >"$out.run" 2>/dev/null || true
    grep -q '^latency: ' "$out.run" || return 1
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| model | Tasks | DRAM traffic / compulsory (before -> after) | est. latency / bound | simulated latency / bound | SRAM peak (max core) | kept on chip | critical path after: compute / DMA / DRAM latency / dispatch / events / waits |"
echo "|---|---|---|---|---|---|---|---|"
find "$dir" -name '*.onnx' | sort | while read -r model; do
    name=$(basename "$model" .onnx)
    measure "$before" "$model" "$tmp/b" || continue
    measure "$after" "$model" "$tmp/a" || continue
    "$py" - "$tmp/b" "$tmp/a" "$name" <<'EOF'
import json, re, sys
b, a, name = sys.argv[1], sys.argv[2], sys.argv[3]
rb, ra = json.load(open(b + '.json')), json.load(open(a + '.json'))
def sim(path):
    m = re.search(r'^latency: (\d+) cycles', open(path + '.run').read(), re.M)
    return int(m.group(1))
def traffic(r):
    return sum(t['dma_bytes'] for t in r['task_table'])
mem = ra['memory']
# The bound is the model's, so one figure for both columns: the before binary's FLOPs and
# compulsory bytes (a fusion moves an epilogue's element-wise FLOPs out of the Task table).
mb = rb['memory']
compulsory = mb.get('compulsory_bytes') or (mb['weight_bytes'] + mb['io_bytes'])
flops = sum(t['flops'] for t in rb['task_table'])
# npu-a: 8 cores x 16x16x16 MACs (2 flops each) per cycle; DRAM 512 bytes per cycle.
bound = max(flops / (8 * 16 * 16 * 16 * 2), compulsory / 512)
def ratio(x):
    return f"{x / bound:.1f}x"
peak = max(mem.get('sram_peak') or [0])
kept = mem.get('on_chip_tensors', 0)
path = re.search(r'where the time goes: compute (\d+) \((\d+)%\), DMA (\d+) \((\d+)%\), DRAM latency (\d+) \((\d+)%\), '
                 r'dispatch (\d+) \((\d+)%\), events (\d+) \((\d+)%\), other waits (\d+) \((\d+)%\)',
                 open(a + '.run').read())
split = ' / '.join(path.group(i) + '%' for i in (2, 4, 6, 8, 10, 12)) if path else '-'
print(f"| {name} | {ra['tasks']} | {traffic(rb) / compulsory:.1f}x -> {traffic(ra) / compulsory:.1f}x | "
      f"{ratio(rb['est_cycles'])} -> {ratio(ra['est_cycles'])} | {ratio(sim(b))} -> {ratio(sim(a))} | "
      f"{peak / 1024:.0f} KiB | {kept} | {split} |")
EOF
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
