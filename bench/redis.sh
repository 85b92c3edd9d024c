#!/bin/sh
# Redis module benchmark: bloomkit.so's BF.ADD / BF.EXISTS / BF.MADD against
# the design it replaces (the source articles' PHP guard: k SETBIT / GETBIT
# commands per item against a plain Redis string), both driven by
# redis-benchmark (Debian redis-tools) against one redis-server on
# 127.0.0.1, in the same run. RedisBloom itself (not packaged in Debian 12)
# is measured beside bloomkit.so by bench/redis_peer.sh, built from its
# source.
#
# Both designs are sized for 1% false positives: the SETBIT design with the
# classic optimum (m = 9.59 bits per item, k = 7 probes, one command each);
# bloomkit with its blocked filter. Rows:
#   1 per command SETBIT without pipelining: 7 round trips per item
#   1 per item    bloomkit: 1 command per item; SETBIT: the item's 7
#                 commands sent together (-P 7), i.e. one round trip per item
#                 either way, the best the seed's MULTI block can do
#   pipelined     16 items per round trip (-P 16 vs -P 112)
#   100 per call  BF.MADD of 100 items vs 700 SETBITs in one round trip
# items/s is the number that compares the designs. Medians of 3 runs
# (1 with BK_BENCH_QUICK=1). Memory per item: MEMORY USAGE of each design's
# key sized for the same 10,000,000 items (more than all the runs add, so
# the filter never grows), divided by 10,000,000.
#
# BK_REDIS_BEFORE=/path/to/other/bloomkit.so adds a second table: the
# module's own rows for that build and this one, each on its own server,
# runs alternating between the two (before, after, before, ...) so that
# load on the machine falls on both alike. It is how a change to the module
# (such as its allocator) is checked not to slow it down. BK_AB_RUNS sets
# how many runs each build gets there (default: as above); BK_AB_ONLY=1
# skips the first table.
BUILD=${BUILD:-build}
MODULE=$(cd "$BUILD" 2>/dev/null && pwd)/bloomkit.so
if [ ! -f "$MODULE" ] || ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "bench/redis.sh: needs $BUILD/bloomkit.so, redis-server and redis-benchmark" >&2
    exit 1
fi
if [ "${BK_BENCH_QUICK:-0}" = 1 ]; then
    runs=1 div=10
else
    runs=3 div=1
fi
CAP=10000000
MBITS=$(awk -v n=$CAP 'BEGIN { m = -n * log(0.01) / (log(2) ^ 2); printf "%d", m + 1 }')
K=7

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-bench.XXXXXX")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 26379)
redis-server --port "$PORT" --bind 127.0.0.1 --daemonize no --dir "$WORK" --save '' \
    --appendonly no --logfile "$WORK/log" --loadmodule "$MODULE" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
cli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }
i=0
until [ "$(cli PING 2>/dev/null)" = PONG ] || [ $i -ge 100 ]; do
    sleep 0.1
    i=$((i + 1))
done

setup() {
    cli FLUSHALL >/dev/null
    cli BF.RESERVE bf 0.01 $CAP >/dev/null
    cli SETBIT bits $((MBITS - 1)) 0 >/dev/null
}

# rps N PIPELINE ARGS...: median requests/s of redis-benchmark over $runs
# (against $BPORT if set, else $PORT).
rps() {
    n=$(($1 / div))
    p=$2
    shift 2
    r=1
    while [ $r -le $runs ]; do
        redis-benchmark -h 127.0.0.1 -p "${BPORT:-$PORT}" -n "$n" -P "$p" -r 1000000000 --csv "$@" 2>/dev/null |
            awk -F'"' 'NR > 1 && $4 != "" { print $4; exit }'
        r=$((r + 1))
    done | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}

# row OP DESIGN MODE RPS ITEMS_PER_CMD CMDS_PER_ITEM ROUNDTRIPS_PER_ITEM
row() {
    awk -v op="$1" -v d="$2" -v m="$3" -v r="$4" -v per="$5" -v cpi="$6" -v rt="$7" 'BEGIN {
        printf "| %-10s | %-22s | %-13s | %12.0f | %12.0f | %s |\n", op, d, m, r, r * per / cpi, rt }'
}

setup
bf_mem=$(cli MEMORY USAGE bf)
bits_mem=$(cli MEMORY USAGE bits)
# redis-benchmark writes __rand_int__ as 12 zero-padded digits, which
# SETBIT/GETBIT refuse as an offset (leading zeros), so the SETBIT design
# runs with one fixed offset: a cache-hot bit, which flatters it (its real
# probes land on random lines of a 12 MB string).
OFF=45678901
sb() { redis-benchmark -h 127.0.0.1 -p "$PORT" "$@"; }
rps_bits() {
    n=$(($1 / div))
    p=$2
    shift 2
    r=1
    while [ $r -le $runs ]; do
        sb -n "$n" -P "$p" --csv "$@" 2>/dev/null |
            awk -F'"' 'NR > 1 && $4 != "" { print $4; exit }'
        r=$((r + 1))
    done | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}

items100=""
j=0
while [ $j -lt 100 ]; do
    items100="$items100 __rand_int__"
    j=$((j + 1))
done

# first_adds PORT: the first 200 BF.ADDs into a fresh 100M-item key
# (bench/redis_first_adds.py)
first_adds() {
    PYR=/usr/bin/python3
    [ -x "$PYR" ] || PYR=python3
    printf 'First 200 BF.ADDs into a fresh 100M-item key: '
    "$PYR" bench/redis_first_adds.py "$1" 2>/dev/null || echo "(needs python3-redis)"
}

main_table() {
echo "## Redis: bloomkit.so vs the SETBIT/GETBIT design (redis-benchmark, 50 clients)"
echo
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), filters for $CAP items at 1% FPR; medians of $runs runs"
echo
echo "| operation  | design                 | round trips   |   commands/s |      items/s | round trips per item |"
echo "|------------|------------------------|---------------|-------------:|-------------:|----------------------|"
row add "bloomkit BF.ADD" "1 per item" "$(rps 200000 1 BF.ADD bf __rand_int__)" 1 1 1
row add "SETBIT x$K" "1 per command" "$(rps_bits 400000 1 SETBIT bits $OFF 1)" 1 $K $K
row add "SETBIT x$K" "1 per item" "$(rps_bits 1400000 $K SETBIT bits $OFF 1)" 1 $K 1
row add "bloomkit BF.ADD" "16 items each" "$(rps 2000000 16 BF.ADD bf __rand_int__)" 1 1 "1/16"
row add "SETBIT x$K" "16 items each" "$(rps_bits 4000000 $((16 * K)) SETBIT bits $OFF 1)" 1 $K "1/16"
row add "bloomkit BF.MADD 100" "100 items each" "$(rps 40000 1 BF.MADD bf $items100)" 100 1 "1/100"
row add "SETBIT x$K" "100 items each" "$(rps_bits 4000000 $((100 * K)) SETBIT bits $OFF 1)" 1 $K "1/100"
row exists "bloomkit BF.EXISTS" "1 per item" "$(rps 200000 1 BF.EXISTS bf __rand_int__)" 1 1 1
row exists "GETBIT x$K" "1 per command" "$(rps_bits 400000 1 GETBIT bits $OFF)" 1 $K $K
row exists "GETBIT x$K" "1 per item" "$(rps_bits 1400000 $K GETBIT bits $OFF)" 1 $K 1
row exists "bloomkit BF.EXISTS" "16 items each" "$(rps 2000000 16 BF.EXISTS bf __rand_int__)" 1 1 "1/16"
row exists "GETBIT x$K" "16 items each" "$(rps_bits 4000000 $((16 * K)) GETBIT bits $OFF)" 1 $K "1/16"
row exists "bloomkit BF.MEXISTS 100" "100 items each" "$(rps 40000 1 BF.MEXISTS bf $items100)" 100 1 "1/100"
echo
echo "Making keys (a new key per command, as per-user filters do; 10 clients):"
echo
echo "| command on a new key                 |   commands/s |"
echo "|--------------------------------------|-------------:|"
for c in "BF.ADD n:__rand_int__ x" "BF.RESERVE r:__rand_int__ 0.001 1000" \
    "BF.INSERT i:__rand_int__ ITEMS x" "CF.RESERVE c:__rand_int__ 1000" \
    "CBF.RESERVE b:__rand_int__ 0.01 1000" "WBF.RESERVE w:__rand_int__ 0.01 1000"; do
    # shellcheck disable=SC2086
    cli FLUSHALL >/dev/null
    printf '| %-36s | %12.0f |\n' "$c" "$(rps 4000 1 -c 10 $c)"
done
setup
echo
first_adds "$PORT"
echo
awk -v b="$bf_mem" -v s="$bits_mem" -v n=$CAP 'BEGIN {
    printf "Memory for %d items at 1%% FPR: bloomkit filter %.2f bytes/item (MEMORY USAGE %d), SETBIT string %.2f bytes/item (MEMORY USAGE %d)\n", n, b / n, b, s / n, s }'
}
[ "${BK_AB_ONLY:-0}" = 1 ] || main_table

[ -n "${BK_REDIS_BEFORE:-}" ] || exit 0
# ---- the module against another build of itself, alternating runs ----
if [ ! -f "$BK_REDIS_BEFORE" ]; then
    echo "bench/redis.sh: BK_REDIS_BEFORE=$BK_REDIS_BEFORE: no such file" >&2
    exit 1
fi
mkdir -p "$WORK/before"
PORT2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 26380)
redis-server --port "$PORT2" --bind 127.0.0.1 --daemonize no --dir "$WORK/before" --save '' \
    --appendonly no --logfile "$WORK/before/log" --loadmodule "$BK_REDIS_BEFORE" &
PID2=$!
trap 'kill $PID $PID2 2>/dev/null; wait $PID $PID2 2>/dev/null; rm -rf "$WORK"' EXIT
i=0
until [ "$(redis-cli -h 127.0.0.1 -p "$PORT2" PING 2>/dev/null)" = PONG ] || [ $i -ge 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
for p in $PORT $PORT2; do
    redis-cli -h 127.0.0.1 -p "$p" FLUSHALL >/dev/null
    redis-cli -h 127.0.0.1 -p "$p" BF.RESERVE bf 0.01 $CAP >/dev/null
done
used() { redis-cli -h 127.0.0.1 -p "$1" INFO memory | awk -F: '/^used_memory:/ { print $2 + 0 }'; }

# ab NAME ITEMS_PER_CMD N PIPELINE ARGS...: one row, medians of $runs runs
# per build, the builds' runs alternating.
ab() {
    name=$1 per=$2 n=$3 p=$4
    shift 4
    saved=${BK_AB_RUNS:-$runs}
    runs=1
    : >"$WORK/a" && : >"$WORK/b"
    ab_run=1 # not r: rps uses that one
    while [ $ab_run -le $saved ]; do
        # rows that make keys start each run on an empty server (a key made
        # by an earlier run would answer "item exists" and stop the run)
        if [ -n "${ab_fresh:-}" ]; then
            redis-cli -h 127.0.0.1 -p "$PORT2" FLUSHALL >/dev/null
            redis-cli -h 127.0.0.1 -p "$PORT" FLUSHALL >/dev/null
        fi
        BPORT=$PORT2 rps "$n" "$p" "$@" >>"$WORK/a"
        BPORT=$PORT rps "$n" "$p" "$@" >>"$WORK/b"
        ab_run=$((ab_run + 1))
    done
    runs=$saved
    med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    awk -v name="$name" -v a="$(med "$WORK/a")" -v b="$(med "$WORK/b")" -v per="$per" 'BEGIN {
        printf "| %-28s | %12.0f | %12.0f | %+6.1f%% |\n", name, a * per, b * per, (b / a - 1) * 100 }'
}

echo
echo "## Redis: this module build against $(basename "$BK_REDIS_BEFORE") (items/s, medians of ${BK_AB_RUNS:-$runs} runs each, alternating)"
echo
echo "| operation                    |       before |        after | change  |"
echo "|------------------------------|-------------:|-------------:|--------:|"
ab "BF.ADD, 1 per round trip" 1 200000 1 BF.ADD bf __rand_int__
ab "BF.ADD, 16 per round trip" 1 2000000 16 BF.ADD bf __rand_int__
ab "BF.MADD 100" 100 40000 1 BF.MADD bf $items100
ab "BF.EXISTS, 1 per round trip" 1 200000 1 BF.EXISTS bf __rand_int__
ab "BF.EXISTS, 16 per round trip" 1 2000000 16 BF.EXISTS bf __rand_int__
ab "BF.MEXISTS 100" 100 40000 1 BF.MEXISTS bf $items100
echo
echo "used_memory with the $CAP-item filter: before $(used "$PORT2"), after $(used "$PORT") (the filter is $(redis-cli -h 127.0.0.1 -p "$PORT" BF.INFO bf SIZE | tail -n 1) bytes)"
echo
echo "Making keys (commands/s, 10 clients, a new key per command; medians of ${BK_AB_RUNS:-$runs} runs each, alternating):"
echo
echo "| operation                    |       before |        after | change  |"
echo "|------------------------------|-------------:|-------------:|--------:|"
ab_fresh=1
ab "BF.ADD of a new key" 1 4000 1 -c 10 BF.ADD n:__rand_int__ x
ab "BF.RESERVE of a new key" 1 4000 1 -c 10 BF.RESERVE r:__rand_int__ 0.001 1000
ab "BF.INSERT of a new key" 1 4000 1 -c 10 BF.INSERT i:__rand_int__ ITEMS x
ab "CF.RESERVE of a new key" 1 4000 1 -c 10 CF.RESERVE c:__rand_int__ 1000
ab "CBF.RESERVE of a new key" 1 4000 1 -c 10 CBF.RESERVE b:__rand_int__ 0.01 1000
ab "WBF.RESERVE of a new key" 1 4000 1 -c 10 WBF.RESERVE w:__rand_int__ 0.01 1000
ab_fresh=
echo
printf 'before: '
first_adds "$PORT2"
printf 'after:  '
first_adds "$PORT"
