#!/bin/sh
# Benchmark: deduplicating a crawler's URL stream. N generated URLs (10
# million, about 475 MB; BK_BENCH_QUICK=1: 1 million), about half of them
# repeats, deduplicated by
#   bloomkit dedup             (blocked filter sized -n N -p 1e-6)
#   bloom create + bloom insert (Debian golang-github-dcso-bloom-cli, same n, p;
#                               builds the filter only, prints nothing)
#   awk '!seen[$0]++'          (exact; the system awk, named in the table)
#   LC_ALL=C sort -u           (exact; output sorted)
# Wall time, CPU time (user + system) and peak RSS from GNU time, medians of
# RUNS runs (default 3) of each, all in this one run on this machine. On a
# shared machine the wall time includes waiting for a core; the CPU time
# does not, so its ratios are the steadier ones. Input is read from the
# page cache.
set -eu
BUILD=${BUILD:-build}
BK=$BUILD/bloomkit
[ -x "$BK" ] || { echo "bench/dedup.sh: no $BK (run make first)" >&2; exit 1; }
sh scripts/need.sh bench
N=10000000
[ "${BK_BENCH_QUICK:-0}" = 1 ] && N=1000000
RUNS=${RUNS:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
urls=$T/urls.txt

# URLs over 9973 hosts; values drawn from 0.6 N, so about 45% are repeats.
awk -v n="$N" 'BEGIN { srand(1); for (i = 0; i < n; i++) { r = int(rand() * n * 0.6);
    printf "http://site%d.example.com/a/%d/p%d.html\n", r % 9973, int(r / 9973), r } }' >"$urls"
bytes=$(wc -c <"$urls")
distinct=$(LC_ALL=C sort -u "$urls" | wc -l)
cat "$urls" >/dev/null # into the page cache

# measure NAME COMMAND...: runs it RUNS times (stdout to $T/out), records
# median wall seconds, median CPU seconds and median peak RSS (KB) in
# $T/NAME.
measure() {
    name=$1
    shift
    : >"$T/$name.runs"
    i=0
    while [ "$i" -lt "$RUNS" ]; do
        /usr/bin/time -f '%e %M %U %S' -o "$T/time" "$@" >"$T/out"
        tail -n 1 "$T/time" | awk '{ print $1, $2, $3 + $4 }' >>"$T/$name.runs"
        i=$((i + 1))
    done
    sec=$(sort -n -k1,1 "$T/$name.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $1 }')
    kb=$(sort -n -k2,2 "$T/$name.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $2 }')
    cpu=$(sort -n -k3,3 "$T/$name.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $3 }')
    echo "$sec $kb $cpu" >"$T/$name"
}

measure bloomkit "$BK" dedup -q -n "$N" -p 1e-6 "$urls"
kept=$(wc -l <"$T/out")
# GNU time needs a program: time bloom's two steps through one shell.
measure bloom sh -c "rm -f '$T/f.bloom'; bloom create -n $N -p 0.000001 '$T/f.bloom' && bloom insert '$T/f.bloom' <'$urls'"
awk_name=$(readlink -f "$(command -v awk)" | sed 's|.*/||')
measure awk awk '!seen[$0]++' "$urls"
measure sort env LC_ALL=C sort -u "$urls"

read -r bk_s bk_kb bk_cpu <"$T/bloomkit"
echo "## dedup of $N generated URLs ($((bytes / 1000000)) MB, $distinct distinct), median of $RUNS runs"
echo
echo "| tool | wall (s) | CPU (s) | peak RSS (MB) | wall vs bloomkit | CPU vs bloomkit |"
echo "|---|---:|---:|---:|---:|---:|"
for t in bloomkit bloom awk sort; do
    read -r s kb cpu <"$T/$t"
    case $t in
    bloomkit) label="bloomkit dedup -n $N -p 1e-6" ;;
    bloom) label="bloom create + insert (same n, p)" ;;
    awk) label="$awk_name '!seen[\$0]++'" ;;
    sort) label="LC_ALL=C sort -u" ;;
    esac
    awk -v l="$label" -v s="$s" -v kb="$kb" -v b="$bk_s" -v c="$cpu" -v bc="$bk_cpu" \
        'BEGIN { printf "| %s | %.2f | %.2f | %.0f | %.1fx | %.1fx |\n", l, s, c, kb / 1024,
                 (b > 0 ? s / b : 0), (bc > 0 ? c / bc : 0) }'
done
echo
echo "bloomkit kept $kept of $distinct distinct URLs ($((distinct - kept)) dropped as false positives)."
