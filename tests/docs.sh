#!/bin/sh
# The documentation keeps up with the sources: docs/LAYOUT.md names every
# .c file under src/, cli/ (and its rooms), redis/ and python/src/, and every header either
# is named there or shares its name with a .c file that is.
# Ends with "N passed, N failed".
cd "$(dirname "$0")/.." || exit 2
pass=0
fail=0
for f in src/*.c src/*.h cli/*.c cli/*.h cli/*/*.c cli/*/*.h redis/*.c redis/*.h python/src/*.c python/src/*.h; do
    [ -f "$f" ] || continue
    b=$(basename "$f")
    stem=${b%.*}
    if grep -q "\`$b\`" docs/LAYOUT.md ||
        { [ "${b##*.}" = h ] && grep -q "\`$stem.c\`" docs/LAYOUT.md; }; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL docs/LAYOUT.md does not name $f"
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
