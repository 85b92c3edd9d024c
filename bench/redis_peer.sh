#!/bin/sh
# Redis: bloomkit.so against RedisBloom 2.8.20, each loaded into its own
# redis-server (the same Debian build) on 127.0.0.1, in one run:
#   traffic   redis-benchmark of the commands both modules have: requests/s
#             and the latency percentiles it prints (p50, p99, p99.9),
#             rounds alternating between the two servers (RUNS, default 3;
#             BK_BENCH_QUICK=1: 1), medians
#   growth    adds into a small key that keeps growing (each growth is a
#             new sub-filter): requests/s and tail latency
#   first     the first 200 BF.ADDs into a fresh 100M-item key (a client's
#             round trip each) and the resident memory they cost
#   memory    used_memory per key over a grid of BF.RESERVE (error x
#             capacity) and CF.RESERVE (capacity x bucket size) shapes, and
#             10,000 small keys of each family
#   replies   random command sequences compared byte for byte
#             (bench/redis_replies.py), and a real client's calls, node-redis
#             4 and 5 (bench/redis_node.sh, where npm can install them)
# RedisBloom is a peer, never needed by `make test`: bench/redisbloom_build.sh
# builds it from its source ($BK_REDISBLOOM_SRC, else bench/peers/RedisBloom);
# without it this prints why and skips.
set -eu
BUILD=${BUILD:-build}
MODULE=$(cd "$BUILD" 2>/dev/null && pwd)/bloomkit.so
if [ ! -f "$MODULE" ] || ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "bench/redis_peer.sh: needs $BUILD/bloomkit.so, redis-server and redis-benchmark" >&2
    exit 1
fi
if [ "${BK_BENCH_QUICK:-0}" = 1 ]; then RUNS=${RUNS:-1}; else RUNS=${RUNS:-3}; fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-peer.XXXXXX")
PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
RB=$WORK/redisbloom.so
why=$(sh bench/redisbloom_build.sh "$RB") || { echo "bench/redis_peer.sh: skipped: $why"; exit 0; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# start NAME MODULE [ARGS]: a server for the module (with its module
# arguments); its port in $WORK/NAME.port
start() {
    mkdir -p "$WORK/$1"
    port=$(free_port)
    redis-server --port "$port" --bind 127.0.0.1 --daemonize no --dir "$WORK/$1" --save '' \
        --appendonly no --enable-debug-command local --logfile "$WORK/$1/log" \
        --loadmodule "$2" ${3:-} &
    PIDS="$PIDS $!"
    echo "$port" >"$WORK/$1.port"
    i=0
    until [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] || [ $i -ge 100 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}
start bk "$MODULE"
start rb "$RB"
BK_PORT=$(cat "$WORK/bk.port")
RB_PORT=$(cat "$WORK/rb.port")
# (sh has no local variables: each function's names are its own)
cli() { cli_port=$1; shift; redis-cli -p "$cli_port" "$@"; }
used() { cli "$1" INFO memory | awk -F: '/^used_memory:/ { print $2 + 0 }'; }

# bench PORT N CLIENTS PIPELINE ARGS...: "rps p50 p99 p999" (ms) of one
# redis-benchmark run, from its summary and its percentile distribution
bench() {
    b_port=$1 b_n=$2 b_c=$3 b_p=$4
    shift 4
    redis-benchmark -p "$b_port" -n "$b_n" -c "$b_c" -P "$b_p" -r 100000000 "$@" 2>/dev/null | tr '\r' '\n' | awk '
        /^ *[0-9.]+% <= / { pct = $1 + 0; v = $3 + 0
                            if (!p50 && pct >= 50) p50 = v
                            if (!p99 && pct >= 99) p99 = v
                            if (!p999 && pct >= 99.9) p999 = v }
        /throughput summary/ { rps = $3 }
        END { printf "%s %s %s %s\n", rps, p50, p99, (p999 ? p999 : p99) }'
}

med() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : 0) }'; }

# row NAME FRESH SETUP N CLIENTS PIPELINE ARGS...: both servers, RUNS
# alternating rounds; FRESH=1 empties the servers before each run (rows that
# make keys); SETUP is a command (one redis-cli argument list) run on a
# flushed server first, or "-".
row() {
    name=$1 fresh=$2 setup=$3 n=$4 c=$5 p=$6
    shift 6
    : >"$WORK/bk.rows"
    : >"$WORK/rb.rows"
    for port in $BK_PORT $RB_PORT; do
        cli "$port" FLUSHALL >/dev/null
        # shellcheck disable=SC2086
        [ "$setup" = - ] || cli "$port" $setup >/dev/null
    done
    r=0
    while [ $r -lt "$RUNS" ]; do
        for side in rb bk; do
            port=$([ $side = bk ] && echo "$BK_PORT" || echo "$RB_PORT")
            if [ "$fresh" = 1 ]; then
                cli "$port" FLUSHALL >/dev/null
            fi
            bench "$port" "$n" "$c" "$p" "$@" >>"$WORK/$side.rows"
        done
        r=$((r + 1))
    done
    for side in bk rb; do
        for k in 1 2 3 4; do
            awk -v k=$k '{ print $k }' "$WORK/$side.rows" | med
        done | paste -sd' ' >"$WORK/$side.med"
    done
    read -r a1 a2 a3 a4 <"$WORK/bk.med"
    read -r b1 b2 b3 b4 <"$WORK/rb.med"
    awk -v name="$name" -v a1="$a1" -v a2="$a2" -v a3="$a3" -v a4="$a4" \
        -v b1="$b1" -v b2="$b2" -v b3="$b3" -v b4="$b4" 'BEGIN {
        printf "| %s | %.0f | %.0f | %.2fx | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | %.2fx | %.2fx |\n",
            name, a1, b1, (b1 > 0 ? a1 / b1 : 0), a2, a3, a4, b2, b3, b4,
            (b3 > 0 ? a3 / b3 : 0), (b4 > 0 ? a4 / b4 : 0) }'
}

N1=200000 N100=20000 NKEY=40000
[ "${BK_BENCH_QUICK:-0}" = 1 ] && N1=20000 N100=2000 NKEY=4000
items100=""
j=0
while [ $j -lt 100 ]; do
    items100="$items100 __rand_int__"
    j=$((j + 1))
done

rb_ver=$(cli "$RB_PORT" MODULE LIST | awk 'prev == "ver" { v = $0 + 0; printf "%d.%d.%d", v / 10000, v / 100 % 100, v % 100; exit } { prev = $0 }')
echo "## Redis: bloomkit.so against RedisBloom $rb_ver (same run)"
echo
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), one server per module, $(nproc) cores shared with redis-benchmark; medians of $RUNS alternating rounds; latency in ms as redis-benchmark measures it (a client's round trip)"
echo
echo "| command | bloomkit req/s | RedisBloom req/s | req/s ratio | bloomkit p50 / p99 / p99.9 | RedisBloom p50 / p99 / p99.9 | p99 ratio | p99.9 ratio |"
echo "|---|---:|---:|---:|---|---|---:|---:|"
# shellcheck disable=SC2086
{
row "BF.ADD of a new key (10 clients)" 1 - "$NKEY" 10 1 BF.ADD n:__rand_int__:__rand_int__ x
row "BF.RESERVE of a new key" 1 - "$NKEY" 10 1 BF.RESERVE r:__rand_int__:__rand_int__ 0.001 1000
row "BF.INSERT of a new key" 1 - "$NKEY" 10 1 BF.INSERT i:__rand_int__:__rand_int__ ITEMS x
row "CF.RESERVE of a new key" 1 - "$NKEY" 10 1 CF.RESERVE c:__rand_int__:__rand_int__ 1000
row "CF.ADD of a new key" 1 - "$NKEY" 10 1 CF.ADD a:__rand_int__:__rand_int__ x
row "BF.ADD, 10M-item key (50 clients)" 0 "BF.RESERVE bf 0.01 10000000" "$N1" 50 1 BF.ADD bf __rand_int__
row "BF.EXISTS, 10M-item key" 0 "BF.RESERVE bf 0.01 10000000" "$N1" 50 1 BF.EXISTS bf __rand_int__
row "BF.MADD of 100 items" 0 "BF.RESERVE bf 0.01 10000000" "$N100" 50 1 BF.MADD bf $items100
row "BF.MEXISTS of 100 items" 0 "BF.RESERVE bf 0.01 10000000" "$N100" 50 1 BF.MEXISTS bf $items100
row "CF.ADD, 10M-item key" 0 "CF.RESERVE cf 10000000" "$N1" 50 1 CF.ADD cf __rand_int__
row "CF.EXISTS, 10M-item key" 0 "CF.RESERVE cf 10000000" "$N1" 50 1 CF.EXISTS cf __rand_int__
row "BF.ADD into a growing key (100 items, expansion 2)" 1 - "$N1" 50 1 BF.ADD g __rand_int__
row "CF.ADD into a growing key (defaults: capacity 1024, expansion 1)" 1 - "$((N1 / 10))" 50 1 CF.ADD h __rand_int__
}
echo
echo "Growing keys start empty each run (BF.ADD and CF.ADD make them with the modules' defaults: BF 100 items at 1%, expansion 2; CF capacity 1024, expansion 1, at most 32 sub-filters), so every run makes the BF key grow about 11 times and the CF key about 19 (a tenth of the adds: RedisBloom refuses past 32 sub-filters). New keys are named by two random numbers (no name repeats: a repeated name makes BF.RESERVE answer an error, which stops redis-benchmark)."

# first PORT: the first 200 BF.ADDs into a fresh 100M-item key
first() {
    PYR=/usr/bin/python3
    [ -x "$PYR" ] || PYR=python3
    "$PYR" bench/redis_first_adds.py "$1" 2>/dev/null || echo "(needs python3-redis)"
}
echo
echo "First 200 BF.ADDs into a fresh BF.RESERVE fresh 0.01 100000000:"
echo
echo "- bloomkit: $(first "$BK_PORT")"
echo "- RedisBloom: $(first "$RB_PORT")"
echo
echo "Server time per call on large keys (INFO commandstats, without the network):"
echo
PYR=/usr/bin/python3
[ -x "$PYR" ] || PYR=python3
"$PYR" bench/redis_server_time.py "$BK_PORT" "$RB_PORT" 2>/dev/null || echo "(needs python3-redis)"
echo
echo "Server time of a key's creation (INFO commandstats, without the network):"
echo
"$PYR" bench/redis_create_time.py "$BK_PORT" "$RB_PORT" 2>/dev/null || echo "(needs python3-redis)"
echo
echo "Replies compared byte for byte with RedisBloom's (random command sequences, bench/redis_replies.py):"
echo
start bkrb "$MODULE" "LAYOUT redisbloom"
echo "- LAYOUT redisbloom: $("$PYR" bench/redis_replies.py "$(cat "$WORK/bkrb.port")" "$RB_PORT" BF,CF)"
echo "- default layout: $("$PYR" bench/redis_replies.py "$BK_PORT" "$RB_PORT" CF)"
echo
echo "A real client's calls (node-redis's Bloom commands, bench/redis_node.sh), RedisBloom's answers against bloomkit's:"
echo
sh bench/redis_node.sh "$RB_PORT" "$(cat "$WORK/bkrb.port")" "$BK_PORT"

# per_key PORT COUNT CMD...: used_memory per key over COUNT keys made by
# CMD with KEY replaced by k0, k1, ...
per_key() {
    k_port=$1 k_count=$2
    shift 2
    cli "$k_port" FLUSHALL >/dev/null
    u0=$(used "$k_port")
    i=0
    while [ $i -lt "$k_count" ]; do
        echo "$*" | sed "s/KEY/k$i/"
        i=$((i + 1))
    done | redis-cli -p "$k_port" >/dev/null
    u1=$(used "$k_port")
    cli "$k_port" FLUSHALL >/dev/null
    echo $(((u1 - u0) / k_count))
}
echo
echo "Memory per key (used_memory growth over several keys of the shape, divided by their number; the key's name and Redis' own entry are in both):"
echo
echo "| key | bloomkit bytes | RedisBloom bytes | ratio |"
echo "|---|---:|---:|---:|"
worse=0
cells=0
mem_row() {
    m_name=$1 m_count=$2
    shift 2
    a=$(per_key "$BK_PORT" "$m_count" "$@")
    b=$(per_key "$RB_PORT" "$m_count" "$@")
    cells=$((cells + 1))
    [ "$a" -le "$b" ] || worse=$((worse + 1))
    awk -v n="$m_name" -v a="$a" -v b="$b" 'BEGIN { printf "| %s | %d | %d | %.3f |\n", n, a, b, (b > 0 ? a / b : 0) }'
}
for p in 0.1 0.01 0.001 0.0001 0.00001 0.000001; do
    for n in 10 1000 100000 10000000; do
        count=20
        [ "$n" = 10000000 ] && count=2
        mem_row "BF.RESERVE $p $n" $count BF.RESERVE KEY "$p" "$n"
    done
done
for n in 100 10000 1000000 10000000; do
    for b in 1 2 4 8; do
        count=20
        [ "$n" = 10000000 ] && count=2
        mem_row "CF.RESERVE $n BUCKETSIZE $b" $count CF.RESERVE KEY "$n" BUCKETSIZE "$b"
    done
done
mem_row "10,000 keys: BF.RESERVE 0.01 100" 10000 BF.RESERVE KEY 0.01 100
mem_row "10,000 keys: CF.RESERVE 1000" 10000 CF.RESERVE KEY 1000
mem_row "10,000 keys: BF.ADD (defaults)" 10000 BF.ADD KEY x
mem_row "10,000 keys: CF.ADD (defaults)" 10000 CF.ADD KEY x
echo
echo "Cells where bloomkit takes more memory than RedisBloom: $worse of $cells."
