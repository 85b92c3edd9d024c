#!/bin/sh
# Tests of `bloomkit common` against a naive reference: each input with a
# trailing "\r" dropped, `sort -u`, then `comm -12` across the inputs (all
# byte-wise, LC_ALL=C). bloomkit's output order is not sorted, so it is
# sorted before comparing; its "exactly once" promise is checked on the
# unsorted output. Random inputs come from tests/cli/gen_lines.c.
# Ends with "N passed, N failed"; exits non-zero on any failure.
BUILD=${BUILD:-build}
BK="$BUILD/bloomkit"
export LC_ALL=C
pass=0
fail=0
W=$(mktemp -d "${TMPDIR:-/tmp}/bk-test-common.XXXXXX")
MNT=
cleanup() {
    [ -n "$MNT" ] && umount "$MNT" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

. "$(dirname "$0")/lib.sh" # ok, bad, skip

GEN="$W/gen_lines"
if ! ${CC:-cc} -O2 -o "$GEN" tests/cli/gen_lines.c; then
    echo "cannot build the generator"
    echo "0 passed, 1 failed"
    exit 1
fi
gen() { "$GEN" "$@"; }

# ref OUT FILE... : the reference answer, sorted.
ref() {
    out=$1
    shift
    i=0
    for f in "$@"; do
        sed 's/\r$//' "$f" | sort -u >"$W/ref.$i"
        i=$((i + 1))
    done
    cp "$W/ref.0" "$W/ref.acc"
    j=1
    while [ "$j" -lt "$i" ]; do
        comm -12 "$W/ref.acc" "$W/ref.$j" >"$W/ref.tmp"
        mv "$W/ref.tmp" "$W/ref.acc"
        j=$((j + 1))
    done
    mv "$W/ref.acc" "$out"
}

# check_common NAME WANT_RC [bloomkit common args...]: runs, compares the sorted
# output with $W/want, checks that no line is printed twice and the exit
# status.
check_common() {
    name=$1
    wrc=$2
    shift 2
    "$BK" common "$@" >"$W/got.raw" 2>"$W/err"
    rc=$?
    sort "$W/got.raw" >"$W/got"
    if [ "$rc" -ne "$wrc" ]; then
        bad "$name: exit $rc, want $wrc ($(head -c 300 "$W/err"))"
    elif ! cmp -s "$W/got" "$W/want"; then
        bad "$name: output differs from the reference ($(wc -l <"$W/got") vs $(wc -l <"$W/want") lines)"
    elif [ "$(sort -u "$W/got.raw" | wc -l)" -ne "$(wc -l <"$W/got.raw")" ]; then
        bad "$name: a line was printed twice"
    else
        ok "$name"
    fi
}

spilled() { grep -q ' [1-9][0-9]* bytes spilled' "$W/err"; }
# within KB LIMIT: a peak RSS within a bound, unless the tool runs under
# the sanitizers (BK_TEST_SANITIZED=1), whose shadow memory counts in it.
within() { [ "${BK_TEST_SANITIZED:-0}" = 1 ] || [ "$1" -le "$2" ]; }

# --- random text inputs, in memory and forced to spill -------------------
gen 1 20000 0 30000 t >"$W/a"
gen 2 20000 15000 45000 t >"$W/b"
ref "$W/want" "$W/a" "$W/b"
[ -s "$W/want" ] || bad "setup: the random inputs share no line"
check_common "text, in memory" 0 "$W/a" "$W/b"
check_common "text, spilling (--memory 1M)" 0 --memory 1M --tmpdir "$W" --verbose "$W/a" "$W/b"
if spilled; then ok "--memory 1M did spill"; else bad "--memory 1M did not spill: $(cat "$W/err")"; fi
check_common "text, re-partitioning (--memory 64K)" 0 --memory 64K --tmpdir "$W" --verbose "$W/a" "$W/b"
if grep -q ' [2-9] levels' "$W/err"; then ok "--memory 64K partitioned more than once"; else
    bad "--memory 64K: expected several levels: $(cat "$W/err")"; fi
check_common "argument order does not matter" 0 --memory 1M --tmpdir "$W" "$W/b" "$W/a"

# --- three and four inputs ------------------------------------------------
gen 3 15000 10000 40000 t >"$W/c"
gen 4 30000 0 60000 t >"$W/d"
ref "$W/want" "$W/a" "$W/b" "$W/c"
check_common "three inputs, in memory" 0 "$W/a" "$W/b" "$W/c"
check_common "three inputs, spilling" 0 --memory 256K --tmpdir "$W" "$W/a" "$W/b" "$W/c"
ref "$W/want" "$W/a" "$W/b" "$W/c" "$W/d"
check_common "four inputs, spilling" 0 --memory 256K --tmpdir "$W" "$W/d" "$W/a" "$W/c" "$W/b"

# --- binary lines, CRLF, no final newline, duplicates ----------------------
for seed in 11 12 13; do
    gen $seed 8000 0 6000 bcn >"$W/x"
    gen $((seed + 100)) 8000 3000 9000 bc >"$W/y"
    gen $((seed + 200)) 8000 2000 8000 bn >"$W/z"
    ref "$W/want" "$W/x" "$W/y" "$W/z"
    check_common "binary+CRLF+no final newline, seed $seed, in memory" 0 "$W/x" "$W/y" "$W/z"
    check_common "binary+CRLF+no final newline, seed $seed, spilling" 0 --memory 128K --tmpdir "$W" "$W/x" "$W/y" "$W/z"
done
if tr -d '\n\r' <"$W/x" | od -An -c | grep -q '\\0'; then ok "binary inputs hold NUL bytes"; else
    bad "binary inputs hold no NUL byte"; fi

printf 'same\r\nlast' >"$W/p"
printf 'last\nsame\n' >"$W/q"
printf 'last\nsame\n' >"$W/want"
check_common "CRLF and missing final newline match LF lines" 0 "$W/p" "$W/q"
printf 'dup\ndup\nx\ndup\n' >"$W/p"
printf 'y\ndup\ndup\n' >"$W/q"
printf 'dup\n' >"$W/want"
check_common "duplicates inside a file print once" 0 "$W/p" "$W/q"
printf '\n\nx\n' >"$W/p"
printf 'y\n\n' >"$W/q"
printf '\n' >"$W/want"
check_common "the empty line is a line" 0 "$W/p" "$W/q"
printf 'x\n' >"$W/q"
printf 'x\n' >"$W/want"
check_common "prefix of a line is not the line" 0 "$W/p" "$W/q"

# --- empty inputs -----------------------------------------------------------
: >"$W/empty"
: >"$W/want"
check_common "empty first file" 1 "$W/empty" "$W/a"
check_common "empty last file" 1 "$W/a" "$W/empty"
check_common "both empty" 1 "$W/empty" "$W/empty"
gen 5 5000 100000 105000 t >"$W/disjoint"
check_common "disjoint inputs" 1 "$W/a" "$W/disjoint"
check_common "disjoint inputs, spilling" 1 --memory 64K --tmpdir "$W" "$W/a" "$W/disjoint"

# --- long lines ----------------------------------------------------------------
head -c 1500000 /dev/zero | tr '\0' 'L' >"$W/long1"
head -c 1200000 /dev/zero | tr '\0' 'M' >"$W/long2"
{ cat "$W/long1"; echo; echo short; cat "$W/long2"; echo; } >"$W/p"
{ echo short; cat "$W/long2"; echo; cat "$W/long1"; echo x; echo; } >"$W/q"
ref "$W/want" "$W/p" "$W/q"
check_common "lines longer than --memory" 0 --memory 256K --tmpdir "$W" "$W/p" "$W/q"

# --- standard input, --count, --ignore-case, --normalize -------------------
ref "$W/want" "$W/a" "$W/b"
"$BK" common "$W/a" - <"$W/b" | sort >"$W/got"
if cmp -s "$W/got" "$W/want"; then ok "standard input as an input"; else bad "standard input as an input"; fi
"$BK" common --memory 64K --tmpdir "$W" - "$W/a" <"$W/b" | sort >"$W/got"
if cmp -s "$W/got" "$W/want"; then ok "standard input, spilling"; else bad "standard input, spilling"; fi
"$BK" common - - <"$W/a" >/dev/null 2>"$W/err"
if [ $? -eq 2 ] && [ -s "$W/err" ]; then ok "- twice is an error"; else bad "- twice is an error"; fi

n=$("$BK" common --count "$W/a" "$W/b")
rc=$?
if [ "$rc" -eq 0 ] && [ "$n" = "$(wc -l <"$W/want" | tr -d ' ')" ]; then ok "--count"; else
    bad "--count: got '$n' (exit $rc), want $(wc -l <"$W/want")"; fi
n=$("$BK" common --count --memory 64K --tmpdir "$W" "$W/a" "$W/b")
if [ "$n" = "$(wc -l <"$W/want" | tr -d ' ')" ]; then ok "--count, spilling"; else bad "--count, spilling: $n"; fi
n=$("$BK" common --count "$W/a" "$W/empty")
if [ $? -eq 1 ] && [ "$n" = 0 ]; then ok "--count with nothing common"; else bad "--count with nothing common: '$n'"; fi

gen 6 6000 0 8000 tU >"$W/ua"
gen 7 6000 4000 12000 tU >"$W/ub"
tr 'A-Z' 'a-z' <"$W/ua" >"$W/la"
tr 'A-Z' 'a-z' <"$W/ub" >"$W/lb"
ref "$W/want" "$W/la" "$W/lb"
check_common "--ignore-case" 0 --ignore-case "$W/ua" "$W/ub"
check_common "--ignore-case, spilling" 0 -i --memory 64K --tmpdir "$W" "$W/ua" "$W/ub"
check_common "--ignore-case, three threads, spilling" 0 -i -t 3 --memory 256K --tmpdir "$W" "$W/ua" "$W/ub"
ref "$W/want" "$W/ua" "$W/ub"
check_common "case matters without --ignore-case" 0 "$W/ua" "$W/ub"

printf 'HTTP://Example.com:80/a/../b#x\nhttps://example.com:443\nhttp://other/x\n' >"$W/p"
printf 'http://example.com/b\nhttps://EXAMPLE.com/\nhttp://other/y\n' >"$W/q"
printf 'http://example.com/b\nhttps://example.com/\n' >"$W/want"
check_common "--normalize url" 0 --normalize url "$W/p" "$W/q"
check_common "--normalize url, two threads" 0 --normalize url -t 2 "$W/p" "$W/q"
: >"$W/want"
check_common "no normalization without --normalize" 1 "$W/p" "$W/q"

# --- errors ---------------------------------------------------------------
"$BK" common "$W/a" "$W/nosuch" >"$W/got" 2>"$W/err"
rc=$?
if [ "$rc" -eq 2 ] && [ ! -s "$W/got" ] && grep -q nosuch "$W/err"; then ok "missing file: exit 2, named"; else
    bad "missing file: exit $rc"; fi
for args in "$W/a" "--memory 12Q $W/a $W/b" "--normalize nope $W/a $W/b" "--bogus $W/a $W/b"; do
    # shellcheck disable=SC2086
    "$BK" common $args >/dev/null 2>&1
    if [ $? -eq 2 ]; then ok "usage error: $args"; else bad "usage error: $args"; fi
done
if "$BK" common --help | grep -q 'usage: bloomkit common'; then ok "--help"; else bad "--help"; fi

# A write error on stdout after lines were printed: exit 2, and the
# message says the output is incomplete.
if [ -w /dev/full ]; then
    "$BK" common "$W/a" "$W/b" >/dev/full 2>"$W/err"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q 'incomplete' "$W/err"; then ok "write error: exit 2, output said incomplete"; else
        bad "write error: exit $rc, '$(cat "$W/err")'"; fi
    "$BK" common --count "$W/a" "$W/b" >/dev/full 2>"$W/err"
    if [ $? -eq 2 ] && grep -q 'write error' "$W/err"; then ok "write error with --count: exit 2"; else
        bad "write error with --count"; fi
else
    skip "write errors (no /dev/full)"
fi

# Unwritable spill directory: a path under a regular file.
"$BK" common --memory 64K --tmpdir "$W/a/sub" "$W/a" "$W/b" >"$W/got" 2>"$W/err"
rc=$?
if [ "$rc" -eq 2 ] && [ ! -s "$W/got" ] && grep -q 'spill' "$W/err"; then ok "unwritable --tmpdir: exit 2, no output"; else
    bad "unwritable --tmpdir: exit $rc, $(wc -c <"$W/got") bytes out, '$(cat "$W/err")'"; fi
ref "$W/want" "$W/a" "$W/b"
check_common "--tmpdir unused when the inputs fit" 0 --tmpdir "$W/a/sub" "$W/a" "$W/b"

# Spill files leave nothing behind.
mkdir "$W/spill"
"$BK" common --memory 64K --tmpdir "$W/spill" --verbose "$W/a" "$W/b" >/dev/null 2>"$W/err"
if spilled && [ -z "$(ls -A "$W/spill")" ]; then ok "spill directory empty after success"; else
    bad "spill directory after success: $(ls -A "$W/spill" | head -3)"; fi
"$BK" common --memory 64K --tmpdir "$W/spill" "$W/a" - <"$W/long1" >/dev/null 2>&1
if [ -z "$(ls -A "$W/spill")" ]; then ok "spill directory empty after an error-free run on stdin"; else
    bad "spill directory not empty"; fi

# Full disk: a tiny tmpfs (needs root and mount; else skipped).
MNT="$W/full"
mkdir "$MNT"
if mount -t tmpfs -o size=256k tmpfs "$MNT" 2>/dev/null; then
    "$BK" common --memory 1M --tmpdir "$MNT" "$W/a" "$W/b" >"$W/got" 2>"$W/err"
    rc=$?
    if [ "$rc" -eq 2 ] && [ ! -s "$W/got" ] && grep -q 'No space left' "$W/err"; then
        ok "full disk: exit 2, clear message, no output"
    else
        bad "full disk: exit $rc, $(wc -c <"$W/got") bytes out, '$(cat "$W/err")'"
    fi
    used=$(df -k "$MNT" | awk 'NR == 2 { print $3 }')
    if [ -z "$(ls -A "$MNT")" ] && [ "$used" -eq 0 ]; then ok "full disk: space given back"; else
        bad "full disk: ${used}K still used"; fi

    mount -o remount,size=16m "$MNT"
    # Ctrl-C while spilling: standard input is a pipe that stalls, and is
    # read last (its size is unknown), so the run is caught after spilling
    # $W/b and while spilling standard input.
    sh -c 'echo $$ >"$1"; head -c 100000 "$2"; exec sleep 8' sh "$W/prod" "$W/a" |
        sh -c 'echo $$ >"$1"; shift; exec "$@" >/dev/null 2>&1' sh "$W/pid" \
            "$BK" common --memory 64K --tmpdir "$MNT" - "$W/b" &
    # Wait (up to 6 s, for a loaded machine) until it holds spill files.
    i=0
    during=0
    held=0
    while [ $i -lt 60 ]; do
        sleep 0.1
        i=$((i + 1))
        pid=$(cat "$W/pid" 2>/dev/null)
        [ -n "$pid" ] || continue
        during=$(df -k "$MNT" | awk 'NR == 2 { print $3 }')
        held=$(ls -l /proc/"$pid"/fd 2>/dev/null | grep -c "$MNT.*(deleted)")
        [ "$during" -gt 0 ] && [ "$held" -gt 0 ] && break
    done
    kill -INT "$pid"
    kill "$(cat "$W/prod")" 2>/dev/null # the stalled producer: no need to wait out its sleep
    wait
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    after=$(df -k "$MNT" | awk 'NR == 2 { print $3 }')
    if [ "$during" -gt 0 ] && [ "$held" -gt 0 ] && ! kill -0 "$pid" 2>/dev/null &&
        [ "$after" -eq 0 ] && [ -z "$(ls -A "$MNT")" ]; then
        ok "Ctrl-C while spilling: spill space freed (${during}K in use before)"
    else
        bad "Ctrl-C: ${during}K during, $held files held, ${after}K after"
    fi
    umount "$MNT"
else
    skip "full disk and Ctrl-C (cannot mount a tmpfs here)"
fi
MNT=

# --- peak memory stays under --memory ------------------------------------------
if [ -x /usr/bin/time ]; then
    gen 8 300000 0 400000 u >"$W/big1"
    gen 9 300000 200000 600000 u >"$W/big2"
    /usr/bin/time -f '%M' -o "$W/rss" "$BK" common --memory 8M --tmpdir "$W" --verbose \
        "$W/big1" "$W/big2" >"$W/got.raw" 2>"$W/err"
    kb=$(tail -n 1 "$W/rss")
    sz=$(($(wc -c <"$W/big1") / 1024))
    if spilled && within "$kb" 8192; then ok "peak RSS ${kb}K <= --memory 8M on ${sz}K inputs"; else
        bad "peak RSS ${kb}K with --memory 8M on ${sz}K inputs ($(cat "$W/err"))"; fi
    ref "$W/want" "$W/big1" "$W/big2"
    sort "$W/got.raw" >"$W/got"
    if cmp -s "$W/got" "$W/want"; then ok "URL inputs under --memory 8M"; else bad "URL inputs under --memory 8M"; fi
else
    skip "peak memory (no /usr/bin/time)"
fi

# --- the in-memory path, threads, the fallback -----------------------------------
# An input that fits in --memory only when the whole budget goes to the set
# (no Bloom filter, no spill buffers) is held whole: nothing spills. (The
# mapped path, tested below, would take these inputs; BLOOMKIT_NO_MMAP
# turns it off.)
if [ -x /usr/bin/time ]; then
    ref "$W/want" "$W/big1" "$W/big2"
    for t in 1 2; do
        mem=$((32 + 8 * t))M
        BLOOMKIT_NO_MMAP=1 /usr/bin/time -f '%M' -o "$W/rss" "$BK" common -t $t --memory $mem \
            --tmpdir "$W" --verbose "$W/big1" "$W/big2" >"$W/got.raw" 2>"$W/err"
        kb=$(tail -n 1 "$W/rss")
        sort "$W/got.raw" >"$W/got"
        if cmp -s "$W/got" "$W/want" && grep -q "$t threads; in memory;.* 0 bytes spilled" "$W/err" &&
            within "$kb" $((1024 * (32 + 8 * t))); then
            ok "-t $t --memory $mem: held in memory whole, nothing spilled, peak ${kb}K"
        else
            bad "-t $t --memory $mem: peak ${kb}K, $(cat "$W/err")"
        fi
    done

    # Partitions solved by two threads, within --memory in total.
    /usr/bin/time -f '%M' -o "$W/rss" "$BK" common -t 2 --memory 8M --tmpdir "$W" --verbose \
        "$W/big1" "$W/big2" >"$W/got.raw" 2>"$W/err"
    kb=$(tail -n 1 "$W/rss")
    sort "$W/got.raw" >"$W/got"
    if cmp -s "$W/got" "$W/want" && grep -q '2 threads; partitioned (each input read in byte ranges' "$W/err" &&
        spilled && within "$kb" 8192; then
        ok "-t 2 --memory 8M: inputs read in byte ranges, partitions on two threads, peak ${kb}K"
    else
        bad "-t 2 --memory 8M: peak ${kb}K, $(cat "$W/err")"
    fi
    # Every line of an input common with itself is common: a line lost at
    # a range boundary would be missing, one cut in two would print its
    # pieces. CRLF and a last line without "\n" included.
    { sed 's/$/\r/' "$W/big1" | head -n 1000; tail -n +1001 "$W/big1"; printf 'no newline'; } >"$W/self"
    sed 's/\r$//' "$W/self" | sort -u >"$W/want.self"
    for t in 2 3 5; do
        "$BK" common -t $t --memory 4M --tmpdir "$W" --verbose "$W/self" "$W/self" >"$W/got.raw" 2>"$W/err"
        rc=$?
        sort "$W/got.raw" >"$W/got"
        if [ "$rc" -eq 0 ] && cmp -s "$W/got" "$W/want.self" &&
            [ "$(wc -l <"$W/got.raw")" -eq "$(wc -l <"$W/want.self")" ] &&
            grep -q "$t threads; partitioned (each input read in byte ranges" "$W/err"; then
            ok "-t $t: an input common with itself, read in $t byte ranges: every line once"
        else
            bad "-t $t: input with itself: exit $rc, $(wc -l <"$W/got.raw") lines, want $(wc -l <"$W/want.self"); $(cat "$W/err")"
        fi
    done
    rm -f "$W/self" "$W/want.self"
    if grep -q 'beyond --memory' "$W/err"; then bad "short lines reported as over --memory"; else
        ok "no long-line message for short lines"; fi

    # The smallest input starts with long lines, so its sample promises far
    # fewer lines than follow: held whole until it outgrows --memory, then
    # read again and partitioned, still within --memory.
    { i=0; while [ $i -lt 5000 ]; do printf '%0999d\n' $i; i=$((i + 1)); done; seq 1 1000000; } >"$W/r1"
    { seq 500000 2500000; i=2000; while [ $i -le 3000 ]; do printf '%0999d\n' $i; i=$((i + 1)); done; } >"$W/r2"
    ref "$W/want" "$W/r1" "$W/r2"
    /usr/bin/time -f '%M' -o "$W/rss" "$BK" common -t 1 --memory 24M --tmpdir "$W" --verbose \
        "$W/r1" "$W/r2" >"$W/got.raw" 2>"$W/err"
    kb=$(tail -n 1 "$W/rss")
    sort "$W/got.raw" >"$W/got"
    if cmp -s "$W/got" "$W/want" && grep -q 'read again' "$W/err" && within "$kb" 24576; then
        ok "an input that outgrows its estimate is read again and partitioned, peak ${kb}K"
    else
        bad "outgrown estimate: peak ${kb}K, $(cat "$W/err")"
    fi
    rm -f "$W/r1" "$W/r2"

    # A line longer than --memory allows is still joined exactly, and the
    # run says that it went over --memory for it, naming the line.
    head -c 20000000 /dev/zero | tr '\0' 'Q' >"$W/huge"
    { cat "$W/huge"; echo; head -n 2000 "$W/big1"; } >"$W/h1"
    { head -n 1000 "$W/big1"; cat "$W/huge"; echo; } >"$W/h2"
    ref "$W/want" "$W/h1" "$W/h2"
    for t in 1 2; do
        /usr/bin/time -f '%M' -o "$W/rss" "$BK" common -t $t --memory 8M --tmpdir "$W" \
            "$W/h1" "$W/h2" >"$W/got.raw" 2>"$W/err"
        rc=$?
        kb=$(tail -n 1 "$W/rss")
        sort "$W/got.raw" >"$W/got"
        if [ "$rc" -eq 0 ] && cmp -s "$W/got" "$W/want" &&
            grep -q "h[12]: line [0-9]* is 20000000 bytes long: .*beyond --memory" "$W/err"; then
            ok "-t $t: a 20 MB line with --memory 8M: exact, and said to exceed --memory (peak ${kb}K)"
        else
            bad "-t $t: 20 MB line with --memory 8M: exit $rc, peak ${kb}K, '$(cat "$W/err")'"
        fi
    done
    # In a thread's range other than the first, line numbers are not
    # known: the long line is named by its byte offset.
    head -n 250000 "$W/big1" >"$W/h1"
    at=$(wc -c <"$W/h1")
    head -c 400000 "$W/huge" >"$W/long"
    { cat "$W/long"; echo; tail -n +250001 "$W/big1"; } >>"$W/h1"
    { cat "$W/big2" "$W/long"; echo; } >"$W/h2"
    ref "$W/want" "$W/h1" "$W/h2"
    "$BK" common -t 2 --memory 8M --tmpdir "$W" --verbose "$W/h1" "$W/h2" >"$W/got.raw" 2>"$W/err"
    rc=$?
    sort "$W/got.raw" >"$W/got"
    if [ "$rc" -eq 0 ] && cmp -s "$W/got" "$W/want" && grep -q 'byte ranges' "$W/err" &&
        grep -q "h1: the line at byte $at is 400000 bytes long: .*beyond --memory" "$W/err"; then
        ok "-t 2, byte ranges: a 400 KB line in the second range named by its offset ($at)"
    else
        bad "-t 2, byte ranges, 400 KB line at byte $at: exit $rc, '$(cat "$W/err")'"
    fi
    rm -f "$W/long"
    rm -f "$W/huge" "$W/h1" "$W/h2"
else
    skip "in-memory path, threads, long lines (no /usr/bin/time)"
fi

# --- the mapped path ------------------------------------------------------------
# first_order OUT SMALLEST OTHER...: the common lines in the order of their
# first appearance in SMALLEST (lines as the reader gives them: a "\r"
# before "\n" dropped, a last line without "\n" as it is).
first_order() {
    fo_out=$1
    shift
    ref "$W/fo.set" "$@"
    # Drop "\r" only before a newline: sed sees every line as ending in
    # one, so the last line's "\r" is put back when the file lacks "\n".
    if [ -n "$(tail -c 1 "$1")" ]; then
        sed 's/\r$//' "$1" | head -n -1 >"$W/fo.lines"
        tail -n 1 "$1" >>"$W/fo.lines"
        echo >>"$W/fo.lines"
    else
        sed 's/\r$//' "$1" >"$W/fo.lines"
    fi
    awk 'NR == FNR { want[$0] = 1; next } ($0 in want) && !seen[$0]++' \
        "$W/fo.set" "$W/fo.lines" >"$fo_out"
}

# When every input is a file and the smallest fits in --memory as it is,
# it is mapped and indexed by offset: the lines, in order of first
# appearance in it, whatever the thread count. Inputs with duplicates
# (some only far apart, in different threads' ranges), empty lines, CRLF,
# NUL bytes, and no final newline; big enough (over 4 MB in all) to run on
# several threads.
gen 31 150000 0 100000 bcn >"$W/m1"
gen 32 160000 50000 150000 bc >"$W/m2"
head -n 20000 "$W/m1" >>"$W/m1.tmp" && cat "$W/m1.tmp" >>"$W/m2" && rm -f "$W/m1.tmp"
gen 33 100000 0 150000 bn >"$W/m3"
first_order "$W/want.order" "$W/m3" "$W/m1" "$W/m2"
[ -s "$W/want.order" ] || bad "setup: the mapped-path inputs share no line"
# From 2 threads the common entries are bucketed by offset into parts of
# the input, each part sorted and formatted by whichever thread is free,
# the parts written in order; on 1 thread (or with BLOOMKIT_SERIAL_EMIT,
# the way taken when that needs more memory than there is) they are
# gathered, sorted and printed by one thread.
for t in 1 2 3 4 7 s3 s5; do
    case $t in
    s*) t=${t#s} way="sorted on one thread" serial=BLOOMKIT_SERIAL_EMIT=1 ;;
    1) way="sorted on one thread" serial= ;;
    *) way="parts sorted on every thread" serial= ;;
    esac
    env $serial "$BK" common -t $t --verbose --memory 512M "$W/m1" "$W/m2" "$W/m3" \
        >"$W/got.raw" 2>"$W/err"
    rc=$?
    if [ "$rc" -eq 0 ] && cmp -s "$W/got.raw" "$W/want.order" &&
        grep -q "$t threads; in memory (the smallest input mapped)" "$W/err" &&
        grep -q "emit ($way)" "$W/err"; then
        ok "mapped, -t $t, emit $way: the common lines in first-appearance order"
    else
        bad "mapped, -t $t, emit $way: exit $rc, $(wc -l <"$W/got.raw") lines, want $(wc -l <"$W/want.order"); $(cat "$W/err")"
    fi
done
# A write error in either way: exit 2, said.
if [ -w /dev/full ]; then
    for serial in "" BLOOMKIT_SERIAL_EMIT=1; do
        env $serial "$BK" common -t 3 --memory 512M "$W/m1" "$W/m2" "$W/m3" \
            >/dev/full 2>"$W/err"
        rc=$?
        if [ "$rc" -eq 2 ] && grep -q 'write error' "$W/err"; then
            ok "mapped, -t 3, write error ($serial): exit 2"
        else
            bad "mapped, -t 3, write error ($serial): exit $rc, '$(cat "$W/err")'"
        fi
    done
fi
# Common lines bunched in one place of the smallest input (its first 2,000
# lines, or its last), so that most parts are empty and one holds them
# all; 5 MB each, so several threads run.
awk 'BEGIN { for (i = 0; i < 200000; i++) printf "line-%07d-abcdefghij\n", i }' >"$W/s1"
awk 'BEGIN { for (i = 0; i < 2000; i++) printf "line-%07d-abcdefghij\n", i * 7 % 2000
             for (i = 0; i < 210000; i++) printf "other-%07d-abcdefghij\n", i }' >"$W/s2"
awk 'BEGIN { for (i = 0; i < 210000; i++) printf "other-%07d-abcdefghij\n", i
             for (i = 198000; i < 200000; i++) printf "line-%07d-abcdefghij\n", i }' >"$W/s3"
for other in s2 s3; do
    first_order "$W/want.skew" "$W/s1" "$W/$other"
    for t in 2 5; do
        "$BK" common -t $t --verbose --memory 512M "$W/s1" "$W/$other" >"$W/got.raw" 2>"$W/err"
        rc=$?
        if [ "$rc" -eq 0 ] && [ "$(wc -l <"$W/want.skew")" -eq 2000 ] &&
            cmp -s "$W/got.raw" "$W/want.skew" && grep -q "parts sorted on every thread" "$W/err"; then
            ok "mapped, -t $t, common lines bunched ($other): in order"
        else
            bad "mapped, -t $t, common lines bunched ($other): exit $rc, $(wc -l <"$W/got.raw") lines; $(cat "$W/err")"
        fi
    done
done
# The same inputs the general way give the same set of lines.
sort "$W/want.order" >"$W/want"
BLOOMKIT_NO_MMAP=1 check_common "BLOOMKIT_NO_MMAP: the general path, same lines" 0 -t 2 --memory 512M \
    "$W/m1" "$W/m2" "$W/m3"
if grep -q "mapped" "$W/err"; then bad "BLOOMKIT_NO_MMAP still mapped"; else ok "BLOOMKIT_NO_MMAP: not mapped"; fi
# --count, and two inputs with nothing in common.
for t in 1 5; do
    "$BK" common -c -t $t --memory 512M "$W/m1" "$W/m2" "$W/m3" >"$W/got.raw" 2>"$W/err"
    if [ "$(cat "$W/got.raw")" = "$(wc -l <"$W/want.order" | tr -d ' ')" ]; then ok "mapped --count -t $t"; else
        bad "mapped --count -t $t: $(cat "$W/got.raw") $(cat "$W/err")"; fi
done
gen 34 50000 0 50000 u >"$W/d1"
gen 35 50000 100000 150000 u >"$W/d2"
"$BK" common --verbose --memory 512M "$W/d1" "$W/d2" >"$W/got.raw" 2>"$W/err"
rc=$?
if [ "$rc" -eq 1 ] && [ ! -s "$W/got.raw" ] && grep -q "mapped" "$W/err"; then
    ok "mapped, nothing in common: exit 1, no output"
else
    bad "mapped, nothing in common: exit $rc; $(cat "$W/err")"
fi
# A line the index cannot hold (over 65535 bytes) in the smallest input:
# the general path takes over and the answer is the same; in a larger
# input such a line is read past (nothing mapped can equal it).
long=$(head -c 70000 /dev/zero | tr '\0' 'L')
{ head -n 3000 "$W/m1"; echo "$long"; } >"$W/l1"
{ echo "$long"; head -n 9000 "$W/m2"; echo "$long"; cat "$W/m1"; } >"$W/l2"
first_order "$W/want.order" "$W/l1" "$W/l2"
"$BK" common --verbose -t 2 --memory 512M "$W/l1" "$W/l2" >"$W/got.raw" 2>"$W/err"
sort "$W/got.raw" >"$W/got"
sort "$W/want.order" >"$W/want"
if cmp -s "$W/got" "$W/want" && ! grep -q "mapped" "$W/err"; then
    ok "a 70000-byte line in the smallest input: the general path, same lines"
else
    bad "70000-byte line in the smallest input: $(cat "$W/err")"
fi
{ head -n 3000 "$W/m1"; } >"$W/l1"
{ echo "$long"; head -n 9000 "$W/m2"; printf '%s\r\n' "$long"; cat "$W/m1"; printf '%s' "$long"; } >"$W/l2"
first_order "$W/want.order" "$W/l1" "$W/l2"
"$BK" common --verbose -t 2 --memory 512M "$W/l1" "$W/l2" >"$W/got.raw" 2>"$W/err"
if cmp -s "$W/got.raw" "$W/want.order" && grep -q "mapped" "$W/err"; then
    ok "70000-byte lines in the larger input are read past, the rest joined"
else
    bad "70000-byte lines in the larger input: $(cat "$W/err")"
fi
# A last line without "\n" that ends in "\r" keeps it, as the reader does.
printf 'a\r\nb\r\nc\r' >"$W/cr1"
printf 'c\r\nb\nc\r' >"$W/cr2"
"$BK" common --memory 512M "$W/cr1" "$W/cr2" | od -c >"$W/got"
printf 'b\nc\r\n' | od -c >"$W/want"
if cmp -s "$W/got" "$W/want"; then ok "mapped: a final CR without LF is part of the line"; else
    bad "mapped: final CR: $(cat "$W/got")"; fi
# The mapped input's lines are found by their bytes and where they end:
# "ab" is not "ab\rc", a last "x\r" is not "x" (from "x\r\n"), "k" is not
# "keep". The smallest input is the mapped one.
printf 'ab\rc\nx\r\nkeep\nk\n' >"$W/cr1"
printf 'ab\nkeep\nkee\nzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\nx\r' >"$W/cr2"
# Lines are compared only when their hashes' tags agree: with
# BLOOMKIT_JOIN_COLLIDE every line has the same hash, so every line is
# compared with every entry before it.
printf 'keep\n' | od -c >"$W/want"
for collide in "" BLOOMKIT_JOIN_COLLIDE=1; do
    env $collide "$BK" common --verbose --memory 512M "$W/cr1" "$W/cr2" 2>"$W/err" | od -c >"$W/got"
    if cmp -s "$W/got" "$W/want" && grep -q "in memory (the smallest input mapped)" "$W/err"; then
        ok "mapped ($collide): a line is its bytes up to its own end, not a prefix of another"
    else
        bad "mapped ($collide): line ends: $(cat "$W/got") $(cat "$W/err")"
    fi
done
# The longest line the mapped path takes is 65,535 bytes as the reader
# gives it (a "\r" before "\n" dropped; a last line without "\n" as it
# is); one byte more and the join takes the general path. Either way the
# same lines come out. The long line starts off a 64-byte boundary.
for c in "65535 lf yes" "65536 lf no" "65535 crlf yes" "65536 crlf no" "65535 eof yes" \
    "65536 eof no" "65534 eofcr yes" "65535 eofcr no"; do
    set -- $c
    long=$(head -c "$1" /dev/zero | tr '\0' a)
    case $2 in
    lf) end='\n' ;;
    crlf) end='\r\n' ;;
    eof) end='' ;;
    eofcr) end='\r' ;;
    esac
    printf "x\nyy\n%s$end" "$long" >"$W/ln1"
    { printf 'yy\n'; seq 1 20000; printf "%s$end" "$long"; } >"$W/ln2"
    "$BK" common --verbose --memory 512M "$W/ln1" "$W/ln2" >"$W/got.raw" 2>"$W/err"
    want_len=$1
    [ "$2" = eofcr ] && want_len=$(($1 + 1)) # "aaa\r" in both, kept as it is
    mapped=no
    grep -q "in memory (the smallest input mapped)" "$W/err" && mapped=yes
    if [ "$mapped" = "$3" ] && [ "$(wc -l <"$W/got.raw")" -eq 2 ] &&
        [ "$(grep -cx yy "$W/got.raw")" -eq 1 ] &&
        [ "$(awk -v n="$want_len" 'length($0) == n' "$W/got.raw" | wc -l)" -eq 1 ]; then
        ok "a $1-byte line ($2): mapped $3, the common lines"
    else
        bad "a $1-byte line ($2): mapped $mapped (want $3), $(wc -l <"$W/got.raw") lines; $(cat "$W/err")"
    fi
done
rm -f "$W/ln1" "$W/ln2"
# Every line colliding: duplicates, empty lines, CRLF, no final newline,
# inserted by two threads at once into one run of slots (the larger input
# ends with a 4 MB line, read past, so that the inputs take threads).
gen 41 3000 0 2000 bcn >"$W/c1"
{ gen 42 3000 1000 3000 bc; head -c 4200000 /dev/zero | tr '\0' y; } >"$W/c2"
first_order "$W/want.order" "$W/c1" "$W/c2"
for t in 1 2 s2; do
    case $t in
    s*) t=${t#s} serial=BLOOMKIT_SERIAL_EMIT=1 ;;
    *) serial= ;;
    esac
    env $serial BLOOMKIT_JOIN_COLLIDE=1 "$BK" common --verbose -t $t --memory 512M "$W/c1" "$W/c2" \
        >"$W/got.raw" 2>"$W/err"
    if cmp -s "$W/got.raw" "$W/want.order" && grep -q "$t threads; in memory (the smallest input mapped)" "$W/err"; then
        ok "mapped, every hash equal, -t $t $serial: the common lines in order"
    else
        bad "mapped, every hash equal, -t $t $serial: $(wc -l <"$W/got.raw") lines, want $(wc -l <"$W/want.order"); $(cat "$W/err")"
    fi
done
rm -f "$W/c1" "$W/c2"
rm -f "$W/m1" "$W/m2" "$W/m3" "$W/d1" "$W/d2" "$W/l1" "$W/l2"

# Thread counts and memory caps give the same lines: random inputs with
# duplicates, empty lines, CRLF, NUL bytes and no final newline.
gen 21 12000 0 9000 bcn >"$W/x"
gen 22 15000 4000 14000 bc >"$W/y"
gen 23 9000 2000 11000 tn >"$W/z"
ref "$W/want" "$W/x" "$W/y" "$W/z"
for t in 1 2 3; do
    for mem in 64M 256K 64K; do
        check_common "-t $t --memory $mem, three random inputs" 0 -t $t --memory $mem --tmpdir "$W" \
            "$W/z" "$W/x" "$W/y"
    done
done
ref "$W/want" "$W/x" "$W/y"
"$BK" common -t 2 --verbose --memory 256K --tmpdir "$W" "$W/x" - <"$W/y" >"$W/got.raw" 2>"$W/err"
sort "$W/got.raw" >"$W/got"
if cmp -s "$W/got" "$W/want" && grep -q '1 threads' "$W/err"; then
    ok "-t 2 with standard input runs on one thread"
else
    bad "-t 2 with standard input: $(cat "$W/err")"
fi
# A named pipe can be read once too.
mkfifo "$W/fifo"
cat "$W/y" >"$W/fifo" &
"$BK" common -t 2 --verbose --memory 256K --tmpdir "$W" "$W/x" "$W/fifo" >"$W/got.raw" 2>"$W/err"
wait
sort "$W/got.raw" >"$W/got"
if cmp -s "$W/got" "$W/want" && grep -q '1 threads' "$W/err"; then
    ok "-t 2 with a named pipe runs on one thread"
else
    bad "-t 2 with a named pipe: $(cat "$W/err")"
fi
rm -f "$W/fifo"
for bad_t in 0 65 x; do
    "$BK" common -t $bad_t "$W/x" "$W/y" >/dev/null 2>"$W/err"
    if [ $? -eq 2 ] && grep -q 'threads' "$W/err"; then ok "-t $bad_t is a usage error"; else
        bad "-t $bad_t"; fi
done

# --- --approx ------------------------------------------------------------------
ref "$W/want" "$W/a" "$W/b"
"$BK" common --approx "$W/a" "$W/b" >"$W/got.raw" 2>"$W/err"
rc=$?
sort "$W/got.raw" >"$W/got"
missing=$(comm -23 "$W/want" "$W/got" | wc -l)
extra=$(comm -13 "$W/want" "$W/got" | wc -l)
if [ "$rc" -eq 0 ] && [ "$missing" -eq 0 ] && [ "$extra" -le 20 ] && grep -q 'probability' "$W/err"; then
    ok "--approx: no common line missed, $extra extra, rate on stderr"
else
    bad "--approx: exit $rc, $missing missed, $extra extra, '$(cat "$W/err")'"
fi
"$BK" common --approx --fpr 0.5 --memory 64K "$W/a" "$W/disjoint" >"$W/got.raw" 2>"$W/err"
extra=$(wc -l <"$W/got.raw")
if [ "$extra" -gt 0 ]; then ok "--approx with a tiny filter does print false positives ($extra)"; else
    bad "--approx with a tiny filter printed no false positive: is it exact?"; fi

# -q and --progress, as every command takes them
seq 1 200000 >"$W/pa"
seq 100000 300000 >"$W/pb"
"$BK" common -q -c "$W/pa" "$W/pb" >"$W/out" 2>"$W/err"
if [ "$(cat "$W/out")" = 100001 ] && [ ! -s "$W/err" ]; then ok "common -q: the count, nothing on stderr"
else bad "common -q: the count, nothing on stderr"; fi
BLOOMKIT_PROGRESS_INTERVAL=0.001 "$BK" common --progress -c "$W/pa" "$W/pb" >"$W/out" 2>"$W/err"
if grep -q 'common lines so far' "$W/err" && grep -q '^bloomkit common: 100001 common lines' "$W/err"
then ok "common --progress: status lines and the summary on stderr"
else bad "common --progress: status lines and the summary on stderr"; fi
"$BK" common -c "$W/pa" "$W/pb" >"$W/out" 2>"$W/err"
if [ ! -s "$W/err" ]; then ok "common not on a terminal, without --progress: nothing on stderr"
else bad "common not on a terminal, without --progress: nothing on stderr"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
