# Sourced by scripts/fuzz.sh and scripts/sanitize-readers.sh.
#   require_clang SANITIZERS SOURCE WHAT
# Exits 77 (ctest reports a skip) unless clang++ exists and can link SOURCE with
# -fsanitize=SANITIZERS; WHAT names what is skipped. Leaves a temp folder in $probe, removed at exit.
require_clang() {
    local sanitizers=$1 source=$2 what=$3
    if ! command -v clang++ >/dev/null 2>&1; then
        echo "clang++ not found: skipping $what (scripts/install-deps.sh installs clang)"
        exit 77
    fi
    probe=$(mktemp -d)
    trap 'rm -rf "$probe"' EXIT
    echo "$source" >"$probe/probe.cpp"
    if ! clang++ -fsanitize="$sanitizers" "$probe/probe.cpp" -o "$probe/probe" 2>"$probe/err"; then
        echo "clang++ cannot link a binary with -fsanitize=$sanitizers (libclang-rt-dev missing?): skipping $what"
        cat "$probe/err"
        exit 77
    fi
}
