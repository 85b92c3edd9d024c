#!/bin/sh
# Makes sure the Debian packages a step needs are present.
#   sh scripts/need.sh [--check] build|test|bench|fuzz|python
# When a package is missing: as root, installs it with apt-get (the only
# download bloomkit ever makes); otherwise, or with --check (what a plain
# `make` uses: building never installs), stops with one line naming it.
set -eu
check_only=
if [ "${1:-}" = --check ]; then
    check_only=1
    shift
fi
group=${1:?usage: need.sh [--check] build|test|bench|fuzz|python}

# One line per dependency: group, Debian package, a file that proves it is
# installed.
table='
build libxxhash-dev /usr/include/xxhash.h
build libhiredis-dev /usr/include/hiredis/hiredis.h
test  libxxhash-dev /usr/include/xxhash.h
test  libhiredis-dev /usr/include/hiredis/hiredis.h
test  pkg-config /usr/bin/pkg-config
test  redis-server /usr/bin/redis-server
test  redis-tools /usr/bin/redis-cli
test  python3-redis /usr/lib/python3/dist-packages/redis/__init__.py
test  php-cli /usr/bin/php
test  php-redis /usr/share/doc/php-redis/copyright
test  time /usr/bin/time
test  tmux /usr/bin/tmux
python python3-dev /usr/bin/python3-config
test  python3-dev /usr/bin/python3-config
test  python3-pytest /usr/lib/python3/dist-packages/pytest/__init__.py
test  python3-scrapy /usr/lib/python3/dist-packages/scrapy/__init__.py
test  python3-pip /usr/lib/python3/dist-packages/pip/__init__.py
test  python3-venv /usr/share/doc/python3-venv/copyright
bench time /usr/bin/time
bench libbloom-dev /usr/include/bloom.h
bench golang-github-dcso-bloom-cli /usr/bin/bloom
bench redis-server /usr/bin/redis-server
bench redis-tools /usr/bin/redis-benchmark
bench gawk /usr/bin/gawk
bench python3-dev /usr/bin/python3-config
bench python3-scrapy /usr/lib/python3/dist-packages/scrapy/__init__.py
bench zlib1g-dev /usr/include/zlib.h
bench g++ /usr/bin/g++
bench python3-redis /usr/lib/python3/dist-packages/redis/__init__.py
bench python3-flor /usr/lib/python3/dist-packages/flor/__init__.py
fuzz  clang /usr/bin/clang
fuzz  libclang-rt-14-dev /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
'

missing=$(echo "$table" | awk -v g="$group" '$1 == g { print $2, $3 }' |
    while read -r pkg file; do
        [ -e "$file" ] || echo "$pkg"
    done | sort -u | tr '\n' ' ')

[ -z "$missing" ] && exit 0

if [ -z "$check_only" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bloomkit: installing Debian packages for '$group': $missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    # A fresh machine has no package lists yet; update once, quietly.
    apt-get update -qq >/dev/null 2>&1 || true
    # shellcheck disable=SC2086
    if ! apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1; then
        echo "bloomkit: apt-get could not install: $missing" >&2
        exit 1
    fi
    exit 0
fi

echo "bloomkit: missing Debian packages for '$group': $missing(run: make deps, or sudo apt-get install $missing)" >&2
exit 1
