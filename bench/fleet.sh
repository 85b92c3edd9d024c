#!/bin/sh
# A crawler fleet on one seen-set in Redis (bench/fleet.py): the tool's
# dedup --redis against Python's ShardedFilter on the same server, a
# 3-master cluster against one server, and the seen-set's memory at a
# billion URLs against scrapy-redis's fingerprint set.
BUILD=${BUILD:-build}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
make -s python BUILD="$BUILD" >/dev/null || exit 1
BUILD=$(cd "$BUILD" && pwd) exec "$PY" bench/fleet.py
