#!/bin/sh
# The README's billion-URL seen-set, one run at a time: a paged state (this
# release) against the same filter in version 1, read whole (every earlier
# release), warm and cold page cache (bench/seenset.py says how).
BUILD=${BUILD:-build}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
[ -x "$BUILD/bloomkit" ] || { echo "bench/seenset.sh: needs $BUILD/bloomkit" >&2; exit 1; }
make -s python BUILD="$BUILD" >/dev/null || exit 1
BUILD=$(cd "$BUILD" && pwd) exec "$PY" bench/seenset.py
