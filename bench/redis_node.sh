#!/bin/sh
# A real client against both modules: node-redis's Bloom commands
# (bench/redis_node_client.js, every BF and CF call of @redis/bloom) through
# node-redis 4 (RESP2) and 5 (RESP2 and RESP3), against RedisBloom and
# bloomkit, comparing what the client hands back call by call.
#   sh bench/redis_node.sh RB_PORT BK_RB_LAYOUT_PORT BK_DEFAULT_PORT
# Servers on 127.0.0.1 (bench/redis_peer.sh starts them). The clients are
# peers, never needed by `make test`: installed with npm into
# bench/peers/node-redis4 and node-redis5 when npm and the registry are
# there; otherwise this prints why and skips. Each run empties the servers
# (FLUSHALL).
set -eu
[ $# -eq 3 ] || { echo "usage: sh bench/redis_node.sh RB_PORT BK_RB_LAYOUT_PORT BK_DEFAULT_PORT" >&2; exit 2; }
RB_PORT=$1 BKRB_PORT=$2 BK_PORT=$3
command -v node >/dev/null && command -v npm >/dev/null ||
    { echo "skipped: no node and npm"; exit 0; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-node.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for major in 4 5; do
    dir=bench/peers/node-redis$major
    if [ ! -d "$dir/node_modules/redis" ]; then
        mkdir -p "$dir"
        npm install --silent --prefix "$dir" "redis@$major" >/dev/null 2>&1 ||
            { echo "skipped: npm could not install redis@$major"; exit 0; }
    fi
done
# run MAJOR RESP NAME PORT: the client's lines for one server
run() {
    NODE_PATH=bench/peers/node-redis$1/node_modules node bench/redis_node_client.js "$4" "$2" \
        >"$WORK/$3"
}
echo "| client | calls | LAYOUT redisbloom: alike | default layout: alike | default layout: different (each a filter's own geometry or false positives) |"
echo "|---|---:|---:|---:|---|"
for v in "4 2" "5 2" "5 3"; do
    set -- $v
    run "$1" "$2" rb "$RB_PORT"
    run "$1" "$2" bkrb "$BKRB_PORT"
    run "$1" "$2" bk "$BK_PORT"
    version=$(sed -n 's/.*"version": "\([^"]*\)".*/\1/p' "bench/peers/node-redis$1/node_modules/redis/package.json")
    # alike A B: lines of A that B has at the same place
    calls=$(wc -l <"$WORK/rb")
    alike_rb=$(paste -d '\n' "$WORK/rb" "$WORK/bkrb" | awk 'NR % 2 { a = $0; next } $0 == a { n++ } END { print n + 0 }')
    alike_bk=$(paste -d '\n' "$WORK/rb" "$WORK/bk" | awk 'NR % 2 { a = $0; next } $0 == a { n++ } END { print n + 0 }')
    differ=$(paste -d '\n' "$WORK/rb" "$WORK/bk" |
        awk 'NR % 2 { a = $0; next } $0 != a { split(a, f, "\""); printf "%s%s", s, f[2]; s = ", " }')
    echo "| node-redis $version, RESP$2 | $calls | $alike_rb | $alike_bk | ${differ:-none} |"
done
