#!/bin/sh
# Benchmark: the lines two big files have in common (the seed problem, two
# files of URLs, at a scale this machine can run). Two files of N distinct
# generated URLs each (10 million, about 700 MB each; BK_BENCH_QUICK=1:
# 1 million), half of each file's URLs also in the other, in scrambled
# order, intersected exactly with a 256 MB memory cap by
#   bloomkit common --memory 256M A B
#   LC_ALL=C sort -S 256M -u A, the same for B, then LC_ALL=C comm -12
# Wall time, CPU time (user + system) and peak RSS from GNU time (the peer:
# sums of its three steps' times, largest RSS), median of RUNS runs
# (default 3), in this one run on this machine, inputs in the page cache,
# temporary files in $TMPDIR. On a shared machine CPU time is the steadier
# measure; sort uses both cores (--parallel defaults to the core count),
# bloomkit one.
# Both outputs are checked to hold the same lines.
set -eu
BUILD=${BUILD:-build}
BK=$BUILD/bloomkit
[ -x "$BK" ] || { echo "bench/common.sh: no $BK (run make first)" >&2; exit 1; }
sh scripts/need.sh bench
N=10000000
[ "${BK_BENCH_QUICK:-0}" = 1 ] && N=1000000
RUNS=${RUNS:-3}
MEM=256M
T=$(mktemp -d "${TMPDIR:-/tmp}/bk-bench-common.XXXXXX")
trap 'rm -rf "$T"' EXIT
${CC:-cc} -O2 -o "$T/gen" tests/cli/gen_lines.c
half=$((N / 2))
# N = 10^7 or 10^6: not divisible by the generator's prime, so "p" gives
# every key of [LO, LO + N) exactly once.
"$T/gen" 1 "$N" 0 "$N" up >"$T/A"
"$T/gen" 2 "$N" "$half" $((N + half)) up >"$T/B"
bytes=$(($(wc -c <"$T/A") + $(wc -c <"$T/B")))
cat "$T/A" "$T/B" >/dev/null # into the page cache

# measure NAME COMMAND...: runs it RUNS times, records median seconds and
# median peak RSS (KB) in $T/NAME.
measure() {
    name=$1
    shift
    : >"$T/$name.runs"
    i=0
    while [ "$i" -lt "$RUNS" ]; do
        /usr/bin/time -f '%e %M %U %S' -o "$T/time" "$@"
        tail -n 1 "$T/time" | awk '{ print $1, $2, $3 + $4 }' >>"$T/$name.runs"
        i=$((i + 1))
    done
    sec=$(sort -n -k1,1 "$T/$name.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $1 }')
    kb=$(sort -n -k2,2 "$T/$name.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $2 }')
    cpu=$(sort -n -k3,3 "$T/$name.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $3 }')
    echo "$sec $kb $cpu" >"$T/$name"
}

measure bloomkit sh -c "'$BK' common --memory $MEM --tmpdir '$T' -v '$T/A' '$T/B' >'$T/out.bk' 2>'$T/err.bk'"
# The peer's three steps, each under GNU time; the sum of times and the
# largest RSS make one run.
cat >"$T/peer.sh" <<EOS
set -e
export LC_ALL=C TMPDIR='$T'
/usr/bin/time -f '%e %M %U %S' -o '$T/t1' sort -S $MEM -u '$T/A' >'$T/A.s'
/usr/bin/time -f '%e %M %U %S' -o '$T/t2' sort -S $MEM -u '$T/B' >'$T/B.s'
/usr/bin/time -f '%e %M %U %S' -o '$T/t3' comm -12 '$T/A.s' '$T/B.s' >'$T/out.peer'
cat '$T/t1' '$T/t2' '$T/t3' | awk '{ s += \$1; c += \$3 + \$4; if (\$2 > m) m = \$2 } END { print s, m, c }' >>'$T/peer.runs'
EOS
: >"$T/peer.runs"
i=0
while [ "$i" -lt "$RUNS" ]; do
    sh "$T/peer.sh"
    i=$((i + 1))
done
sec=$(sort -n -k1,1 "$T/peer.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $1 }')
kb=$(sort -n -k2,2 "$T/peer.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $2 }')
cpu=$(sort -n -k3,3 "$T/peer.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $3 }')
echo "$sec $kb $cpu" >"$T/peer"

LC_ALL=C sort "$T/out.bk" >"$T/out.bk.sorted"
if cmp -s "$T/out.bk.sorted" "$T/out.peer"; then same=yes; else same=NO; fi
common=$(wc -l <"$T/out.peer")
read -r bk_s bk_kb bk_cpu <"$T/bloomkit"
read -r pe_s pe_kb pe_cpu <"$T/peer"
echo "## common lines of two files of $N URLs each ($((bytes / 1000000)) MB in all, $common in common), --memory $MEM, median of $RUNS runs"
echo
echo "| tool | wall (s) | CPU (s) | peak RSS (MB) | wall vs bloomkit | CPU vs bloomkit |"
echo "|---|---:|---:|---:|---:|---:|"
awk -v s="$bk_s" -v c="$bk_cpu" -v kb="$bk_kb" 'BEGIN { printf "| bloomkit common --memory %s | %.2f | %.2f | %.0f | 1.0x | 1.0x |\n", "'$MEM'", s, c, kb / 1024 }'
awk -v s="$pe_s" -v c="$pe_cpu" -v kb="$pe_kb" -v b="$bk_s" -v bc="$bk_cpu" 'BEGIN { printf "| LC_ALL=C sort -S %s -u (x2) + comm -12 | %.2f | %.2f | %.0f | %.1fx | %.1fx |\n", "'$MEM'", s, c, kb / 1024, (b > 0 ? s / b : 0), (bc > 0 ? c / bc : 0) }'
echo
echo "Same lines in both outputs: $same. bloomkit: $(sed 's/^bloomkit common: //' "$T/err.bk")."
echo "Rates (bloomkit, this run): $(awk -v b="$bytes" -v s="$bk_s" -v n="$N" 'BEGIN { printf "%.0f MB/s of input, %.1f million lines/s", b / s / 1e6, 2 * n / s / 1e6 }')."
[ "$same" = yes ]
