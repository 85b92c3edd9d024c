#!/bin/sh
# The documentation keeps up with the sources: docs/LAYOUT.md names every
# .c file under src/, cli/ (and its rooms), client/, redis/ and python/src/
# in that directory's own section ("## The library (src/)", "## The tool
# (cli/)", "## The Redis client library (client/)", "## The Redis module
# (redis/)", "## The Python package (python/)"), and
# every header either is named there or shares its name with a .c file that
# is: a path, not a bare name (src/redisbloom.c and redis/redisbloom.c are
# two files, each to be found in its own section).
# Ends with "N passed, N failed".
cd "$(dirname "$0")/.." || exit 2
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# section TITLE-PREFIX OUT: the lines from the "## " heading that starts so
# to the next "## " heading
section() {
    awk -v t="## $1" 'index($0, t) == 1 { on = 1; print; next }
        /^## / { on = 0 } on' docs/LAYOUT.md >"$2"
}
section "The library (src/)" "$tmp/src"
section "The tool (cli/)" "$tmp/cli"
section "The Redis client library (client/)" "$tmp/client"
section "The Redis module (redis/)" "$tmp/redis"
section "The Python package (python/)" "$tmp/python"
for f in src/*.c src/*.h cli/*.c cli/*.h cli/*/*.c cli/*/*.h client/*.c redis/*.c redis/*.h python/src/*.c python/src/*.h; do
    [ -f "$f" ] || continue
    case $f in
    src/*) sec=$tmp/src ;;
    cli/*) sec=$tmp/cli ;;
    client/*) sec=$tmp/client ;;
    redis/*) sec=$tmp/redis ;;
    *) sec=$tmp/python ;;
    esac
    b=$(basename "$f")
    stem=${b%.*}
    if [ -s "$sec" ] && { grep -q "\`$b\`" "$sec" ||
        { [ "${b##*.}" = h ] && grep -q "\`$stem.c\`" "$sec"; }; }; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL docs/LAYOUT.md does not name $f in its section"
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
