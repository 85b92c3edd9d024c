#!/bin/sh
# Builds RedisBloom (a peer for the Redis benchmarks, never needed by
# `make test`) into OUT: sh bench/redisbloom_build.sh OUT. The source is a
# checkout of RedisBloom v2.8.20 with its submodules at $BK_REDISBLOOM_SRC,
# else bench/peers/RedisBloom, cloned there when the network allows. It is
# compiled with one cc line from the sources its Makefile lists (the
# Makefile itself needs RedisBloom's build system, readies). Exit 0 when
# OUT was built; otherwise a line saying why on stdout and exit 1.
set -eu
OUT=${1:?usage: redisbloom_build.sh OUT}
SRC=${BK_REDISBLOOM_SRC:-bench/peers/RedisBloom}
if [ ! -f "$SRC/src/rebloom.c" ] && [ -z "${BK_REDISBLOOM_SRC:-}" ]; then
    git clone -q --depth 1 --branch v2.8.20 --recurse-submodules \
        https://github.com/RedisBloom/RedisBloom "$SRC" 2>/dev/null || true
fi
if [ ! -f "$SRC/src/rebloom.c" ] || [ ! -f "$SRC/deps/t-digest-c/src/tdigest.c" ] ||
    [ ! -f "$SRC/deps/RedisModulesSDK/redismodule.h" ] || [ ! -d "$SRC/deps/readies/cetara" ]; then
    echo "no RedisBloom source with its submodules at $SRC (set BK_REDISBLOOM_SRC to a checkout of github.com/RedisBloom/RedisBloom v2.8.20, submodules included)"
    exit 1
fi
OUT=$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")
cd "$SRC"
${CC:-cc} -O2 -fPIC -shared -std=gnu99 -w -include stddef.h -include stdint.h \
    -D_GNU_SOURCE -DREDIS_MODULE_TARGET -DREDISMODULE_SDK_RLEC \
    -I. -Isrc -Ideps/RedisModulesSDK -Ideps -Ideps/murmur2 -Ideps/t-digest-c/src \
    -o "$OUT" deps/bloom/bloom.c deps/murmur2/MurmurHash2.c deps/rmutil/util.c src/rebloom.c \
    src/sb.c src/cf.c src/rm_topk.c src/rm_tdigest.c src/topk.c src/rm_cms.c src/cms.c \
    deps/t-digest-c/src/tdigest.c -lm || { echo "RedisBloom did not build"; exit 1; }
