#!/bin/sh
# Tests of the Redis module (build/bloomkit.so) against real redis-server
# processes on 127.0.0.1: a first server driven with redis-cli and the two
# cache-guard examples (PHP phpredis, Python redis-py), then
# tests/redis/test_module.py for the bulk (every command and error, RESP3,
# dumps, RDB/AOF restarts, DUMP/RESTORE/COPY, a replica, a 3-node cluster),
# tests/redis/test_durability.py (saves under memory limits, lowered caps,
# older data), tests/redis/test_window.py and tests/redis/test_redisbloom.py
# (RedisBloom's RDB, AOF and chunks taken over).
# Every server runs in a temporary directory, is started with
# --daemonize no in the background and stopped by its pid (trap on exit).
# Ends with "N passed, N failed"; exit status 1 on any failure.
BUILD=${BUILD:-build}
MODULE=$(cd "$BUILD" 2>/dev/null && pwd)/bloomkit.so
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
# BK_REDIS_SERVER: another server to run the suite on (a Redis built from
# source, say); by default the one on PATH.
SERVER=${BK_REDIS_SERVER:-$(command -v redis-server)}

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit $?
}

if [ ! -f "$MODULE" ] || [ -z "$SERVER" ] || ! command -v redis-cli >/dev/null; then
    bad "needs $BUILD/bloomkit.so, redis-server and redis-cli (scripts/need.sh test)"
    finish
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-redis.XXXXXX")
: >"$WORK/pids"
cleanup() {
    # Stop every server this suite started, by pid, then remove the files.
    for p in $(cat "$WORK/pids"); do kill "$p" 2>/dev/null; done
    for p in $(cat "$WORK/pids"); do
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$WORK/cli"
"$SERVER" --port "$PORT" --bind 127.0.0.1 --daemonize no --dir "$WORK/cli" --save '' \
    --logfile "$WORK/cli/log" --loadmodule "$MODULE" &
echo $! >>"$WORK/pids"
cli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }
i=0
until [ "$(cli PING 2>/dev/null)" = PONG ] || [ $i -ge 100 ]; do
    sleep 0.1
    i=$((i + 1))
done

# expect NAME WANT CMD...: the command's output must equal WANT.
expect() {
    name=$1 want=$2
    shift 2
    got=$(cli "$@" 2>&1)
    if [ "$got" = "$want" ]; then ok "$name"; else bad "$name: got '$got', want '$want'"; fi
}

case $(cli MODULE LIST 2>&1) in
*bloomkit*) ok "module loads into redis-server $("$SERVER" --version | sed 's/.*v=\([^ ]*\).*/\1/')" ;;
*) bad "module loads (see $WORK/cli/log)" ;;
esac
expect "redis-cli BF.RESERVE" OK BF.RESERVE k 0.01 1000
expect "redis-cli BF.ADD new" 1 BF.ADD k hello
expect "redis-cli BF.ADD again" 0 BF.ADD k hello
expect "redis-cli BF.EXISTS" 1 BF.EXISTS k hello
expect "redis-cli BF.EXISTS absent" 0 BF.EXISTS k other
expect "redis-cli TYPE" bkbloom-1 TYPE k
expect "redis-cli arity error (RedisBloom's, command named in lower case)" "ERR wrong number of arguments for 'bf.add' command" BF.ADD k
expect "redis-cli CBF.ADD" 1 CBF.ADD c x
expect "redis-cli CBF.DEL" 1 CBF.DEL c x
expect "redis-cli CBF.EXISTS after DEL" 0 CBF.EXISTS c x
# ACL categories, asked of the server as a user's command would be (ACL
# DRYRUN): where it lets a module set categories (Redis 7.2+), BF.ADD is in
# @write and @slow, BF.EXISTS in @read, and with categories of a module's
# own (7.4, Valkey 8) @bloom holds BF/CBF/WBF and @cuckoo CF; where it lets
# a module set none (7.0) the log says to grant the commands by name.
dry() { cli ACL DRYRUN "$@" 2>&1 | head -n 1; }
cli ACL SETUSER bk-ro on '>pw' '~*' '+@read' >/dev/null
cli ACL SETUSER bk-nw on '>pw' '~*' '+@all' '-@write' >/dev/null
if [ "$(dry bk-ro BF.EXISTS k x)" = OK ]; then
    if [ "$(dry bk-nw BF.ADD k x)" != OK ] && [ "$(dry bk-ro CF.ADD c x)" != OK ] &&
        [ "$(dry bk-nw BF.EXISTS k x)" = OK ]; then
        ok "ACL: BF.EXISTS in @read; BF.ADD and CF.ADD in @write"
    else
        bad "ACL: a write command is not in @write"
    fi
    if [ "$(cli ACL SETUSER bk-app on '>pw' '~*' '+@bloom' 2>&1)" = OK ]; then
        if [ "$(dry bk-app BF.ADD k x)" = OK ] && [ "$(dry bk-app CBF.ADD k x)" = OK ] &&
            [ "$(dry bk-app WBF.ADD k x)" = OK ] && [ "$(dry bk-app CF.ADD k x)" != OK ] &&
            cli ACL SETUSER bk-cf on '>pw' '~*' '+@cuckoo' >/dev/null &&
            [ "$(dry bk-cf CF.ADD k x)" = OK ] && [ "$(dry bk-cf BF.ADD k x)" != OK ]; then
            ok "ACL: @bloom holds BF.ADD, CBF.ADD, WBF.ADD; @cuckoo holds CF.ADD"
        else
            bad "ACL: @bloom or @cuckoo hold the wrong commands"
        fi
    elif grep -q "no ACL categories of a module's own" "$WORK/cli/log"; then
        ok "ACL: a server without categories of a module's own is told in the log"
    else
        bad "ACL: no @bloom, and nothing in the log says why"
    fi
elif grep -q "no ACL categories for a module's commands" "$WORK/cli/log" &&
    [ "$(dry bk-nw BF.ADD k x)" = OK ]; then
    ok "ACL: a server that sets no categories for module commands is told in the log"
else
    bad "ACL: BF.EXISTS is not in @read, and nothing in the log says why"
fi
cli ACL DELUSER bk-ro bk-nw bk-app bk-cf >/dev/null

# The examples: a cache-penetration guard in PHP and in Python.
if command -v php >/dev/null && php -m 2>/dev/null | grep -qx redis; then
    if out=$(php examples/cache_guard.php "$PORT" 2>&1) && echo "$out" | grep -qx "guard ok"; then
        ok "example: PHP (phpredis) cache guard"
    else
        bad "example: PHP (phpredis) cache guard: $out"
    fi
else
    bad "example: PHP cache guard needs php-cli and php-redis"
fi
if out=$("$PY" examples/cache_guard.py "$PORT" 2>&1) && echo "$out" | grep -qx "guard ok"; then
    ok "example: Python (redis-py) cache guard"
else
    bad "example: Python (redis-py) cache guard: $out"
fi

# The bulk of the checks.
"$PY" tests/redis/test_module.py "$SERVER" "$MODULE" "$WORK" >"$WORK/py.log" 2>&1
rc=$?
cat "$WORK/py.log"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$WORK/py.log" | tail -n 1)
if [ -n "$line" ]; then
    pass=$((pass + ${line%% passed*}))
    f=${line#*passed, }
    fail=$((fail + ${f%% failed*}))
fi
if [ -z "$line" ] || { [ $rc -ne 0 ] && [ "${f%% failed*}" -eq 0 ]; }; then
    bad "test_module.py ran to the end (exit $rc)"
fi
# Durability: saves under an address-space limit, a lowered MAX_BYTES,
# a damaged AOF, hostile clocks, data of encoding version 1.
"$PY" tests/redis/test_durability.py "$SERVER" "$MODULE" "$WORK" >"$WORK/dur.log" 2>&1
rc=$?
cat "$WORK/dur.log"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$WORK/dur.log" | tail -n 1)
[ -n "$line" ] && pass=$((pass + ${line%% passed*})) && f=${line#*passed, } &&
    fail=$((fail + ${f%% failed*}))
if [ -z "$line" ] || [ $rc -ne 0 ]; then bad "test_durability.py ran clean (exit $rc)"; fi
# Window filters (WBF.*), their own script.
"$PY" tests/redis/test_window.py "$SERVER" "$MODULE" "$WORK" >"$WORK/wbf.log" 2>&1
rc=$?
cat "$WORK/wbf.log"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$WORK/wbf.log" | tail -n 1)
[ -n "$line" ] && pass=$((pass + ${line%% passed*})) && f=${line#*passed, } &&
    fail=$((fail + ${f%% failed*}))
if [ -z "$line" ] || [ $rc -ne 0 ]; then bad "test_window.py ran clean (exit $rc)"; fi
# RedisBloom's own data (RDB, AOF, SCANDUMP chunks), taken over.
"$PY" tests/redis/test_redisbloom.py "$SERVER" "$MODULE" "$WORK" >"$WORK/rb.log" 2>&1
rc=$?
cat "$WORK/rb.log"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$WORK/rb.log" | tail -n 1)
[ -n "$line" ] && pass=$((pass + ${line%% passed*})) && f=${line#*passed, } &&
    fail=$((fail + ${f%% failed*}))
if [ -z "$line" ] || [ $rc -ne 0 ]; then bad "test_redisbloom.py ran clean (exit $rc)"; fi
finish
