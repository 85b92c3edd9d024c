#!/bin/sh
# What a seen-set costs on disk (issue: checkpoints that cost what changed):
# the disk space of a fresh state for 1e9 URLs (the README's crawler line),
# and the bytes one checkpoint writes after 1,000 and 1,000,000 new lines,
# against the 4 KiB pages those lines touch. The checkpoint is the one
# `dedup --state --checkpoint 4` takes once its input goes idle (one save:
# the lines take under 4 s to feed). Two measures of it, from /proc/PID/io
# between before the lines and 15 s after: write(2) bytes (wchar, less what
# was printed), and bytes sent to storage (write_bytes: whole 4 KiB pages,
# what the disk really writes; 0 where the filesystem does not count it).
# A checkpoint writes the 512-byte sectors that changed, once into a
# journal and once in place (docs/FORMAT.md), or the file whole when that
# writes less. BK_CHECKPOINT_N sets the capacity (default 1e9; 1e8 with
# BK_BENCH_QUICK=1).
BUILD=${BUILD:-build}
BK=$(cd "$BUILD" 2>/dev/null && pwd)/bloomkit
[ -x "$BK" ] || { echo "bench/checkpoint.sh: needs $BUILD/bloomkit" >&2; exit 1; }
n=${BK_CHECKPOINT_N:-1e9}
[ "${BK_BENCH_QUICK:-0}" = 1 ] && n=${BK_CHECKPOINT_N:-1e8}
W=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-ckpt.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
echo "## Seen-set checkpoints: disk and bytes written (-n $n -p 0.001)"
echo
echo x | "$BK" dedup -q --state s.bk -n "$n" -p 0.001 >/dev/null
size=$(stat -c %s s.bk)
kind=$("$BK" info s.bk | awk '/^kind/ { print $2 }')
per_key=1 # 64-byte lines a key touches: one, or two for blocked2
[ "$kind" = blocked2 ] && per_key=2
disk=$(($(stat -c %b s.bk) * 512))
echo "fresh state: $size bytes, $disk on disk ($(awk -v d="$disk" -v s="$size" 'BEGIN { printf "%.4f%%", 100 * d / s }'))"
echo
echo "kind $kind; each row adds its new lines to the state the rows above left"
echo
echo "| new lines | write(2) bytes | bytes to storage | 4 KiB pages they touch (bytes) | storage / pages |"
echo "|---|---|---|---|---|"
wchar() { awk '/^wchar/ { print $2 }' "/proc/$1/io"; }
wbytes() { awk '/^write_bytes/ { print $2 }' "/proc/$1/io"; }
for lines in 1000 1000000 1000; do
    rm -f in
    mkfifo in
    "$BK" dedup -q --state s.bk --checkpoint 4 <in >out &
    pid=$!
    exec 3>in
    sleep 1 # loaded, idle
    w0=$(wchar $pid)
    s0=$(wbytes $pid)
    round=$((round + 1))
    seq 1 "$lines" | sed "s/^/new$round-/" >&3
    sleep ${BK_CHECKPOINT_WAIT:-15} # the checkpoint falls due 4 s after the start, once idle
    w1=$(wchar $pid)
    s1=$(wbytes $pid)
    exec 3>&-
    wait $pid
    printed=$(wc -c <out)
    # distinct pages among lines * per_key random ones
    pages=$(awk -v s="$size" -v k="$lines" -v m="$per_key" \
        'BEGIN { p = s / 4096; printf "%.0f", p * (1 - exp(-m * k / p)) }')
    wrote=$((w1 - w0 - printed))
    stored=$((s1 - s0))
    echo "| $lines | $wrote | $stored | $((pages * 4096)) | $(awk -v w="$stored" -v t="$((pages * 4096))" 'BEGIN { printf "%.2fx", w / t }') |"
done
