#!/bin/sh
# The Python suite: tests/python/test_*.py under Debian's pytest, against
# the package built in place by `make python`, the tool and the module in
# $BUILD. Redis servers and the crawled web site run on free loopback ports
# and are stopped by the tests. Ends with "N passed, N failed" (pytest's
# summary, summed by tests/run.sh like the other suites).
BUILD=${BUILD:-build}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
cd "$(dirname "$0")/../.." || exit 1
BUILD=$(cd "$BUILD" && pwd)
export BUILD

if ! ls python/bloomkit/_bloomkit*.so >/dev/null 2>&1; then
    echo "FAIL - the extension is not built (make python)"
    echo "0 passed, 1 failed"
    exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$PY" -m pytest -q -p no:cacheprovider -o addopts="" tests/python "$@" 2>&1 | tee "$log"
summary=$(tail -n 1 "$log")
pass=$(echo "$summary" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+')
fail=$(echo "$summary" | grep -oE '[0-9]+ (failed|error|errors)' | grep -oE '[0-9]+' |
    awk '{ s += $1 } END { print s + 0 }')
pass=${pass:-0}
# pytest without a summary line (a crash) counts as one failure.
if [ -z "$(echo "$summary" | grep -E 'passed|failed|error')" ]; then
    fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
