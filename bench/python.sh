#!/bin/sh
# The Python package's benchmarks (bench/python_bench.py): add_many /
# contains_many vs set and flor, Scrapy dupefilter memory, sharded filter
# on a 3-master Redis Cluster vs one node. Builds the extension first.
BUILD=${BUILD:-build}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
make -s python BUILD="$BUILD" >/dev/null || exit 1
BUILD=$(cd "$BUILD" && pwd) exec "$PY" bench/python_bench.py
