#!/bin/sh
# Scaling over the machine's CPUs: the same job at --threads 1, 2, 4, ...
# up to the CPUs, on the same generated input, wall time (median of RUNS,
# default 3) and speedup over one thread:
#   common   2 inputs of BK_SCALE_LINES URL lines (default 20 million each,
#            half of them common), the common lines printed
#   distinct BK_SCALE_NUMS 8-digit numbers (default 50 million), --max 1e8
#   once     the same numbers, --count
#   dedup    BK_SCALE_URLS crawler URLs (default 20 million, a fifth of them
#            repeats, host case mixed) with the README's crawler line:
#            --normalize url -n 1e9 -p 0.001, in URLs per second
# BK_BENCH_QUICK=1 divides the sizes by 10. The inputs are read from the
# page cache (each is read once before the runs).
set -eu
BUILD=${BUILD:-build}
BK=${BK:-$BUILD/bloomkit}
[ -x "$BK" ] || { echo "bench/scaling.sh: no $BK" >&2; exit 1; }
lines=${BK_SCALE_LINES:-20000000}
nums=${BK_SCALE_NUMS:-50000000}
urls=${BK_SCALE_URLS:-20000000}
if [ "${BK_BENCH_QUICK:-0}" = 1 ]; then lines=$((lines / 10)) nums=$((nums / 10)) urls=$((urls / 10)); fi
RUNS=${RUNS:-3}
T=$(mktemp -d "${TMPDIR:-/tmp}/bk-scale.XXXXXX")
trap 'rm -rf "$T"' EXIT
seq 1 "$lines" | sed 's|^|https://example.com/item/|' >"$T/a"
seq $((lines / 2 + 1)) $((lines + lines / 2)) | sed 's|^|https://example.com/item/|' >"$T/b"
shuf -r -n "$nums" -i 10000000-99999999 >"$T/n"
# crawler URLs: the first 4/5 all new, then repeats; odd ids spell the host
# in capitals (the same key once normalized)
awk -v n="$urls" 'BEGIN { d = int(n * 4 / 5); srand(7)
    for (i = 0; i < n; i++) { k = i < d ? i : int(rand() * d)
        printf "https://%s.example.com/dir%d/page-%d.html?id=%d\n", k % 2 ? "WWW" : "www", k % 1000, k, k * 7 } }' >"$T/c"
cat "$T/a" "$T/b" "$T/n" "$T/c" >/dev/null
cpus=$(nproc)

# median WALL: runs the command RUNS times, prints the median seconds
median() {
    i=0
    : >"$T/times"
    while [ $i -lt "$RUNS" ]; do
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
        t1=$(date +%s.%N)
        awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >>"$T/times"
        i=$((i + 1))
    done
    sort -n "$T/times" | sed -n "$(((RUNS + 1) / 2))p"
}

echo "## Scaling over $cpus CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
echo
echo "common: 2 x $lines URL lines ($((lines / 2)) common), printed; distinct / once: $nums 8-digit numbers; dedup: $urls URLs; median of $RUNS"
echo
echo "| threads | common (s) | speedup | distinct (s) | speedup | once (s) | speedup | dedup (s) | M URLs/s |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
t=1
c1="" d1="" o1=""
while [ "$t" -le "$cpus" ]; do
    c=$(median "$BK" common -q -t "$t" "$T/a" "$T/b")
    d=$(median "$BK" distinct -q -t "$t" --max 1e8 "$T/n")
    o=$(median "$BK" once -q --count -t "$t" --max 1e8 "$T/n")
    u=$(median "$BK" dedup -q -t "$t" --normalize url -n 1e9 -p 0.001 "$T/c")
    [ -z "$c1" ] && c1=$c d1=$d o1=$o
    awk -v t="$t" -v c="$c" -v d="$d" -v o="$o" -v c1="$c1" -v d1="$d1" -v o1="$o1" -v u="$u" -v n="$urls" \
        'BEGIN { printf "| %d | %.2f | %.2fx | %.2f | %.2fx | %.2f | %.2fx | %.2f | %.1f |\n", t, c, c1 / c, d, d1 / d, o, o1 / o, u, n / u / 1e6 }'
    if [ "$t" -lt "$cpus" ] && [ $((t * 2)) -gt "$cpus" ]; then t=$cpus; else t=$((t * 2)); fi
done
