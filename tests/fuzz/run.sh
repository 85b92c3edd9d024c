#!/bin/sh
# Builds the loader fuzzer (clang, libFuzzer, ASan+UBSan) and runs it for a
# bounded time, seeded with the golden files in tests/data.
#   BK_FUZZ_SECONDS  run time (default 60)
# Prints libFuzzer's final statistics; exits non-zero if it found a crash
# (the reproducer is left in $BUILD/fuzz/).
set -eu
BUILD=${BUILD:-build}
SECS=${BK_FUZZ_SECONDS:-60}
sh scripts/need.sh fuzz
out="$BUILD/fuzz"
mkdir -p "$out/corpus"
# shellcheck disable=SC2046
clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Iinclude -Isrc $(ls src/*.c) tests/fuzz/fuzz_load.c -o "$out/fuzz_load" -lm
cp tests/data/*.bkf "$out/corpus/"
echo "fuzz_load: running for ${SECS}s, corpus $out/corpus"
cd "$out"
./fuzz_load -max_total_time="$SECS" -print_final_stats=1 -artifact_prefix=./ corpus \
    >fuzz.log 2>&1 || { tail -n 40 fuzz.log; echo "fuzz_load: FAILED (see $out/fuzz.log)"; exit 1; }
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' fuzz.log || true
grep -E '^#[0-9]+.*DONE' fuzz.log | tail -n 1 || true
echo "fuzz_load: no crash in ${SECS}s"
