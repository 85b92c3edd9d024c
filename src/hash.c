/*
 * Key hashing.
 *
 * Filters use one 128-bit hash per key (bk_hash_t) and derive every probe
 * position from it (double hashing for classic filters, a line index plus
 * in-line offsets for blocked and counting ones), so a key costs one pass
 * over its bytes however large k is.
 *
 * XXH3-128 with the filter's 64-bit seed hashes keys by default: fast on
 * long keys (URLs), stable across versions and platforms, and seeded so
 * that an attacker who knows the code but not the seed cannot craft keys
 * that all land on the same bits. New filters' default, xxh3-mix8, gives an
 * 8-byte key (a 64-bit integer id) a cheaper seeded mixer instead
 * (keyhash.h says why and how); filters that record plain xxh3 keep it.
 *
 * The classic string hashes from the articles (BKDR, AP, DJB, JS, RS, SDBM,
 * DEK, ELF, PJW; FNV-1a as a 64-bit hash) are kept for compatibility with
 * existing filters and for teaching. They produce 32 bits (FNV-1a: 64), so
 * two keys with the same classic hash are indistinguishable to the filter:
 * over billions of URLs a 32-bit hash collides often, which is exactly what
 * `bloomkit` lets a user measure. Their value is spread to 128 bits by a
 * seeded mixer; that spreads but cannot remove collisions.
 *
 * The classic hashes themselves are in strhash.c; the inline XXH3 key hash
 * that every caller shares is in keyhash.h. This file has the public hash
 * calls, hash names and random seeds.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "keyhash.h"

uint64_t bk_hash_raw(bk_hash_id_t id, uint64_t seed, const void *key, size_t len)
{
    const unsigned char *s = key ? key : bki_empty_key;
    if (id == BK_HASH_XXH3 || id == BK_HASH_XXH3_MIX8 || id == BK_HASH_DEFAULT)
        return bki_key_hash(id, seed, s, len).lo;
    return bki_classic_hash(id, s, len);
}

bk_hash_t bk_hash_key(bk_hash_id_t id, uint64_t seed, const void *key, size_t len)
{
    return bki_key_hash(id, seed, key, len);
}

static const char *const hash_names[] = {
    [BK_HASH_XXH3] = "xxh3", [BK_HASH_BKDR] = "bkdr", [BK_HASH_AP] = "ap",
    [BK_HASH_DJB] = "djb",   [BK_HASH_JS] = "js",     [BK_HASH_RS] = "rs",
    [BK_HASH_SDBM] = "sdbm", [BK_HASH_DEK] = "dek",   [BK_HASH_ELF] = "elf",
    [BK_HASH_PJW] = "pjw",   [BK_HASH_FNV1A] = "fnv1a",
    [BK_HASH_MURMUR64A] = "murmur64a", [BK_HASH_MURMUR2] = "murmur2",
    [BK_HASH_XXH3_MIX8] = "xxh3-mix8",
};

const char *bk_hash_name(bk_hash_id_t id)
{
    if ((unsigned)id == 0 || (unsigned)id > BK_HASH_COUNT)
        return NULL;
    return hash_names[id];
}

bk_status_t bk_hash_parse(const char *name, bk_hash_id_t *out)
{
    if (!name || !out)
        return BK_EINVAL;
    for (unsigned i = 1; i <= BK_HASH_COUNT; i++) {
        if (strcasecmp(name, hash_names[i]) == 0) {
            *out = (bk_hash_id_t)i;
            return BK_OK;
        }
    }
    if (strcasecmp(name, "fnv") == 0 || strcasecmp(name, "fnv-1a") == 0) {
        *out = BK_HASH_FNV1A;
        return BK_OK;
    }
    return BK_EINVAL;
}

/* Seeds are taken from a per-thread pool filled by one getrandom call:
 * a server making a key per command (BF.ADD of a new key) paid a system
 * call per key, about 0.35 us of its 12 us. Each value is cleared as it is
 * handed out, and a forked child empties the pool of the thread that
 * forked (the only one it has), so parent and child never hand out the
 * same seed. */
enum { SEED_POOL = 32 };
static _Thread_local struct {
    uint64_t v[SEED_POOL];
    unsigned left;
} seed_pool;
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;

static void seed_pool_forget(void)
{
    memset(&seed_pool, 0, sizeof seed_pool);
}

static void seed_pool_register(void)
{
    (void)pthread_atfork(NULL, NULL, seed_pool_forget);
}

uint64_t bk_random_seed(void)
{
    uint64_t seed;
    (void)pthread_once(&seed_once, seed_pool_register);
    if (seed_pool.left == 0 &&
        getrandom(seed_pool.v, sizeof seed_pool.v, GRND_NONBLOCK) == (ssize_t)sizeof seed_pool.v)
        seed_pool.left = SEED_POOL;
    if (seed_pool.left > 0) {
        seed = seed_pool.v[--seed_pool.left];
        seed_pool.v[seed_pool.left] = 0;
        return seed;
    }
    /* No entropy source (very early boot, seccomp): still vary per call. */
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
                 (uint64_t)(uintptr_t)&seed ^ (counter++ * UINT64_C(0x9E3779B97F4A7C15));
    return bki_mix64(x);
}
