#!/bin/sh
# Benchmark: the lines two big files have in common (the seed problem, two
# files of URLs, at a scale this machine can run). Two files of N distinct
# generated URLs each (10 million, about 545 MB each; BK_BENCH_QUICK=1:
# 1 million; BK_BENCH_N sets N), half of each file's URLs also in the
# other, in scrambled order, intersected exactly at each memory cap of MEMS
# (default "256M 1G") by
#   bloomkit common --memory M A B            (threads: the online CPUs)
#   bloomkit common --memory M --threads 1 A B
#   LC_ALL=C sort -S M -u A, the same for B, then LC_ALL=C comm -12
# and once per round, with no memory cap (it holds both files in memory),
#   rling -c A out B    (github.com/Cynosureprime/rling, the fastest
#                        multithreaded tool for this we know of: built
#                        from $BK_RLING_SRC, else bench/peers/rling, cloned
#                        there when the network allows; skipped without it)
# Wall time, CPU time (user + system) and peak RSS from GNU time (the peer:
# sums of its three steps' times, largest RSS). The tools take turns within
# each of RUNS rounds (default 3), so a change in the machine's load hits
# them alike; medians of the rounds. Inputs in the page cache, temporary
# files in $TMPDIR. sort uses every core (--parallel defaults to the core
# count). The load average before and after goes with the table: on a shared
# machine the wall times are only comparable within one run.
# Every run's output is checked to hold the same lines as the peer's.
set -eu
BUILD=${BUILD:-build}
BK=$BUILD/bloomkit
[ -x "$BK" ] || { echo "bench/common.sh: no $BK (run make first)" >&2; exit 1; }
sh scripts/need.sh bench
N=${BK_BENCH_N:-10000000}
[ "${BK_BENCH_QUICK:-0}" = 1 ] && N=1000000
RUNS=${RUNS:-3}
MEMS=${MEMS:-256M 1G}
T=$(mktemp -d "${TMPDIR:-/tmp}/bk-bench-common.XXXXXX")
trap 'rm -rf "$T"' EXIT
${CC:-cc} -O2 -o "$T/gen" tests/cli/gen_lines.c
half=$((N / 2))
# N not divisible by the generator's prime: "p" gives every key of
# [LO, LO + N) exactly once.
"$T/gen" 1 "$N" 0 "$N" up >"$T/A"
"$T/gen" 2 "$N" "$half" $((N + half)) up >"$T/B"
bytes=$(($(wc -c <"$T/A") + $(wc -c <"$T/B")))
cat "$T/A" "$T/B" >/dev/null # into the page cache
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# run NAME COMMAND...: one timed run, "wall maxrss cpu" appended to
# $T/NAME.runs.
run() {
    name=$1
    shift
    sync # the last tool's spills written back first, not during this run
    /usr/bin/time -f '%e %M %U %S' -o "$T/time" "$@"
    tail -n 1 "$T/time" | awk '{ print $1, $2, $3 + $4 }' >>"$T/$name.runs"
}

# The peer's three steps, each under GNU time; the sum of times and the
# largest RSS make one run.
peer() {
    mem=$1
    sync
    (
        export LC_ALL=C TMPDIR="$T"
        /usr/bin/time -f '%e %M %U %S' -o "$T/t1" sort -S "$mem" -u "$T/A" >"$T/A.s"
        /usr/bin/time -f '%e %M %U %S' -o "$T/t2" sort -S "$mem" -u "$T/B" >"$T/B.s"
        /usr/bin/time -f '%e %M %U %S' -o "$T/t3" comm -12 "$T/A.s" "$T/B.s" >"$T/out.peer"
    )
    cat "$T/t1" "$T/t2" "$T/t3" |
        awk '{ s += $1; c += $3 + $4; if ($2 > m) m = $2 } END { print s, m, c }' >>"$T/peer.$mem.runs"
    rm -f "$T/A.s" "$T/B.s"
}

# same OUT: 0 if OUT holds the peer's lines.
same() {
    LC_ALL=C sort "$1" >"$T/sorted"
    cmp -s "$T/sorted" "$T/out.peer"
}

# median NAME: "wall maxrss cpu", each the median of its column.
median() {
    for k in 1 2 3; do
        sort -n -k$k,$k "$T/$1.runs" | awk -v r="$RUNS" -v k=$k 'NR == int((r + 1) / 2) { print $k }'
    done | paste -sd' '
}

RLING=
RSRC=${BK_RLING_SRC:-bench/peers/rling}
if [ ! -f "$RSRC/rling.c" ] && [ -z "${BK_RLING_SRC:-}" ]; then
    git clone -q --depth 1 https://github.com/Cynosureprime/rling "$RSRC" 2>/dev/null || true
fi
if [ -f "$RSRC/rling.c" ]; then
    # its makefile's flags, built here so that nothing is written into the source
    ${CC:-cc} -O3 -fomit-frame-pointer -pthread -fgnu89-inline $([ "$(uname -m)" = x86_64 ] && echo -DINTEL) \
        -w -o "$T/rling" "$RSRC/rling.c" "$RSRC/yarn.c" "$RSRC/qsort_mt.c" -lz && RLING=$T/rling
fi
[ -n "$RLING" ] || echo "bench/common.sh: rling skipped: no source at $RSRC (set BK_RLING_SRC to a checkout of github.com/Cynosureprime/rling)"

ok=yes
i=0
while [ "$i" -lt "$RUNS" ]; do
    for mem in $MEMS; do
        peer "$mem"
        run "bk.$mem" sh -c "'$BK' common --memory $mem --tmpdir '$T' --verbose '$T/A' '$T/B' >'$T/out.bk' 2>'$T/err.$mem'"
        same "$T/out.bk" || ok=NO
        run "bk1.$mem" sh -c "'$BK' common --memory $mem --threads 1 --tmpdir '$T' '$T/A' '$T/B' >'$T/out.bk'"
        same "$T/out.bk" || ok=NO
    done
    if [ -n "$RLING" ]; then
        # rling -c prints its statistics on stderr; its output file holds
        # the common lines in A's order
        run rling "$RLING" -c "$T/A" "$T/out.rling" "$T/B" 2>/dev/null
        same "$T/out.rling" || ok=NO
    fi
    i=$((i + 1))
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
common=$(wc -l <"$T/out.peer")

echo "## common lines of two files of $N URLs each ($((bytes / 1000000)) MB in all, $common in common), median of $RUNS alternating rounds"
echo
echo "| --memory | tool | wall (s) | CPU (s) | peak RSS (MB) | sort + comm wall / this | sort + comm CPU / this |"
echo "|---|---|---:|---:|---:|---:|---:|"
for mem in $MEMS; do
    read -r pe_s pe_kb pe_cpu <<EOF
$(median "peer.$mem")
EOF
    for row in "bk.$mem|bloomkit common ($(nproc) threads)" "bk1.$mem|bloomkit common --threads 1" \
        "peer.$mem|LC_ALL=C sort -S $mem -u (x2) + comm -12"; do
        name=${row%%|*}
        label=${row#*|}
        median "$name" | awk -v m="$mem" -v l="$label" -v ps="$pe_s" -v pc="$pe_cpu" \
            '{ printf "| %s | %s | %.2f | %.2f | %.0f | %.1fx | %.1fx |\n", m, l, $1, $3, $2 / 1024, ($1 > 0 ? ps / $1 : 0), ($3 > 0 ? pc / $3 : 0) }'
    done
done
if [ -n "$RLING" ]; then
    first=${MEMS%% *}
    pe=$(median "peer.$first")
    median rling | awk -v pe="$pe" -v m="$first" -v t="$(nproc)" '{ split(pe, p, " ");
        printf "| none | rling -c (%s threads; ratios: sort + comm at %s) | %.2f | %.2f | %.0f | %.1fx | %.1fx |\n",
            t, m, $1, $3, $2 / 1024, ($1 > 0 ? p[1] / $1 : 0), ($3 > 0 ? p[3] / $3 : 0) }'
    echo
    rl=$(median rling)
    for mem in $MEMS; do
        echo "$rl $(median "bk.$mem")" | awk -v m="$mem" '{
            printf "rling -c / bloomkit common --memory %s: %.1fx wall, %.1fx CPU\n", m,
                ($4 > 0 ? $1 / $4 : 0), ($6 > 0 ? $3 / $6 : 0) }'
    done
fi
echo
echo "Same lines in every output: $ok. Load average (1, 5, 15 min) before: $load_before; after: $load_after."
for mem in $MEMS; do
    echo "bloomkit at $mem (last run): $(sed 's/^bloomkit common: //' "$T/err.$mem")."
done
[ "$ok" = yes ]
