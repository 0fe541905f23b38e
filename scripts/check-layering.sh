#!/usr/bin/env bash
# Checks the layering of DESIGN §1 against the sources and the CMake files:
#
#   scripts/check-layering.sh [SOURCE_DIR]      (default: the checkout this script is in)
#
# The libraries, lowest first: ir <- frontend, passes <- backend <- sim <- runtime <- profiler <-
# views <- app (frontend and passes are siblings: neither uses the other). For each library folder
# it fails when
#   - a file includes a header of a library at its own level or above ("core/runtime/..." from
#     core/backend), or a Qt header under core/ or profiler/;
#   - the folder includes a library its CMake target does not link (it works today only because
#     another dependency drags it in, and breaks when that one drops it);
#   - the target links a Sextant library the folder includes nothing of.
# Only includes spelled from the source root ("core/ir/Graph.h", "profiler/...", "views/...") name
# another library; a bare "Graph.h" is the folder's own. A grep and awk job: well under a second.
# Exits 0 when the layering holds, 1 listing every violation otherwise.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# folder, CMake target, level, CMake file that declares the target's dependencies
libraries="core/ir        sextant_ir       0 core/ir/CMakeLists.txt
core/frontend  sextant_frontend 1 core/frontend/CMakeLists.txt
core/passes    sextant_passes   1 core/passes/CMakeLists.txt
core/backend   sextant_backend  2 core/backend/CMakeLists.txt
core/sim       sextant_sim      3 core/sim/CMakeLists.txt
core/runtime   sextant_runtime  4 core/runtime/CMakeLists.txt
profiler       sextant_profiler 5 profiler/CMakeLists.txt
views          sextant_views    6 views/CMakeLists.txt
app/cli        sextant-cli      7 app/CMakeLists.txt
app/gui        sextant          7 app/CMakeLists.txt"

# The sextant_* libraries the call that makes TARGET (sextant_library(...) or
# target_link_libraries(...)) names in FILE, comments dropped, one per line.
declaredDeps() {
    awk -v target="$1" '
        { sub(/#.*/, ""); text = text " " $0 }
        END {
            gsub(/[()]/, " & ", text)
            n = split(text, w, /[ \t]+/)
            for (i = 1; i <= n; ++i) {
                if ((w[i] == "sextant_library" || w[i] == "target_link_libraries") && w[i + 1] == "(" && w[i + 2] == target) {
                    for (j = i + 3; j <= n && w[j] != ")"; ++j)
                        if (w[j] ~ /^sextant_/ && w[j] != target)
                            print w[j]
                }
            }
        }' "$2" | sort -u
}

errors=0
fail() {
    echo "layering: $*"
    errors=$((errors + 1))
}

while read -r folder target level cmake; do
    [ -d "$folder" ] || continue
    # Qt stays out of the core and the profiler (DESIGN §1).
    case $folder in
    core/* | profiler)
        while IFS= read -r hit; do
            fail "$hit: a Qt header in $folder (nothing under core/ or profiler/ includes Qt)"
        done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<Q' "$folder" || true)
        ;;
    esac
    # "USE target" for each library the folder includes, "ERR message" for each upward include.
    report=$(grep -rnoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+"' "$folder" |
        awk -v folder="$folder" -v level="$level" -v table="$libraries" '
            BEGIN {
                n = split(table, rows, "\n")
                for (i = 1; i <= n; ++i) {
                    split(rows[i], c, /[ \t]+/)
                    tgt[c[1]] = c[2]
                    lvl[c[1]] = c[3]
                }
            }
            {
                split($0, at, ":")
                match($0, /"[^"]+"/)
                path = substr($0, RSTART + 1, RLENGTH - 2)
                if (path ~ /^core\/[^\/]+\//) {
                    split(path, p, "/")
                    lib = p[1] "/" p[2]
                } else if (path ~ /^(profiler|views)\//) {
                    lib = substr(path, 1, index(path, "/") - 1)
                } else {
                    next
                }
                if (lib == folder)
                    next
                if (!(lib in lvl))
                    print "ERR " at[1] ":" at[2] ": includes " path ", which is in no library"
                else if (lvl[lib] + 0 >= level + 0)
                    print "ERR " at[1] ":" at[2] ": includes " path ": " folder " may use only the libraries below it (DESIGN §1)"
                else
                    print "USE " tgt[lib]
            }' | sort -u)
    while IFS= read -r message; do
        [ -n "$message" ] && fail "$message"
    done < <(echo "$report" | sed -n 's/^ERR //p')
    used=$(echo "$report" | sed -n 's/^USE //p')
    declared=$(declaredDeps "$target" "$cmake")
    for dep in $used; do
        grep -qx "$dep" <<<"$declared" ||
            fail "$folder includes headers of $dep, but $cmake does not link $target to it"
    done
    for dep in $declared; do
        grep -qx "$dep" <<<"$used" ||
            fail "$cmake links $target to $dep, but nothing in $folder includes it"
    done
done <<<"$libraries"

if [ "$errors" -gt 0 ]; then
    echo "layering: $errors problem(s)"
    exit 1
fi
echo "layering: ok"
