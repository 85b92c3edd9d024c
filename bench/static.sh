#!/bin/sh
# Benchmark: the seeds' spam list as a static filter. N addresses (default
# 100 million; BK_BENCH_QUICK=1: 5 million) come down a pipe into
# `bloomkit create --kind fuse8|fuse16 --memory 1G`, so the list is never a
# file and the build must stay within the cap: wall time and peak RSS of
# the tool (GNU time), the file's bytes and bits a key, every one of 10,000
# sampled addresses found, and the false-positive rate over 1,000,000
# addresses never added; next to the bytes bloomkit's smallest Bloom
# filter takes at the same rate (bloomkit plan).
set -eu
BUILD=${BUILD:-build}
BK=$BUILD/bloomkit
[ -x "$BK" ] || { echo "bench/static.sh: no $BK (run make first)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench/static.sh: skipped: no /usr/bin/time (apt-get install time)"; exit 0; }
N=${BK_STATIC_N:-100000000}
[ "${BK_BENCH_QUICK:-0}" = 1 ] && N=5000000
CAP=${BK_STATIC_MEMORY:-1G}
W=$(mktemp -d "${TMPDIR:-/tmp}/bk-bench-static.XXXXXX")
trap 'rm -rf "$W"' EXIT

list() { seq "$1" "$2" | sed 's/.*/spam&@example.com/'; }
list_other() { seq "$1" "$2" | sed 's/.*/ham&@example.org/'; }

# every 10,000th address of the list, and a million never in it
awk -v n="$N" 'BEGIN { for (i = 1; i <= 10000; i++) printf "spam%d@example.com\n", 1 + int((i - 1) * n / 10000) }' >"$W/sample.txt"
list_other 1 1000000 >"$W/absent.txt"

echo "## A spam list of $N addresses through a pipe into a static filter, --memory $CAP"
echo
echo "| kind | wall | peak RSS | file | bits/key | sample found | FPR (1M absent) | smallest Bloom filter at that rate |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for kind in fuse8 fuse16; do
    out="$W/$kind.bkf"
    list 1 "$N" | /usr/bin/time -f '%e %M' -o "$W/time" "$BK" create --kind "$kind" -q \
        --memory "$CAP" --tmpdir "$W" "$out" -
    read -r wall rss <"$W/time"
    bytes=$(wc -c <"$out")
    found=$("$BK" check "$out" "$W/sample.txt" | wc -l)
    fp=$("$BK" check "$out" "$W/absent.txt" | wc -l || true)
    rate=$([ "$kind" = fuse8 ] && echo 0.00390625 || echo 0.0000152588)
    bloom=$("$BK" plan -n "$N" -p "$rate" --no-speed |
        awk '/^alternatives/ { on = 1; next }
             on && /^  [a-z]/ && $1 != "kind" && $1 !~ /^fuse/ && $1 != "counting" && $1 != "cuckoo" {
                 if (best == "" || $2 + 0 < best + 0) { best = $2; name = $1 } }
             END { printf "%s %.2f bits/key", name, best }')
    awk -v k="$kind" -v w="$wall" -v r="$rss" -v b="$bytes" -v n="$N" -v f="$found" -v fp="$fp" -v bl="$bloom" \
        'BEGIN { printf "| %s | %.1f s | %.0f MB | %.1f MB | %.2f | %d of 10000 | %.4f%% | %s |\n",
                 k, w, r / 1024, b / 1e6, 8 * b / n, f, 100 * fp / 1000000, bl }'
    rm -f "$out"
done
