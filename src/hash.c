/*
 * Key hashing.
 *
 * Filters use one 128-bit hash per key (bk_hash_t) and derive every probe
 * position from it (double hashing for classic filters, a line index plus
 * in-line offsets for blocked and counting ones), so a key costs one pass
 * over its bytes however large k is.
 *
 * XXH3-128 with the filter's 64-bit seed is the default: fast on long keys
 * (URLs), stable across versions and platforms, and seeded so that an
 * attacker who knows the code but not the seed cannot craft keys that all
 * land on the same bits.
 *
 * The classic string hashes from the articles (BKDR, AP, DJB, JS, RS, SDBM,
 * DEK, ELF, PJW; FNV-1a as a 64-bit hash) are kept for compatibility with
 * existing filters and for teaching. They produce 32 bits (FNV-1a: 64), so
 * two keys with the same classic hash are indistinguishable to the filter:
 * over billions of URLs a 32-bit hash collides often, which is exactly what
 * `bloomkit` lets a user measure. Their value is spread to 128 bits by a
 * seeded mixer; that spreads but cannot remove collisions.
 *
 * ELF and PJW are the same function on 32-bit words (ELF is PJW written for
 * the System V object format); both names are accepted because both are in
 * use.
 *
 * Characters are taken as unsigned bytes, and the 32-bit hashes are computed
 * in uint32_t arithmetic, matching the C originals on common platforms and
 * the PHP version in the articles (which masks with 0xFFFFFFFF).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "keyhash.h"

/* The splitmix64 finalizer: a bijection on 64 bits with full avalanche. */
uint64_t bki_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    x ^= x >> 31;
    return x;
}

/* ---- the classic hashes, as the articles give them ---- */

static uint32_t hash_bkdr(const unsigned char *s, size_t n)
{
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = h * 131u + s[i];
    return h;
}

static uint32_t hash_ap(const unsigned char *s, size_t n)
{
    uint32_t h = 0xAAAAAAAAu;
    for (size_t i = 0; i < n; i++) {
        if ((i & 1) == 0)
            h ^= (h << 7) ^ ((uint32_t)s[i] * (h >> 3));
        else
            h ^= ~((h << 11) + ((uint32_t)s[i] ^ (h >> 5)));
    }
    return h;
}

static uint32_t hash_djb(const unsigned char *s, size_t n)
{
    uint32_t h = 5381u;
    for (size_t i = 0; i < n; i++)
        h = ((h << 5) + h) + s[i];
    return h;
}

static uint32_t hash_js(const unsigned char *s, size_t n)
{
    uint32_t h = 1315423911u;
    for (size_t i = 0; i < n; i++)
        h ^= (h << 5) + s[i] + (h >> 2);
    return h;
}

static uint32_t hash_rs(const unsigned char *s, size_t n)
{
    uint32_t a = 63689u, b = 378551u, h = 0;
    for (size_t i = 0; i < n; i++) {
        h = h * a + s[i];
        a *= b;
    }
    return h;
}

static uint32_t hash_sdbm(const unsigned char *s, size_t n)
{
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = s[i] + (h << 6) + (h << 16) - h;
    return h;
}

static uint32_t hash_dek(const unsigned char *s, size_t n)
{
    uint32_t h = (uint32_t)n;
    for (size_t i = 0; i < n; i++)
        h = ((h << 5) ^ (h >> 27)) ^ s[i];
    return h;
}

static uint32_t hash_elf(const unsigned char *s, size_t n)
{
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++) {
        h = (h << 4) + s[i];
        uint32_t x = h & 0xF0000000u;
        if (x)
            h ^= x >> 24;
        h &= ~x;
    }
    return h;
}

static uint32_t hash_pjw(const unsigned char *s, size_t n)
{
    /* Weinberger's hash for 32-bit words: high nibble folded back in. */
    const uint32_t high_bits = 0xF0000000u;
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++) {
        h = (h << 4) + s[i];
        uint32_t test = h & high_bits;
        if (test)
            h = (h ^ (test >> 24)) & ~high_bits;
    }
    return h;
}

static uint64_t hash_fnv1a(const unsigned char *s, size_t n)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static uint64_t classic_hash(bk_hash_id_t id, const unsigned char *s, size_t n)
{
    switch (id) {
    case BK_HASH_BKDR: return hash_bkdr(s, n);
    case BK_HASH_AP: return hash_ap(s, n);
    case BK_HASH_DJB: return hash_djb(s, n);
    case BK_HASH_JS: return hash_js(s, n);
    case BK_HASH_RS: return hash_rs(s, n);
    case BK_HASH_SDBM: return hash_sdbm(s, n);
    case BK_HASH_DEK: return hash_dek(s, n);
    case BK_HASH_ELF: return hash_elf(s, n);
    case BK_HASH_PJW: return hash_pjw(s, n);
    case BK_HASH_FNV1A: return hash_fnv1a(s, n);
    default: return 0;
    }
}

uint64_t bk_hash_raw(bk_hash_id_t id, uint64_t seed, const void *key, size_t len)
{
    const unsigned char *s = key ? key : bki_empty_key;
    if (id == BK_HASH_XXH3 || id == BK_HASH_DEFAULT)
        return bki_key_hash(id, seed, s, len).lo;
    return classic_hash(id, s, len);
}

bk_hash_t bki_classic_key_hash(bk_hash_id_t id, uint64_t seed, const void *key, size_t len)
{
    /* Seeded spread of a classic hash: both halves are bijections of the
     * classic value, so equal classic hashes stay equal (as they must) and
     * different ones land independently. */
    bk_hash_t h;
    uint64_t v = classic_hash(id, key ? key : bki_empty_key, len);
    h.hi = bki_mix64(v ^ seed);
    h.lo = bki_mix64(h.hi ^ UINT64_C(0x9E3779B97F4A7C15) ^ (seed << 1));
    return h;
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

uint64_t bk_random_seed(void)
{
    uint64_t seed;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed)
        return seed;
    /* No entropy source (very early boot, seccomp): still vary per call. */
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
                 (uint64_t)(uintptr_t)&seed ^ (counter++ * UINT64_C(0x9E3779B97F4A7C15));
    return bki_mix64(x);
}
