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
    uint64_t v = bki_classic_hash(id, key ? key : empty, len);
    h.hi = bki_mix64(v ^ seed);
    h.lo = bki_mix64(h.hi ^ UINT64_C(0x9E3779B97F4A7C15) ^ (seed << 1));
    return h;
}

