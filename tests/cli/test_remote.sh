#!/bin/sh
# The tool on a seen-set in Redis (--redis URL, a redis:// FILE), against a
# local redis-server with the module: run here so that the cli-san suite
# runs libbloomkit-redis and cli/remote.c under the sanitizers too (the
# fault tests, clusters and Python's share are in tests/python/test_fleet.py).
# Ends with "N passed, N failed"; exits non-zero on any failure.
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
BK="$BUILD/bloomkit"
MODULE=$BUILD/bloomkit.so
[ -f "$MODULE" ] || MODULE=$(dirname "$BUILD")/bloomkit.so # the cli-san build's
export LC_ALL=C
. "$(dirname "$0")/lib.sh"
if ! command -v redis-server >/dev/null || [ ! -f "$MODULE" ]; then
    skip "no redis-server or no $MODULE"
    finish
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/bk-test-remote.XXXXXX")
pid=
# the server is waited for before its directory goes: it writes its log
# as it shuts down
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$W"' EXIT
trap 'exit 1' INT TERM
cd "$W" || exit 1

# a free port: the first one the server starts on
for try in 1 2 3 4 5 6 7 8; do
    port=$(awk -v s="$$$try" 'BEGIN { srand(s); print 20000 + int(rand() * 30000) }')
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$W" \
        --logfile "$W/log" --loadmodule "$MODULE" &
    pid=$!
    # ours answering (not another suite's server on the same port)
    mine() { redis-cli -p "$port" info server 2>/dev/null | grep -q "^process_id:$pid"; }
    i=0
    while [ $i -lt 50 ] && kill -0 "$pid" 2>/dev/null && ! mine; do
        sleep 0.1
        i=$((i + 1))
    done
    mine && break
    kill "$pid" 2>/dev/null
    pid=
done
[ -n "$pid" ] || { bad "no redis-server started: $(tail -3 "$W/log")"; finish; }
U=redis://127.0.0.1:$port

urls() { seq "$1" "$2" | sed 's|^|https://crawl.example.com/page/|'; }
urls 1 30000 >a
{ urls 1 30000; urls 20001 40000; } | sed 's|crawl.example.com|Crawl.EXAMPLE.com|' >b

rc 0 "dedup --redis creates the filter" "$BK" dedup --redis "$U/seen" -n 1e5 -p 1e-7 a
check "every line printed, in order" same out a
rc 0 "a second run, other spellings, normalized" "$BK" dedup --normalize url --redis "$U/seen" b
urls 30001 40000 | sed 's|crawl.example.com|Crawl.EXAMPLE.com|' >b.want
check "only the new lines, first spelling" same out b.want
rc 0 "check -c of a redis:// filter" "$BK" check -c "$U/seen" a
check "all 30000 there" sh -c "[ \"\$(cat out)\" = 30000 ]"
printf 'not-there\nhttps://crawl.example.com/page/5\n' >c
rc 0 "check --absent" "$BK" check --absent "$U/seen" c
check "the absent line alone" sh -c "[ \"\$(cat out)\" = not-there ]"
rc 0 "add to a redis:// filter" "$BK" add --progress "$U/seen" c
check "one of two new" grep -q "2 lines, 1 new" err
rc 0 "info --json" "$BK" info --json "$U/seen"
check "40001 items in 1 shard" grep -q '"shards": 1,.*"items": 40001' out
urls 50001 50100 >d
rc 0 "a run with --run-id" "$BK" dedup --redis "$U/seen" --run-id job-1 d
check "prints its new lines" same out d
rc 0 "the same run again" "$BK" dedup --redis "$U/seen" --run-id job-1 d
check "prints them again (the claims' answers kept)" same out d
rc 0 "another run" "$BK" dedup --redis "$U/seen" d
check "finds them seen" sh -c "[ ! -s out ]"
rc 2 "a filter that is not there" "$BK" dedup --redis "$U/none" a
check "says so" grep -q "no such filter" err
rc 2 "not a redis URL" "$BK" dedup --redis "http://x/y" a
check "says so" grep -q "not a redis:// URL" err
rc 2 "--run-id without --redis" "$BK" dedup --run-id x a
finish
