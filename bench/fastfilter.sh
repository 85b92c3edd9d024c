#!/bin/sh
# Benchmark: bloomkit's cuckoo and split filters against the FastFilter
# suite's Cuckoo16 and BlockedBloom, one-key and batch, in one run on the
# same keys (bench/fastfilter_peer.cc says how); then bloomkit's static
# filters (fuse8, fuse16, fuse32) against the suite's binary fuse filters, built
# whole from the same keys (bench/fastfilter_static.cc). The suite's source is a
# peer, never needed by `make test`: it is taken from $BK_FASTFILTER_SRC,
# else bench/peers/fastfilter_cpp, else cloned there from GitHub when the
# network allows; without it this prints why and skips.
# Sizes: 10 million and 100 million keys (BK_BENCH_QUICK=1: 1 million);
# ROUNDS rounds each (default 3), medians.
set -eu
BUILD=${BUILD:-build}
LIB=$BUILD/libbloomkit.a
[ -f "$LIB" ] || { echo "bench/fastfilter.sh: no $LIB (run make first)" >&2; exit 1; }
SRC=${BK_FASTFILTER_SRC:-bench/peers/fastfilter_cpp}
if [ ! -f "$SRC/src/cuckoo/cuckoofilter.h" ] && [ -z "${BK_FASTFILTER_SRC:-}" ]; then
    git clone -q --depth 1 https://github.com/FastFilter/fastfilter_cpp "$SRC" 2>/dev/null || true
fi
if [ ! -f "$SRC/src/cuckoo/cuckoofilter.h" ]; then
    echo "bench/fastfilter.sh: skipped: no FastFilter suite source at $SRC" \
        "(set BK_FASTFILTER_SRC to a checkout of github.com/FastFilter/fastfilter_cpp)"
    exit 0
fi
command -v g++ >/dev/null || { echo "bench/fastfilter.sh: skipped: no g++"; exit 0; }
grep -q avx2 /proc/cpuinfo || { echo "bench/fastfilter.sh: skipped: BlockedBloom needs AVX2"; exit 0; }
BIN=$BUILD/bench/fastfilter_peer
mkdir -p "$BUILD/bench"
g++ -O3 -march=native -std=c++17 -DNDEBUG -w -Iinclude -I"$SRC/src/cuckoo" -I"$SRC/src/bloom" \
    -I"$SRC/src" -o "$BIN" bench/fastfilter_peer.cc "$LIB" -lm -lpthread
echo "## One key at a time: bloomkit against the FastFilter suite ($(git -C "$SRC" log -1 --format=%h 2>/dev/null || echo 'source'))"
SIZES="10000000 100000000"
[ "${BK_BENCH_QUICK:-0}" = 1 ] && SIZES=1000000
for n in $SIZES; do
    "$BIN" "$n" "${ROUNDS:-3}"
done
SBIN=$BUILD/bench/fastfilter_static
g++ -O3 -march=native -std=c++17 -DNDEBUG -w -Iinclude -I"$SRC/src/xorfilter" -I"$SRC/src" \
    -I"$SRC/benchmarks" -o "$SBIN" bench/fastfilter_static.cc "$LIB" -lm -lpthread
echo
echo "## Static filters: bloomkit fuse8/fuse16/fuse32 against the suite's binary fuse filters"
for n in $SIZES; do
    "$SBIN" "$n" "${ROUNDS:-3}"
done
"$SBIN" --sweep
