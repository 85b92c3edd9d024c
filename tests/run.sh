#!/bin/sh
# Runs the test suites and sums their "N passed, N failed" lines:
#   unit     unit tests (plain build)
#   unit-san unit tests under ASan+UBSan (smaller scale)
#   install  make install into a scratch prefix, programs built against it
#   cli      tests/cli/run.sh against the tool
#   cli-san  the same with the tool built under ASan+UBSan
#   redis    tests/redis/run.sh
#   python   tests/python/run.sh
#   docs     tests/docs.sh: docs/LAYOUT.md names every source file
#   ladder   tests/ladder.py: the built objects keep LAYOUT.md's rungs, no circles
# With no argument every suite runs; with names, those (make test-cli runs
# `sh tests/run.sh cli`). Suites run side by side, BK_TEST_JOBS at a time
# (default: the CPUs, at most 4), each into its own log, printed whole and
# in the order above once all are done.
# The run ends with a summary naming every failed check, with the log it is
# in ($BUILD/test-logs/SUITE.log, kept after the run), then the total.
# Exit status: 0 only if every suite ran and none failed.
BUILD=${BUILD:-build}
ALL="cli-san redis cli python unit-san unit install docs ladder" # longest first
jobs=${BK_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -gt 4 ] && jobs=4
[ "$jobs" -lt 1 ] && jobs=1
wanted=${*:-$ALL}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
logs="$BUILD/test-logs"
mkdir -p "$logs" 2>/dev/null || logs=$dir

# Each unit test binary is one result line; a suite of them sums its own.
run_units() {
    pass=0 fail=0
    for t in "$@"; do
        [ -x "$t" ] || continue
        echo "-- $(basename "$t")"
        out=$("$t" 2>&1)
        rc=$?
        echo "$out"
        line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
        p=$(echo "$line" | sed -nE 's/^([0-9]+) passed.*/\1/p')
        f=$(echo "$line" | sed -nE 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/p')
        [ -z "$p" ] && p=0 f=1 && echo "!! $(basename "$t"): no result line (exit $rc)"
        [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1 && echo "!! $(basename "$t"): exit $rc"
        pass=$((pass + p))
        fail=$((fail + f))
    done
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}

suite() {
    case $1 in
    unit) run_units "$BUILD"/tests/test_* ;;
    unit-san) (export BK_TEST_SCALE=0.1 ASAN_OPTIONS=detect_leaks=1; run_units "$BUILD"/tests-san/test_*) ;;
    install) BUILD="$BUILD" sh tests/install.sh ;;
    cli) BUILD="$BUILD" sh tests/cli/run.sh ;;
    # peak-memory bounds are not checked: the sanitizers' shadow memory
    # counts in the peak
    cli-san)
        [ -x "$BUILD/cli-san/bloomkit" ] || { echo "no $BUILD/cli-san/bloomkit"; echo "0 passed, 1 failed"; return 1; }
        BUILD="$BUILD/cli-san" BK_TEST_SANITIZED=1 ASAN_OPTIONS=detect_leaks=1 sh tests/cli/run.sh ;;
    redis) BUILD="$BUILD" sh tests/redis/run.sh ;;
    python) BUILD="$BUILD" sh tests/python/run.sh ;;
    docs) sh tests/docs.sh ;;
    ladder)
        py=/usr/bin/python3
        [ -x "$py" ] || py=python3
        BUILD="$BUILD" "$py" tests/ladder.py ;;
    *) echo "unknown suite '$1' (one of: $ALL)"; echo "0 passed, 1 failed"; return 1 ;;
    esac
}

# Start each suite in the background, at most $jobs at once (waiting for
# the oldest when full: the list is ordered longest first).
running=""
for name in $wanted; do
    set -- $running
    if [ $# -ge "$jobs" ]; then
        wait "$1"
        shift
        running="$*"
    fi
    (
        start=$(date +%s)
        suite "$name" >"$dir/$name.log" 2>&1
        echo $? >"$dir/$name.rc"
        echo $(($(date +%s) - start)) >"$dir/$name.time"
    ) &
    running="$running $!"
done
wait

total_pass=0
total_fail=0
: >"$dir/summary"
for name in $ALL; do
    case " $wanted " in *" $name "*) ;; *) continue ;; esac
    echo "== $name ($(cat "$dir/$name.time" 2>/dev/null || echo '?') s)"
    cat "$dir/$name.log"
    rc=$(cat "$dir/$name.rc" 2>/dev/null || echo 1)
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$dir/$name.log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "!! $name: no result line (exit $rc)"
        total_fail=$((total_fail + 1))
        continue
    fi
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "!! $name: exit $rc"
        f=1
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
done

# The summary: each suite with a failure, its failed checks (the lines
# each runner marks: "FAIL", "not ok", "!!", pytest's "FAILED"/"ERROR"),
# and where its whole log is.
for name in $ALL; do
    case " $wanted " in *" $name "*) ;; *) continue ;; esac
    cp "$dir/$name.log" "$logs/$name.log" 2>/dev/null
    rc=$(cat "$dir/$name.rc" 2>/dev/null || echo 1)
    [ "$rc" -eq 0 ] && continue
    echo "$name (exit $rc; log: $logs/$name.log):" >>"$dir/summary"
    grep -E '^ *(FAIL|not ok|!! )|^(FAILED|ERROR) ' "$dir/$name.log" | head -n 50 |
        sed 's/^ */    /' >>"$dir/summary"
done
if [ -s "$dir/summary" ]; then
    echo
    echo "== failed checks"
    cat "$dir/summary"
fi
echo "total: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
