#!/usr/bin/env bash
# Shows that a change leaves what users see alone: runs scripts/user-outputs.sh with two
# sextant-cli binaries (say the one built from main before a refactor and the one after) and lists
# every file that differs, with the first lines of its diff.
#
# usage: scripts/compare-user-outputs.sh BEFORE_CLI AFTER_CLI [WORK_DIR]
# Exit status: 0 when every artifact, --print-changed output, report, run log and trace is
# byte-identical; 1 when something differs (each difference is listed; say why in the commit).
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=${3:-$(mktemp -d)}
mkdir -p "$work"
"$here/user-outputs.sh" "$1" "$work/before" || exit 2
"$here/user-outputs.sh" "$2" "$work/after" || exit 2
changed=$(diff -rq "$work/before" "$work/after")
if [ -z "$changed" ]; then
    echo "identical: $(find "$work/after" -type f | wc -l) files under $work/before and $work/after"
    exit 0
fi
echo "$changed"
diff -r "$work/before" "$work/after" | grep -v '^Binary files' | head -200
exit 1
