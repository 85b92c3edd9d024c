/*
 * The classic string hashes from the articles (BKDR, AP, DJB, JS, RS, SDBM,
 * DEK, ELF, PJW; FNV-1a as a 64-bit hash), kept for compatibility with
 * existing filters and for teaching, and their seeded spread to a filter's
 * 128-bit key hash. hash.c has the why; keyhash.h calls into here for any
 * hash id but XXH3.
 *
 * Characters are taken as unsigned bytes, and the 32-bit hashes are computed
 * in uint32_t arithmetic, matching the C originals on common platforms and
 * the PHP version in the articles (which masks with 0xFFFFFFFF). ELF and PJW
 * are the same function on 32-bit words (ELF is PJW written for the System V
 * object format); both names are accepted because both are in use.
 *
 * Also RedisBloom's two key hashes, so that filters taken over from it
 * answer as it did (rbloom.c).
 */
#include "internal.h"

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

/* ---- RedisBloom's key hashes (MurmurHash2 and MurmurHash64A, Austin
 * Appleby's public-domain functions, as RedisBloom calls them) ---- */

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t bki_murmur64a(const unsigned char *s, size_t n, uint64_t seed)
{
    const uint64_t m = UINT64_C(0xc6a4a7935bd1e995);
    uint64_t h = seed ^ ((uint64_t)n * m);
    size_t blocks = n / 8;
    for (size_t i = 0; i < blocks; i++) {
        uint64_t k = load_le64(s + 8 * i);
        k *= m;
        k ^= k >> 47;
        k *= m;
        h ^= k;
        h *= m;
    }
    const unsigned char *tail = s + 8 * blocks;
    size_t rest = n & 7;
    if (rest) {
        for (size_t i = rest; i-- > 0;)
            h ^= (uint64_t)tail[i] << (8 * i);
        h *= m;
    }
    h ^= h >> 47;
    h *= m;
    h ^= h >> 47;
    return h;
}

uint32_t bki_murmur2(const unsigned char *s, size_t n, uint32_t seed)
{
    const uint32_t m = 0x5bd1e995u;
    /* RedisBloom passes the length as a C int; keys are far below 2^31. */
    uint32_t h = seed ^ (uint32_t)n;
    size_t blocks = n / 4;
    for (size_t i = 0; i < blocks; i++) {
        uint32_t k = load_le32(s + 4 * i);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    const unsigned char *tail = s + 4 * blocks;
    size_t rest = n & 3;
    if (rest) {
        for (size_t i = rest; i-- > 0;)
            h ^= (uint32_t)tail[i] << (8 * i);
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

/* RedisBloom's pair (a, b): a with its fixed seed, b seeded with a; probe
 * i of a link is a + i * b taken mod the link's size (rbloom.c). */
static bk_hash_t redisbloom_pair(bk_hash_id_t id, const unsigned char *s, size_t n)
{
    bk_hash_t h;
    if (id == BK_HASH_MURMUR64A) {
        h.lo = bki_murmur64a(s, n, UINT64_C(0xc6a4a7935bd1e995));
        h.hi = bki_murmur64a(s, n, h.lo);
    } else {
        uint32_t a = bki_murmur2(s, n, 0x9747b28cu);
        h.lo = a;
        h.hi = bki_murmur2(s, n, a);
    }
    return h;
}

uint64_t bki_classic_hash(bk_hash_id_t id, const unsigned char *s, size_t n)
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
    case BK_HASH_MURMUR64A:
    case BK_HASH_MURMUR2: return redisbloom_pair(id, s, n).lo;
    default: return 0;
    }
}

bk_hash_t bki_classic_key_hash(bk_hash_id_t id, uint64_t seed, const void *key, size_t len)
{
    /* Seeded spread of a classic hash: both halves are bijections of the
     * classic value, so equal classic hashes stay equal (as they must) and
     * different ones land independently. */
    bk_hash_t h;
    static const unsigned char empty[1];
    /* RedisBloom's pairs are used as they are: its filters' bits depend on
     * both values, and they ignore the seed as RedisBloom does. */
    if (id == BK_HASH_MURMUR64A || id == BK_HASH_MURMUR2)
        return redisbloom_pair(id, key ? key : empty, len);
    uint64_t v = bki_classic_hash(id, key ? key : empty, len);
    h.hi = bki_mix64(v ^ seed);
    h.lo = bki_mix64(h.hi ^ UINT64_C(0x9E3779B97F4A7C15) ^ (seed << 1));
    return h;
}

