#!/usr/bin/env bash
# CLI checks of the pipeline options of `sextant-cli compile` / `run`: -O levels, --fusion-switch
# (and its errors), --list-applications with --bisect-limit, run -O2 --reference, bisect, regress,
# and the SRAM plan's figures (--stats, --report, --print-changed, the artifact).
# usage: cli_pipeline.sh CASE SEXTANT_CLI SHARED_DIR SOURCE_DIR WORK_DIR
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE).
set -u
case_name=$1 cli=$2 shared=$3 src=$4 work=$5
mkdir -p "$work"
out="$work/$case_name.out"
err="$work/$case_name.err"
model="$src/samples/residual_cnn.onnx"

fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
expect_line() { grep -Eq -- "$1" "$out" || fail "no output line matches: $1"; }
expect_error() { grep -Fq -- "$1" "$err" || fail "stderr does not say: $1"; }
# expect_exit CODE ARGS...: runs the CLI and checks its exit code.
expect_exit() { local want=$1; shift; "$cli" "$@" >"$out" 2>"$err"; local rc=$?; [ $rc -eq "$want" ] || fail "exit code $rc (wanted $want) for: $*"; }

case $case_name in
generators)
    # The scale generators in bench/ write models the CLI compiles (issue 19's graphs, small here).
    if ! /usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null; then
        echo "python3-onnx or python3-numpy is not installed (run make deps): skipping the bench/ generators"
        exit 77
    fi
    /usr/bin/python3 "$src/bench/mixed-chain.py" 1250 "$work/mixed.onnx" >"$out" 2>"$err" || fail "mixed-chain.py failed"
    expect_line "mixed.onnx: 1352 nodes in 13 stages$"
    /usr/bin/python3 "$src/bench/mixed-chain.py" 200 "$work/attention.onnx" --attention-only >"$out" 2>"$err" ||
        fail "mixed-chain.py --attention-only failed"
    expect_line "attention.onnx: 228 nodes in 3 stages$"
    /usr/bin/python3 "$src/bench/residual-chain.py" 64 "$work/residual.onnx" >"$out" 2>"$err" || fail "residual-chain.py failed"
    for m in mixed attention residual; do
        expect_exit 0 compile "$work/$m.onnx" --stats
        expect_line "^compiled '.*' for npu-a: [0-9]+ tasks on 8 of 8 cores"
        expect_line "^  dram: arena peak [0-9.]+ KiB vs lower bound [0-9.]+ KiB \(1\.00x\)"
    done
    expect_exit 2 compile "$work/missing.onnx"
    /usr/bin/python3 "$src/bench/mixed-chain.py" zero "$work/bad.onnx" >"$out" 2>"$err" && fail "mixed-chain.py took a bad size"
    grep -q "usage: bench/mixed-chain.py NODES OUT.onnx" "$err" || fail "mixed-chain.py did not print its usage"
    ;;
exports)
    # The memory plan as CSV (docs/memory-export.md): every buffer placed, SRAM rows inside their
    # core's capacity, DRAM intermediates inside the arena; the DRAM problem in MiniMalloc's
    # format reads back into plan-offsets. A folder that does not exist is an error naming the file.
    expect_exit 0 compile "$model" --export-memory "$work/memory.csv" --export-offset-problem "$work/problem.csv" \
        --report "$work/report.json"
    python3 - "$work/memory.csv" "$work/problem.csv" "$work/report.json" <<'PY' || fail "the exported memory plan is not what the compile planned"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
problem = list(csv.DictReader(open(sys.argv[2])))
report = json.load(open(sys.argv[3]))
mem = report["memory"]
assert list(rows[0].keys()) == ["buffer", "tensor", "role", "dtype", "shape", "level", "core", "offset", "size",
                                "first_task", "last_task", "est_first_cycle", "est_last_cycle", "in_place_of"], rows[0].keys()
roles = {r["role"] for r in rows}
assert {"input", "output", "weight", "intermediate"} <= roles, roles
assert any(r["level"] == "sram" for r in rows), "keep-on-chip keeps some tensors on chip"
for r in rows:
    if r["level"] == "sram":
        assert 0 <= int(r["core"]) < 8 and int(r["offset"]) + int(r["size"]) <= 512 * 1024, r
    if r["level"] != "host":
        assert int(r["size"]) > 0 and int(r["est_first_cycle"]) < int(r["est_last_cycle"]), r
dram_inter = [r for r in rows if r["level"] == "dram" and r["role"] == "intermediate" and not r["in_place_of"]]
# One row per item: a buffer, or buffers sharing their addresses slice by slice (the first one's id).
assert 0 < len(problem) <= len(dram_inter), (len(problem), len(dram_inter))
assert list(problem[0].keys()) == ["id", "lower", "upper", "size", "alignment", "conflicts"], problem[0].keys()
base = min(int(r["offset"]) for r in dram_inter)
assert max(int(r["offset"]) + int(r["size"]) for r in dram_inter) - base <= mem["dram_peak"], mem
offset = {r["buffer"]: int(r["offset"]) for r in dram_inter}
for p in problem:
    assert int(p["lower"]) < int(p["upper"]) and int(p["size"]) > 0, p
    assert p["id"] in offset and int(p["alignment"]) > 0, p
# The compile's own offsets are a plan of the problem written: no two rows whose lifetimes meet,
# or that the conflicts column pairs, share an address.
pairs = {(p["id"], q) for p in problem for q in p["conflicts"].split()}
assert pairs, "the sample's Tasks on other cores leave some buffers unordered beyond their lifetimes"
for i, p in enumerate(problem):
    for q in problem[i + 1:]:
        meet = int(p["lower"]) < int(q["upper"]) and int(q["lower"]) < int(p["upper"])
        if meet or (p["id"], q["id"]) in pairs or (q["id"], p["id"]) in pairs:
            a, b = offset[p["id"]], offset[q["id"]]
            assert a + int(p["size"]) <= b or b + int(q["size"]) <= a, (p, q, a, b)
PY
    expect_exit 0 plan-offsets "$work/problem.csv" --steps 0
    expect_line "problem.csv: buffers [1-9][0-9]*, max-live [0-9]+, peak [0-9]+"
    expect_line "problem.csv: conflicts beyond the lifetimes [1-9][0-9]*, lower bound [0-9]+"
    # Planned again with the search, it needs no more than the compile's arena.
    expect_exit 0 plan-offsets "$work/problem.csv"
    peak=$(sed -n 's/.*, peak \([0-9]*\) .*/\1/p' "$out")
    arena=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["memory"]["dram_peak"])' "$work/report.json")
    [ -n "$peak" ] && [ "$peak" -le "$arena" ] || fail "plan-offsets needs $peak bytes for the compile's $arena"
    # The same compile writes the same bytes.
    cp "$work/memory.csv" "$work/memory-1.csv"
    expect_exit 0 compile "$model" --export-memory "$work/memory.csv"
    cmp -s "$work/memory.csv" "$work/memory-1.csv" || fail "a second export differs"
    # DOT: the graph after a named pass, and every snapshot into a folder; an unknown pass is an
    # error listing the ones there are.
    expect_exit 0 compile "$model" --export-dot fuse:"$work/fuse.dot" --export-dot all:"$work/dots"
    grep -q '^digraph "' "$work/fuse.dot" || fail "fuse.dot is not a digraph"
    grep -q 'label="residual_cnn after pass fuse"' "$work/fuse.dot" || fail "fuse.dot has no title"
    grep -q 'FusedConv' "$work/fuse.dot" || fail "fuse.dot does not show the fused convolutions"
    [ "$(ls "$work/dots" | wc -l)" -eq 9 ] || fail "all:DIR did not write one file per snapshot (9)"
    [ -f "$work/dots/00-input.dot" ] && [ -f "$work/dots/08-dce.dot" ] || fail "snapshot files misnamed"
    cmp -s "$work/fuse.dot" "$work/dots/05-fuse.dot" || fail "the same snapshot written twice differs"
    expect_exit 2 compile "$model" --export-dot nosuch:"$work/x.dot"
    expect_error "--export-dot nosuch:$work/x.dot: no pass 'nosuch' in this pipeline (input, infer-shapes,"
    # ONNX (docs/onnx-export.md): a snapshot as the compiler holds it (sextant-domain ops, which
    # Sextant's importer reads back) and in standard ops only; every snapshot into a folder; the
    # same bytes each time; --standard alone and a missing folder are errors naming the problem.
    expect_exit 0 compile "$model" --export-onnx fuse:"$work/fuse.onnx" --export-onnx all:"$work/onnx"
    [ "$(ls "$work/onnx" | wc -l)" -eq 9 ] || fail "--export-onnx all:DIR did not write one file per snapshot (9)"
    cmp -s "$work/fuse.onnx" "$work/onnx/05-fuse.onnx" || fail "the same ONNX snapshot written twice differs"
    expect_exit 0 import "$work/onnx/08-dce.onnx"
    expect_line "= sextant\.FusedConv\(.* @"
    expect_exit 0 compile "$model" --export-onnx final:"$work/standard.onnx" --standard
    cp "$work/standard.onnx" "$work/standard-1.onnx"
    expect_exit 0 compile "$model" --export-onnx final:"$work/standard.onnx" --standard
    cmp -s "$work/standard.onnx" "$work/standard-1.onnx" || fail "a second standard export differs"
    expect_exit 0 compile "$model" --export-onnx final:"$work/f16.onnx" --standard-f16
    if /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
        /usr/bin/python3 - "$work/onnx/08-dce.onnx" "$work/standard.onnx" "$work/f16.onnx" <<'PY' >"$out" 2>"$err" ||
import sys, onnx
asis, std, f16 = (onnx.load(f) for f in sys.argv[1:])
meta = lambda m: {p.key: p.value for p in m.metadata_props}
assert meta(asis)["sextant.form"] == "as is" and meta(asis)["sextant.snapshot"] == "dce", meta(asis)
assert meta(std)["sextant.form"] == "standard" and meta(f16)["sextant.form"] == "standard, npu f16"
own = [n for n in asis.graph.node if n.domain == "sextant"]
assert own and any(o.domain == "sextant" for o in asis.opset_import), "no sextant ops in the as-is form"
assert any("precision: f16-acc-f32" in n.doc_string for n in own), "no precision in the doc strings"
assert any(v.doc_string == "layout: NC1HWC0" for v in asis.graph.value_info), "no layouts on the values"
assert all(n.domain == "" for n in std.graph.node), [n.op_type for n in std.graph.node if n.domain]
assert {o.domain for o in std.opset_import} == {""}, std.opset_import
ops = {n.op_type for n in std.graph.node}
assert "Conv" in ops and "FusedConv" not in ops, ops
casts = sum(n.op_type == "Cast" for n in f16.graph.node)
assert casts > 0 and not any(n.op_type == "Cast" for n in std.graph.node), casts
# Weights once: no initializer name or payload twice.
names = [t.name for t in std.graph.initializer]
assert len(names) == len(set(names)), names
onnx.checker.check_model(std)
PY
            fail "the exported ONNX files are not what the forms promise"
    fi
    expect_exit 2 compile "$model" --standard
    expect_error "compile: --standard and --standard-f16 choose the form of --export-onnx, which is not given"
    expect_exit 2 compile "$model" --export-onnx final:"$work/no/such/folder/x.onnx"
    expect_error "ONNX model"
    expect_error "$work/no/such/folder"
    # The per-network summary: rows append (compile's estimate, run's simulation, another level),
    # each with its roofline; a file with another header is refused and left alone.
    rm -f "$work/summary.csv"
    expect_exit 0 compile "$model" --summary-csv "$work/summary.csv"
    expect_exit 0 compile "$model" -O1 --summary-csv "$work/summary.csv"
    expect_exit 0 run "$model" --summary-csv "$work/summary.csv"
    expect_line "^summary: appended a row to "
    python3 - "$work/summary.csv" <<'PY' || fail "the summary rows are not what the runs gave"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 3, rows
assert [r["latency_source"] for r in rows] == ["estimated", "estimated", "simulated"], rows
assert [r["opt_level"] for r in rows] == ["2", "1", "2"], rows
for r in rows:
    assert r["target"] == "npu-a" and int(r["tasks"]) > 0 and 0 < int(r["cores_used"]) <= 8, r
    assert int(r["macs"]) > 0 and int(r["roofline_cycles"]) > 0 and r["roofline_bound"] in ("compute", "memory"), r
    assert float(r["latency_over_roofline"]) >= 1.0, r
    peaks = [int(p) for p in r["sram_peak_per_core"].split(";")]
    assert len(peaks) == 8 and max(peaks) == int(r["sram_peak_max_bytes"]), r
    assert int(r["dram_traffic_bytes"]) >= int(r["compulsory_bytes"]) > 0, r
PY
    printf 'not,a,summary\n' > "$work/other.csv"
    expect_exit 2 compile "$model" --summary-csv "$work/other.csv"
    expect_error "summary CSV '$work/other.csv': its first line is not this version's header"
    [ "$(cat "$work/other.csv")" = "not,a,summary" ] || fail "the refused file was changed"
    expect_exit 2 compile "$model" --export-memory "$work/no-such-folder/memory.csv"
    expect_error "memory plan '$work/no-such-folder/memory.csv': folder '$work/no-such-folder' does not exist"
    [ -e "$work/no-such-folder" ] && fail "the failed export created something"
    ls -a "$work" | grep -q "\.tmp-" && fail "a temporary file was left behind"
    ;;
levels)
    expect_exit 0 rules
    expect_line "^cse +pass +-O2 "
    expect_line "^infer-shapes +pass +-O0 "
    expect_exit 0 compile "$model" -O0 --stats
    expect_line "^  passes: 1 ran, 0 changed the graph, 0 rule applications$"
    expect_exit 0 compile "$model" -O1 --stats
    expect_line "^  passes: 4 ran,"
    expect_exit 0 compile "$model" --stats
    expect_line "^  passes: 8 ran,"
    expect_line "^  assign-npu-layout: [1-9][0-9]* / [1-9][0-9]* / [0-9]+ / 0, [0-9.]+ ms$"
    expect_line "^  keep-f32-critical: [1-9][0-9]* / [1-9][0-9]* / 0 / 0, [0-9.]+ ms$"
    expect_line "^grey ops \(before -> after\): transpose [0-9]+ -> [0-9]+, copy/cast-only [0-9]+ -> [0-9]+, layout conversions [0-9]+ -> [0-9]+, quantize/dequantize 0 -> 0$"
    expect_line "^  fuse-conv-bn: [1-9][0-9]* / [1-9][0-9]* / [0-9]+ / 0, [0-9.]+ ms$"
    # Per pass: time, share, nodes after and the structural diff; a pass that changed nothing says so.
    expect_line "^  fuse +[0-9.]+ ms +[0-9.]+ % +[0-9]+ nodes  \+[0-9]+ -[1-9][0-9]* ~[0-9]+ nodes, \+[0-9]+ -[0-9]+ ~[0-9]+ constants$"
    expect_line "^  dce +[0-9.]+ ms +[0-9.]+ % +[0-9]+ nodes  -$"
    # The Task table: a conv shared out over the 8 cores is one row, a Task on one core another.
    # (the middle parts, which store halo rows on both sides, end a little later: a row of their own)
    expect_line "^ +0(-7)? block1_conv\[1(-8)?/8\] +FusedConv +(core 0|cores 0-7) +cube +[0-9]+\.\.[0-9]+ +1 [0-9.]+ KiB$"
    expect_line "^ +[0-9]+ fc +Gemm +core [0-7] +cube "
    expect_exit 2 compile "$model" -O7
    expect_error "unknown optimisation level '-O7'"
    ;;
switch)
    printf '{"rules": {"fuse-conv-bn": "off"}}\n' >"$work/off.json"
    expect_exit 0 compile "$model" --fusion-switch "$work/off.json" --stats
    grep -q "fuse-conv-bn:" "$out" && fail "fuse-conv-bn ran although switched off"
    printf '{\n  "rules": {\n    "fuse-conv-bn" "off"\n  }\n}\n' >"$work/bad.json"
    expect_exit 2 compile "$model" --fusion-switch "$work/bad.json"
    expect_error "bad.json: malformed JSON at line 3, column"
    printf '{"rules": {"fuse-conv-bnn": "off"}}\n' >"$work/unknown.json"
    expect_exit 2 compile "$model" --fusion-switch "$work/unknown.json"
    expect_error "unknown rule id 'fuse-conv-bnn' in \"rules\" (did you mean 'fuse-conv-bn'?"
    printf '{"rules": {"fuse-conv-bn": "on"}}\n' >"$work/on.json"
    expect_exit 2 compile "$model" -O0 --fusion-switch "$work/on.json"
    expect_error "rule 'fuse-conv-bn' is switched on but its pass 'fuse' does not run at -O0"
    expect_exit 2 compile "$model" --disable fuse-conv-bn --fusion-switch "$work/on.json"
    expect_error "'fuse-conv-bn' is both disabled and switched on"
    expect_exit 2 compile "$model" --bisect-limit -1
    expect_error "--bisect-limit must be a whole number >= 0"
    ;;
applications)
    expect_exit 0 compile "$model" --list-applications --bisect-limit 2
    expect_line "^ +1 [a-z-]+ +[a-z-]+ +[^ ]+$"
    expect_line "^ +2 [a-z-]+ +[a-z-]+ +[^ ]+$"
    grep -Eq "^ +3 " "$out" && fail "a third application happened under --bisect-limit 2"
    expect_line "\(cut\)$"
    cp "$out" "$work/first.out"
    expect_exit 0 compile "$model" --list-applications --bisect-limit 2
    cmp -s "$out" "$work/first.out" || fail "two runs listed different applications"
    ;;
reference)
    data="$src/samples/residual_cnn"
    expect_exit 0 run "$model" -O2 --reference
    expect_line "^reference graph: optimised at -O2 \([0-9]+ -> [0-9]+ nodes, [1-9][0-9]* rule applications\)$"
    ;;
bisect)
    # At -O3 the sample's outputs stay within run --reference's tolerance: nothing to find.
    expect_exit 0 bisect "$model" -O3
    expect_line "^bisect: [1-9][0-9]* rule applications at -O3; "
    expect_line "^no drift: "
    # Held to 1e-7, the accuracy trade of -O3 shows: BatchNorm folded in f16, at the first Conv.
    expect_exit 1 bisect "$model" -O3 --atol 1e-7 --rtol 1e-7
    expect_line "^  limit 0: PASS$"
    expect_line "^first bad application: #1 fuse-conv-bn-f16 \(pass fuse\) at node 'block1_conv'$"
    expect_line "^  output 'probs': .* FAIL \("
    expect_line "^--- limit 0$"
    expect_line "^\+\+\+ limit 1$"
    # The diff is the application: the BatchNormalization goes, the Conv reads the folded weights.
    expect_line "^-  %block1_bn_out: .* = BatchNormalization\(%block1_conv_out"
    expect_line "^\+  %block1_bn_out: .* = Conv\(%image, %block1_conv_bn_w, %block1_conv_bn_b\)"
    cp "$out" "$work/first.out"
    expect_exit 1 bisect "$model" -O3 --atol 1e-7 --rtol 1e-7
    cmp -s "$out" "$work/first.out" || fail "two bisections printed different results"
    # bisect sets the limit itself; unknown options and missing models are errors.
    expect_exit 2 bisect "$model" --bisect-limit 3
    expect_error "--bisect-limit is what bisect searches"
    expect_exit 2 bisect "$model" --nonsense
    expect_error "unknown option '--nonsense'"
    expect_exit 2 bisect "$work/missing.onnx"
    ;;
regress)
    expect_exit 0 compile "$model" -O2 --report "$work/o2.json"
    expect_exit 0 compile "$model" -O2 --report "$work/o2-again.json"
    expect_exit 0 compile "$model" -O1 --report "$work/o1.json"
    # Each pass in the report: the nodes it left and, if it changed the graph, what it changed.
    python3 - "$work/o2.json" <<'PY' || fail "the report's passes lack nodes/changes"
import json, sys
passes = {p["id"]: p for p in json.load(open(sys.argv[1]))["passes"]}
fuse, dce = passes["fuse"], passes["dce"]
assert fuse["changed"] and fuse["nodes"] > 0 and fuse["changes"]["nodes_removed"] > 0, fuse
assert not dce["changed"] and "changes" not in dce and dce["nodes"] == passes["precision"]["nodes"], dce
PY
    # -O2 keeps the feature maps its f16 ops read in f16; -O1 (no precision pass) keeps none.
    python3 - "$work/o2.json" "$work/o1.json" <<'PY' || fail "the reports' f16 figures are not what they should be"
import json, sys
o2, o1 = (json.load(open(f))["memory"] for f in sys.argv[1:3])
assert o2["f16_tensors"] > 0 and o2["f16_saved_bytes"] > 0, o2
assert o1["f16_tensors"] == 0 and o1["f16_saved_bytes"] == 0, o1
PY
    # The same compile twice: nothing moved.
    expect_exit 0 regress "$work/o2-again.json" --baseline "$work/o2.json"
    expect_line "^no regression "
    # -O1 against an -O2 baseline: slower (no fusion), fewer layout conversions.
    expect_exit 1 regress "$work/o1.json" --baseline "$work/o2.json"
    expect_line "^  est_cycles +[0-9]+ +[0-9]+ +\+[0-9.]+% +REGRESSED$"
    expect_line "^  layout_conversions_after +1 +0 +-1 +better$"
    expect_line "^REGRESSION "
    # -O1 keeps nothing on chip (keep-on-chip is an -O2 rule) and keeps every feature map in
    # f32 (no precision pass, so no reader rounds to f16): its DRAM arena is about 14x as large
    # (-O2 keeps every feature map on chip but the halo rows, which its DRAM buffers hold).
    expect_exit 1 regress "$work/o1.json" --baseline "$work/o2.json" --latency 1000
    expect_line "^  dram_peak_bytes +[0-9]+ +[0-9]+ +\+[0-9.]+% +REGRESSED$"
    expect_exit 1 regress "$work/o1.json" --baseline "$work/o2.json" --latency 1000 --memory 100
    expect_exit 0 regress "$work/o1.json" --baseline "$work/o2.json" --latency 1000 --memory 2000
    # -O2 against -O1: faster, but one layout conversion more than the bound of 0 (the pooled
    # features leave the blocked region; the image enters it without one).
    expect_exit 1 regress "$work/o2.json" --baseline "$work/o1.json"
    expect_line "^  layout_conversions_after +0 +1 +\+1 +REGRESSED$"
    expect_exit 0 regress "$work/o2.json" --baseline "$work/o1.json" --grey 1
    # Bad reports: one error line each, exit 2.
    printf 'not json' >"$work/junk.json"
    printf '{"model": "m", "graph": "g", "target": "npu-a"}' >"$work/empty.json"
    sed 's/"graph": "residual_cnn"/"graph": "other"/' "$work/o2.json" >"$work/other.json"
    expect_exit 2 regress "$work/o2.json" --baseline "$work/missing.json"
    expect_error "cannot open"
    expect_exit 2 regress "$work/junk.json" --baseline "$work/o2.json"
    expect_error "invalid JSON"
    expect_exit 2 regress "$work/empty.json" --baseline "$work/o2.json"
    expect_error "not a compile report (sextant-cli compile --report): no field 'est_cycles'"
    expect_exit 2 regress "$work/other.json" --baseline "$work/o2.json"
    expect_error "the reports are of different compiles"
    expect_exit 2 regress "$work/o2.json"
    expect_error "no --baseline report given"
    expect_exit 2 regress "$work/o2.json" --baseline "$work/o1.json" --latency -3
    ;;
sram)
    # The SRAM plan: keep-on-chip is a rule like the graph's, listed, counted, switchable.
    expect_exit 0 rules
    expect_line "^keep-on-chip +rule:lower +-O2 +keep a feature map in its core's SRAM"
    expect_exit 0 compile "$model" --stats --report "$work/on.json" -o "$work/artifact"
    expect_line "^sram per core \(peak / capacity, lower bound\):$"
    [ "$(grep -Ec '^  core [0-7] +[0-9.]+ KiB / 512\.0 KiB \( *[0-9.]+ %\), lower bound [0-9.]+ KiB$' "$out")" -eq 8 ] ||
        fail "not one SRAM line per core of npu-a (8)"
    expect_line "^dram traffic: [0-9.]+ [KM]iB vs compulsory [0-9.]+ [KM]iB \([0-9]+\.[0-9]{2}x\)$"
    expect_line "^on chip \(keep-on-chip\): [1-9][0-9]* tensors kept( \([0-9]+ pieces on their cores\))?, [0-9.]+ [KM]iB of SRAM, [0-9.]+ [KM]iB of DRAM traffic saved$"
    # Its counters: applications, and rejections by the kind of reason.
    expect_line "^  keep-on-chip: [1-9][0-9]* / [1-9][0-9]* / [1-9][0-9]* / 0, "
    expect_line "^      rejected [1-9][0-9]*x: graph output$"
    expect_exit 0 compile "$model" --disable keep-on-chip --stats --report "$work/off.json"
    expect_line "^on chip \(keep-on-chip\): 0 tensors kept, 0\.0 KiB of SRAM, 0\.0 KiB of DRAM traffic saved$"
    grep -q "^  keep-on-chip:" "$out" && fail "keep-on-chip was counted although disabled"
    # What a user reads in the reports: one peak per core, each within the capacity; the traffic
    # at least what must move; switching the rule off moves at least as much.
    python3 - "$work/on.json" "$work/off.json" <<'PY' || fail "the report's SRAM figures are not what they should be"
import json, sys
on, off = (json.load(open(f))["memory"] for f in sys.argv[1:3])
for m in (on, off):
    assert len(m["sram_peak"]) == 8 and len(m["sram_lower_bound"]) == 8, m
    assert all(0 < p <= m["sram_capacity"] for p in m["sram_peak"]), m
    assert all(lb <= p for lb, p in zip(m["sram_lower_bound"], m["sram_peak"])), m
    assert m["dram_traffic_bytes"] >= m["compulsory_bytes"] > 0, m
assert on["sram_capacity"] == 512 * 1024, on
assert on["on_chip_tensors"] > 0 and on["on_chip_saved_bytes"] > 0, on
assert off["on_chip_tensors"] == 0 and off["on_chip_saved_bytes"] == 0, off
assert off["dram_traffic_bytes"] >= on["dram_traffic_bytes"], (off, on)
assert off["compulsory_bytes"] == on["compulsory_bytes"], (off, on)
assert on["f16_tensors"] > 0 and on["f16_saved_bytes"] > 0, on
rules = {r["rule"]: r for r in json.load(open(sys.argv[1]))["rules"]}
assert rules["keep-on-chip"]["applied"] == on["on_chip_tensors"], rules["keep-on-chip"]
PY
    # --print-changed: the Program changed after the IR did, and says which tensors moved.
    expect_exit 0 compile "$model" --print-changed
    expect_line "^\*\*\* Program after 'lower' \(changed by keep-on-chip: [1-9][0-9]* tensors kept in SRAM, [0-9]+ candidates rejected\) \*\*\*$"
    expect_line "^  '[a-z_0-9]+'(\[[0-9]+:[0-9]+\] of dim [0-9])? dram -> sram of core [0-7] at offset [0-9]+ \([0-9.]+ KiB\), [0-9.]+ KiB of DRAM traffic saved$"
    # The artifact keeps the plan and runs; a bisect limit that cuts the rule keeps nothing.
    python3 - "$work/artifact/manifest.json" <<'PY' || fail "the artifact lacks its SRAM plan"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["version"] == 7, m["version"]
# block2_conv's 3x3 window reaches into block1's neighbouring stripes: a halo buffer, kept a
# stripe per core with a DRAM home for the rows the other cores read.
halo = [b for b in m["buffers"] if b["level"] == "dram" and "stripes" in b]
assert halo and any(p["halo_top"] + p["halo_bottom"] > 0 for p in halo[0]["stripes"]["parts"]), halo
assert any("halo_reads" in t for t in m["tasks"])
assert m["sram_buffers"] and m["transfers"] and m["on_chip"], "empty SRAM plan"
assert len(m["memory"]["sram"]) == 8
PY
    expect_exit 0 run "$work/artifact" --inputs "$src/samples/residual_cnn" --expected "$src/samples/residual_cnn"
    expect_line "^output 'probs': .* PASS$"
    expect_exit 0 compile "$model" --bisect-limit 0 --stats
    expect_line "^on chip \(keep-on-chip\): 0 tensors kept, "
    expect_line "^  keep-on-chip: [1-9][0-9]* / 0 / [0-9]+ / [1-9][0-9]*, "
    ;;
*)
    echo "unknown case $case_name"; exit 1 ;;
esac
exit 0
