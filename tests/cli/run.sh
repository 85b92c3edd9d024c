#!/bin/sh
# Tests of the bloomkit tool, driving the built binary ($BUILD/bloomkit):
# every subcommand, every exit status, the bad inputs the tool must report
# (missing and unreadable files, corrupt filters, bad integers), binary-safe
# lines (CRLF, NUL, invalid UTF-8, no final newline, a 1 MB line), a state
# file reused across runs, and normalization. Filters are created with a
# fixed seed and a tiny FPR so answers are reproducible. Each check compares
# against an independent answer (awk, sort, the input itself) and can fail.
# Last line: "N passed, N failed".
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
BK=$BUILD/bloomkit
SRC=$(pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 2
. "$SRC/tests/cli/lib.sh" # ok, bad, check, rc, same, lines, names

[ -x "$BK" ] || { echo "no $BK"; echo "0 passed, 1 failed"; exit 1; }

# ---- global
rc 0 "--version" "$BK" --version
check "--version text" grep -q '^bloomkit [0-9]' out
rc 0 "--help" "$BK" --help
rc 2 "no command" "$BK"
rc 2 "unknown command" "$BK" frobnicate
check "unknown command named" grep -q frobnicate err
for c in plan create add check remove info merge dedup distinct once; do
    rc 0 "$c --help" "$BK" "$c" --help
    check "$c --help usage" grep -q "^usage: bloomkit $c" out
    check "$c listed in --help" sh -c "'$BK' --help | grep -q '^  $c '"
    rc 2 "$c bad option" "$BK" "$c" --no-such-option
    check "$c bad option: one line naming it" names --no-such-option
done

# ---- plan
rc 0 "plan" "$BK" plan -n 1M -p 0.01
check "plan k" grep -qE '^k +[0-9]+$' out
check "plan bits/key near 10" awk '/^bits per key/ { exit !($4 > 9.5 && $4 < 12) }' out
check "plan fill table" grep -qE '^ +200%' out
# below 1e-3 the default is blocked2; plan lists the other kinds with
# their memory against the optimum and the lines one lookup reads
rc 0 "plan at 1e-6" "$BK" plan -n 300M -p 1e-6
check "plan 1e-6 default kind" grep -qE '^kind +blocked2$' out
check "plan 1e-6 within 1.15x" awk '$1 == "blocked2" && $3 + 0 > 0 { ok = ($3 + 0 <= 1.15) } END { exit !ok }' out
check "plan lists blocked at 1 line" awk '$1 == "blocked" && $NF == 1 { f = 1 } END { exit !f }' out
check "plan lists classic" grep -qE '^  classic ' out
rc 0 "plan --kind blocked2" "$BK" plan -n 1M -p 0.01 --kind blocked2
check "plan --kind blocked2 kind" grep -qE '^kind +blocked2$' out
rc 0 "plan at 1e-10" "$BK" plan -n 1M -p 1e-10
check "plan 1e-10 suggests a one-bit-per-probe kind" grep -qE '(classic|precise) stays' out
rc 0 "plan at 1%" "$BK" plan -n 1M -p 0.01
check "plan 1% default is split" grep -qE '^kind +split$' out
check "plan 1% k is 8" grep -qE '^k +8$' out
check "plan 1% lists split at 1 line" awk '$1 == "split" && $NF == 1 { f = 1 } END { exit !f }' out
rc 0 "plan at 5%" "$BK" plan -n 1M -p 0.05
check "plan 5% default is blocked" grep -qE '^kind +blocked$' out
rc 0 "plan --kind split at 5%" "$BK" plan -n 1M -p 0.05 --kind split
check "plan --kind split kind" grep -qE '^kind +split$' out
check "plan 1% no suggestion" sh -c '! grep -q " stays" out'
# a small filter at a low rate: classic's double hashing needs far more
# bits there, so the suggestion is precise, near the optimum
rc 0 "plan 100 keys at 1e-6" "$BK" plan -n 100 -p 1e-6
check "plan small suggests precise, not classic" grep -q 'precise stays' out
check "... and precise is listed within 1.15x" awk '$1 == "precise" && $3 + 0 > 0 { ok = ($3 + 0 <= 1.15) } END { exit !ok }' out
# the alternatives (7 kinds, and at 1% the three static kinds) carry a measured
# in-cache lookup time (ns/lookup, before
# the lines column) for every kind; --no-speed leaves the column out
rc 0 "plan with speed" "$BK" plan -n 1M -p 0.01
check "plan ns/lookup column" grep -qE '^  kind .* ns/lookup  lines per lookup$' out
check "plan ns/lookup measured for every kind" awk '
    /^alternatives/ { on = 1; next } on && /^  [a-z]/ && $1 != "kind" { rows++; if ($6 + 0 > 0 && $6 ~ /^[0-9]+[.][0-9]$/) ok++ }
    END { exit !(rows == 10 && ok == 10) }' out
rc 0 "plan --no-speed" "$BK" plan -n 1M -p 0.01 --no-speed
check "plan --no-speed has no times" sh -c '! grep -q "ns/lookup" out'
check "plan --no-speed lists the kinds" awk '$1 == "split" && $NF == 1 { f = 1 } END { exit !f }' out
# the number forms -n and -p accept give the same plan as the plain ones
"$BK" plan -n 1000000 -p 0.001 --no-speed >plan.ref
for form in "-n 1M -p 0.001" "-n 1e6 -p 1e-3" "-n 1000k -p 0.1%" "--capacity=1000000 --fpr=0.001"; do
    # shellcheck disable=SC2086
    rc 0 "plan $form" "$BK" plan $form --no-speed
    check "plan $form = plain numbers" same out plan.ref
done
rc 2 "plan -n 1.5" "$BK" plan -n 1.5 -p 0.1
rc 2 "plan -p 0" "$BK" plan -n 10 -p 0
rc 2 "plan -p 100%" "$BK" plan -n 10 -p 100%
rc 2 "plan -n -5" "$BK" plan -n -5 -p 0.1
rc 2 "plan without -p" "$BK" plan -n 1000
rc 2 "plan p out of range" "$BK" plan -n 1000 -p 1.5
rc 2 "plan bad n" "$BK" plan -n 12x -p 0.1
rc 2 "plan bad kind" "$BK" plan -n 100 -p 0.1 --kind nosuch
# help says the default kind the commands really make
rc 0 "create --help" "$BK" create --help
check "create --help names the default by rate" grep -q 'split for' out
for pk in 0.01:split 0.001:blocked 1e-6:blocked2; do
    rm -f kind.bk
    "$BK" create kind.bk -n 1000 -p "${pk%%:*}" && "$BK" info kind.bk >out
    check "create -p ${pk%%:*} makes ${pk#*:}, as its help says" grep -q "^kind  *${pk#*:}\$" out
done
rm -f kind.bk
rc 0 "dedup --help" "$BK" dedup --help
check "dedup --help: blocked2 at the default rate" grep -q 'blocked2 at the default 1e-6' out
echo a | "$BK" dedup -q --state kind.bk >/dev/null && "$BK" info kind.bk >out
check "... and a default seen-set is blocked2" grep -q '^kind  *blocked2$' out
rm -f kind.bk
# info describes bitmap files too (the golden ones: multiples of 7 below
# 1000; multiples of 3 and of 5, counted per value)
rc 0 "info of a bitmap file" "$BK" info "$SRC/tests/data/bitmap.bkf"
check "bitmap: its range and the values set ($(seq 0 7 999 | wc -l))" sh -c \
    "grep -q '^values  *0 .. 999 (1000)\$' out && grep -q \"^set  *\$(seq 0 7 999 | wc -l)\\\$\" out"
rc 0 "info of a 2-bit bitmap file" "$BK" info --json "$SRC/tests/data/bitmap2.bkf"
once=$( (seq 0 3 999; seq 0 5 999) | sort | uniq -u | wc -l)
more=$( (seq 0 3 999; seq 0 5 999) | sort | uniq -d | wc -l)
check "bitmap2: once $once, more $more" grep -q "\"once\":$once,\"more\":$more}" out
rc 0 "plan --kind window sizes a count window" "$BK" plan -n 100 -p 0.1 --kind window
check "plan --kind window: its slots and memory" grep -q '^slots  *4 of 34 adds each$' out
rc 2 "plan --generations without a window" "$BK" plan -n 100 -p 0.1 --generations 4
check "plan --generations without a window says why" grep -q 'needs --window or --kind window' err

# ---- create / add / check
seq 1 2000 | sed 's/^/key-/' >all
head -n 1000 all >setA
tail -n 1000 all >setB
rc 0 "create" "$BK" create f.bk -n 5000 -p 1e-7 --seed 42
check "create made a file" test -s f.bk
cp f.bk f.orig
rc 2 "create refuses existing" "$BK" create f.bk -n 10 -p 0.1
check "create left existing alone" same f.bk f.orig
check "create refusal named" names f.bk
rc 0 "create --force" "$BK" create f2.bk -n 10 -p 0.1 --force
# a size typo (1e13 for 1e9: 65 TB) is refused at once, in words, no file made
rc 2 "create of a filter larger than the memory: refused" "$BK" create typo.bk -n 1e13 -p 1e-9
check "... naming its size and --force" grep -q 'takes 65.1 TB, more than the .* (check -n and -p for a typo; --force makes it anyway)' err
check "... and making no file" test ! -e typo.bk
rc 2 "dedup --state of a new state that large: refused" sh -c "echo x | '$BK' dedup --state typo.bk -n 1e13 -p 1e-9"
check "... before printing a line or making a file" sh -c 'test ! -s out && test ! -e typo.bk'
rc 2 "dedup in memory that large: refused" sh -c "echo x | '$BK' dedup -n 1e13 -p 1e-9"
rc 2 "create bad hash" "$BK" create h.bk -n 10 -p 0.1 --hash nosuch
check "no file after bad create" test ! -e h.bk

{ cat setA; head -n 100 setA; } >setA+dups
rc 0 "add" "$BK" add --progress f.bk setA+dups
check "add reports new" grep -q '1100 items, 1000 new, 100 duplicates' err
cp f.bk f2.bk
rc 0 "add into a pipe or file, not a terminal" "$BK" add f2.bk setA
check "... prints no summary (a cron job's mail stays empty)" test ! -s err
rc 2 "add -q still reports errors" "$BK" add -q f.bk missing-input
rc 0 "add -q silent" "$BK" add -q f.bk setA
check "add -q stderr empty" test ! -s err
rc 0 "check all of A present" "$BK" check f.bk setA
check "check prints every added line in order" same out setA
rc 1 "check B absent" "$BK" check f.bk setB
check "check B prints nothing" test ! -s out
rc 0 "check --absent" "$BK" check --absent f.bk all
check "--absent prints exactly B" same out setB
rc 1 "check --absent none" "$BK" check -v f.bk setA
rc 0 "check --count" "$BK" check --count f.bk all
check "--count is 1000" test "$(cat out)" = 1000
# grep's habits: -q prints nothing and ends at the first selected line,
# -l names the inputs with one, -m N stops after N per input, -x is a key's
# whole line anyway, -c -q prints no count
rc 0 "check -q: a line present" "$BK" check -q f.bk all
check "check -q prints nothing" test ! -s out
rc 1 "check -q: none present" "$BK" check -q f.bk setB
check "check -q -c prints no count either" sh -c "! '$BK' check -q -c f.bk setB | grep -q ."
(head -n 3 setA; exec sleep 20) | "$BK" check -q f.bk >out 2>err &
qpid=$!
i=0
while kill -0 $qpid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $qpid 2>/dev/null; then
    bad "check -q on an open stream: still waiting after it found a line"
    kill $qpid 2>/dev/null
else
    wait $qpid
    check "check -q on an open stream: exits 0 at the first line found, not at the end" test $? -eq 0
fi
rc 0 "check -l" "$BK" check -l f.bk setB setA all
check "-l names the inputs with a selected line, once each" sh -c 'printf "setA\nall\n" | cmp -s - out'
rc 0 "check -l of standard input" sh -c "'$BK' check -l f.bk - <setA >o2 && test \"\$(cat o2)\" = '(standard input)'"
rc 0 "check -m 3" "$BK" check -m 3 f.bk setA all
check "-m 3 prints the first 3 selected lines of each input" \
    sh -c '{ head -n 3 setA; head -n 3 setA; } | cmp -s - out'
rc 0 "check -m 2 -v" "$BK" check -m 2 -v f.bk all
check "-m 2 -v prints the first 2 absent lines" sh -c 'head -n 2 setB | cmp -s - out'
rc 0 "check -x (a key is the whole line anyway)" "$BK" check -x -c f.bk all
check "-x counts as without it" test "$(cat out)" = 1000
rc 2 "check -m with no number" "$BK" check -m x f.bk all
rc 0 "check stdin" sh -c "cat all | '$BK' check f.bk - >o2 && cmp -s o2 setA"
rc 0 "check --mmap" "$BK" check --mmap f.bk all
check "--mmap same answers" same out setA
rc 2 "check missing filter" "$BK" check nosuch.bk all
check "missing filter named" names nosuch.bk
rc 2 "check missing input" "$BK" check f.bk nosuch-input
check "missing input named" names nosuch-input
mkdir adir
rc 2 "check directory input" "$BK" check f.bk adir
check "directory input named" names adir

# a failing add leaves the filter byte-for-byte unchanged
cp f.bk before
rc 2 "add with a missing second input" "$BK" add f.bk setB nosuch-input
check "filter unchanged after failed add" same f.bk before
rc 1 "B still absent after failed add" "$BK" check f.bk setB

# past capacity: a warning with the FPR now expected, still exit 0
rc 0 "create small" "$BK" create small.bk -n 100 -p 0.01 --seed 1
rc 3 "add far past capacity: exit 3" "$BK" add small.bk setA
check "... saying so, naming the file" grep -q 'small.bk: far over capacity: [0-9]* items in a filter sized for 100' err
check "... and the lines were kept" test "$("$BK" check -c small.bk setA 2>/dev/null)" = 1000
rc 0 "check of that filter: answers" "$BK" check -c small.bk setA
check "... with a warning on stderr" grep -q 'small.bk: warning: far over capacity' err
rc 3 "add -q far past capacity: still exit 3 and said" "$BK" add -q small.bk setA
check "... said" grep -q 'far over capacity' err
# dedup too: a seen-set far past its capacity drops most new lines as seen
# (a crawler would never fetch them): exit 3 and said, even with -q
rc 3 "dedup --state far past capacity: exit 3" sh -c "seq 1 20000 | '$BK' dedup -q --state over.bk -n 100 -p 0.01"
check "... saying new lines were dropped, naming the state" \
    grep -q 'over.bk: far over capacity: .*New lines were dropped as seen' err
check "... having printed far fewer than the 20000 new lines" test "$(wc -l <out)" -lt 5000
rc 0 "dedup within capacity: exit 0" sh -c "seq 1 50 | '$BK' dedup -q --state under.bk -n 100 -p 0.01"
"$BK" create slight.bk -n 950 -p 0.01 --seed 1 2>/dev/null
rc 0 "add slightly past capacity: exit 0" "$BK" add slight.bk setA
check "over-capacity warning" grep -q 'slight.bk: warning: [0-9]* items exceed the capacity 950;' err
rc 0 "dedup slightly past capacity: exit 0" "$BK" dedup -n 950 -p 0.01 setA
check "dedup over-capacity warning" grep -q 'warning: [0-9]* items exceed the capacity 950;' err
rc 0 "no warning within capacity" "$BK" dedup -n 5000 -p 0.01 setA
check "no warning within capacity: nothing on stderr" test ! -s err

# ---- binary-safe lines
printf 'crlf\r\nlf\n\nnul\000byte\n\377\376bad-utf8\nlast-no-newline' >bin.txt
rc 0 "create bin" "$BK" create b.bk -n 1000 -p 1e-7 --seed 7
rc 0 "add binary lines" "$BK" add --progress b.bk bin.txt
check "6 binary lines" grep -q '6 items, 6 new' err
printf 'crlf\nlf\r\n\r\nnul\000byte\n\377\376bad-utf8\nlast-no-newline\n' >bin2.txt
rc 0 "CRLF/LF, empty, NUL, bad UTF-8, last line all found" "$BK" check -c b.bk bin2.txt
check "all 6 found" test "$(cat out)" = 6
printf 'nul\000bytf\nnul\nbad-utf8\ncrlf\r\r\n' >bin3.txt
rc 1 "near misses absent" "$BK" check b.bk bin3.txt
rc 0 "NUL line printed verbatim" "$BK" check b.bk bin2.txt
check "output bytes" sh -c "printf 'crlf\nlf\n\nnul\000byte\n\377\376bad-utf8\nlast-no-newline\n' | cmp -s - out"
awk 'BEGIN { for (i = 0; i < 1048576; i++) printf "x"; printf "\n" }' >big.txt
awk 'BEGIN { for (i = 0; i < 1048575; i++) printf "x"; printf "y\n" }' >big2.txt
rc 0 "add 1 MB line" "$BK" add b.bk big.txt
rc 0 "1 MB line found" "$BK" check -c b.bk big.txt
check "1 MB line count" test "$(cat out)" = 1
rc 1 "1 MB line, last byte changed, absent" "$BK" check b.bk big2.txt

# ---- corrupt and wrong files
cp f.bk c.bk
size=$(wc -c <c.bk)
printf 'X' | dd of=c.bk bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
cp c.bk c.orig
rc 2 "corrupt payload: add" "$BK" add c.bk setB
check "corrupt: one line naming file" names c.bk
check "corrupt file unchanged" same c.bk c.orig
rc 2 "corrupt payload: check" "$BK" check c.bk setA
rc 2 "corrupt payload: info" "$BK" info c.bk
head -c 100 f.bk >t.bk
cp t.bk t.orig
rc 2 "truncated: add" "$BK" add t.bk setB
check "truncated: one line naming file" names t.bk
check "truncated file unchanged" same t.bk t.orig
rc 2 "text file as filter" "$BK" info setA
check "text file named" names setA
: >empty.bk
rc 2 "empty file as filter" "$BK" check empty.bk setA

# ---- info
rc 0 "info" "$BK" info f.bk
check "info kind" grep -qE '^kind +blocked2$' out  # the default kind at p = 1e-7
check "info items" grep -qE '^items +1000$' out
check "info seed" grep -q 'seed 0x000000000000002a' out
rc 0 "info --json" "$BK" info --json f.bk
check "json items" grep -q '"items":1000,' out
check "json kind" grep -q '"kind":"blocked2"' out
check "json one object" sh -c "test \$(wc -l <out) -eq 1 && grep -q '^{\"file\":\"f.bk\".*}\$' out"
rc 2 "info two files" "$BK" info f.bk f.bk

# ---- remove
rc 2 "remove on blocked" "$BK" remove f.bk setA
check "remove on blocked: one line naming file" names f.bk
check "remove on blocked: names the kind" grep -q 'counting or cuckoo filter, this one is blocked' err
check "remove on blocked: unchanged" same f.bk before
if "$BK" create cf.bk -n 1000 -p 1e-6 --seed 3 --kind counting 2>/dev/null; then
    printf 'a\nb\nb\nc\n' >abc
    rc 0 "add to counting" "$BK" add cf.bk abc
    printf 'a\nb\n' >ab
    rc 0 "remove a, b" "$BK" remove cf.bk ab
    rc 0 "b and c still there" "$BK" check cf.bk abc
    check "a removed, b once left" sh -c "printf 'b\nb\nc\n' | cmp -s - out"
    cp cf.bk cf.orig
    printf 'a\nzzz\n' >az
    rc 1 "remove of keys never added" "$BK" remove cf.bk az
    check "never-added keys reported with line" sh -c "grep -q 'az: line 1' err && grep -q 'az: line 2' err"
else
    echo "skip: counting filters not in this build"
fi
# cuckoo: deletes at a fraction of counting's bytes
rc 0 "create cuckoo" "$BK" create ck.bk -n 5000 -p 0.001 --kind cuckoo --seed 5
rc 0 "add to cuckoo" "$BK" add ck.bk setA
rc 0 "cuckoo holds every key" "$BK" check -c ck.bk setA
check "cuckoo count 1000" test "$(cat out)" = 1000
head -n 10 setA >ten
rc 0 "remove ten from cuckoo" "$BK" remove ck.bk ten
rc 0 "cuckoo after remove" "$BK" check -c ck.bk setA
check "cuckoo count 990 after removing ten" test "$(cat out)" = 990
# remove --added LIST: a line never added that the filter finds anyway (a
# false positive) is not removed (without LIST it takes out another key's
# fingerprint, and that key reads as absent)
"$BK" create ckfp.bk --kind cuckoo -n 1000 -p 0.05 --seed 3 2>/dev/null
seq 1 1000 | sed 's/^/k/' >ckadded
"$BK" add -q ckfp.bk ckadded
seq 1 20000 | sed 's/^/never-/' | "$BK" check ckfp.bk | head -n 1 >ckfp
check "a never-added line the cuckoo filter finds (a false positive)" test -s ckfp
cp ckfp.bk ckfp2.bk
rc 1 "remove --added: the false positive is not removed" "$BK" remove --added ckadded ckfp.bk ckfp
check "... and said so" grep -q "is not in ckadded (--added); not removed" err
rc 0 "... every added key still present" "$BK" check -c ckfp.bk ckadded
check "... all 1000" test "$(cat out)" = 1000
rc 0 "remove without --added takes the false positive out" "$BK" remove ckfp2.bk ckfp
rc 0 "remove --added=LIST of added keys removes them" "$BK" remove --added=ckadded ckfp.bk ckadded
rc 1 "... and they are gone" "$BK" check ckfp.bk ckadded
rc 0 "info cuckoo" "$BK" info ck.bk
check "info names cuckoo, its buckets and sub-filters" sh -c \
    "grep -q '^kind  *cuckoo' out && grep -q '^bucket size  *4' out && grep -q '^sub-filters  *1' out"
rc 0 "plan lists cuckoo" "$BK" plan -n 1000000 -p 0.001 --no-speed
check "plan: cuckoo beside counting" sh -c "grep -q '^  counting' out && grep -q '^  cuckoo' out"
rc 0 "plan --kind cuckoo" "$BK" plan -n 1000000 -p 0.001 --kind cuckoo --no-speed
check "plan --kind cuckoo: 16-bit fingerprints" grep -q '^fingerprint  *16 bits' out
rc 0 "cuckoo grows past capacity" sh -c "seq 1 12000 | '$BK' add -q ck.bk"
rc 0 "info grown cuckoo" "$BK" info ck.bk
check "a grown cuckoo is not 'over capacity'" sh -c "grep -q '^sub-filters  *[2-9]' out && ! grep -q 'over capacity' out"
cp ck.bk ck2.bk
rc 2 "merge of cuckoo filters refused" "$BK" merge ckm.bk ck.bk ck2.bk
check "merge of cuckoo: says why, writes nothing" sh -c "grep -q 'union of two cuckoo filters' err && test ! -e ckm.bk"

# ---- merge
rc 0 "create g (same seed)" "$BK" create g.bk -n 5000 -p 1e-7 --seed 42
rc 0 "add B to g" "$BK" add -q g.bk setB
rc 0 "merge" "$BK" merge m.bk f.bk g.bk
rc 0 "merged has A and B" "$BK" check -c m.bk all
check "merged count 2000" test "$(cat out)" = 2000
rc 0 "create h (other seed)" "$BK" create h.bk -n 5000 -p 1e-7 --seed 43
rc 2 "merge incompatible" "$BK" merge m2.bk f.bk h.bk
check "incompatible: no output file" test ! -e m2.bk
check "incompatible: named" names h.bk
rc 2 "merge needs inputs" "$BK" merge m3.bk

# ---- dedup
seq 1 3000 | awk '{ print "http://example.com/page/" ($1 % 1700) }' >urls
awk '!seen[$0]++' urls >urls.awk
rc 0 "dedup" "$BK" dedup --progress --seed 1 -p 1e-9 urls
check "dedup = awk !seen" same out urls.awk
check "dedup summary" grep -q '3000 items, 1700 new, 1300 duplicates' err
printf 'a\na\n' | "$BK" dedup >/dev/null 2>err --progress
check "one duplicate is said in the singular" grep -q '2 items, 1 new, 1 duplicate,' err
rc 0 "dedup stdin -q" sh -c "'$BK' dedup -q --seed 1 -p 1e-9 <urls >o3 && cmp -s o3 urls.awk"
check "dedup -q silent" test ! -s err
seq 1 1000 >r1
seq 501 1500 >r2
rc 0 "dedup --state run 1" "$BK" dedup -q --state s.bk --seed 5 -p 1e-9 r1
check "run 1 prints all" same out r1
rc 0 "dedup --state run 2" "$BK" dedup -q --state s.bk r2
seq 1001 1500 >r2.new
check "run 2 prints only unseen" same out r2.new
rc 0 "dedup --state run 3" "$BK" dedup -q --state s.bk r1 r2
check "run 3 prints nothing" test ! -s out
cp s.bk s.orig
rc 2 "dedup missing input keeps state" "$BK" dedup -q --state s.bk r2 nosuch
check "state unchanged after error" same s.bk s.orig
rc 2 "dedup corrupt state" "$BK" dedup -q --state c.bk r1
check "corrupt state unchanged" same c.bk c.orig
if [ -w /dev/full ]; then
    rc 2 "dedup write error" sh -c "'$BK' dedup -q --state s.bk r1 r2 seq-new >/dev/full" 
    seq 1501 1600 >seq-new
    rc 2 "dedup write error keeps state" sh -c "'$BK' dedup -q --state s.bk seq-new >/dev/full"
    check "state unchanged after write error" same s.bk s.orig
fi
# SIGINT while waiting on a pipe: lines printed so far are in the saved
# state, and no line is printed twice or lost across the two runs.
mkfifo fifo
(seq 1 300; exec sleep 10) >fifo &
writer=$!
"$BK" dedup -q --state sig.bk fifo >sig.out 2>sig.err &
dd=$!
wait_handles_int "$dd"
# and it has printed what the producer sent (up to 30 s on a loaded machine)
i=0
while [ "$(wc -l <sig.out)" -lt 300 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -INT "$dd"
wait "$dd"
got=$?
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
check "SIGINT: exit 130" test "$got" -eq 130
check "SIGINT: state saved" test -s sig.bk
seq 1 400 >sig.all
rc 0 "after SIGINT: rerun" "$BK" dedup -q --state sig.bk sig.all
check "after SIGINT: each line printed exactly once over both runs" \
    sh -c "cat sig.out out | sort -n | cmp -s - sig.all"
check "SIGINT: first run printed something" test -s sig.out

# a slow producer: lines come out while dedup waits for more input, not
# when 256 lines or 1 MB have piled up
mkfifo slow.fifo slow2.fifo
: >slow.out # polled below before the tools have opened them
: >slow2.out
(printf 'a\nb\na\n'; exec sleep 15) >slow.fifo &
prod=$!
"$BK" dedup -q <slow.fifo >slow.out &
slow=$!
i=0
while [ "$i" -lt 50 ] && [ "$(cat slow.out)" != "$(printf 'a\nb')" ]; do
    sleep 0.2
    i=$((i + 1))
done
check "dedup passes lines on while its input waits" test "$(cat slow.out)" = "$(printf 'a\nb')"
(printf 'key-1\nzzz\n'; exec sleep 15) >slow2.fifo &
prod2=$!
"$BK" check f.bk <slow2.fifo >slow2.out &
slow2=$!
i=0
while [ "$i" -lt 50 ] && [ "$(cat slow2.out)" != key-1 ]; do
    sleep 0.2
    i=$((i + 1))
done
check "check passes lines on while its input waits" test "$(cat slow2.out)" = key-1
kill "$prod" "$prod2" 2>/dev/null
wait "$prod" "$prod2" "$slow" "$slow2" 2>/dev/null

rc 0 "dedup --progress summary" "$BK" dedup --progress --seed 1 urls
check "--progress summary line" grep -q 'fill .*expected FPR' err

# progress: a bar on a terminal (script(1) gives one), periodic summary
# lines when forced onto a file, nothing with -q
seq 1 20000 >seq20k
if command -v script >/dev/null 2>&1; then
    BLOOMKIT_PROGRESS_INTERVAL=0 script -qec "stty cols 120; '$BK' dedup seq20k >/dev/null" /dev/null >tty.out 2>&1
    check "progress bar on a terminal" grep -q 'ETA' tty.out
    check "progress bar redrawn in place" sh -c "tr '\\r' '\\n' <tty.out | grep -q '^\\[#*-*\\] '"
    check "final summary on a terminal" grep -q '20000 items, 20000 new' tty.out
fi
BLOOMKIT_PROGRESS_INTERVAL=0 "$BK" dedup --progress seq20k >/dev/null 2>prog.err
check "periodic summaries with --progress" test "$(grep -c 'items.*new.*fill' prog.err)" -ge 3
check "--progress to a file draws no bar" sh -c "! grep -q 'ETA' prog.err"
BLOOMKIT_PROGRESS_INTERVAL=0 "$BK" dedup -q seq20k >/dev/null 2>prog.err
check "-q: nothing on stderr" test ! -s prog.err

# ---- normalization
printf 'HTTP://Example.com:80/a/../b#x\nhttp://example.com/b\nhttp://EXAMPLE.com/./b?\nhttp://example.com/%%7euser\nhttp://example.com/~user\n' >nurls
rc 0 "dedup --normalize url" "$BK" dedup -q --normalize url nurls
check "url variants collapse" sh -c "printf 'HTTP://Example.com:80/a/../b#x\nhttp://EXAMPLE.com/./b?\nhttp://example.com/%%7euser\n' | cmp -s - out"
printf ' Joe@Example.COM\njoe@example.com\t\nJOE@EXAMPLE.COM\nann@example.com\n' >mails
rc 0 "dedup --normalize email" "$BK" dedup -q --normalize email mails
check "email variants collapse" test "$(lines out)" = 2
rc 0 "create n" "$BK" create n.bk -n 100 -p 1e-7 --seed 9
rc 0 "add --normalize url" sh -c "echo 'https://Example.com:443' | '$BK' add -q --normalize url n.bk"
rc 0 "check normalized spelling" sh -c "echo 'https://example.com/#top' | '$BK' check --normalize url n.bk >/dev/null"
rc 0 "without --normalize the file's url normalization applies" sh -c "echo 'https://Example.com:443' | '$BK' check n.bk >/dev/null"
rc 1 "a key the url rules do not change to it is absent" sh -c "echo 'https://example.com/x' | '$BK' check n.bk >/dev/null"
rc 2 "unknown normalization" "$BK" dedup --normalize phone urls

# ---- dedup --threads: lines cut, normalized and hashed on other threads
# give what one thread gives, byte for byte: CRLF, empty lines, NUL bytes,
# a line longer than a read-ahead block (64 KB), no final newline, several
# inputs, and the same line number in an error.
awk 'BEGIN { for (i = 0; i < 40000; i++) {
        printf "http://Example.com/p/%d%s\n", i % 9001, (i % 7 == 0) ? "\r" : ""
        if (i % 5000 == 0) print ""
    } }' >t.a
awk 'BEGIN { s = ""; for (i = 0; i < 100000; i++) s = s "x"; print s; print s; print "tail" }' >t.long
printf 'nul\000byte\nnul\000byte\nHTTP://EXAMPLE.COM/p/7\nlast-without-newline' >t.odd
for t in 1 2 5 12; do
    "$BK" dedup -q -t "$t" --seed 4 t.a t.long t.odd >"t$t.plain"
    "$BK" dedup -q -t "$t" --seed 4 --normalize url t.a t.odd t.long >"t$t.url"
    # blocked (1e-3) and split (1e-2) seen-sets too (the default, 1e-6,
    # is blocked2), filled past capacity so their false positives count
    "$BK" dedup -q -t "$t" --seed 4 -n 5000 -p 1e-3 t.a t.odd >"t$t.blocked"
    "$BK" dedup -q -t "$t" --seed 4 -n 5000 -p 1e-2 t.a t.odd >"t$t.split"
done
sed 's/\r$//' t.a t.long | awk '!seen[$0]++' >t.want
check "dedup -t 2: the lines awk keeps" sh -c "head -n $(lines t.want) t2.plain | cmp -s - t.want"
check "dedup -t 2 = -t 1" same t2.plain t1.plain
check "dedup -t 5 = -t 1" same t5.plain t1.plain
check "dedup -t 5 --normalize url = -t 1" same t5.url t1.url
check "dedup -t 12 = -t 1" same t12.plain t1.plain
for k in blocked split; do
    check "dedup into a $k seen-set: -t 5 = -t 1" same "t5.$k" "t1.$k"
    check "dedup into a $k seen-set: -t 12 = -t 1" same "t12.$k" "t1.$k"
done
# lines across the read-ahead's blocks: a 1 MB line (over the 256 KB
# slab), a file of exactly 128 KB, blank lines only, an empty file
awk 'BEGIN { s = ""; for (i = 0; i < 1048576; i++) s = s "y"; print "a"; print s; print "b"; print s; print "a" }' >t.huge
awk 'BEGIN { for (i = 0; i < 8192; i++) printf "%015d\n", i % 5000 }' >t.exact # 131072 bytes
printf '\n\n\n' >t.blank
: >t.empty
for t in 1 4; do
    "$BK" dedup -q -t "$t" --seed 4 t.huge t.exact t.blank t.empty t.odd >"t$t.ranges"
done
check "dedup -t 4 across blocks = -t 1" same t4.ranges t1.ranges
cat t.huge t.exact t.blank t.empty | awk '!seen[$0]++' >t.ranges.want
check "... the lines awk keeps" sh -c "head -n $(lines t.ranges.want) t1.ranges | cmp -s - t.ranges.want"
check "the blocked seen-set at capacity drops some new lines (the runs above compare something)" \
    test "$(lines t1.blocked)" -lt "$(sed 's/\r$//' t.a t.odd | sort -u | wc -l)"
check "--normalize url with threads collapses spellings" \
    test "$(grep -c 'p/7$' t5.url)" -eq 1
rc 2 "dedup -t 3: a missing second input" "$BK" dedup -q -t 3 --seed 4 t.odd nosuch
check "the first input's lines are printed before the error" \
    test "$(lines out)" -eq 3
check "the missing input is named" grep -q 'nosuch' err
"$BK" create tns1.bk -n 50 -p 0.01 --kind scalable --nonscaling --seed 3
cp tns1.bk tns3.bk
seq 1 200 >t200
"$BK" dedup -q -t 1 --state tns1.bk t200 >/dev/null 2>tns1.err
rc 2 "dedup -t 3: a full seen-set" "$BK" dedup -q -t 3 --state tns3.bk t200
check "the full seen-set's error names line 51" grep -q 't200 line 51: ' err
check "and says what one thread says" sh -c "sed 's/tns3/tns1/g' err | cmp -s - tns1.err"
# the same many slabs in: lines of 41 bytes (fewer than SLAB_LINES to a
# 256 KB slab, so the reader's newline count numbers them), repeats first,
# so the seen-set fills past line 60,000; then short lines (over SLAB_LINES
# a slab, cut by the other path)
"$BK" create tnsb1.bk -n 70000 -p 0.01 --kind scalable --nonscaling --seed 3
cp tnsb1.bk tnsb3.bk
awk 'BEGIN { for (i = 0; i < 60000; i++) printf "https://example.com/%020d\n", i % 1000
             for (i = 0; i < 100000; i++) printf "https://example.com/%020d\n", i
             for (i = 0; i < 100000; i++) print "k" i }' >tlong
"$BK" dedup -q -t 1 --state tnsb1.bk tlong >/dev/null 2>tnsb1.err
rc 2 "dedup -t 3: a seen-set full after many slabs" "$BK" dedup -q -t 3 --state tnsb3.bk tlong
check "... names the line one thread names" sh -c "sed 's/tnsb3/tnsb1/g' err | cmp -s - tnsb1.err"
check "... a line past the first 60,000" sh -c "grep -q 'tlong line [0-9]*: ' err && test \"\$(sed -n 's/.*tlong line \([0-9]*\): .*/\1/p' err)\" -gt 60000"
rc 2 "bad --threads" "$BK" dedup -t 0 t200
check "bad --threads: said" grep -q "bad --threads '0'" err

# ---- info on a deep scalable chain (tests/data/scalable_deep.bkf: 40
# sub-filters, precise from the 17th on)
rc 0 "info on a deep chain" "$BK" info "$SRC/tests/data/scalable_deep.bkf"
check "info counts its precise sub-filters" grep -q '^sub-filters     40: 16 blocked, 24 precise;' out

# ---- a filter past the size limit is named as such, not "out of memory"
rc 2 "plan -n 1e15" "$BK" plan -n 1e15 -p 0.01
check "... names the 64 TiB limit" grep -q 'more than the 64 TiB a filter may hold' err

# ---- output that cannot be written is an error, not a silent success
if [ -w /dev/full ]; then
    rc 2 "plan into a full disk" sh -c "'$BK' plan -n 1000 -p 0.01 >/dev/full"
    check "... says so" grep -q 'standard output: No space left' err
    rc 2 "--help into a full disk" sh -c "'$BK' --help >/dev/full"
    rc 2 "add --help into a full disk" sh -c "'$BK' add --help >/dev/full"
fi

# ---- distinct / once
awk 'BEGIN { srand(3); for (i = 0; i < 5000; i++) print int(rand() * 3000) }' >ints
rc 0 "distinct" "$BK" distinct ints
check "distinct = sort -u" test "$(cat out)" = "$(sort -nu ints | wc -l | tr -d ' ')"
rc 0 "distinct --print" "$BK" distinct --print ints
check "distinct --print = sort -nu" sh -c "sort -nu ints | cmp -s - out"
# distinct --lines: text lines, exact, as sort -u | wc -l; within a small
# --memory (partitions spilled) and on 2 threads the same; --print gives
# the distinct lines themselves
awk 'BEGIN { srand(11); for (i = 0; i < 60000; i++) printf "line %d %s\n", int(rand() * 20000), (i % 7 ? "x" : "") }' >textlines
ndist=$(LC_ALL=C sort -u textlines | wc -l)
rc 0 "distinct --lines" "$BK" distinct --lines textlines
check "... counts as sort -u | wc -l ($ndist)" test "$(cat out)" -eq "$ndist"
rc 0 "distinct --lines within 64K of memory, 2 threads" "$BK" distinct --lines -m 64K -t 2 textlines
check "... the same count" test "$(cat out)" -eq "$ndist"
rc 0 "distinct --lines from standard input" sh -c "'$BK' distinct --lines <textlines"
check "... the same count" test "$(cat out)" -eq "$ndist"
rc 0 "distinct --lines --print" "$BK" distinct --lines --print textlines
check "... prints each distinct line once" sh -c "LC_ALL=C sort out >sorted.o && LC_ALL=C sort -u textlines | cmp -s - sorted.o"
rc 2 "distinct --lines --max: refused (integers only)" "$BK" distinct --lines --max 5 textlines
rc 2 "distinct --lines of two inputs: refused (it would be their common lines)" \
    "$BK" distinct --lines textlines ints
check "... saying to cat them" grep -q 'cat' err
# once --lines: the lines that appear exactly once, as sort | uniq -u; the
# same within 64K (partitions spilled, a line's copies in one partition)
# on 2 threads, and from standard input
LC_ALL=C sort textlines | LC_ALL=C uniq -u >once.want
nonce=$(lines once.want)
check "the input has lines seen once ($nonce) and more often" \
    sh -c "[ '$nonce' -gt 1000 ] && [ '$nonce' -lt '$ndist' ]"
rc 0 "once --lines" "$BK" once --lines textlines
check "... prints sort | uniq -u's lines" sh -c "LC_ALL=C sort out | cmp -s - once.want"
rc 0 "once --lines --count within 64K of memory, 2 threads" "$BK" once --lines -c -m 64K -t 2 textlines
check "... the same count" test "$(cat out)" -eq "$nonce"
rc 0 "once --lines from standard input, 1 thread, 64K" sh -c "'$BK' once --lines -c -t 1 -m 64K <textlines"
check "... the same count" test "$(cat out)" -eq "$nonce"
rc 2 "once --lines --approx: refused (exact only)" "$BK" once --lines --approx textlines
rc 0 "once" "$BK" once ints
check "once = uniq -u" sh -c "sort -n ints | uniq -u | cmp -s - out"
rc 0 "once --count" "$BK" once --count ints
check "once --count" test "$(cat out)" = "$(sort -n ints | uniq -u | wc -l | tr -d ' ')"
printf '13800138000\n 13800138000 \n19900000000\n' >phones
rc 0 "phone numbers" "$BK" distinct --max 2e10 phones
check "2 distinct phones" test "$(cat out)" = 2
printf '1\n2\nabc\n3\n' >badint
rc 2 "non-integer line" "$BK" distinct badint
check "non-integer named with line" grep -q 'badint: line 3' err
printf '1\n\n2\n' >emptyint
rc 2 "empty line is not an integer" "$BK" once emptyint
check "empty line named" grep -q 'emptyint: line 2' err
printf '5\n100\n' >bigint
rc 2 "value not below --max" "$BK" distinct --max 100 bigint
check "too-large value named" grep -q 'bigint: line 2' err
rc 2 "bad --max" "$BK" once --max 0 ints
# Fixed-width numbers: two different lines are never one value.
printf '01234567\n1234567\n' >zeros
rc 2 "a leading zero without --width is refused" "$BK" distinct zeros
check "... naming the line and --width" grep -q 'zeros: line 1: 01234567 has a leading zero.*--width 8' err
awk 'BEGIN { srand(5); for (i = 0; i < 3000; i++) printf "%08d\n", int(rand() * 2000) }' >fixed
rc 0 "distinct --width 8" "$BK" distinct --width 8 --print fixed
check "distinct --width 8 prints the numbers as given (= sort -u)" sh -c "sort -u fixed | cmp -s - out"
rc 0 "once --width 8" "$BK" once --width 8 fixed
check "once --width 8 = uniq -u, zeros kept" sh -c "sort fixed | uniq -u | cmp -s - out"
rc 2 "a number of another width is refused" "$BK" distinct --width 8 zeros
check "... naming its line" grep -q 'zeros: line 2: 1234567 has 7 digits' err

# ---- distinct / once --threads: each thread parses its own byte range of
# the file (3 MB here, so two ranges of over a megabyte) into one map
awk 'BEGIN { srand(11); for (i = 0; i < 400000; i++) printf "%d\n", int(rand() * 300000) }' >tnums
sort -un tnums >tnums.sorted
sort -n tnums | uniq -u >tnums.once
for t in 1 2 3; do
    rc 0 "distinct --threads $t" "$BK" distinct -q --threads "$t" --max 300000 --print tnums
    check "... prints exactly sort -un" same out tnums.sorted
    rc 0 "once --threads $t" "$BK" once -q --threads "$t" --max 300000 tnums
    check "... prints exactly uniq -u" same out tnums.once
done
# a map of 2^31 values (256 MB, with a touched-page record) written by
# two threads at once
rc 0 "distinct --threads 2 --max 2^31" "$BK" distinct -q -t 2 --max 2^31 --print tnums
check "... prints exactly sort -un" same out tnums.sorted
rc 0 "once --threads 2 --max 2^31" "$BK" once -q -t 2 --max 2^31 tnums
check "... prints exactly uniq -u" same out tnums.once
# a line that is not plain, in the second thread's range: named as ever
{ head -n 300000 tnums; echo 12x; tail -n 100000 tnums; } >tnums.bad
rc 2 "distinct --threads 2 with a bad line" "$BK" distinct -q -t 2 --max 300000 tnums.bad
check "... names its line (300001)" grep -q 'tnums.bad: line 300001' err
rc 2 "bad --threads" "$BK" distinct --threads 0 tnums

# ---- swapped arguments: an input where the filter goes
seq 1 10 >swapped.txt
"$BK" create swapped.bk -n 100 -p 0.01 --seed 1 2>/dev/null
rc 2 "check INPUT FILTER (swapped)" "$BK" check swapped.txt swapped.bk
check "... says the text file looks like an input and the filter comes first" \
    grep -q "swapped.txt: not a bloomkit filter file: it holds text, like an input. The filter file comes first: bloomkit check FILE" err
rc 2 "add INPUT FILTER (swapped)" "$BK" add swapped.txt swapped.bk
check "... says so too" grep -q 'The filter file comes first: bloomkit add FILE' err
check "... and leaves both files alone" test "$(cat swapped.txt | wc -l)" -eq 10

# ---- one meaning per option letter, and "did you mean"
# Every "-X, --name" pair in every command's help: a letter names one long
# option across the whole tool. One exception, on purpose: check takes
# grep's letters (-m is grep's --max-count there, --memory elsewhere).
for cmd in create add check remove dedup common distinct once merge info plan; do
    "$BK" "$cmd" --help | sed -n "s/^ *-\([A-Za-z]\), --\([a-z-]*\).*/\1 \2 $cmd/p"
done | grep -v '^m max-count check$' | sort -u >letters
awk '{ if ($1 in long && long[$1] != $2) { print "-" $1 ": --" long[$1] " (" cmd[$1] ") and --" $2 " (" $3 ")"; bad = 1 }
       long[$1] = $2; cmd[$1] = $3 } END { exit bad }' letters >clashes
check "each short option means one thing in every command ($(tr '\n' ';' <clashes))" test ! -s clashes
check "... (the pairs were found: -p is --fpr)" grep -q '^p fpr ' letters
echo 7 >seven
rc 2 "distinct -m 100: -m is --memory now, a bare number is refused" "$BK" distinct -m 100 seven
check "... saying to write --max" grep -q -- '--max 100' err
rc 0 "distinct -m 64M is --memory" "$BK" distinct -m 64M --max 10 seven
check "... and counts" test "$(cat out)" = 1
rc 2 "distinct -w 8: -w is --window, refused here" "$BK" distinct -w 8 seven
check "... saying to write --width" grep -q -- '--width 8' err
rc 2 "common -v: -v is --absent, not --verbose" "$BK" common -v seven seven
check "... saying to write --verbose" grep -q -- '--verbose' err
rc 2 "a misspelled long option" "$BK" create typo.bk --fprr 0.01
check "... gets 'did you mean --fpr?'" grep -q "unknown option '--fprr' (did you mean --fpr?)" err
rc 2 "a misspelled option of dedup" "$BK" dedup --chekpoint 5 seven
check "... gets 'did you mean --checkpoint?'" grep -q 'did you mean --checkpoint?' err
rc 2 "an option like none" "$BK" create typo.bk --zzzz
check "... gets no guess" sh -c '! grep -q "did you mean" err'

# ---- full non-scaling filter
if "$BK" create full.bk -n 100 -p 0.01 --kind scalable --nonscaling --seed 1 2>/dev/null; then
    cp full.bk full.orig
    seq 1 1000 >many
    rc 2 "full non-scaling filter" "$BK" add full.bk many
    check "full: one line naming file" names full.bk
    check "full: says full" grep -q 'full' err
    kept=$(sed -n 's/.*: the \([0-9]*\) lines before it were added and saved.*/\1/p' err)
    check "full: the lines before the one that did not fit are kept ($kept)" \
        sh -c "[ '$kept' -ge 100 ] && [ \"\$(head -n '$kept' many | '$BK' check -c full.bk)\" = '$kept' ]"
    check "full: the file changed" sh -c '! cmp -s full.bk full.orig'
else
    echo "skip: scalable filters not in this build"
fi

# ---- the other tool test scripts (tests/cli/test_*.sh), each ending with
# its own "N passed, N failed" line, which is added to the totals here
for t in "$SRC"/tests/cli/test_*.sh; do
    [ -f "$t" ] || continue
    echo "-- $(basename "$t")"
    (cd "$SRC" && BUILD=$BUILD sh "$t") >suite.log 2>&1
    trc=$?
    grep -v '^ok ' suite.log
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' suite.log | tail -n 1)
    if [ -z "$line" ]; then
        bad "$t: no result line (exit $trc)"
        continue
    fi
    p=${line%% passed*}
    f=${line#*passed, }
    f=${f%% failed*}
    [ "$trc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    pass=$((pass + p))
    fail=$((fail + f))
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
