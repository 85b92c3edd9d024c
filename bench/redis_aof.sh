#!/bin/sh
# AOF replay of key creations: how long a server restarting on an AOF
# takes to replay N BF.ADDs that each made a new key (per-user filters, as
# in bench/redis.sh's "making keys"). The AOF is written without an RDB
# preamble, so the restart replays the commands themselves (BKI.CREATE and
# BF.ADD per key, as the module propagates them). The time is the server's
# own "DB loaded from append only file" line. N = 100,000
# (BK_BENCH_QUICK=1: 10,000; BK_AOF_N sets it). BK_REDIS_BEFORE=/path/to/
# other/bloomkit.so adds that module's row (same N: an old module may take
# minutes).
BUILD=${BUILD:-build}
MODULE=$(cd "$BUILD" 2>/dev/null && pwd)/bloomkit.so
if [ ! -f "$MODULE" ] || ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "bench/redis_aof.sh: needs $BUILD/bloomkit.so, redis-server and redis-benchmark" >&2
    exit 1
fi
N=${BK_AOF_N:-100000}
[ "${BK_BENCH_QUICK:-0}" = 1 ] && [ -z "${BK_AOF_N:-}" ] && N=10000
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-aof.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 26391)

# replay MODULE: writes an AOF of N key creations, restarts on it, prints
# "keys seconds".
replay() {
    d=$WORK/$(basename "$(dirname "$1")")-$$
    rm -rf "$d" && mkdir -p "$d"
    redis-server --port "$PORT" --bind 127.0.0.1 --loadmodule "$1" --save '' --appendonly yes \
        --appendfsync no --aof-use-rdb-preamble no --dir "$d" --daemonize yes --logfile "$d/log" >/dev/null
    i=0
    until [ "$(redis-cli -p "$PORT" PING 2>/dev/null)" = PONG ] || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
    redis-benchmark -p "$PORT" -n "$N" -c 20 -P 16 -r 1000000000 -q BF.ADD k:__rand_int__ x >/dev/null 2>&1
    keys=$(redis-cli -p "$PORT" DBSIZE)
    redis-cli -p "$PORT" SHUTDOWN >/dev/null 2>&1
    i=0
    while redis-cli -p "$PORT" PING >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    redis-server --port "$PORT" --bind 127.0.0.1 --loadmodule "$1" --save '' --appendonly yes \
        --aof-use-rdb-preamble no --dir "$d" --daemonize yes --logfile "$d/log2" >/dev/null
    i=0
    while ! grep -q 'Ready to accept' "$d/log2" 2>/dev/null && [ $i -lt 6000 ]; do sleep 0.1; i=$((i + 1)); done
    secs=$(sed -n 's/.*DB loaded from append only file: \([0-9.]*\) seconds.*/\1/p' "$d/log2" | head -n 1)
    redis-cli -p "$PORT" SHUTDOWN NOSAVE >/dev/null 2>&1
    echo "$keys ${secs:-?}"
}

echo "## Redis: AOF replay of $N key creations (BF.ADD of a new key each; redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'))"
echo
echo "| module | keys | replay (s) | keys/s |"
echo "|---|---:|---:|---:|"
row() {
    set -- "$1" $2
    awk -v m="$1" -v k="$2" -v s="$3" 'BEGIN { printf "| %s | %d | %s | %s |\n", m, k, s, (s + 0 > 0 ? sprintf("%.0f", k / s) : "?") }'
}
RUNS=${RUNS:-3}
[ "${BK_BENCH_QUICK:-0}" = 1 ] && RUNS=1
mkdir -p "$WORK/rb"
RB=$WORK/rb/redisbloom.so
why=$(sh bench/redisbloom_build.sh "$RB") || { RB=; echo "(RedisBloom: $why)"; echo; }
# median NAME MODULE...: "keys seconds", the median replay of the runs
# recorded in $WORK/NAME.runs
median() {
    sort -n -k2,2 "$WORK/$1.runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print }'
}
: >"$WORK/this.runs" && : >"$WORK/before.runs" && : >"$WORK/rb.runs"
r=0
while [ $r -lt "$RUNS" ]; do
    replay "$MODULE" >>"$WORK/this.runs"
    [ -z "$RB" ] || replay "$RB" >>"$WORK/rb.runs"
    if [ -n "${BK_REDIS_BEFORE:-}" ] && [ -f "$BK_REDIS_BEFORE" ]; then
        replay "$BK_REDIS_BEFORE" >>"$WORK/before.runs"
    fi
    r=$((r + 1))
done
row "this build" "$(median this)"
[ -z "$RB" ] || row "RedisBloom 2.8.20" "$(median rb)"
if [ -n "${BK_REDIS_BEFORE:-}" ] && [ -f "$BK_REDIS_BEFORE" ]; then
    row "$(basename "$BK_REDIS_BEFORE") (before)" "$(median before)"
fi
