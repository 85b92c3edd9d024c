#!/bin/sh
# Installs into a scratch directory and builds a program against the
# installed headers and libraries through pkg-config, static and shared.
# Ends with "N passed, N failed".
BUILD=${BUILD:-build}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok      $1"; }
bad() { fail=$((fail + 1)); echo "not ok  $1"; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
prefix=/opt/bk

if make -s install BUILD="$BUILD" DESTDIR="$root" PREFIX="$prefix" >"$root/log" 2>&1; then
    ok "make install"
else
    bad "make install"; cat "$root/log"
fi

for f in include/bloomkit/bloomkit.h lib/libbloomkit.a lib/libbloomkit.so lib/pkgconfig/bloomkit.pc \
    bin/bloomkit lib/bloomkit/bloomkit.so share/man/man1/bloomkit.1; do
    if [ -e "$root$prefix/$f" ]; then ok "installed $f"; else bad "installed $f"; fi
done

if "$root$prefix/bin/bloomkit" --version 2>&1 | grep -q '^bloomkit '; then
    ok "installed tool runs"
else
    bad "installed tool runs: $("$root$prefix/bin/bloomkit" --version 2>&1)"
fi

soname=$(readelf -d "$root$prefix/lib/libbloomkit.so" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
if [ "$soname" = "libbloomkit.so.0" ]; then ok "soname libbloomkit.so.0"; else bad "soname is '$soname'"; fi

export PKG_CONFIG_PATH="$root$prefix/lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$root"
flags=$(pkg-config --cflags --libs bloomkit 2>/dev/null)
case "$flags" in
*"-I$root$prefix/include"*"-lbloomkit"*) ok "pkg-config flags" ;;
*) bad "pkg-config flags: '$flags'" ;;
esac

cat >"$root/app.c" <<'APP'
#include <bloomkit/bloomkit.h>
#include <stdio.h>
int main(void)
{
    bk_filter_t *f;
    if (bk_filter_create(&f, 1000, 0.01, NULL) != BK_OK)
        return 2;
    bk_filter_add(f, "seen", 4, NULL);
    int ok = bk_filter_contains(f, "seen", 4) && bk_filter_items(f) == 1;
    bk_filter_free(f);
    puts(ok ? "works" : "broken");
    return !ok;
}
APP
# shellcheck disable=SC2086
if ${CC:-cc} -std=c11 -o "$root/app-shared" "$root/app.c" $flags -lm &&
    [ "$(LD_LIBRARY_PATH="$root$prefix/lib" "$root/app-shared")" = works ]; then
    ok "program linked against the shared library"
else
    bad "program linked against the shared library"
fi
if ${CC:-cc} -std=c11 -o "$root/app-static" "$root/app.c" -I"$root$prefix/include" \
    "$root$prefix/lib/libbloomkit.a" -lm && [ "$("$root/app-static")" = works ]; then
    ok "program linked against the static library"
else
    bad "program linked against the static library"
fi

# libbloomkit-redis, installed beside libbloomkit: a program opens a
# filter on a port nothing listens on and gets a status and a message (no
# server needed: this proves the header, the archive and the link line)
cat >"$root/net.c" <<'APP'
#include <bloomkit/redis.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    bk_redis_t *r;
    bk_status_t st = bk_redis_open(&r, "redis://127.0.0.1:1/seen", NULL);
    int ok = st == BK_EIO && strstr(bk_redis_error(r), "cannot connect to 127.0.0.1:1") &&
             bk_redis_shard_of("x", 1, 1) == 0 && bk_redis_key_slot("{0}", 3) == 13907;
    bk_redis_close(r);
    puts(ok ? "works" : "broken");
    return !ok;
}
APP
if ${CC:-cc} -std=c11 -o "$root/net" "$root/net.c" -I"$root$prefix/include" \
    "$root$prefix/lib/libbloomkit-redis.a" "$root$prefix/lib/libbloomkit.a" -lhiredis -lm &&
    [ "$("$root/net")" = works ]; then
    ok "program linked against libbloomkit-redis"
else
    bad "program linked against libbloomkit-redis"
fi

# README.md's C example, taken from README.md itself, built and run with
# exactly its commands against a real install at a non-default prefix
# (PKG_CONFIG_PATH as the README says; no LD_LIBRARY_PATH, no ldconfig).
unset PKG_CONFIG_SYSROOT_DIR
real=$root/real
readme=$(cd "$(dirname "$0")/.." && pwd)/README.md
mkdir -p "$root/user"
awk '/^  ```c$/ { on = 1; next } on && /^  ```$/ { exit } on { sub(/^  /, ""); print }' \
    "$readme" >"$root/user/app.c"
build_cmd=$(sed -n 's/^  \(cc app\.c .*\)$/\1/p' "$readme" | head -n 1)
run_cmd=$(sed -n 's/^  \(\.\/app .*\)$/\1/p' "$readme" | head -n 1)
if [ -s "$root/user/app.c" ] && [ -n "$build_cmd" ] && [ -n "$run_cmd" ] &&
    make -s install BUILD="$BUILD" PREFIX="$real" >"$root/log2" 2>&1; then
    out=$(cd "$root/user" && export PKG_CONFIG_PATH="$real/lib/pkgconfig" &&
        env -u LD_LIBRARY_PATH sh -c "$build_cmd && $run_cmd" 2>&1)
    case "$out" in
    *"https://a.example/: new"*"https://b.example/: new"*"https://a.example/: seen before"*)
        ok "README's C example builds and runs as written (custom prefix)" ;;
    *) bad "README's C example: $out" ;;
    esac
else
    bad "README's C example: not found in README.md, or install failed"
    cat "$root/log2" 2>/dev/null
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
