# Shared by the tool's shell tests (sourced, not run): the pass and fail
# counters and the check helpers. A test script ends with
# `finish`, which prints "N passed, N failed" and exits non-zero on any
# failure.
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }

# timed_cases: true unless the tool runs under the sanitizers
# (BK_TEST_SANITIZED=1). Cases that wait on real time (a lock held for
# seconds, a producer that pauses) run in the plain suite only: under ASan
# they would take the same code paths again, only slower, sleeping most
# of the time. Signals, checkpoints and crashes still run under ASan.
timed_cases() { [ "${BK_TEST_SANITIZED:-0}" != 1 ]; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
skip() { echo "skip $1"; }

# check NAME COMMAND...: passes if COMMAND succeeds.
check() {
    name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}

# rc WANT NAME COMMAND...: runs COMMAND (stdout to out, stderr to err in
# the current directory), passes if it exits WANT.
rc() {
    want=$1
    name=$2
    shift 2
    "$@" >out 2>err
    got=$?
    if [ "$got" -eq "$want" ]; then ok "$name"; else
        bad "$name: exit $got, want $want"
        sed 's/^/    stderr: /' err | head -n 3
    fi
}

same() { cmp -s "$1" "$2"; }

# wait_handles_int PID: waits (up to 30 s, for a loaded machine) until the
# process PID catches SIGINT (its SigCgt mask in /proc), so that a test's
# kill -INT reaches the tool's handler rather than arriving before it is
# set (a background job of a script starts with SIGINT ignored). Returns 1
# if it never did or exited.
wait_handles_int() {
    i=0
    while [ $i -lt 300 ]; do
        mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
        [ -z "$mask" ] && return 1
        # bit 1 (signal 2) of the hexadecimal mask
        [ $((0x$mask & 2)) -ne 0 ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
lines() { wc -l <"$1" | tr -d ' '; }
# names TEXT: err holds one line, and it names TEXT
names() { [ "$(wc -l <err)" -eq 1 ] && grep -qF -- "$1" err; }

finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
