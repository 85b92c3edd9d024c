/*
 * A key's 128-bit hash, inline: the one place the XXH3 key hash and the
 * default's 8-byte mixer are written.
 * hash.c builds bk_hash_key() on it; the batch pipeline (batch.h) includes
 * it so that the default hash inlines into its loop. Including xxhash.h
 * with XXH_INLINE_ALL keeps the library free of a run-time libxxhash.
 */
#ifndef BLOOMKIT_KEYHASH_H
#define BLOOMKIT_KEYHASH_H

#include "internal.h"

#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* A NULL key of length 0 hashes like any empty key. */
static const unsigned char bki_empty_key[1];

/* XXH3-128 of a key. An 8-byte key (an integer id: the usual one-key call
 * writes it to a local and passes its address) is hashed with the length
 * fixed, so it is read with one 8-byte load. XXH3's 4-to-8-byte path reads
 * any such key as two 4-byte halves, and the upper half, a load inside the
 * caller's just-made store but not at its start, was measured to wait for
 * that store to reach the cache: in a loop of one-key adds to a filter
 * larger than the caches, the store retires only after the previous call's
 * cache miss, so consecutive calls stopped overlapping (50M keys: adds 1.7-
 * 2.1x the time of a split-block filter hashing with its length known,
 * 1.1-1.4x with this). The result is XXH3's either way. */
static inline XXH128_hash_t bki_xxh3_key(const void *key, size_t len, uint64_t seed)
{
    if (len == 8)
        return XXH3_128bits_withSeed(key, 8, seed);
    return XXH3_128bits_withSeed(key ? key : bki_empty_key, len, seed);
}

/* XXH3-128 of an 8-byte key, with its seed's part done once per filter.
 * XXH3's 4-to-8-byte path (xxhash.h, XXH3_len_4to8_128b) xors the key, read
 * little-endian, with a "bitflip" that depends only on the seed: two words
 * of XXH3's default secret xored together, plus the seed with its low half
 * byte-swapped into the high half. bki_xxh3_key8_flip computes that once
 * (filters keep it in key8_secret when their one-key calls are bound), and
 * bki_xxh3_key8 does the rest: a one-key call then spends its instructions
 * on the key alone, and in a loop of calls on a large filter fewer
 * instructions per call means more calls' cache misses in flight. The
 * result is XXH3_128bits_withSeed's, bit for bit (test_hash.c holds the two
 * together over random keys and seeds). */
#define BKI_XXH3_SECRET_FLIP_4TO8 UINT64_C(0xc4f023344dc994ac) /* secret[16..24) ^ secret[24..32) */

static inline uint64_t bki_xxh3_key8_flip(uint64_t seed)
{
    uint64_t swapped = __builtin_bswap32((uint32_t)seed);
    return BKI_XXH3_SECRET_FLIP_4TO8 + (seed ^ (swapped << 32));
}

/* The 8 bytes at key as XXH3 reads them (little-endian), in one load. */
static inline uint64_t bki_key8_le(const void *key)
{
    uint64_t v;
    memcpy(&v, key, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The 8 bytes whose bki_key8_le is v: a 64-bit key as the byte calls take
 * it (bk_filter_add_u64 and the others are those calls on these bytes). */
static inline void bki_key8_put_le(uint8_t b[8], uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(b, &v, 8);
}

/* A 64-bit key's 8 little-endian bytes through f's bound byte calls: the
 * path of bk_filter_add_u64 and bk_filter_contains_u64 for a filter
 * without calls of its kind's own for such keys, or whose bound byte call
 * is not their sibling (onekey.h). A function of its own, so that only
 * this path has the frame that passing the bytes' address takes. */
__attribute__((noinline, unused)) static bool bki_u64_contains_bytes(const bk_filter_t *f,
                                                                     uint64_t key)
{
    uint8_t b[8];
    bki_key8_put_le(b, key);
    return f->contains_key(f, b, sizeof b);
}

__attribute__((noinline, unused)) static bk_status_t bki_u64_add_bytes(bk_filter_t *f,
                                                                       uint64_t key,
                                                                       bool *was_new)
{
    uint8_t b[8];
    bki_key8_put_le(b, key);
    return f->add_key(f, b, sizeof b, was_new);
}

static inline XXH128_hash_t bki_xxh3_key8(uint64_t key_le, uint64_t flip)
{
    const uint64_t prime64_1 = UINT64_C(0x9E3779B185EBCA87), mx1 = UINT64_C(0x165667919E3779F9),
                   mx2 = UINT64_C(0x9FB21C651E98DF25);
    /* the length, 8, enters the multiplier as len << 2 */
    XXH128_hash_t m = XXH_mult64to128(key_le ^ flip, prime64_1 + (8u << 2));
    uint64_t lo = m.low64, hi = m.high64;
    hi += lo << 1;
    lo ^= hi >> 3;
    lo ^= lo >> 35;
    lo *= mx2;
    lo ^= lo >> 28;
    hi ^= hi >> 37; /* XXH3's avalanche */
    hi *= mx1;
    hi ^= hi >> 32;
    XXH128_hash_t r = {lo, hi};
    return r;
}

/* The default hash (BK_HASH_XXH3_MIX8) of an 8-byte key: the key, read
 * little-endian, xored with the filter's key8 secret (its seed xored with a
 * constant, so that seed 0 is no special case), then two rounds of a
 * multiply-fold (the full 128-bit product, its halves xored together):
 *   t = fold((v ^ seed ^ C) * M1),  f = fold(t * M2),  (lo, hi) = (f, f + t).
 * Why not XXH3 for these keys too: XXH3-128's 4-to-8-byte path spends about
 * 26 instructions on a key, this one about 10, and in a loop of one-key calls
 * on a filter larger than the caches every instruction a call spends holds
 * a place in the CPU's window while the call's cache miss is served: fewer
 * instructions, more misses in flight (split one-key lookups on 100M keys
 * about 1.4x as fast as with XXH3). Its quality, measured: every output bit
 * of both halves flips with probability 0.5 +- 0.007 when any one input bit
 * flips (100,000 random keys), and tests/unit/lib/test_hash.c holds every
 * kind's false-positive rate to the one asked for over sequential, strided
 * and random integer keys. A key of any other length gets XXH3-128. */
#define BKI_MIX8_SEED_XOR UINT64_C(0x8ebc6af09c88c6e3)
#define BKI_MIX8_M1 UINT64_C(0xa0761d6478bd642f)
#define BKI_MIX8_M2 UINT64_C(0xe7037ed1a0b428db)

static inline uint64_t bki_mix8_secret(uint64_t seed)
{
    return seed ^ BKI_MIX8_SEED_XOR;
}

static inline uint64_t bki_mum_fold(uint64_t a, uint64_t b)
{
    XXH128_hash_t p = XXH_mult64to128(a, b);
    return p.low64 ^ p.high64;
}

static inline XXH128_hash_t bki_mix8(uint64_t key_le, uint64_t secret)
{
    uint64_t t = bki_mum_fold(key_le ^ secret, BKI_MIX8_M1);
    uint64_t f = bki_mum_fold(t, BKI_MIX8_M2);
    XXH128_hash_t r = {f, f + t};
    return r;
}

/* The value a filter keeps in key8_secret for its one-key calls on 8-byte
 * keys (onekey.h): the seed's part of the hash, computed once. */
static inline uint64_t bki_key8_secret(bk_hash_id_t id, uint64_t seed)
{
    return id == BK_HASH_XXH3_MIX8 ? bki_mix8_secret(seed) : bki_xxh3_key8_flip(seed);
}

/* The key hash of a filter's hash id: XXH3-128 (BK_HASH_XXH3), the default
 * (BK_HASH_XXH3_MIX8, BK_HASH_DEFAULT: bki_mix8 for 8-byte keys, XXH3-128
 * for the rest) or a classic hash. */
static inline bk_hash_t bki_key_hash(bk_hash_id_t id, uint64_t seed, const void *key,
                                     size_t len)
{
    if (BKI_LIKELY(id == BK_HASH_XXH3_MIX8 || id == BK_HASH_DEFAULT) && len == 8) {
        XXH128_hash_t r = bki_mix8(bki_key8_le(key), bki_mix8_secret(seed));
        bk_hash_t h = {r.low64, r.high64};
        return h;
    }
    if (BKI_LIKELY(id == BK_HASH_XXH3_MIX8 || id == BK_HASH_XXH3 || id == BK_HASH_DEFAULT)) {
        XXH128_hash_t r = bki_xxh3_key(key, len, seed);
        bk_hash_t h = {r.low64, r.high64};
        return h;
    }
    return bki_classic_key_hash(id, seed, key, len);
}

#endif /* BLOOMKIT_KEYHASH_H */
