#!/bin/sh
# The memory a save costs (bench/redis_save.py): a BGSAVE child and an AOF
# rewrite of a server holding one large BF key, against a plain string key
# of the same size. BK_SAVE_MB sets the size (default 1024; 128 with
# BK_BENCH_QUICK=1). BK_REDIS_BEFORE=/path/to/other/bloomkit.so adds that
# build's rows, measured in the same run.
BUILD=${BUILD:-build}
MODULE=$(cd "$BUILD" 2>/dev/null && pwd)/bloomkit.so
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if [ ! -f "$MODULE" ] || ! command -v redis-server >/dev/null; then
    echo "bench/redis_save.sh: needs $BUILD/bloomkit.so and redis-server" >&2
    exit 1
fi
mb=${BK_SAVE_MB:-1024}
[ "${BK_BENCH_QUICK:-0}" = 1 ] && mb=${BK_SAVE_MB:-128}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bloomkit-save.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$PY" bench/redis_save.py "$(command -v redis-server)" "$MODULE" "$WORK" "$mb" ${BK_REDIS_BEFORE:+"$BK_REDIS_BEFORE"}
