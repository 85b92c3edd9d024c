#!/bin/sh
# Benchmark: the articles' two integer jobs on N generated 8-digit phone
# numbers (100 million, about 900 MB; BK_BENCH_QUICK=1: 10 million), drawn
# uniformly from [10^7, 10^8), so many repeat:
#   distinct:  bloomkit distinct --max 1e8   (1-bit map, 12.5 MB)
#        vs.   LC_ALL=C sort -u | wc -l
#   once:      bloomkit once --count --max 1e8 (2-bit map, 25 MB)
#        vs.   LC_ALL=C sort | uniq -u | wc -l
# Both sides must print the same number; the script stops if they do not.
# Time, CPU time (user + system: sort and bloomkit both use every core) and
# peak RSS from GNU time, median of RUNS runs of each (default 1: each sort
# of 900 MB takes minutes on 2 cores), the tools alternating, all in this
# one run on this machine. Input is read from the page cache.
# BK_BITMAP_N sets N (for example 20000000: 180 MB, as in BENCHMARKS.md).
set -eu
BUILD=${BUILD:-build}
BK=$BUILD/bloomkit
[ -x "$BK" ] || { echo "bench/bitmap.sh: no $BK (run make first)" >&2; exit 1; }
N=${BK_BITMAP_N:-100000000}
[ "${BK_BENCH_QUICK:-0}" = 1 ] && N=10000000
RUNS=${RUNS:-1}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
nums=$T/phones.txt

shuf -r -n "$N" -i 10000000-99999999 >"$nums"
bytes=$(wc -c <"$nums")
cat "$nums" >/dev/null # into the page cache

# run_once NAME COMMAND...: runs it once (stdout to $T/NAME.out) and appends
# "seconds KB cpu-seconds" to $T/NAME.runs.
run_once() {
    name=$1
    shift
    /usr/bin/time -f '%e %M %U %S' -o "$T/time" "$@" >"$T/$name.out"
    tail -n 1 "$T/time" | awk '{ print $1, $2, $3 + $4 }' >>"$T/$name.runs"
}

# median NAME: the median of each column of $T/NAME.runs into $T/NAME.
median() {
    set -- "$1" "$(wc -l <"$T/$1.runs")"
    for col in 1 2 3; do
        sort -n -k$col,$col "$T/$1.runs" | awk -v r="$2" -v c=$col 'NR == int((r + 1) / 2) { print $c }'
    done | paste -sd ' ' >"$T/$1"
}

for name in bk_distinct sort_distinct bk_once sort_once; do : >"$T/$name.runs"; done
i=0
while [ "$i" -lt "$RUNS" ]; do
    run_once bk_distinct "$BK" distinct -q --max 1e8 "$nums"
    run_once sort_distinct sh -c "LC_ALL=C sort -u '$nums' | wc -l"
    run_once bk_once "$BK" once -q --count --max 1e8 "$nums"
    run_once sort_once sh -c "LC_ALL=C sort '$nums' | uniq -u | wc -l"
    i=$((i + 1))
done
for name in bk_distinct sort_distinct bk_once sort_once; do median $name; done

d_bk=$(tr -d ' ' <"$T/bk_distinct.out")
d_sort=$(tr -d ' ' <"$T/sort_distinct.out")
o_bk=$(tr -d ' ' <"$T/bk_once.out")
o_sort=$(tr -d ' ' <"$T/sort_once.out")
if [ "$d_bk" != "$d_sort" ] || [ "$o_bk" != "$o_sort" ]; then
    echo "bench/bitmap.sh: answers differ: distinct $d_bk vs $d_sort, once $o_bk vs $o_sort" >&2
    exit 1
fi

echo "## distinct / once on $N 8-digit phone numbers ($((bytes / 1000000)) MB; $d_bk distinct, $o_bk seen once), median of $RUNS runs"
echo
echo "| job | tool | time (s) | CPU (s) | peak RSS (MB) | time vs bloomkit | CPU vs bloomkit |"
echo "|---|---|---:|---:|---:|---:|---:|"
row() {
    read -r s kb cpu <"$T/$2"
    read -r b _ bcpu <"$T/$3"
    # the label goes through the environment: awk -v would eat its '\'
    LABEL=$4 awk -v j="$1" -v s="$s" -v kb="$kb" -v b="$b" -v c="$cpu" -v bc="$bcpu" \
        'BEGIN { printf "| %s | %s | %.2f | %.2f | %.0f | %.1fx | %.1fx |\n", j, ENVIRON["LABEL"], s, c, kb / 1024, (b > 0 ? s / b : 0), (bc > 0 ? c / bc : 0) }'
}
row distinct bk_distinct bk_distinct "bloomkit distinct --max 1e8"
row distinct sort_distinct bk_distinct "LC_ALL=C sort -u \\| wc -l"
row once bk_once bk_once "bloomkit once --count --max 1e8"
row once sort_once bk_once "LC_ALL=C sort \\| uniq -u \\| wc -l"

# Scaling: --threads 1, 2, 4, ... up to the CPUs, same input, each thread
# parsing its own byte range (median of 3 runs each).
echo
echo "## distinct / once --threads (same input; $(nproc) CPUs; median of 3)"
echo
echo "| threads | distinct (s) | speedup | once (s) | speedup |"
echo "|---:|---:|---:|---:|---:|"
cpus=$(nproc)
t=1
d1="" o1=""
while [ "$t" -le "$cpus" ]; do
    times_d="" times_o=""
    for r in 1 2 3; do
        s=$(/usr/bin/time -f '%e' "$BK" distinct -q -t "$t" --max 1e8 "$nums" 2>&1 >/dev/null | tail -n 1)
        times_d="$times_d $s"
        s=$(/usr/bin/time -f '%e' "$BK" once -q --count -t "$t" --max 1e8 "$nums" 2>&1 >/dev/null | tail -n 1)
        times_o="$times_o $s"
    done
    d=$(echo $times_d | tr ' ' '\n' | sort -n | sed -n 2p)
    o=$(echo $times_o | tr ' ' '\n' | sort -n | sed -n 2p)
    [ -z "$d1" ] && d1=$d o1=$o
    awk -v t="$t" -v d="$d" -v o="$o" -v d1="$d1" -v o1="$o1" \
        'BEGIN { printf "| %d | %.2f | %.2fx | %.2f | %.2fx |\n", t, d, d1 / d, o, o1 / o }'
    if [ "$t" -lt "$cpus" ] && [ $((t * 2)) -gt "$cpus" ]; then t=$cpus; else t=$((t * 2)); fi
done

# Text lines: distinct --lines (common's engine on one input) against
# sort -u | wc -l, and once --lines against sort | uniq -u | wc -l, on N/10
# random words with repeats (the answers must agree), median of 3 runs
# each, alternating.
words=$T/words.txt
awk -v n=$((N / 10)) 'BEGIN { srand(7); for (i = 0; i < n; i++) printf "word-%d.example/%x\n", int(rand() * n / 3), i % 13 }' >"$words"
# race BK PEER PEERCMD BKCOMMAND...: 3 alternating runs of each (bloomkit's
# command run as given, the peer's through sh), their medians in $T/BK and
# $T/PEER, and their answers, which must agree: left in $answer.
race() {
    bk=$1 peer=$2 peercmd=$3
    shift 3
    : >"$T/$bk.runs"
    : >"$T/$peer.runs"
    for r in 1 2 3; do
        run_once "$bk" "$@"
        run_once "$peer" sh -c "$peercmd"
    done
    median "$bk"
    median "$peer"
    answer=$(tr -d ' ' <"$T/$bk.out")
    if [ "$answer" != "$(tr -d ' ' <"$T/$peer.out")" ]; then
        echo "bench/bitmap.sh: $* says $answer, $peercmd $(cat "$T/$peer.out")" >&2
        exit 1
    fi
}
race bk_lines sort_lines "LC_ALL=C sort -u '$words' | wc -l" "$BK" distinct --lines -q "$words"
echo
echo "## distinct --lines on $((N / 10)) lines of text ($(($(wc -c <"$words") / 1000000)) MB; $answer distinct), median of 3"
echo
echo "| job | tool | time (s) | CPU (s) | peak RSS (MB) | time vs bloomkit | CPU vs bloomkit |"
echo "|---|---|---:|---:|---:|---:|---:|"
row "distinct lines" bk_lines bk_lines "bloomkit distinct --lines"
row "distinct lines" sort_lines bk_lines "LC_ALL=C sort -u \\| wc -l"
# once --lines (the lines seen exactly once) on the same words
race bk_once_lines sort_once_lines "LC_ALL=C sort '$words' | LC_ALL=C uniq -u | wc -l" \
    "$BK" once --lines -c -q "$words"
row "lines seen once ($answer)" bk_once_lines bk_once_lines "bloomkit once --lines -c"
row "lines seen once ($answer)" sort_once_lines bk_once_lines "LC_ALL=C sort \\| uniq -u \\| wc -l"
