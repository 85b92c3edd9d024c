#!/bin/sh
# The README's billion-URL seen-set as a sparse 2 GB paged file
# (docs/FORMAT.md, "Paged files"): a run reads and writes the pages its
# lines touch, counted in bytes from /proc/PID/io (never timed); a
# damaged page far from every line costs nothing until info --verify
# names it; one under a line stops the run before it prints a line as new
# that was seen, and leaves the file alone; a run killed mid-way leaves a
# file that loads and a state that goes on.
# Ends with "N passed, N failed"; exits non-zero on any failure.
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
BK=${BK:-$BUILD/bloomkit}
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
PY=$(command -v python3 || echo /usr/bin/python3)
W=$(mktemp -d "${TMPDIR:-/tmp}/bk-test-seenset.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 1' INT TERM
cd "$W" || exit 2

urls() { seq "$1" "$2" | sed 's|^|https://crawl.example.com/page/|'; }

# page_of FILE: the file offset of the one payload page (past the first
# 4 KiB and before the page sums) that holds data: where a lone line set
# its bits in a fresh sparse state.
page_of() {
    "$PY" - "$1" <<'PYEOF'
import os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
head = os.pread(fd, 64, 0)
end = 256 + struct.unpack_from("<Q", os.pread(fd, 96, 128), 56)[0]  # payload length
end = (end + 63) // 64 * 64
off = 4096
while off < end:
    try:
        d = os.lseek(fd, off, os.SEEK_DATA)
    except OSError:
        break
    if d >= end:
        break
    print(d // 4096 * 4096)
    sys.exit(0)
print(0)
PYEOF
}

# poke FILE OFFSET HEX: writes the bytes in place
poke() { "$PY" -c "import os,sys; fd=os.open(sys.argv[1],os.O_WRONLY); os.pwrite(fd,bytes.fromhex(sys.argv[3]),int(sys.argv[2]))" "$1" "$2" "$3"; }
# zero_page FILE OFFSET: 4 KiB of zeros written at OFFSET
zero_page() { "$PY" -c "import os,sys; fd=os.open(sys.argv[1],os.O_WRONLY); os.pwrite(fd,bytes(4096),int(sys.argv[2]))" "$1" "$2"; }
io() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/io"; }

# ---- a fresh billion-URL state: sparse, paged, answers exact
urls 1 100 >a
rc 0 "first run into a 1e9 state" "$BK" dedup --normalize url --state s.bk -n 1e9 -p 0.001 --seed 7 a
check "first run prints every line" same out a
size=$(stat -c %s s.bk)
disk=$(($(stat -c %b s.bk) * 512))
check "the state is 2 GB ($size) and sparse ($disk on disk)" \
    sh -c "[ $size -gt 1900000000 ] && [ $disk -lt 20000000 ]"
check "the state is a paged file (version 3)" \
    sh -c "[ \"\$(od -An -tu4 -j8 -N4 s.bk | tr -d ' ')\" = 3 ]"
urls 51 150 >b
rc 0 "second run" "$BK" dedup --normalize url --state s.bk b
urls 101 150 >want
check "second run prints only the new lines" same out want
rc 0 "info" "$BK" info s.bk
check "info gives the items and an expected fill, reading nothing" \
    sh -c "grep -q '^items  *150$' out && grep -q 'expected from the items' out"
rc 0 "info --verify" "$BK" info --verify s.bk
check "info --verify checks every page" grep -q 'verified: all [0-9]* pages' out

# ---- bytes read: a 2 GB state loads by its header, a line reads a page
rm -f fifo
mkfifo fifo
"$BK" dedup --state s.bk --checkpoint 0 <fifo >run.out 2>run.err &
pid=$!
exec 3>fifo
i=0
while [ $i -lt 100 ] && ! grep -q 'State:.*S' "/proc/$pid/status" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
r0=$(io $pid rchar)
urls 1001 2000 >&3
i=0
while [ $i -lt 300 ] && [ "$(lines run.out 2>/dev/null)" != 1000 ]; do sleep 0.1; i=$((i + 1)); done
r1=$(io $pid rchar)
exec 3>&-
wait $pid
check "loading the 2 GB state read $r0 bytes (under 1 MB)" sh -c "[ '$r0' -lt 1048576 ]"
check "1,000 new lines read $((r1 - r0)) bytes (under 10 MB)" \
    sh -c "[ \$(( $r1 - $r0 )) -lt 10485760 ]"
check "1,000 new lines printed" test "$(lines run.out)" = 1000
urls 1001 2000 >seen
rc 0 "the 1,000 lines were checkpointed" "$BK" check -c s.bk seen
check "all 1,000 found" sh -c "[ \"\$(cat out)\" = 1000 ]"

# ---- damage far from every line: no refusal, right answers; verify names it
mid=1000001536 # a 4 KiB page near the middle of the payload
rc 0 "the middle page is a hole (no line touched it)" \
    "$PY" -c "import os,sys; fd=os.open('s.bk',os.O_RDONLY); sys.exit(0 if os.lseek(fd,$mid,os.SEEK_DATA) > $mid + 4096 else 1)"
poke s.bk $((mid + 100)) ff
urls 2001 2100 >c
rc 0 "a run beside a damaged page" "$BK" dedup --state s.bk c
check "it prints its new lines" same out c
rc 0 "check beside the damaged page" "$BK" check -c s.bk seen
check "check finds every line" sh -c "[ \"\$(cat out)\" = 1000 ]"
rc 2 "info --verify finds the damage" "$BK" info --verify s.bk
check "and names its offset" grep -q "at byte $mid" err

# ---- damage under a line: refused before anything is printed
echo 'https://near.example.com/' >near
rc 0 "a state of one line" "$BK" dedup --normalize url --state n.bk -n 1e9 -p 0.001 --seed 9 near
page=$(page_of n.bk)
check "the line's page found ($page)" sh -c "[ '$page' -gt 0 ]"
zero_page n.bk "$page"
cp n.bk n.damaged
rc 2 "dedup of a line whose page is damaged" "$BK" dedup --state n.bk near
check "nothing printed as new" sh -c "[ ! -s out ]"
check "the damage and its offset named" grep -q "damaged.*at byte $page" err
check "the state file is left alone" same n.bk n.damaged
rc 2 "check of that line" "$BK" check n.bk near
check "check prints nothing" sh -c "[ ! -s out ]"
rc 2 "check --mmap of that line" "$BK" check --mmap n.bk near
check "check --mmap prints nothing" sh -c "[ ! -s out ]"
rc 2 "add to that page" "$BK" add n.bk near
check "the file is left alone after add" same n.bk n.damaged

# ---- a run killed mid-way: the file loads, the next run goes on
urls 1 20000 >many
rm -f fifo
mkfifo fifo
"$BK" dedup --state k.bk -n 1e9 -p 0.001 --checkpoint 1 <fifo >k.out 2>k.err &
pid=$!
exec 3>fifo
head -n 10000 many >&3
i=0
while [ $i -lt 100 ] && [ ! -f k.bk ]; do sleep 0.1; i=$((i + 1)); done
sleep 2.5 # a checkpoint falls due while the input is idle
tail -n 10000 many >&3
kill -9 $pid
exec 3>&-
wait $pid 2>/dev/null
rc 0 "the killed run's state loads and verifies" "$BK" info --verify k.bk
rc 0 "the next run goes on" "$BK" dedup --state k.bk many
# every input line printed by one run or the other (lines after the
# checkpoint may be printed by both; the killed run's output may end in a
# line cut short by the kill, which is no input line)
check "no line skipped over both runs (lines after the checkpoint may repeat)" \
    sh -c "[ \$(sort -u k.out out | grep -cxF -f many) = 20000 ]"
head -n 10000 many >first
rc 0 "the lines of the checkpoint are in" "$BK" check -c k.bk first
check "all 10,000" sh -c "[ \"\$(cat out)\" = 10000 ]"

# ---- an in-memory billion-URL set (no --state): a short run takes the
# pages its lines touch (1.9 GB when the whole set was prefaulted first);
# a long one from a pipe is prefaulted part way and answers the same
# peak_kb CMD...: the command's peak resident memory in KiB (its output
# in out)
peak_kb() {
    "$PY" - "$@" <<'PYEOF'
import resource, subprocess, sys
with open("out", "wb") as out:
    subprocess.run(sys.argv[1:], stdout=out, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PYEOF
}
urls 1 10 >ten
kb=$(peak_kb "$BK" dedup -q --normalize url -n 1e9 -p 0.001 ten)
check "10 lines into -n 1e9 in memory: $kb KiB at peak" sh -c "[ '${kb:-0}' -gt 0 ] && [ '${kb:-0}' -lt 300000 ]"
check "and every line printed" same out ten
kb=$(peak_kb sh -c "cat ten | '$BK' dedup -q --normalize url -n 1e9 -p 0.001")
check "the same from a pipe: $kb KiB at peak" sh -c "[ '${kb:-0}' -gt 0 ] && [ '${kb:-0}' -lt 300000 ]"
{ urls 1 150000; urls 1 1000; urls 149001 151000; } >long
awk '!seen[$0]++' long >long.want
cat long | "$BK" dedup -q --normalize url -n 1e9 -p 0.001 >out
check "150,000 lines from a pipe (prefaulted part way) print as awk does" same out long.want

finish
