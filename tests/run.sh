#!/bin/sh
# Runs every test suite and sums their "N passed, N failed" lines.
#   unit tests (plain build), unit tests under ASan+UBSan (smaller scale),
#   then tests/cli/run.sh (twice: the second time with the tool built under
#   ASan+UBSan), tests/redis/run.sh and tests/python/run.sh when they
#   exist.
# Exit status: 0 only if every suite ran and none failed.
BUILD=${BUILD:-build}
total_pass=0
total_fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run_suite() {
    name=$1
    shift
    echo "== $name"
    "$@" >"$log" 2>&1
    rc=$?
    cat "$log"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "!! $name: no result line (exit $rc)"
        total_fail=$((total_fail + 1))
        return
    fi
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "!! $name: exit $rc"
        f=1
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] && run_suite "unit $(basename "$t")" "$t"
done
for t in "$BUILD"/tests-san/test_*; do
    [ -x "$t" ] && run_suite "unit+asan+ubsan $(basename "$t")" \
        env BK_TEST_SCALE=0.1 ASAN_OPTIONS=detect_leaks=1 "$t"
done
run_suite "install" env BUILD="$BUILD" sh tests/install.sh
[ -f tests/cli/run.sh ] && run_suite "cli" env BUILD="$BUILD" sh tests/cli/run.sh
# The tool's tests once more with the tool built under ASan+UBSan
# (peak-memory bounds are not checked: the sanitizers' shadow memory counts
# in the peak).
[ -x "$BUILD/cli-san/bloomkit" ] && run_suite "cli, ASan+UBSan" \
    env BUILD="$BUILD/cli-san" BK_TEST_SANITIZED=1 ASAN_OPTIONS=detect_leaks=1 \
    sh tests/cli/run.sh
[ -f tests/redis/run.sh ] && run_suite "redis" env BUILD="$BUILD" sh tests/redis/run.sh
[ -f tests/python/run.sh ] && run_suite "python" env BUILD="$BUILD" sh tests/python/run.sh

echo "total: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
