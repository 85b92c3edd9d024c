#!/bin/sh
# make demo: a web crawler's "never fetch a URL twice" set, with the
# bloomkit tool, across two runs.
#   1. size the seen-set for the URLs we expect (bloomkit plan);
#   2. day 1: a generated link stream (a third repeats, many spelled
#      differently: HTTP://Site.Example.com:80/...#frag) passes through
#      bloomkit dedup --normalize url with a state file;
#   3. day 2: a new stream, half of it links found on day 1, through the same
#      state: only links never seen on either day come out;
#   4. the filter's own report (bloomkit info);
#   5. the false-positive rate measured on URLs never added, next to the one
#      requested, and the kept counts next to the exact distinct counts.
set -eu
BUILD=${1:-build}
BK=$BUILD/bloomkit
[ -x "$BK" ] || { echo "demo: no $BK (run make first)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

N=250000  # the filter's capacity: the distinct pages over both days (about
          # 200,000) with room to spare, so it is never filled past it
P=0.01

# gen SEED COUNT FIRST SPAN: COUNT links to pages FIRST..FIRST+SPAN-1, each
# written in one of several spellings; the canonical form goes to a second
# file so the exact answer can be counted independently of bloomkit.
gen() {
    awk -v seed="$1" -v n="$2" -v first="$3" -v span="$4" -v canon="$T/canon.$1" 'BEGIN {
        srand(seed)
        for (i = 0; i < n; i++) {
            id = first + int(rand() * span)
            host = "site" (id % 997) ".example.com"
            path = "/page/" id
            v = int(rand() * 5)
            if (v == 0) u = "http://" host path
            else if (v == 1) u = "HTTP://" toupper(substr(host, 1, 1)) substr(host, 2) path
            else if (v == 2) u = "http://" host ":80" path
            else if (v == 3) u = "http://" host "/x/.." path "#comments"
            else u = "http://" host path "#top"
            print u
            print "http://" host path >canon
        }
    }'
}

echo "== 1. size the seen-set: $N URLs at FPR $P"
"$BK" plan -n "$N" -p "$P" | sed -n '1,8p' | sed 's/^/   /'

echo
echo "== 2. day 1: 240000 links to 160000 pages"
gen 1 240000 0 160000 >"$T/day1"
sed -n '1,4p' "$T/day1" | sed 's/^/   in:   /'
"$BK" dedup --state "$T/seen.bk" -n "$N" -p "$P" --normalize url "$T/day1" 2>&1 >"$T/kept1" |
    sed 's/^/   /'
sed -n '1,4p' "$T/kept1" | sed 's/^/   kept: /'
exact1=$(sort -u "$T/canon.1" | wc -l)
kept1=$(wc -l <"$T/kept1")
echo "   kept $kept1 lines; exactly $exact1 distinct pages"

echo
echo "== 3. day 2: 240000 links to pages 80000..239999 (half seen on day 1)"
gen 2 240000 80000 160000 >"$T/day2"
"$BK" dedup --state "$T/seen.bk" --normalize url "$T/day2" 2>&1 >"$T/kept2" | sed 's/^/   /'
new2=$(sort -u "$T/canon.1" >"$T/s1"; sort -u "$T/canon.2" | comm -13 "$T/s1" - | wc -l)
kept2=$(wc -l <"$T/kept2")
echo "   kept $kept2 lines; exactly $new2 pages were never seen before"

echo
echo "== 4. bloomkit info"
"$BK" info "$T/seen.bk" | sed 's/^/   /'

echo
echo "== 5. accuracy"
awk 'BEGIN { for (i = 0; i < 200000; i++) print "http://elsewhere" (i % 997) ".example.org/never/" i }' >"$T/never"
fp=$("$BK" check --count "$T/seen.bk" "$T/never" || true)
items=$("$BK" info --json "$T/seen.bk" | sed 's/.*"items":\([0-9]*\).*/\1/')
awk -v fp="$fp" -v p="$P" -v items="$items" -v n="$N" 'BEGIN {
    printf "   measured FPR on 200000 URLs never added: %d = %.4f (requested %g at %d items; filter holds %d)\n",
        fp, fp / 200000, p, n, items }'
missed=$((exact1 - kept1 + new2 - kept2))
echo "   new pages wrongly dropped as already seen (false positives): $missed of $((exact1 + new2))"
