#!/bin/sh
# make demo: the crawler's seen-URL set on a generated stream.
set -eu
BUILD=${1:-build}
mkdir -p "$BUILD"
${CC:-cc} -std=c11 -O2 -Iinclude -o "$BUILD/demo" examples/demo.c "$BUILD/libbloomkit.a" -lm
"$BUILD/demo"
