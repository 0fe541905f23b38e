# Sourced by the bench/*.sh scripts that take benchmark binaries as arguments:
#   . "$(dirname "$0")/bench-binaries.sh"; bench_binaries NAME "$@"; set -- "${BENCH_BINARIES[@]}"
# BENCH_BINARIES gets the arguments, or build-bench's sextant-bench when there are none; stops
# with a message naming the script when one is not an executable.
bench_binaries() {
    local name=$1
    shift
    if [ $# -eq 0 ]; then
        set -- "$(dirname "${BASH_SOURCE[0]}")/../build-bench/bench/sextant-bench"
    fi
    local bin
    for bin in "$@"; do
        if [ ! -x "$bin" ]; then
            echo "$name: '$bin' is not an executable (build it: ninja -C build-bench sextant-bench)" >&2
            exit 2
        fi
    done
    BENCH_BINARIES=("$@")
}
