#!/bin/sh
# Tests that filter files stay whole under concurrency, interruptions and
# mistakes: locking of every read-modify-write, dedup --state checkpoints
# and endings, merge's --force and capacity rules, saves through symlinks,
# special files refused, owners and modes kept, check --mmap verification
# and a mapped file truncated under it,
# the key normalization a file records. Each check compares with an
# answer computed independently (seq, sort, the inputs) and fails if the
# behaviour it covers were missing.
# Ends with "N passed, N failed"; exits non-zero on any failure.
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
BK=${BK:-$BUILD/bloomkit}
DATA=$(cd "$(dirname "$0")/../data" && pwd)
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
W=$(mktemp -d "${TMPDIR:-/tmp}/bk-test-safety.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 1' INT TERM
cd "$W" || exit 2

# waits up to 10 s for a file to hold text matching a pattern
wait_for() {
    i=0
    while [ $i -lt 100 ] && ! grep -q "$2" "$1" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
}

# ---- locking: two writers on one file ------------------------------------
seq 1 1000000 | sed 's/^/a/' >A
seq 1 1000000 | sed 's/^/b/' >B
cat A B >AB
lost=0
for round in 1 2 3; do
    rm -f f.bk
    "$BK" create f.bk -n 3M -p 1e-6 --seed 1 2>/dev/null
    "$BK" add -q f.bk A &
    p1=$!
    "$BK" add -q f.bk B &
    p2=$!
    wait $p1
    wait $p2
    n=$("$BK" check -c f.bk AB)
    [ "$n" = 2000000 ] || lost=$((lost + 1))
done
check "two concurrent adds of 1M keys each keep all 2M keys (3 rounds, $lost lost)" test $lost -eq 0

if ! timed_cases; then
    echo "skip: lock waits (timed; the plain suite runs them)"
elif command -v flock >/dev/null 2>&1; then
    "$BK" create l.bk -n 1000 -p 0.01 --seed 1 2>/dev/null
    echo x >x
    flock l.bk sleep 6 &  # long enough for the checks below on a loaded machine
    holder=$!
    sleep 0.3
    start=$(date +%s)
    rc 2 "--no-wait on a locked file exits 2" "$BK" add --no-wait l.bk x
    check "--no-wait does not wait (the holder keeps the lock 6 s)" test $(($(date +%s) - start)) -le 2
    check "--no-wait names the holding process ($holder)" grep -q "process $holder" err
    rc 1 "a reader does not block on a locked file" timeout 2 "$BK" check l.bk x
    "$BK" add l.bk x >/dev/null 2>add.err &
    adder=$!
    wait_for add.err waiting
    check "a waiting writer says whom it waits for" grep -q "waiting for process $holder" add.err
    check "... and is still waiting" kill -0 $adder
    wait $holder
    wait $adder
    check "... then adds once the lock is free" test "$("$BK" check -c l.bk x)" = 1
    for cmd in "remove" "dedup --state" "merge"; do
        flock l.bk sleep 2 &
        holder=$!
        sleep 0.3
        case $cmd in
        remove) rc 2 "remove --no-wait waits for no lock" "$BK" remove --no-wait l.bk x ;;
        dedup*) rc 2 "dedup --state --no-wait on a locked state" "$BK" dedup -q --no-wait --state l.bk x ;;
        merge) rc 2 "merge --no-wait into a locked input" "$BK" merge --no-wait l.bk l.bk ;;
        esac
        check "$cmd: message names the lock holder" grep -q "process $holder" err
        wait $holder
    done
else
    echo "skip: no flock(1)"
fi

# two dedup --state runs at once on a new state file: every line is
# printed by exactly one of them
seq 1 300000 >D
"$BK" dedup -q --state d.bk -n 1M D >d1.out 2>d1.err &
p1=$!
"$BK" dedup -q --state d.bk D >d2.out 2>d2.err &
p2=$!
wait $p1
wait $p2
check "two concurrent dedup --state runs print each line once between them" \
    sh -c "cat d1.out d2.out | sort -n | cmp -s - D"

# ---- merge ------------------------------------------------------------------
seq 1 1000 >k1
seq 1001 2000 >k2
"$BK" create m1.bk -n 1000 -p 0.01 --seed 7 2>/dev/null
"$BK" create m2.bk -n 1000 -p 0.01 --seed 7 2>/dev/null
"$BK" add -q m1.bk k1
"$BK" add -q m2.bk k2
echo precious >other.bk
rc 2 "merge refuses to overwrite a file that is not an input" "$BK" merge other.bk m1.bk m2.bk
check "... and leaves it alone" test "$(cat other.bk)" = precious
check "... and says --force" grep -q -- '--force' err
rc 0 "merge --force replaces it" "$BK" merge --force other.bk m1.bk m2.bk
rc 0 "merge into one of its inputs needs no --force" "$BK" merge m1.bk m1.bk m2.bk
check "merge over capacity warns with the expected FPR" grep -q 'exceed the capacity 1000.*probability 0\.[0-9]' err
"$BK" create s1.bk -n 1000 -p 0.001 --kind scalable --seed 3 2>/dev/null
"$BK" create s2.bk -n 1000 -p 0.001 --kind scalable --seed 3 2>/dev/null
seq 1 900 | "$BK" add -q s1.bk
seq 2001 2900 | "$BK" add -q s2.bk
rc 2 "a scalable union over its promised FPR is refused" "$BK" merge s.bk s1.bk s2.bk
check "... not written" test ! -e s.bk
check "... and explained" grep -q 'promise' err
"$BK" create m3.bk -n 1000 -p 0.01 --seed 8 2>/dev/null
rc 2 "merge of different seeds" "$BK" merge m4.bk m1.bk m3.bk
check "... names the seed as the difference" grep -q 'differ in seed' err
"$BK" create m5.bk -n 1000 -p 0.01 --seed 7 --kind counting 2>/dev/null
rc 2 "merge of different kinds" "$BK" merge m4.bk m1.bk m5.bk
check "... names the kind as the difference" grep -q 'differ in kind' err

# ---- dedup --state: checkpoints and endings ---------------------------------
seq 1 200000 >P
"$BK" dedup -q --state p.bk P | head -n 3 >/dev/null
"$BK" dedup -q --state p.bk P >p2.out 2>p2.err
first=$(head -n 1 p2.out)
check "closed output pipe: state saved (re-run starts after what was written, at $first)" \
    test -n "$first" -a "$first" -gt 3
check "closed output pipe: the re-run skips nothing after it" \
    sh -c "seq $first 200000 | cmp -s - p2.out"

if timed_cases; then
mkfifo slow
(seq 1 500; sleep 3; seq 501 1000; exec sleep 30) >slow &
prod=$!
"$BK" dedup -q --state k.bk -n 100000 --checkpoint 0.5 slow >k1.out 2>/dev/null &
dd=$!
seq 1 1000 >K
# The producer now pauses for 30 s: within it a checkpoint must record
# all 1000 printed lines (readers never block, so ask the file itself).
i=0
while [ $i -lt 200 ] && [ "$("$BK" check -c k.bk K 2>/dev/null)" != 1000 ]; do
    sleep 0.1
    i=$((i + 1))
done
kill -KILL $dd
kill $prod 2>/dev/null
wait $dd 2>/dev/null
wait $prod 2>/dev/null
"$BK" dedup -q --state k.bk K >k2.out
check "kill -9 after a checkpoint: the re-run does not repeat the checkpointed lines" \
    test "$(wc -l <k2.out)" -eq 0
check "kill -9: nothing was lost" sh -c "cat k1.out k2.out | sort -n | cmp -s - K"
else
    echo "skip: a checkpoint while the producer pauses (timed; the plain suite runs it)"
fi

# Checkpoints write the sectors that changed, in place through a journal
# (docs/FORMAT.md): a run adding a few lines to a large state keeps its inode.
seq 1 1000 | "$BK" dedup -q --state ip.bk -n 1000000 -p 0.001 >/dev/null
ino1=$(stat -c %i ip.bk)
seq 1 1100 >IP
"$BK" dedup -q --state ip.bk IP >ip.out
check "dedup --state adding 100 lines to a 1.8 MB state writes it in place" \
    test "$(stat -c %i ip.bk)" = "$ino1"
check "... prints only the new lines" test "$(wc -l <ip.out)" -eq 100
# The journal it leaves is settled: the file holds every line (the journal
# guards them until the kernel has written the file back), so a reader
# replays nothing, and the next run appends its own changes to it.
jsize=$(stat -c %s ip.bk-journal 2>/dev/null || echo 0)
check "... leaves a journal of its changes beside it" test "$jsize" -gt 0
echo 999999 | "$BK" dedup -q --state ip.bk >/dev/null
check "... which the next run appends to" test "$(stat -c %s ip.bk-journal)" -gt "$jsize"
check "... the state holding that run's line too" \
    test "$(echo 999999 | "$BK" check -c ip.bk -)" = 1
check "... and the state holds all 1100 lines" test "$("$BK" check -c ip.bk IP)" = 1100

for sig in HUP TERM; do
    rm -f g.fifo g.bk g1.out # a stale g1.out would let the test signal a run not yet started
    mkfifo g.fifo
    (seq 1 300; exec sleep 10) >g.fifo &
    prod=$!
    "$BK" dedup -q --state g.bk g.fifo >g1.out 2>/dev/null &
    dd=$!
    wait_for g1.out '^300$'
    kill -$sig $dd
    wait $dd
    got=$?
    kill $prod 2>/dev/null
    wait $prod 2>/dev/null
    want=129
    [ $sig = TERM ] && want=143
    check "SIG$sig: exit $want (got $got)" test $got -eq $want
    seq 1 400 >G
    "$BK" dedup -q --state g.bk G >g2.out
    check "SIG$sig: state saved, re-run prints only the new lines" sh -c "seq 301 400 | cmp -s - g2.out"
done

mkdir ro
chmod 555 ro
if [ ! -w ro ]; then
    rc 2 "a state path that cannot be written fails before any output" "$BK" dedup --state ro/s.bk P
    check "... with no line printed" test ! -s out
else
    echo "skip: running as root, a read-only directory is writable"
fi
rc 2 "a state in a missing directory fails before any output" "$BK" dedup --state nodir/s.bk P
check "... with no line printed" test ! -s out

# ---- links, special files, owners -------------------------------------------
mkdir -p data
"$BK" create data/real.bk -n 1000 -p 0.01 --seed 5 2>/dev/null
ln -s data/real.bk link.bk
echo via-link >vl
"$BK" add -q link.bk vl
check "a save through a symlink keeps the link" test -L link.bk
check "... and writes the file it points at" test "$("$BK" check -c data/real.bk vl)" = 1
check "... leaving no second copy beside the link" test "$(ls data | wc -l)" -eq 1
ln -s data/new.bk dangling.bk
rc 0 "create through a dangling symlink" "$BK" create dangling.bk -n 100 -p 0.01
check "... creates the link's target and keeps the link" sh -c 'test -L dangling.bk && test -f data/new.bk'
mkfifo pipe.bk
"$BK" create m1b.bk -n 1000 -p 0.01 --seed 7 2>/dev/null
rc 2 "merge into a FIFO is refused" "$BK" merge --force pipe.bk m1b.bk
check "... the FIFO is still a FIFO" test -p pipe.bk
check "... and the message says why" grep -q 'not a regular file' err
mkdir adir.bk
rc 2 "create over a directory is refused" "$BK" create --force adir.bk -n 10 -p 0.01
check "... it is still a directory" test -d adir.bk
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
    "$BK" create owned.bk -n 1000 -p 0.01 --seed 9 2>/dev/null
    chown nobody:nogroup owned.bk 2>/dev/null || chown nobody owned.bk
    chmod 640 owned.bk
    before=$(stat -c '%U:%G %a' owned.bk)
    "$BK" add -q owned.bk vl
    check "root saving a service account's file keeps its owner and mode ($before)" \
        test "$(stat -c '%U:%G %a' owned.bk)" = "$before"
    if [ -c /dev/null ]; then
        cp -a /dev/null devnull
        rc 2 "create --force over a device is refused" "$BK" create --force devnull -n 10 -p 0.01
        check "... it is still a device" test -c devnull
    fi
else
    "$BK" create owned.bk -n 1000 -p 0.01 --seed 9 2>/dev/null
    chmod 640 owned.bk
    "$BK" add -q owned.bk vl
    check "a save keeps the file's mode" test "$(stat -c '%a' owned.bk)" = 640
fi

# ---- check --mmap on a damaged file -----------------------------------------
seq 1 1000 >mk
"$BK" create mm.bk -n 1000 -p 0.01 --seed 4 2>/dev/null
"$BK" add -q mm.bk mk
size=$(wc -c <mm.bk)
# zero the payload's second half: keys added there now read as absent
head -c $((size / 2)) mm.bk >dm.bk
head -c $((size - size / 2)) /dev/zero >>dm.bk
rc 2 "check --mmap refuses a damaged file (no false 'absent')" "$BK" check -c --mmap dm.bk mk
check "... saying it is damaged and naming --no-verify" grep -q 'damaged.*--no-verify' err
rc 0 "check --mmap on a sound file answers" "$BK" check -c --mmap mm.bk mk
check "... every added key present" test "$(cat out)" = 1000
rc 0 "check --mmap --no-verify skips the check" "$BK" check -c --mmap --no-verify dm.bk mk

# ---- check --mmap on a file truncated while it is mapped --------------------
# Another program truncates the filter file while check --mmap waits for
# keys: the next lookup touches pages that no longer exist, which raises
# SIGBUS. The run must end with exit 2 and a message naming the file, not
# die without a word.
"$BK" create tm.bk -n 1000000 -p 0.01 --seed 6 2>/dev/null
seq 1 1000 | "$BK" add -q tm.bk
mkfifo tm.fifo
"$BK" check --mmap tm.bk tm.fifo >tm.out 2>tm.err &
ck=$!
exec 3>tm.fifo
echo 1 >&3
wait_for tm.out '^1$' # answered: the mapping is in use
: >tm.bk              # the same file, truncated under the mapping
seq 2 1000 >&3
exec 3>&-
wait $ck
got=$?
check "check --mmap, file truncated while mapped: exit 2 (got $got)" test $got -eq 2
check "... saying the file shrank, naming it" grep -q 'tm.bk: the file shrank' tm.err

# ---- the key normalization a file records ----------------------------------
printf 'HTTP://Example.com:80/a/../b#x\nhttps://example.org:443\n' >nu
printf 'http://example.com/b\nhttps://example.org/\nhttp://example.net/\n' >nq
"$BK" create nf.bk -n 1000 -p 1e-9 --seed 5 2>/dev/null
"$BK" add -q --normalize url nf.bk nu
rc 0 "check without --normalize uses the file's url normalization" "$BK" check -c nf.bk nq
check "... and finds both keys" test "$(cat out)" = 2
rc 0 "check of a spelling the file normalizes away" sh -c "echo 'HTTP://EXAMPLE.COM/a/../b' | '$BK' check -c nf.bk"
check "... finds it" test "$(cat out)" = 1
rc 2 "check --normalize email on a url file is refused" "$BK" check --normalize email nf.bk nq
check "... naming both normalizations" grep -q 'normalize url.*normalize email' err
rc 2 "add --normalize none to a url file is refused" "$BK" add -q --normalize none nf.bk nq
cp nf.bk nf.before
rc 2 "dedup --state with another normalization is refused" "$BK" dedup --state nf.bk --normalize email nq
check "... before printing anything" test ! -s out
check "... and the state is unchanged" cmp -s nf.bk nf.before
rc 0 "info shows the recorded normalization" "$BK" info nf.bk
check "... as url" grep -q '^keys  *--normalize url' out
"$BK" create plain.bk -n 1000 -p 1e-9 --seed 5 2>/dev/null
"$BK" add -q plain.bk nu
rc 2 "a file of keys added as given refuses --normalize url" "$BK" check --normalize url plain.bk nq
rc 0 "create --normalize email records it" "$BK" create --normalize email em.bk -n 100 -p 1e-9
printf 'Ann@Example.COM\n' | "$BK" add -q em.bk
rc 0 "... and a later add applies it without being told" sh -c "echo ' ann@example.com' | '$BK' check -c em.bk"
check "... (found)" test "$(cat out)" = 1
printf 'Ann@Example.COM\n' | "$BK" dedup -q --state ds.bk --normalize email -n 100 -p 1e-9 >/dev/null
rc 1 "dedup --state remembers its normalization across runs" sh -c "echo 'ann@example.com' | '$BK' dedup -q --state ds.bk | grep -q ."
rc 2 "merge refuses files normalized two ways" "$BK" merge mg.bk nf.bk em.bk
check "... saying so" grep -q 'normalize' err
check "... and writes nothing" test ! -e mg.bk
# a file from before the field existed (version 1): the first writer
# records what it uses, and says so
cp "$DATA/blocked.bkf" v1.bk
rc 0 "a version 1 file loads" "$BK" info v1.bk
check "... showing no recorded normalization" grep -q 'not recorded' out
rc 0 "the first add with --normalize url to it works" sh -c "echo 'HTTP://X.org/b' | '$BK' add -q --normalize url v1.bk"
check "... with a note that it recorded url" grep -q 'recorded --normalize url' err
rc 2 "... after which another normalization is refused" sh -c "echo x | '$BK' check --normalize email v1.bk"

# ---- distinct / once: cost follows the input, memory is watched -------------
echo 12345 >one
rc 0 "distinct --max 2^48 on a one-line file finishes" timeout 60 "$BK" distinct --max 2^48 one
check "... counting 1" test "$(cat out)" = 1
printf '5\n281474976710655\n7\n5\n' >few
rc 0 "once --max 281474976710656 on four lines finishes" timeout 60 "$BK" once --max 281474976710656 few
check "... printing the two values seen once" test "$(tr '\n' ' ' <out)" = "7 281474976710655 "
rc 0 "distinct --print over 2^48 lists the values in order" timeout 60 "$BK" distinct -P --max 2^48 few
check "... all three" test "$(tr '\n' ' ' <out)" = "5 7 281474976710655 "
# values 64 Ki apart: each one makes the kernel back pages of the map
seq 0 65536 20000000000 >spread
rc 2 "distinct stops with a message instead of outgrowing --memory" "$BK" distinct --max 2e10 --memory 64M spread
check "... naming --memory and what to do" grep -q 'more than the .* of --memory: give a --max' err
check "... and prints no count" test ! -s out
# (Not under the sanitizers: ASan reserves terabytes of address space for
# its shadow memory, which the ulimit forbids before main runs.)
if [ "${BK_TEST_SANITIZED:-0}" != 1 ]; then
    rc 2 "a --max whose bitmap cannot even be mapped is refused up front" sh -c "ulimit -v 1000000; '$BK' once --max 2^48 one"
    check "... naming the size" grep -q 'cannot map a .*bitmap for --max' err
fi

# ---- messages that name the right thing ---------------------------------------
"$BK" create rc.bk -k counting -n 100 -p 0.01 --seed 3 2>/dev/null
seq 1 5 | "$BK" add -q rc.bk
seq 1 20 | "$BK" remove --progress rc.bk >out 2>err
check "remove names the key that is not in the filter" grep -q "line 6: '6' is not in rc.bk" err
check "... lists the first 10" test "$(grep -c 'is not in rc.bk; not removed' err)" = 10
check "... and says the rest are counted, not listed" grep -q 'more keys are not in it' err
check "... the summary counting all 15" grep -q '15 not in the filter' err
"$BK" create sat.bk -k counting -n 100 -p 0.01 --seed 3 2>/dev/null
yes k | head -20 | "$BK" add -q sat.bk
yes k | head -20 | "$BK" remove -q sat.bk
rc 0 "a key added 20 times stays present after 20 removes (counters saturate at 15)" sh -c "echo k | '$BK' check sat.bk"
"$BK" create full.bk -k scalable --nonscaling -n 100 -p 1e-9 --seed 8 2>/dev/null
(seq 1 50; seq 1 50; seq 51 200) >fill
rc 2 "a non-scaling filter that fills is refused" "$BK" add full.bk fill
check "... naming the exact line of the 101st new key (151)" grep -q 'at fill line 151:' err
echo x >./-dash.txt
rc 2 "check FILE -dash.txt is a usage error" "$BK" check f.bk -dash.txt
check "... about -dash.txt, not the filter file" grep -q "in '-dash.txt'; to name a file" err
rc 1 "... and ./-dash.txt works" "$BK" check full.bk ./-dash.txt

# ---- distinct / once read plain lines in blocks: the same answers and
# messages as line by line
seq 1 300000 >big
echo 'x12' >>big
seq 5 9 >>big
rc 2 "a bad line deep in a file is refused" "$BK" distinct big
check "... naming its exact line (300001)" grep -q "big: line 300001: not a non-negative integer: 'x12'" err
awk 'NR % 3 == 0 { printf "%d\r\n", $1; next } NR % 3 == 1 { printf "  %d \n", $1; next } { print }' big >mixed.tmp
head -n 300000 mixed.tmp >mixed
printf '300000' >>mixed # a last line without a newline
rc 0 "CRLF lines, blanks and a last line without newline count right" "$BK" distinct -P mixed
check "... the same values as sort -un" sh -c "seq 1 300000 | cmp -s - out"
rc 0 "once on the same mixed file" "$BK" once -c mixed
check "... 299999 seen once (300000 twice)" test "$(cat out)" = 299999

# a plain file of over a megabyte is read by all CPUs at once, each
# keeping its own range of values: the answers must not change
seq 1 400000 | awk '{ v = ($1 * 7919) % 1000003; if ($1 % 5 == 0) printf "%d\r\n", v; else print v }' >plainbig
printf '12345' >>plainbig
tr -d '\r' <plainbig | sort -n | uniq >plain.distinct
tr -d '\r' <plainbig | sort -n | uniq -u >plain.once
rc 0 "distinct -P of a big plain file (threads)" "$BK" distinct -P --max 1000003 plainbig
check "... equals sort | uniq" cmp -s out plain.distinct
rc 0 "once of a big plain file (threads)" "$BK" once --max 1000003 plainbig
check "... equals sort | uniq -u" cmp -s out plain.once
rc 0 "distinct -c of it with the default --max (one thread)" "$BK" distinct plainbig
check "... the same count" test "$(cat out)" = "$(wc -l <plain.distinct)"

# the memory guard counts the process's own memory, not the page cache of
# an input read through a mapping (24 MB here, against --memory 12M)
seq 1000000 4000000 >mapped
rc 0 "distinct of a 24 MB file with --memory 12M (a 0.5 MB bitmap)" "$BK" distinct --max 4000001 --memory 12M mapped
check "... counts 3000001" test "$(cat out)" = 3000001

# ---- leftovers of killed saves, new files created at once, interruptions ------
# A save killed after it made its temp file (kill -9, power loss) leaves
# it; the next save of the same file on this machine removes it. (A
# scalable filter: add saves it whole. A large single array is a paged
# file, which add writes back in place through a journal: no temp file.)
"$BK" create killed.bk -n 100M -p 0.01 --kind scalable --seed 3
# bits in every 4 KiB block, so each save writes (and syncs) 120 MB, not
# a sparse file of a few blocks that is gone before it can be caught
seq 1 2000000 | "$BK" add -q killed.bk
ls killed.bk.tmp-* >/dev/null 2>&1 && bad "no temp file before the test" || ok "no temp file before the test"
seq 1 10 >ten
i=0
# until one is caught mid-save (the kill may land before or after it)
while [ $i -lt 10 ] && ! ls killed.bk.tmp-* >/dev/null 2>&1; do
    "$BK" add -q killed.bk ten &
    pid=$!
    j=0
    while [ $j -lt 400 ] && ! ls killed.bk.tmp-* >/dev/null 2>&1; do
        sleep 0.01
        j=$((j + 1))
    done
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    i=$((i + 1))
done
left=$(ls killed.bk.tmp-* 2>/dev/null | wc -l)
check "kill -9 during saves left temp files behind ($left)" test "$left" -ge 1
echo 11 | "$BK" add -q killed.bk
check "the next save removed them" sh -c '! ls killed.bk.tmp-* >/dev/null 2>&1'
echo 11 >eleven
rc 0 "the file is whole and holds the line saved after" "$BK" check killed.bk eleven
# a temp file of another machine (a shared directory) is left alone
: >killed.bk.tmp-999999-h00000000-0-0
echo 12 | "$BK" add -q killed.bk
check "another machine's temp file is kept" test -e killed.bk.tmp-999999-h00000000-0-0
rm -f killed.bk.tmp-999999-h00000000-0-0 killed.bk

# A disk with room for one copy of the file and a dead saver's leftover:
# the leftover goes before the save needs the room (it used to go only
# after a save that succeeded, so every save failed and it stayed).
# Needs root and mount (a tiny tmpfs); else skipped.
mkdir -p tight
if mount -t tmpfs -o size=2560k tmpfs tight 2>/dev/null; then
    # a 1 MB file with bits on every page (holes take no room)
    "$BK" create tight/s.bk -n 800000 -p 0.01 --kind blocked --seed 5
    seq 1 300000 | "$BK" add -q tight/s.bk
    # a leftover of a killed save by a process that is gone (an older
    # release's name, so its age decides), as big as the file and written
    dead=999999
    while kill -0 $dead 2>/dev/null; do dead=$((dead + 1)); done
    head -c "$(stat -c %s tight/s.bk)" /dev/urandom >"tight/s.bk.tmp-$dead-1-2"
    touch -d '5 minutes ago' "tight/s.bk.tmp-$dead-1-2"
    echo 400001 >one
    rc 0 "a disk with room for one copy and a leftover: the save succeeds" "$BK" add tight/s.bk one
    check "... the leftover is gone" test ! -e "tight/s.bk.tmp-$dead-1-2"
    rc 0 "... the line saved is there" "$BK" check -q tight/s.bk one
    umount tight
else
    skip "a nearly full disk with a leftover temp file (cannot mount a tmpfs here)"
fi
rmdir tight 2>/dev/null

# Two merges into the same new OUT at once: one writes it, the other says
# it was created meanwhile and changes nothing; never both exit 0.
"$BK" create mm1.bk -n 40M -p 0.01 --kind blocked --seed 9 && seq 1 1000 | "$BK" add -q mm1.bk
"$BK" create mm2.bk -n 40M -p 0.01 --kind blocked --seed 9 && seq 1001 2000 | "$BK" add -q mm2.bk
rounds_ok=0 raced=0
for round in 1 2 3; do
    rm -f u.bk
    "$BK" merge u.bk mm1.bk 2>e1 & p1=$!
    "$BK" merge u.bk mm2.bk 2>e2 & p2=$!
    wait $p1; r1=$?
    wait $p2; r2=$?
    # exactly one wrote u.bk; the other failed, during its merge
    # (created meanwhile) or before it (u.bk already there)
    if [ $((r1 + r2)) -eq 2 ] && { [ $r1 -eq 0 ] || [ $r2 -eq 0 ]; } &&
        cat e1 e2 | grep -Eq 'another process created it while|file exists and is not one of the inputs'; then
        rounds_ok=$((rounds_ok + 1))
        cat e1 e2 | grep -q 'another process created it while' && raced=$((raced + 1))
    fi
done
check "two merges into one new OUT at once: never both written ($rounds_ok of 3 rounds; $raced raced)" \
    test "$rounds_ok" -eq 3
seq 1 1000 | "$BK" check -c u.bk >c1
seq 1001 2000 | "$BK" check -c u.bk >c2
check "the OUT holds one input whole, not a mix" sh -c \
    '{ test "$(cat c1)" = 1000 && test "$(cat c2)" -lt 100; } || { test "$(cat c2)" = 1000 && test "$(cat c1)" -lt 100; }'
rm -f mm1.bk mm2.bk u.bk c1 c2

# dedup --state through a dangling symbolic link creates the file it names
ln -s made-by-dedup.bk dangling-state.bk
printf 'x\ny\nx\n' | "$BK" dedup -q --state dangling-state.bk >out 2>err
check "dedup --state through a dangling link: runs" sh -c 'printf "x\ny\n" | cmp -s - out'
check "... and the link now names a file" test -f made-by-dedup.bk -a -L dangling-state.bk

# Ctrl-C during add: what was read is added and saved, said plainly, exit
# 130 (a background job of a script starts with SIGINT ignored; add takes
# it all the same, as a terminal's Ctrl-C)
"$BK" create intr.bk -n 1000 -p 0.01
mkfifo intr.fifo
"$BK" add -q intr.bk intr.fifo 2>err &
pid=$!
exec 3>intr.fifo
printf 'first\nsecond\n' >&3
wait_handles_int $pid
sleep 0.5 # the two lines read (only a wait: a late reader still takes them at the end)
kill -INT $pid
sleep 0.3
exec 3>&- # an add that ignored the signal ends here, at the end of its input
wait $pid
got=$?
check "Ctrl-C during add exits 130 (got $got)" test "$got" -eq 130
check "... saying what was kept" grep -q 'interrupted: the 2 lines read before it were added and saved' err
printf 'first\nsecond\n' >two
rc 0 "... and the lines read are in the file" "$BK" check intr.bk two
check "... both printed as present" test "$(wc -l <out)" -eq 2
rm -f intr.bk intr.fifo

# dedup --state into a pipe whose reader goes away: a line is recorded only
# once the reader has read it. dd reads exactly 100000 bytes and exits; the
# next run must print exactly the lines that end past that byte (an exact
# model: awk over the same input). Before, the lines still in the pipe
# were recorded too, and lost for good.
rm -f pipe.bk
seq 1 100000 | "$BK" dedup -q --state pipe.bk | dd bs=1000 count=100 iflag=fullblock 2>/dev/null >first
check "the reader took its 100000 bytes" test "$(wc -c <first)" -eq 100000
seq 1 100000 | "$BK" dedup -q --state pipe.bk >second
seq 1 100000 | awk '{ off += length($0) + 1; if (off > 100000) print }' >want
check "a re-run prints exactly the lines the reader never read ($(wc -l <second) of $(wc -l <want))" \
    cmp -s second want
rm -f pipe.bk
seq 1 100000 | "$BK" dedup -q --state pipe.bk | head -n 1 >/dev/null
seq 1 100000 | "$BK" dedup -q --state pipe.bk >second
check "after | head -n 1, a re-run prints all but what head read ($(wc -l <second))" \
    test "$(wc -l <second)" -ge 95000
# within one run, a line still in the pipe is a duplicate all the same
printf 'a\nb\na\nc\nb\n' | "$BK" dedup -q --state pipe2.bk | cat >out
check "duplicates of lines in flight are dropped" sh -c 'printf "a\nb\nc\n" | cmp -s - out'
printf 'a\nb\nc\n' | "$BK" check -c pipe2.bk >out
check "... and, the reader having read them, all three are recorded" test "$(cat out)" = 3

finish
