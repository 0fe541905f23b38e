#!/usr/bin/env bash
# CLI end-to-end checks of `sextant-cli run` and `export-trace`, as a user would type them.
# usage: cli_run.sh CASE SEXTANT_CLI SHARED_DIR SOURCE_DIR WORK_DIR
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE).
set -u
case_name=$1 cli=$2 shared=$3 src=$4 work=$5
mkdir -p "$work"
out="$work/$case_name.out"
err="$work/$case_name.err"

fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
# expect_line REGEX: some line of stdout matches the extended regex.
expect_line() { grep -Eq -- "$1" "$out" || fail "no output line matches: $1"; }

case $case_name in
ops)
    # README's op coverage table is the command's output, not written by hand.
    "$cli" ops --markdown >"$out" 2>"$err" || fail "ops --markdown failed"
    sed -n '/^<!-- ops:begin -->$/,/^<!-- ops:end -->$/p' "$src/README.md" | sed '1d;$d' >"$work/readme-ops.md"
    [ -s "$work/readme-ops.md" ] || fail "README.md has no ops:begin/ops:end block"
    diff -u "$work/readme-ops.md" "$out" >"$work/ops.diff" ||
        fail "README's op table differs from 'sextant-cli ops --markdown' (paste the new output): $(head -20 "$work/ops.diff")"
    count=$(tail -n +3 "$out" | wc -l)
    grep -q "<summary>$count ops</summary>" "$src/README.md" || fail "README's summary line does not say $count ops"
    "$cli" ops --bogus >"$out" 2>"$err"
    [ $? -eq 2 ] || fail "an unknown option did not exit 2"
    ;;
plan-offsets)
    # The Pisarchyk & Lee (2020) instance: optimum 124 = max-live (inclusive op ranges made half-open).
    csv="$work/pl.csv"
    printf 'id,lower,upper,size\n0,0,2,32\n1,1,5,28\n2,2,6,36\n3,3,6,16\n4,4,6,8\n5,5,8,64\n6,6,9,10\n7,7,9,40\n' >"$csv"
    "$cli" plan-offsets "$csv" --out "$work/pl.plan.csv" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    expect_line "^$csv: buffers 8, max-live 124, peak 124 \(1\.000 x\), optimal yes, [0-9]+\.[0-9]{2} s$"
    head -1 "$work/pl.plan.csv" | grep -qx 'id,lower,upper,size,offset' || fail "plan has no offset column"
    [ "$(wc -l <"$work/pl.plan.csv")" -eq 9 ] || fail "plan does not have 8 rows"
    # The written plan reads back as a problem (its offset column ignored) with the same figures.
    "$cli" plan-offsets "$work/pl.plan.csv" >"$out" 2>"$err" || fail "the written plan does not read back"
    expect_line "buffers 8, max-live 124, peak 124 "
    # A capacity below the optimum: exit 1 and the figures that explain it.
    "$cli" plan-offsets "$csv" --capacity 100 >"$out" 2>"$err"
    [ $? -eq 1 ] || fail "a capacity of 100 for a 124-byte problem did not fail"
    expect_line "does not fit the capacity 100: the best plan found needs 124 bytes, and no plan needs less than 124$"
    # A bad row: one error line naming the file and line, exit 2.
    printf 'id,lower,upper,size\n0,0,2,32\n1,3,3,8\n' >"$work/bad.csv"
    "$cli" plan-offsets "$work/bad.csv" >"$out" 2>"$err"
    [ $? -eq 2 ] || fail "a bad CSV did not exit 2"
    grep -qx "error: $work/bad.csv:3: lower 3 is not below upper 3 (a lifetime is \[lower, upper))" "$err" || fail "bad CSV message"
    # Sizes no memory holds (they once overflowed the planner's sums, and it never returned).
    printf 'id,lower,upper,size\n0,0,2,9223372036854775807\n1,1,3,9223372036854775807\n' >"$work/huge.csv"
    timeout 20 "$cli" plan-offsets "$work/huge.csv" >"$out" 2>"$err"
    [ $? -eq 2 ] || fail "sizes over 2^56 bytes in all were not refused"
    grep -qx "error: $work/huge.csv:2: size 9223372036854775807 makes the buffers add up to more than 2^56 bytes (64 PiB), more than any memory holds" "$err" ||
        fail "the huge sizes are not named: $(cat "$err")"
    # MiniMalloc's other spellings and its alignment column: the plan keeps every buffer's own
    # alignment, says which multiple it used, and is written with the alignment column.
    printf 'buffer_id,begin,end,size,alignment\na,0,1,32,32\nb,1,4,28,4\nc,2,5,36,64\n' >"$work/aligned.csv"
    "$cli" plan-offsets "$work/aligned.csv" --out "$work/aligned.plan.csv" >"$out" 2>"$err" || fail "aligned.csv failed"
    expect_line "aligned\.csv: alignments from 4 to 64 bytes: every buffer placed at a multiple of 64$"
    expect_line "aligned\.csv: buffers 3, max-live 64, peak 92 \(1\.438 x\), optimal yes, "
    head -1 "$work/aligned.plan.csv" | grep -qx 'id,lower,upper,size,alignment,offset' || fail "plan lost the alignment column"
    grep -qx 'b,1,5,28,4,64' "$work/aligned.plan.csv" || fail "b is not at 64 over [1, 5): $(cat "$work/aligned.plan.csv")"
    # 30,000 buffers alive together (450 million overlapping pairs; listing them once took 4 GB
    # and minutes): planned by a sweep over time, a stack at max-live, and the plan written.
    awk 'BEGIN { print "id,lower,upper,size"; for (i = 0; i < 30000; i++) print i "," i "," 100000 + i "," 64 * (1 + i % 3) }' \
        >"$work/alive.csv"
    timeout 120 "$cli" plan-offsets "$work/alive.csv" --out "$work/alive.plan.csv" >"$out" 2>"$err"
    [ $? -eq 0 ] || fail "30,000 buffers alive together were not planned"
    expect_line "alive\.csv: buffers 30000, max-live 3840000, peak 3840000 \(1\.000 x\), optimal yes, "
    [ "$(wc -l <"$work/alive.plan.csv")" -eq 30001 ] || fail "the plan of 30,000 buffers does not have 30,000 rows"
    "$cli" plan-offsets "$csv" "$csv" --out "$work/x.csv" >"$out" 2>"$err"
    [ $? -eq 2 ] || fail "--out with two inputs was accepted"
    if [ -d "$shared/memplan" ]; then
        "$cli" plan-offsets "$shared/memplan/example.12.csv" >"$out" 2>"$err" || fail "example.12 failed"
        expect_line "example\.12\.csv: buffers 5, max-live 12, peak 12 \(1\.000 x\), optimal yes, "
    else
        echo "../shared not found: skipped the shared example.12 instance (the rest ran)"
    fi
    ;;
mnist)
    model="$shared/models/ort-examples/mnist.onnx"
    data="$shared/models/ort-examples/test_data/mnist/test_data_set_0"
    if [ ! -f "$model" ]; then echo "../shared not found: skipping the mnist CLI test"; exit 77; fi
    rm -f "$work/mnist.db"
    "$cli" run "$model" --inputs "$data" --compare-reference --profile "$work/mnist.db" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    expect_line "^npu vs reference \(float64, original graph\):$"
    expect_line "^output 'Plus214_Output_0': max_abs [0-9.e+-]+ max_rel [0-9.e+-]+ cosine (1\.000000|0\.999[0-9]*) argmax 7/7 PASS$"
    expect_line "^latency: [1-9][0-9]* cycles \([0-9]+\.[0-9]{2} us at 1 GHz\)$"
    expect_line "^profile: wrote run [0-9]+ to "
    [ -s "$err" ] && fail "unexpected stderr"
    "$cli" export-trace "$work/mnist.db" -o "$work/mnist.json" >"$out" 2>"$err" || fail "export-trace failed"
    # (test_profiler parses the JSON; here: the file has the Task slices of this run)
    grep -q '"ph": "X"' "$work/mnist.json" || fail "trace has no Task slices"
    grep -q '"traceEvents"' "$work/mnist.json" || fail "trace has no traceEvents"
    # The DMA engine of each core that moved data has its own thread, with the Tasks' loads and
    # stores beside their compute (Perfetto shows the transfers under the units).
    grep -q '"name": "core 0 dma"' "$work/mnist.json" || fail "trace has no 'core 0 dma' thread"
    grep -q '"name": "load"' "$work/mnist.json" || fail "trace has no DMA load slices"
    grep -q '"name": "store"' "$work/mnist.json" || fail "trace has no DMA store slices"
    # Determinism across processes: a second run gives the same trace, byte for byte.
    rm -f "$work/again.db"
    "$cli" run "$model" --inputs "$data" --profile "$work/again.db" >"$out" 2>"$err" || fail "second run failed"
    "$cli" export-trace "$work/again.db" -o "$work/again.json" >"$out" 2>"$err" || fail "second export failed"
    cmp -s "$work/mnist.json" "$work/again.json" || fail "two runs gave different traces"
    ;;
mnist-reference)
    model="$shared/models/ort-examples/mnist.onnx"
    data="$shared/models/ort-examples/test_data/mnist/test_data_set_0"
    if [ ! -f "$model" ]; then echo "../shared not found: skipping the mnist reference CLI test"; exit 77; fi
    # Which OpenBLAS kernels the products ran on, and who chose them, is part of the run's
    # header. The test sets the environment it expects instead of reading the user's: unset,
    # Sextant (or OpenBLAS) chooses; set, the user's choice is named and wins.
    env -u OPENBLAS_CORETYPE "$cli" run "$model" --reference --inputs "$data" --expected "$data" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    expect_line "^output 'Plus214_Output_0': max_abs [0-9.e+-]+ max_rel [0-9.e+-]+ cosine 1\.000000 argmax 7/7 PASS$"
    expect_line "^blas: OpenBLAS [0-9.]+, [A-Za-z0-9]+ kernels \((chosen by Sextant: the CPU has .*; set OPENBLAS_CORETYPE to override|the CPU has neither AVX-512 nor AVX2\+FMA: OpenBLAS's own CPU detection|not an x86-64 build: OpenBLAS's own CPU detection)\)$"
    OPENBLAS_CORETYPE=Prescott "$cli" run "$model" --reference --inputs "$data" --expected "$data" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc with OPENBLAS_CORETYPE=Prescott"
    expect_line "^blas: OpenBLAS [0-9.]+, Prescott kernels \(OPENBLAS_CORETYPE=Prescott\)$"
    expect_line "^output 'Plus214_Output_0': .* argmax 7/7 PASS$"
    # An impossible tolerance turns the same run into a FAIL with exit code 1.
    "$cli" run "$model" --reference --float32 --inputs "$data" --expected "$data" --atol 0 --rtol 0 >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 1 ] || fail "exit code $rc with zero tolerance, expected 1"
    expect_line "FAIL"
    ;;
sample)
    "$cli" run "$src/samples/residual_cnn.onnx" --inputs "$src/samples/residual_cnn" \
        --expected "$src/samples/residual_cnn" --compare-reference --mode strict >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc"
    expect_line "^simulated 'residual_cnn' on npu-a \(strict mode\)"
    expect_line "^npu vs expected:$"
    expect_line "^output 'probs': .* cosine (1\.000000|0\.999[0-9]*) .* PASS$"
    expect_line "^latency: [1-9][0-9]* cycles"
    # An artifact of format version 1 (before the SRAM plan) still runs, and computes the same.
    "$cli" run "$src/tests/data/artifact-v1/residual_cnn" --inputs "$src/samples/residual_cnn" \
        --expected "$src/samples/residual_cnn" >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc running the version 1 artifact"
    expect_line "^output 'probs': .* cosine (1\.000000|0\.999[0-9]*) .* PASS$"
    # --per-tensor: every intermediate the NPU computed, against the float64 reference's.
    "$cli" run "$src/samples/residual_cnn.onnx" --inputs "$src/samples/residual_cnn" --compare-reference \
        --per-tensor >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "exit code $rc with --per-tensor"
    expect_line "^per tensor, in graph order \(npu vs float64 reference\):$"
    expect_line "^  PASS max_abs [0-9.e+-]+ max_rel [0-9.e+-]+ cosine [01]\.[0-9]+  'block1_relu_out' \(node 'block1_conv'\)$"
    expect_line "^  PASS .* 'probs' \(node 'softmax'\)$"
    expect_line "^[1-9][0-9]* tensors compared, [0-9]+ without a reference counterpart; every compared tensor is within tolerance$"
    # --critical-path: the chain of Tasks behind the latency, each with what it waited for.
    "$cli" run "$src/samples/residual_cnn.onnx" --critical-path >"$out" 2>"$err" || fail "--critical-path failed"
    expect_line "^critical path: [1-9][0-9]* of [1-9][0-9]* Tasks, busy [0-9]+ of [0-9]+ cycles"
    expect_line "^  where the time goes: compute [0-9]+ \([0-9]+%\), DMA [0-9]+ \([0-9]+%\), DRAM latency [0-9]+ \([0-9]+%\), dispatch [0-9]+ \([0-9]+%\), events [0-9]+ \([0-9]+%\), other waits [0-9]+ \([0-9]+%\)$"
    # The first convolution reads the 3-channel image as it is (read-small-channel-input).
    expect_line "^ +[0-9]+ block1_conv(\[[0-9]+/[0-9]+\])? .* first$"
    expect_line "^ +[0-9]+ softmax +Softmax .* after Task [0-9]+ \(dependency, \+[0-9]+\)$"
    # A result out of tolerance on an f16 target says so and how to see the precision's share;
    # on an all-f32 target the same failure has no such note.
    "$cli" run "$src/samples/residual_cnn.onnx" --compare-reference --atol 0 --rtol 0 >"$out" 2>"$err"
    [ $? -eq 1 ] || fail "a zero tolerance should fail"
    expect_line '^note: the target computes in f16 \(cube_inputs "f16", vector_precision "f16"\); with "f32" for both'
    # Out of tolerance is not out of range: nothing here overflows f16.
    grep -Eq '^note: (f16 overflows|an output holds an infinity)' "$out" && fail "an f16 range note on values f16 holds"
    sed -e 's/"cube_inputs": "f16"/"cube_inputs": "f32"/' -e 's/"vector_precision": "f16"/"vector_precision": "f32"/' \
        "$src/resources/targets/npu-a.json" >"$work/f32.json"
    "$cli" run "$src/samples/residual_cnn.onnx" --compare-reference --atol 0 --rtol 0 --target "$work/f32.json" >"$out" 2>"$err"
    [ $? -eq 1 ] || fail "a zero tolerance should fail on the f32 target too"
    grep -q '^note: the target computes in f16' "$out" && fail "an f32 target got the f16 note"
    # compile says how many Tasks are a node's work shared out across the cores.
    "$cli" compile "$src/samples/residual_cnn.onnx" >"$out" 2>"$err" || fail "compile failed"
    expect_line "^compiled 'residual_cnn' for npu-a: [1-9][0-9]* tasks on 8 of 8 cores"
    expect_line "^  tasks: [1-9][0-9]* nodes, [1-9][0-9]* of them shared out across cores in [1-9][0-9]* parts$"
    # compile --inputs: the test data must be the model's inputs; a model with symbolic dims takes
    # its shapes from them, as run does.
    "$cli" compile "$src/samples/residual_cnn.onnx" --inputs "$src/samples/residual_cnn" >"$out" 2>"$err" ||
        fail "compile --inputs with the sample's own data failed"
    "$cli" compile "$src/samples/residual_cnn.onnx" --inputs "$work/no-such-dir" >"$out" 2>"$err"
    [ $? -eq 2 ] || fail "compile --inputs with a missing folder did not exit 2"
    grep -q "^error: compile: test data folder '$work/no-such-dir' does not exist$" "$err" || fail "missing folder message"
    rec="$shared/models/paddleocr/ch_PP-OCRv4_rec_infer.onnx"
    if [ -f "$rec" ]; then
        recdata="$shared/models/paddleocr/test_data/ch_PP-OCRv4_rec_infer/test_data_set_0"
        "$cli" compile "$rec" >"$out" 2>"$err"
        [ $? -eq 2 ] || fail "compiling a model with symbolic dims and no shapes did not exit 2"
        "$cli" compile "$rec" --inputs "$recdata" --report "$work/rec.json" >"$out" 2>"$err" ||
            fail "compile --inputs did not take the shapes from the test data"
        expect_line "^compiled 'Model from PaddlePaddle\.' for npu-a: [1-9][0-9]* tasks"
        "$cli" compile "$rec" --inputs "$recdata" --shape x=1x3x48x160 >"$out" 2>"$err"
        [ $? -eq 2 ] || fail "--shape against --inputs was accepted"
        grep -q "input_0.pb' has dims 1x3x48x320, but the model's input 'x' is 1x3x48x160$" "$err" || fail "dims message"
    else
        echo "../shared not found: skipped compile --inputs on a model with symbolic dims (the rest ran)"
    fi
    # compare-runs: -O1 then -O2 appended to one database; its two newest runs, A -> B.
    rm -f "$work/runs.db"
    "$cli" run "$src/samples/residual_cnn.onnx" -O1 --profile "$work/runs.db" >"$out" 2>"$err" || fail "run -O1 --profile"
    "$cli" run "$src/samples/residual_cnn.onnx" -O2 --profile "$work/runs.db" >"$out" 2>"$err" || fail "run -O2 --profile"
    "$cli" compare-runs "$work/runs.db" --all >"$out" 2>"$err"
    rc=$?
    [ $rc -eq 0 ] || fail "compare-runs exit code $rc"
    expect_line "^A: runs\.db run 1 \(residual_cnn\.onnx, npu-a\)$"
    expect_line "^B: runs\.db run 2 \(residual_cnn\.onnx, npu-a\)$"
    expect_line "^  latency: [0-9,]+ cycles -> [0-9,]+ cycles \([+-][0-9.]+ %\)"
    expect_line "^  groups matched by name: [1-9][0-9]*; only in A: [0-9]+, only in B: [0-9]+$"
    expect_line "^  block1_conv +Conv( x[0-9]+)? -> FusedConv( x[0-9]+)? +[0-9,]+ +[0-9,]+ +[+-][0-9]+  [+-][0-9.]+ %$"
    ;;
inject)
    # Faults planted with --inject in a run of a compiled artifact (it passed the artifact reader's
    # checks): the safety net that catches each, the names it gives, and the exit codes.
    art="$work/art"
    rm -rf "$art"
    "$cli" compile "$src/samples/residual_cnn.onnx" -o "$art" >"$out" 2>"$err" || fail "compile -o failed"
    ins=(--inputs "$src/samples/residual_cnn")
    # run_inject SPEC [more options]: sets rc; stdout and stderr in $out and $err.
    run_inject() { local spec=$1; shift; "$cli" run "$art" "${ins[@]}" --inject "$spec" "$@" >"$out" 2>"$err"; rc=$?; }
    # expect_stop SPEC [more options]: a safety net stopped the run: exit 3, one stderr line.
    expect_stop() {
        run_inject "$@"
        [ $rc -eq 3 ] || fail "$1: exit code $rc, expected 3 (a safety net stopped the run)"
        [ "$(wc -l <"$err")" -eq 1 ] || fail "$1: expected one stderr line"
    }
    # expect_err REGEX WHAT: the stderr line matches the extended regex.
    expect_err() { grep -Eq -- "$1" "$err" || fail "$2"; }
    # first_task KIND [REGEX]: the lowest Task id the fault fits (a fault that does not fit is
    # exit 2), and whose "inject ..." line matches REGEX.
    first_task() {
        local n
        for ((n = 0; n < 400; n++)); do
            run_inject "$1:$n"
            if [ $rc -ne 2 ]; then
                grep -Eq -- "^inject $1:$n: .*${2:-}" "$out" && { echo $n; return; }
                continue
            fi
            grep -q "^error: run: --inject $1:$n: " "$err" || fail "$1:$n: exit 2 without the --inject error line"
        done
        fail "no Task fits $1 ${2:-}"
    }
    "$cli" run "$art" "${ins[@]}" --save-outputs "$work/clean" --critical-path >"$out" 2>"$err" || fail "clean run failed"
    clean_latency=$(sed -n 's/^latency: \([0-9]*\) cycles.*/\1/p' "$out")
    # The outputs saved read back: --expected on them matches to the last bit.
    [ -s "$work/clean/output_0.pb" ] || fail "--save-outputs wrote no output_0.pb"
    "$cli" run "$art" "${ins[@]}" --expected "$work/clean" >"$out" 2>"$err" || fail "--expected on saved outputs failed"
    expect_line "^output 'probs': max_abs 0\.0e\+00 .* PASS$"

    # A dropped event record: the watchdog names the waiting Task, its node, the event, and the
    # Task that should have recorded it. Exit 3: a safety net stopped the run.
    n=$(first_task drop-record)
    [[ $n =~ ^[0-9]+$ ]] || { echo "$n"; exit 1; }
    expect_stop "drop-record:$n"
    expect_err "^error: watchdog: no task can make progress at cycle [0-9]+ \([0-9]+ of [0-9]+ tasks finished\); " \
        "no watchdog line"
    expect_err "task [0-9]+ '[^']+' \(nodes? '[^']+'.*\) on core [0-9]+ waits on event [0-9]+ \(slot [0-9]+ of core [0-9]+\), which task $n '[^']+' \(nodes? '[^']+'[^)]*\) should have recorded: task $n ended at cycle [0-9]+ without recording it \(injected fault drop-record:$n\)" \
        "the watchdog does not name waiter, node, event and recorder"
    expect_line "^inject drop-record:$n: task $n '[^']+' \(nodes? .*\) ends without recording events? [0-9, ]+ \(waited on by task [0-9]+ "

    # A delayed DMA on the first Task of the critical path: a longer run, the same numbers.
    first=$("$cli" run "$art" "${ins[@]}" --critical-path | sed -n 's/^ *\([0-9][0-9]*\) .* first$/\1/p')
    [ -n "$first" ] || fail "no first Task on the critical path"
    rm -f "$work/slow.db"
    run_inject "delay-dma:$first" --critical-path --save-outputs "$work/slow" --profile "$work/slow.db"
    [ $rc -eq 0 ] || fail "delay-dma:$first: exit code $rc, expected 0 (the numbers stay right)"
    expect_line "^npu vs reference \(float64, the artifact's compiled graph\):$"
    expect_line "^output 'probs': .* PASS$"
    expect_line "^inject delay-dma:$first: task $first ran cycles [0-9]+\.\.[0-9]+, DMA [0-9]+ cycles$"
    expect_line "^ +$first .* first$"
    slow_latency=$(sed -n 's/^latency: \([0-9]*\) cycles.*/\1/p' "$out")
    [ "$slow_latency" -gt "$clean_latency" ] || fail "delay-dma: latency $slow_latency not above $clean_latency"
    cmp -s "$work/clean/output_0.pb" "$work/slow/output_0.pb" || fail "delay-dma changed the outputs"
    # The profile of a faulted run says so in its metrics.
    /usr/bin/python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
sys.exit(0 if c.execute('select count(*) from metrics m join strings s on s.id = m.key where s.text = ? and m.value = 1', (sys.argv[2],)).fetchone()[0] == 1 else 1)" \
        "$work/slow.db" "inject:delay-dma:$first" || fail "the profile has no metric inject:delay-dma:$first"

    # An address shift: wrong outputs against the reference (exit 1), and with --check-races the
    # race checker names both Tasks whose buffers overlap (exit 3).
    # (The sample is a chain: what a later Task reads beside Task N's output is a weight.)
    n=$(first_task shift-address)
    [[ $n =~ ^[0-9]+$ ]] || { echo "$n"; exit 1; }
    run_inject "shift-address:$n" --save-outputs "$work/shifted"
    [ $rc -eq 1 ] || fail "shift-address:$n: exit code $rc, expected 1 (a comparison failed)"
    expect_line "^inject shift-address:$n: task $n '[^']+' .*: its buffer [0-9]+ \('[^']+'\) moves in .* onto live buffer [0-9]+ "
    expect_line "^output 'probs': .* FAIL( \\(.*\\))?$"
    expect_line "^note: the fault injected \\(shift-address:$n\\) ran: the differences above are what it did to the numbers$"
    cmp -s "$work/clean/output_0.pb" "$work/shifted/output_0.pb" && fail "shift-address left the outputs as they were"
    moved=$(sed -n "s/^inject shift-address:$n: .*: its buffer \\([0-9]*\\) .*/\\1/p" "$out")
    [ -n "$moved" ] || fail "the inject line names no buffer"
    expect_stop "shift-address:$n" --check-races
    # Either a Task reads bytes another buffer's write replaced, or it touches a buffer that a
    # running Task's overlaps: both name two Tasks with their nodes, the shifted buffer and the range.
    grep -Eq "^error: race: task [0-9]+ '[^']+' \\(nodes? '[^']+'[^)]*\\) on core [0-9]+ at cycle [0-9]+ (reads|writes) buffer " \
        "the race line does not start with the Task and its node"
    grep -Eq "(buffer $moved \\('[^']+'\\) written by task [0-9]+ '[^']+' \\(nodes? |buffer $moved \\('[^']+'\\) that running task [0-9]+ '[^']+' \\(nodes? )" \
        "the race does not name the Task writing the shifted buffer $moved"
    expect_err "the memory plan overlaps two live buffers.*, sharing \\[[0-9]+, [0-9]+\\) in DRAM$" \
        "the race does not say the plan overlaps two live buffers, and where"

    # Bad specs: one error line, exit 2.
    for spec in bogus:1 drop-record drop-record:x drop-record:99999; do
        run_inject "$spec"
        [ $rc -eq 2 ] || fail "--inject $spec: exit code $rc, expected 2"
        [ "$(wc -l <"$err")" -eq 1 ] || fail "--inject $spec: expected one stderr line"
    done
    grep -Eqx "error: run: --inject drop-record:99999: the program has no task 99999 \(its task ids run 0\.\.[0-9]+\)" "$err" ||
        fail "out-of-range message"
    run_inject bogus:1
    grep -qx "error: run: --inject 'bogus:1': unknown kind 'bogus' (kinds: drop-record, delay-dma, shift-address)" "$err" ||
        fail "unknown-kind message"
    "$cli" run "$art" --reference --inject drop-record:1 >"$out" 2>"$err"
    [ $? -eq 2 ] || fail "--reference --inject was accepted"
    ;;
bad-input)
    # Each bad input: exit code 2 and exactly one "error: ..." line, no crash.
    check() {
        "$@" >"$out" 2>"$err"
        rc=$?
        [ $rc -eq 2 ] || fail "exit code $rc for: $*"
        [ "$(wc -l <"$err")" -eq 1 ] || fail "expected one stderr line for: $*"
        grep -q "^error: " "$err" || fail "no 'error: ' line for: $*"
    }
    printf 'not an onnx model' >"$work/junk.onnx"
    printf 'not a database either, but long enough to look like a header of something' >"$work/junk.db"
    check "$cli" run "$work/missing.onnx"
    check "$cli" run "$work/junk.onnx"
    check "$cli" run "$src/samples/residual_cnn.onnx" --mode fast
    check "$cli" run "$src/samples/residual_cnn.onnx" --inputs "$work"
    check "$cli" run "$src/samples/residual_cnn.onnx" --atol -1
    check "$cli" compare-runs "$work/junk.db" "$work/junk.db"
    check "$cli" compare-runs "$work/missing.db"
    check "$cli" compare-runs "$work/junk.db" --tasks many
    check "$cli" run "$src/samples/residual_cnn.onnx" --per-tensor
    check "$cli" run "$work"
    check "$cli" export-trace "$work/junk.db" -o "$work/x.json"
    check "$cli" export-trace "$work/missing.db" -o "$work/x.json"
    # Files of endless bytes are bounded reads with an error naming the file, not a process that
    # grows until the kernel stops it (issue 20).
    check "$cli" compile "$src/samples/residual_cnn.onnx" --target /dev/zero
    grep -q "/dev/zero: target file is larger than 1 MiB" "$err" || fail "the endless target is not named: $(cat "$err")"
    check "$cli" compile "$src/samples/residual_cnn.onnx" --fusion-switch /dev/zero
    grep -q "/dev/zero: fusion switch file is larger than" "$err" || fail "the endless switch file is not named"
    check "$cli" run "$src/samples/residual_cnn.onnx" --ctc-keys /dev/zero
    grep -q "/dev/zero: character list is larger than" "$err" || fail "the endless key list is not named"
    # A folder where a file belongs says so (it was "malformed JSON at line 1, column 1").
    check "$cli" compile "$src/samples/residual_cnn.onnx" --target "$work"
    grep -q "is a folder, not a target file" "$err" || fail "the folder given as a target is not named"
    mkdir -p "$work/folder-artifact/manifest.json"
    check "$cli" run "$work/folder-artifact"
    grep -q "manifest.json: is a folder, not a file" "$err" || fail "the folder manifest is not named: $(cat "$err")"
    # A manifest of 2 GiB (sparse: no disk used) is refused before it is read into memory.
    "$cli" compile "$src/samples/residual_cnn.onnx" -o "$work/huge-artifact" >/dev/null 2>&1 || fail "compile for the huge case"
    truncate -s 2G "$work/huge-artifact/manifest.json"
    check "$cli" run "$work/huge-artifact"
    grep -q "manifest.json: 2147483648 bytes, more than an artifact's 1 GiB limit" "$err" || fail "the huge manifest is not named"
    rm -rf "$work/huge-artifact"
    # What is not a file is named as such: a device was "empty", and a named pipe nobody writes to
    # kept the command waiting forever (the timeout turns a wait into a failure here).
    rm -rf "$work/pipes"; mkdir -p "$work/pipes"
    mkfifo "$work/pipes/input_0.pb" "$work/pipes/m.onnx" "$work/pipes/p.db"
    pipe_check() { # pipe_check REGEX command...
        local want=$1; shift
        check timeout 20 "$@"
        grep -Eq "$want" "$err" || fail "not named as it is: $(cat "$err")"
    }
    pipe_check "model '/dev/zero' is a character device, not a file" "$cli" compile /dev/zero
    pipe_check "model '.*/m.onnx' is a named pipe, not a file" "$cli" compile "$work/pipes/m.onnx"
    pipe_check "tensor file '.*/input_0.pb' is a named pipe, not a file" \
        "$cli" run "$src/samples/residual_cnn.onnx" --inputs "$work/pipes"
    pipe_check "profile '.*/p.db': it is a named pipe, not a file" "$cli" export-trace "$work/pipes/p.db" -o "$work/x.json"
    pipe_check "profile '.*/p.db': it is a named pipe, not a file" \
        "$cli" run "$src/samples/residual_cnn.onnx" --profile "$work/pipes/p.db"
    "$cli" compile "$src/samples/residual_cnn.onnx" -o "$work/pipe-artifact" >/dev/null 2>&1 || fail "compile for the pipe case"
    rm "$work/pipe-artifact/manifest.json" && mkfifo "$work/pipe-artifact/manifest.json"
    pipe_check "manifest.json: is a named pipe, not a file" "$cli" run "$work/pipe-artifact"
    rm -rf "$work/pipes" "$work/pipe-artifact"
    ;;
artifact)
    # A compiled artifact: its manifest's hash file checks with any FNV-1a 64 implementation (this
    # one is the Python of docs/artifact-format.md), and each manifest number that does not fit the
    # others is exit 2 and one "error:" line naming the field. The edits re-write the hash file, so
    # that the field checks are what must catch them.
    art="$work/art"
    rm -rf "$art"
    "$cli" compile "$src/samples/residual_cnn.onnx" -o "$art" >"$out" 2>"$err" || fail "compile failed"
    fnv() { python3 -c 'import sys
h = 0xcbf29ce484222325
for b in open(sys.argv[1], "rb").read(): h = ((h ^ b) * 0x100000001b3) % 2**64
print("%016x  manifest.json" % h)' "$1"; }
    [ "$(fnv "$art/manifest.json")" = "$(cat "$art/manifest.json.fnv1a64")" ] || fail "the hash file is not the FNV-1a 64 of manifest.json"
    # edit NAME PYTHON FIELD: a copy of the artifact with PYTHON run on its manifest m (b: its
    # buffers, d: the first intermediate in DRAM), which must be rejected naming FIELD.
    edit() {
        rm -rf "$work/$1" && cp -r "$art" "$work/$1"
        python3 - "$work/$1/manifest.json" "$2" <<'PY' || fail "editing the manifest for $1"
import json, sys
path, code = sys.argv[1], sys.argv[2]
m = json.load(open(path))
b = m["buffers"]
# d: a whole intermediate in DRAM with room above it (not the top of the arena, not a halo buffer)
d = next(x["id"] for x in b if x["kind"] == "intermediate" and x["level"] == "dram" and "stripes" not in x
         and x["offset"] + x["size"] + 64 <= m["memory"]["dram_total"])
exec(code)
open(path, "w").write(json.dumps(m, indent=1, sort_keys=True))
PY
        fnv "$work/$1/manifest.json" >"$work/$1/manifest.json.fnv1a64"
        "$cli" run "$work/$1" >"$out" 2>"$err"
        rc=$?
        [ $rc -eq 2 ] || fail "exit code $rc for the artifact with $1, expected 2"
        [ "$(wc -l <"$err")" -eq 1 ] || fail "expected one stderr line for $1"
        grep -Eq "^error: .*manifest.json: field '$3' " "$err" || fail "the error for $1 does not name field '$3': $(cat "$err")"
    }
    edit dma 'm["tasks"][0]["dma_bytes"] = 2**62' 'tasks\[0\]\.dma_bytes'
    edit tile-zeros 'm["tasks"][0]["tiling"]["tile_shape"] = [0, 0, 0, 0]' 'tasks\[0\]\.tiling\.tile_shape\[0\]'
    edit tile-huge 'm["tasks"][0]["tiling"]["tile_shape"][2] = 2**40' 'tasks\[0\]\.tiling\.tile_shape\[2\]'
    edit first-task 'b[d]["first_task"] = 2**64 - 1' 'buffers\[[0-9]+\]\.first_task'
    edit last-task 'b[d]["last_task"] = 2**64 - 1' 'buffers\[[0-9]+\]\.last_task'
    edit io-base 'm["memory"]["io_base"] = 2**64 - 1' 'memory\.io_base'
    edit outputs 'm["outputs"] = []' 'outputs'
    edit inputs 'm["inputs"] = []' 'inputs'
    edit size 'b[d]["size"] += 64' 'buffers\[[0-9]+\]\.size'
    edit dtype 'b[d]["dtype"] = "f64"' 'buffers\[[0-9]+\]\.size'
    # A halo buffer's stripe storing more rows than it has; a halo read of a buffer not read.
    edit halo-rows 'h = next(x for x in b if x["level"] == "dram" and "stripes" in x); h["stripes"]["parts"][0]["halo_top"] = 10**6' \
        'buffers\[[0-9]+\]\.stripes\.parts\[0\]\.halo_top'
    edit halo-read 't = next(x for x in m["tasks"] if "halo_reads" in x); t["halo_reads"][0]["buffer"] = t["outputs"][0]' \
        'tasks\[[0-9]+\]\.halo_reads\[0\]\.buffer'
    # Halo buffers came with version 4: a version 3 manifest that has one was not written by Sextant.
    edit halo-version 'm["version"] = 3' 'buffers\[[0-9]+\]\.stripes'
    # A changed manifest whose hash file was left alone is a corrupt manifest.
    rm -rf "$work/stale" && cp -r "$art" "$work/stale"
    sed -i 's/"est_cycles": \([0-9]\)/"est_cycles": 9\1/' "$work/stale/manifest.json"
    "$cli" run "$work/stale" >"$out" 2>"$err"
    [ $? -eq 2 ] || fail "a manifest not matching its hash file did not exit 2"
    grep -q "manifest.json: content hash [0-9a-f]* does not match [0-9a-f]* in manifest.json.fnv1a64 (corrupt file)" "$err" \
        || fail "the stale hash is not named: $(cat "$err")"
    # What the version 2 writer wrote (the old hash, no hash file) still runs, and computes the same.
    "$cli" run "$src/tests/data/artifact-v2/residual_cnn" --inputs "$src/samples/residual_cnn" \
        --expected "$src/samples/residual_cnn" >"$out" 2>"$err" || fail "exit code $? running the version 2 artifact"
    expect_line "^output 'probs': .* cosine (1\.000000|0\.999[0-9]*) .* PASS$"
    # A binary file grown past what the manifest says (sparse: no disk used) is named before it is
    # read (it was read whole first, and a process that cannot hold 30 GiB ended in an abort).
    rm -rf "$work/grown" && cp -r "$art" "$work/grown"
    truncate -s 30G "$work/grown/weights.bin"
    "$cli" run "$work/grown" >"$out" 2>"$err"
    [ $? -eq 2 ] || fail "a grown weights.bin did not exit 2"
    grep -Eq "^error: .*grown/weights.bin: size 32212254720 bytes, manifest says [0-9]+ \(truncated or wrong file\)$" "$err" ||
        fail "the grown weights.bin is not named: $(cat "$err")"
    rm -rf "$work/grown"
    # A full disk (a small tmpfs in a private mount namespace): compiling over an artifact fails
    # with the system's reason and leaves the artifact there as it was, a failed new one leaves no
    # folder, and a failed trace export leaves an earlier trace of that name as it was.
    if unshare -rm true 2>/dev/null; then
        mkdir -p "$work/full"
        unshare -rm sh -c 'mount -t tmpfs -o size=512k tmpfs "$1" || exit 3
            cli=$2 src=$3 full=$1
            "$cli" compile "$src/samples/residual_cnn.onnx" -o "$full/art" >/dev/null || exit 4
            "$cli" run "$src/samples/residual_cnn.onnx" --profile "$full/p.db" >/dev/null || exit 4
            "$cli" export-trace "$full/p.db" -o "$full/t.json" >/dev/null || exit 4
            (cd "$full/art" && md5sum *) >"$full/art.md5"; md5sum "$full/t.json" >"$full/t.md5"
            cat /dev/zero >"$full/filler" 2>/dev/null; truncate -s -60K "$full/filler" # 60 KiB left
            "$cli" compile "$src/samples/residual_cnn.onnx" -O0 -o "$full/art"; echo "over: $?"
            "$cli" compile "$src/samples/residual_cnn.onnx" -o "$full/new"; echo "new: $?"
            [ -e "$full/new" ] && echo "new folder left"
            cat /dev/zero >>"$full/filler" 2>/dev/null # nothing left
            "$cli" export-trace "$full/p.db" -o "$full/t.json"; echo "trace: $?"
            (cd "$full/art" && md5sum -c --quiet "$full/art.md5") && echo "artifact unchanged"
            md5sum -c --quiet "$full/t.md5" && echo "trace unchanged"
            ls -A "$full" "$full/art" | grep -F ".tmp-" && echo "temporary left"
            "$cli" run "$full/art" >/dev/null && echo "artifact runs"' sh "$work/full" "$cli" "$src" >"$out" 2>"$err"
        rc=$?
        [ $rc -eq 3 ] && fail "could not mount a tmpfs"
        [ $rc -eq 4 ] && fail "could not write the first artifact, profile or trace on the small tmpfs"
        expect_line "^over: 2$"
        expect_line "^new: 2$"
        expect_line "^trace: 2$"
        expect_line "^artifact unchanged$"
        expect_line "^trace unchanged$"
        expect_line "^artifact runs$"
        grep -q "new folder left\|temporary left" "$out" && fail "a failed write left files behind"
        grep -q "^error: artifact file '.*': write failed (No space left on device)$" "$err" ||
            fail "the full disk is not named: $(cat "$err")"
        grep -q "^error: trace '.*t.json': write failed (No space left on device)$" "$err" ||
            fail "the full disk is not named for the trace: $(cat "$err")"
    else
        echo "unshare cannot make a mount namespace here: skipped the full-disk case (the rest ran)"
    fi
    ;;
profile-db)
    # Damaged and edited profile databases (tests/fuzz-corpus/profile, the fuzzer's seeds): exit 2
    # and an error naming the file and what is wrong, not numbers read from the damage (issue 20).
    corpus="$src/tests/fuzz-corpus/profile"
    check_error() { # check_error REGEX command...: exit 2, the last stderr line 'error: ' matching REGEX
        local want=$1; shift
        "$@" >"$out" 2>"$err"
        rc=$?
        [ $rc -eq 2 ] || fail "exit code $rc for: $*"
        tail -1 "$err" | grep -Eq -- "^error: .*$want" || fail "stderr does not end in an error matching '$want' for: $*"
    }
    for f in "$corpus"/*.db; do cp -f "$f" "$work/"; done
    check_error "empty_strings\.db': table runs, row 1: run 1: column 'model' holds the integer [0-9]+, which is not the id of a row of table strings" \
        "$cli" compare-runs "$work/empty_strings.db"
    check_error "flipped_page\.db' is damaged: SQLite's quick_check reports" "$cli" export-trace "$work/flipped_page.db" -o "$work/x.json"
    check_error "table tasks, row [0-9]+: Task 1 of run 1: column 'start' holds the text 'soon', not an integer" \
        "$cli" compare-runs "$work/text_in_integer.db:1" "$work/text_in_integer.db:1"
    check_error "table deps, row 1: a dependency of run 1 names Task 999 \(src\), which run 1 does not have" \
        "$cli" export-trace "$work/dangling_dep.db" -o "$work/x.json"
    check_error "run 1 has a second Task with id 0" "$cli" export-trace "$work/duplicate_task.db" -o "$work/x.json"
    # A Task ending 7 cycles later than it was written: only the run's checksum tells.
    check_error "table checksums, row 1: run 1's Tasks do not match the checksum written with them" \
        "$cli" compare-runs "$work/changed_end.db:1" "$work/synthetic_24_checksummed.db:1"
    "$cli" compare-runs "$work/synthetic_24_checksummed.db:1" "$work/synthetic_24.db:1" >"$out" 2>"$err" ||
        fail "the sound synthetic databases do not compare"
    [ ! -e "$work/x.json" ] || fail "a failed export left a file"
    # Appending: never into another program's file or a damaged one; the file stays as it was.
    for f in flipped_page foreign_table; do
        check_error "the run was not saved" "$cli" run "$src/samples/residual_cnn.onnx" --profile "$work/$f.db"
        cmp -s "$work/$f.db" "$corpus/$f.db" || fail "run --profile changed $f.db"
    done
    grep -q "is not a profile database (no schema_version table; it holds table photos)" "$err" ||
        fail "the foreign file is not named as such"
    # The version-2 fixture still reads.
    cp -f "$src/tests/data/profile-v2/residual_cnn.db" "$work/v2.db"
    "$cli" compare-runs "$work/v2.db:1" "$work/v2.db:1" >"$out" 2>"$err" || fail "the version-2 fixture does not compare"
    expect_line "^  latency: 6,481 cycles -> 6,481 cycles \(\+0\.0 %\)"
    # Written and read: nothing is left beside the file (the writer leaves it in rollback mode).
    rm -f "$work/clean.db"*
    "$cli" run "$src/samples/residual_cnn.onnx" --profile "$work/clean.db" >"$out" 2>"$err" || fail "run --profile"
    "$cli" export-trace "$work/clean.db" -o "$work/clean.json" >"$out" 2>"$err" || fail "export-trace"
    for extra in "$work"/clean.db-*; do [ -e "$extra" ] && fail "a file was left beside the profile: $extra"; done
    # From a folder no one can write to (a read-only mount in a private mount namespace): this
    # file and the version-2 fixture, which is in WAL mode, both read, with the same traces.
    if unshare -rm true 2>/dev/null; then
        rm -rf "$work/ro"; mkdir -p "$work/ro"
        cp "$work/clean.db" "$work/ro/clean.db"
        cp "$src/tests/data/profile-v2/residual_cnn.db" "$work/ro/v2.db"
        unshare -rm sh -c 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" || exit 3
            if touch "$1/probe" 2>/dev/null; then exit 3; fi
            "$2" export-trace "$1/v2.db" -o "$3/ro-v2.json" && "$2" export-trace "$1/clean.db" -o "$3/ro-clean.json" || exit $?
            "$2" run "$4/samples/residual_cnn.onnx" --profile "$1/new.db" >/dev/null; echo "write: $?"' \
            sh "$work/ro" "$cli" "$work" "$src" >"$out" 2>"$err"
        rc=$?
        [ $rc -eq 3 ] && fail "could not mount the folder read-only"
        [ $rc -eq 0 ] || fail "a profile in a read-only folder does not read (exit $rc)"
        expect_line "^write: 2$"
        grep -q "^error: cannot write profile '.*/ro/new.db': folder '.*/ro' cannot be written (Read-only file system)$" "$err" ||
            fail "the read-only folder is not named: $(cat "$err")"
        cmp -s "$work/ro-v2.json" "$src/tests/data/profile-v2/residual_cnn.trace.json" ||
            fail "the version-2 fixture read from a read-only folder gives another trace"
        cmp -s "$work/ro-clean.json" "$work/clean.json" || fail "a profile read from a read-only folder gives another trace"
    else
        echo "unshare cannot make a mount namespace here: skipped the read-only folder case (the rest ran)"
    fi
    check_error "cannot write profile '.*/no-such-folder/p.db': folder '.*/no-such-folder' does not exist" \
        "$cli" run "$src/samples/residual_cnn.onnx" --profile "$work/no-such-folder/p.db"
    # A database another process holds the write lock of: the run waits (saying so), then fails.
    if /usr/bin/python3 -c "import sqlite3" 2>/dev/null; then
        rm -f "$work/locked.db"*
        "$cli" run "$src/samples/residual_cnn.onnx" --profile "$work/locked.db" >"$out" 2>"$err" || fail "first run"
        /usr/bin/python3 -c "import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(60)" \
            "$work/locked.db" >"$work/holder.out" &
        holder=$!
        for _ in $(seq 100); do grep -q held "$work/holder.out" && break; sleep 0.1; done
        check_error "locked.db': it stayed locked by another process for 1 s; the run was not saved" \
            "$cli" run "$src/samples/residual_cnn.onnx" --profile "$work/locked.db" --profile-wait 1
        kill "$holder"; wait "$holder" 2>/dev/null
        grep -q "^waiting for '.*locked.db': locked by another process (0 s of at most 1 s)\.\.\.$" "$err" ||
            fail "no waiting message"
        "$cli" run "$src/samples/residual_cnn.onnx" --profile "$work/locked.db" >"$out" 2>"$err" || fail "run after the lock"
        expect_line "^profile: wrote run 2 to "
    else
        echo "python3 with sqlite3 not found: skipped the lock case (the rest ran)"
    fi
    ;;
*)
    echo "unknown case $case_name"; exit 1 ;;
esac
echo "PASS: $case_name"
