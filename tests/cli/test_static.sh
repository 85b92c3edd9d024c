#!/bin/sh
# Static filters from the tool (create --kind fuse8|fuse16|fuse32 FILE INPUT...):
# every input line is found by check (plain and --mmap), absent lines pass
# at the fingerprint's rate, repeats and normalization count once, a capped
# build splits into parts and leaves no temporary file behind, and every
# command that would change the file refuses it by name and leaves it as
# it was; a damaged file is refused.
# Ends with "N passed, N failed"; exits non-zero on any failure.
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
BK=${BK:-$BUILD/bloomkit}
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
W=$(mktemp -d "${TMPDIR:-/tmp}/bk-test-static.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 1' INT TERM
cd "$W" || exit 2

seq 1 200000 | sed 's/^/user/; s/$/@example.com/' >set.txt
seq 1 100000 | sed 's/^/other/; s/$/@example.org/' >absent.txt

rc 0 "create --kind fuse8 from a file" "$BK" create --kind fuse8 s8.bkf set.txt
rc 0 "check finds every line of the set" "$BK" check s8.bkf set.txt
check "  ... and prints each one" [ "$(lines out)" -eq 200000 ]
"$BK" check s8.bkf absent.txt >fp.txt
fp=$(lines fp.txt)
# 2^-8 of 100,000 is 391; 500 is more than 5 standard deviations above
check "absent lines pass at about 2^-8 ($fp of 100000)" [ "$fp" -ge 250 -a "$fp" -le 500 ]
rc 0 "check --mmap finds every line" "$BK" check --mmap s8.bkf set.txt
check "  ... all of them" [ "$(lines out)" -eq 200000 ]
rc 0 "info of a static filter" "$BK" info s8.bkf
check "  ... names its kind and keys" grep -q '^kind *fuse8' out
check "  ... says it is static" grep -q 'static' out
bits=$(sed -n 's/.*, \([0-9.]*\) bits a key/\1/p' out)
check "  ... about 9 bits a key ($bits; 9.0 from 10M keys)" awk -v b="$bits" 'BEGIN { exit !(b > 8.9 && b < 9.5) }'

# from standard input, with repeats: each key held once
cat set.txt set.txt | "$BK" create --kind fuse16 s16.bkf - 2>err
check "create --kind fuse16 from standard input" [ $? -eq 0 ]
rc 0 "info --json of fuse16" "$BK" info --json s16.bkf
check "  ... 200000 items (repeats once)" grep -q '"items":200000,' out
"$BK" check s16.bkf absent.txt >fp16.txt
check "fuse16: absent lines almost never pass ($(lines fp16.txt))" [ "$(lines fp16.txt)" -le 10 ]

# fuse32: 32-bit fingerprints, 4 bytes a cell, no absent line passes
rc 0 "create --kind fuse32" "$BK" create --kind fuse32 s32.bkf set.txt
rc 0 "  ... check finds every line" "$BK" check s32.bkf set.txt
check "  ... all of them" [ "$(lines out)" -eq 200000 ]
rc 0 "  ... and --mmap too" "$BK" check --mmap s32.bkf set.txt
check "  ... all of them" [ "$(lines out)" -eq 200000 ]
"$BK" check s32.bkf absent.txt >fp32.txt
check "fuse32: no absent line passes (2^-32 of 100000: 0.00002 expected)" [ "$(lines fp32.txt)" -eq 0 ]
rc 0 "info of fuse32" "$BK" info s32.bkf
check "  ... kind and rate" sh -c "grep -q '^kind *fuse32' out && grep -q '^expected FPR *2.328e-10' out"
bits=$(sed -n 's/.*, \([0-9.]*\) bits a key/\1/p' out)
check "  ... about 36 bits a key ($bits)" awk -v b="$bits" 'BEGIN { exit !(b > 35.9 && b < 38) }'

# --static picks by -p; -p below fuse16's reach is refused in words
rc 0 "--static -p 0.01 builds fuse8" "$BK" create --static -p 0.01 st.bkf set.txt
check "  ... kind fuse8" sh -c "'$BK' info st.bkf | grep -q '^kind *fuse8'"
rc 0 "--static -p 0.001 builds fuse16" "$BK" create --static -p 0.001 st2.bkf set.txt
check "  ... kind fuse16" sh -c "'$BK' info st2.bkf | grep -q '^kind *fuse16'"
rc 0 "--static -p 1e-7 builds fuse32" "$BK" create --static -p 1e-7 st3.bkf set.txt
check "  ... kind fuse32" sh -c "'$BK' info st3.bkf | grep -q '^kind *fuse32'"
rc 2 "--static -p 1e-10: refused" "$BK" create --static -p 1e-10 low.bkf set.txt
check "  ... says where each static kind ends" grep -q 'fuse8 reaches 0.0041, fuse16 1.6e-5 and fuse32 2.4e-10' err
check "  ... no file made" [ ! -e low.bkf ]
rc 2 "--kind fuse8 -n: refused" "$BK" create --kind fuse8 -n 100 x.bkf set.txt
check "  ... no file made" [ ! -e x.bkf ]
rc 2 "an existing file is kept" "$BK" create --kind fuse8 s8.bkf set.txt

# normalization: recorded, and applied by check
printf 'https://Example.COM:443/a/./b\nhttps://example.com/c\n' >urls.txt
rc 0 "create --normalize url" "$BK" create --kind fuse8 --normalize url u.bkf urls.txt
rc 0 "check applies the recorded form" sh -c "echo 'https://example.com/a/b' | '$BK' check u.bkf -"
check "  ... and finds the canonical spelling" [ "$(lines out)" -eq 1 ]

# a capped build: parts, and no temporary file left in --tmpdir
mkdir tmp
rc 0 "create --memory 1M --tmpdir" "$BK" create --kind fuse8 --memory 1M --tmpdir tmp cap.bkf set.txt
parts=$("$BK" info --json cap.bkf | sed -n 's/.*"filters":\([0-9]*\).*/\1/p')
check "  ... built in parts ($parts: 1M holds about 21,800 keys a part)" [ "${parts:-0}" -ge 9 -a "${parts:-0}" -le 11 ]
check "  ... nothing left in the tmpdir" [ -z "$(ls -A tmp)" ]
rc 0 "  ... and every line is found" "$BK" check cap.bkf set.txt
check "  ... all of them" [ "$(lines out)" -eq 200000 ]
rc 2 "--memory for a Bloom filter: refused" "$BK" create -n 10 -p 0.1 --memory 1M b.bkf
rc 2 "--tmpdir that is no directory: refused before a line is read" sh -c "'$BK' create --kind fuse8 --memory 1M --tmpdir set.txt t.bkf set.txt"
check "  ... naming it" grep -q -- 'temporary directory set.txt: Not a directory' err
rc 2 "a \$TMPDIR that does not exist: refused before a line is read" sh -c "TMPDIR=$W/none '$BK' create --kind fuse8 --memory 1M t.bkf set.txt"
check "  ... naming it" grep -q -- "temporary directory $W/none: No such file or directory" err
check "  ... no file made" [ ! -e t.bkf ]

# plan: --static sizes one; the Bloom plan lists the static kinds it reaches
rc 0 "plan --static -p 0.01" "$BK" plan -n 1e8 -p 0.01 --static --no-speed
check "  ... plans fuse8" grep -qE '^kind +fuse8 ' out
check "  ... about 9 bits a key" awk '/^bits per key/ { exit !($4 > 8.9 && $4 < 9.2) }' out
check "  ... says how to make it" grep -q 'create --kind fuse8 FILE INPUT' out
rc 0 "plan of a Bloom filter at 1%" "$BK" plan -n 1e8 -p 0.01 --no-speed
check "  ... lists fuse8 and fuse16 as static alternatives" sh -c "grep -qE '^  fuse8 .*static' out && grep -qE '^  fuse16 .*static' out"
rc 0 "plan at 0.001" "$BK" plan -n 1e8 -p 0.001 --no-speed
check "  ... lists fuse16 but not fuse8 (2^-8 is above 0.001)" sh -c "grep -qE '^  fuse16 ' out && ! grep -qE '^  fuse8 ' out"
rc 0 "plan at 1e-9" "$BK" plan -n 1e8 -p 1e-9 --no-speed
check "  ... lists fuse32 alone of the static kinds, below the optimum" sh -c "grep -qE '^  fuse32 .*0\.8[0-9]+x.*static' out && ! grep -qE '^  fuse(8|16) ' out"
rc 2 "plan --static -p 1e-10: refused" "$BK" plan -n 1e8 -p 1e-10 --static
check "  ... in words" grep -q 'fuse16 1.6e-5 and fuse32 2.4e-10' err

# nothing changes a static file
cp s8.bkf before.bkf
rc 2 "add to a static filter: refused" sh -c "echo new | '$BK' add s8.bkf"
check "  ... names it static" grep -q 'static filter (fuse8)' err
rc 2 "dedup --state of a static filter: refused" sh -c "echo new | '$BK' dedup --state s8.bkf"
check "  ... prints nothing as new" [ ! -s out ]
rc 2 "remove from a static filter: refused" sh -c "echo user1@example.com | '$BK' remove s8.bkf"
check "the file is unchanged" same s8.bkf before.bkf

# damage in a payload byte (its bits flipped: the build's seed is random,
# so any fixed byte written there could be the one already there):
# refused, never answered
size=$(wc -c <s8.bkf)
byte=$(od -An -tu1 -j $((size / 2)) -N1 s8.bkf | tr -d ' ')
printf "\\$(printf '%03o' $((byte ^ 255)))" | dd of=s8.bkf bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
check "the damage changed the file" sh -c "! cmp -s s8.bkf before.bkf"
rc 2 "a damaged static filter is refused" "$BK" check s8.bkf set.txt
check "  ... prints no answer" [ ! -s out ]

finish
