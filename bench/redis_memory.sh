#!/bin/sh
# What one BF.RESERVE costs a Redis server: the growth of used_memory for
# `BF.RESERVE key p n` at the (p, n) of the table RedisBloom users asked
# about, against the classic optimum (the bits a classic Bloom filter needs
# at the error of the first sub-filter, p / 2 for a scaling filter, as
# RedisBloom sets it) and against RedisBloom 2.8.20's own figures. RedisBloom
# is not packaged in Debian 12, so its column is the one measured side by
# side with the previous module on Redis 7.0.15 (printed as such, not
# measured in this run). Each row is a fresh key on one server; the server's
# allocator is the one Debian builds it with (jemalloc), whose size classes
# are part of what a filter costs.
BUILD=${BUILD:-build}
MODULE=$(cd "$BUILD" 2>/dev/null && pwd)/bloomkit.so
if [ ! -f "$MODULE" ] || ! command -v redis-server >/dev/null; then
    echo "bench/redis_memory.sh: needs $BUILD/bloomkit.so and redis-server" >&2
    exit 1
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/bk-redis-mem.XXXXXX")
PORT=$((20000 + $$ % 10000))
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$W" \
    --loadmodule "$MODULE" --daemonize yes --pidfile "$W/pid" --logfile "$W/log" >/dev/null
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1; rm -rf "$W"' EXIT
i=0
while ! redis-cli -p "$PORT" ping >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
used() { redis-cli -p "$PORT" INFO memory | awk -F: '/^used_memory:/ { print $2 + 0 }'; }

echo "## Redis: memory of one BF.RESERVE (bench/redis_memory.sh)"
echo
echo "| p | n | bloomkit used_memory growth | classic optimum | bloomkit / optimum | RedisBloom 2.8.20 (measured before) | bloomkit / RedisBloom |"
echo "|---|---|---|---|---|---|---|"
# p n RedisBloom's used_memory growth (0: within the noise of the measurement)
# Each row is the growth of K keys made in one connection, divided by K,
# measured after the same K keys were made and flushed once: a single
# reading also carries the server's own first-time allocations (tens of
# KB at its first module command, client buffers, dict tables), which one
# key's growth would count whole.
reserve_k() {
    i=0
    while [ $i -lt "$K" ]; do echo "BF.RESERVE k$i $1 $2"; i=$((i + 1)); done |
        redis-cli -p "$PORT" >/dev/null
}
redis-cli -p "$PORT" BF.RESERVE warm 0.01 100 >/dev/null
redis-cli -p "$PORT" BF.ADD warm x >/dev/null
while read -r p n rb; do
    K=8
    [ "$n" -ge 1000000 ] && K=4
    reserve_k "$p" "$n"
    i=0
    while [ $i -lt "$K" ]; do echo "DEL k$i"; i=$((i + 1)); done | redis-cli -p "$PORT" >/dev/null
    before=$(used)
    reserve_k "$p" "$n"
    after=$(used)
    grew=$(((after - before) / K))
    awk -v p="$p" -v n="$n" -v g="$grew" -v rb="$rb" 'BEGIN {
        opt = n * -log(p / 2) / (log(2) ^ 2) / 8
        r = "-"; shown = "(noise)"
        if (rb > 0) { r = sprintf("%.2fx", g / rb); shown = rb }
        printf "| %s | %s | %d | %.0f | %.3fx | %s | %s |\n", p, n, g, opt, g / opt, shown, r
    }'
done <<'ROWS'
0.01 100 0
0.01 1000000 1573064
0.01 10000000 14680264
0.001 100 424
0.001 1000000 2097352
0.001 10000000 20971720
0.0001 100 520
0.0001 1000000 2621640
0.0001 10000000 29360328
0.000001 100 584
0.000001 1000000 4194504
0.000001 10000000 41943240
ROWS
