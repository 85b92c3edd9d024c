#!/bin/sh
# Runs every benchmark: the compiled ones (build/bench/bench_*) and the
# scripted ones (bench/*.sh other than this file). Each prints its own table
# comparing bloomkit with a named peer measured in the same run.
# BK_BENCH_QUICK=1 shrinks workloads for a smoke run.
BUILD=${BUILD:-build}
echo "# bloomkit benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for b in "$BUILD"/bench/bench_*; do
    [ -x "$b" ] || continue
    echo
    "$b" || echo "!! $b failed (exit $?)"
done
for s in bench/*.sh; do
    # this file, and a helper the Redis benchmarks call (it builds a peer)
    [ "$s" = bench/run.sh ] || [ "$s" = bench/redisbloom_build.sh ] && continue
    [ -f "$s" ] || continue
    echo
    BUILD="$BUILD" sh "$s" || echo "!! $s failed (exit $?)"
done
