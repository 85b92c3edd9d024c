/*
 * A key's 128-bit hash, inline: the one place the XXH3 key hash is written.
 * hash.c builds bk_hash_key() on it; the batch pipeline (batch.h) includes
 * it so that the default hash inlines into its loop. Including xxhash.h
 * with XXH_INLINE_ALL keeps the library free of a run-time libxxhash.
 */
#ifndef BLOOMKIT_KEYHASH_H
#define BLOOMKIT_KEYHASH_H

#include "internal.h"

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

static inline bk_hash_t bki_key_hash(bk_hash_id_t id, uint64_t seed, const void *key,
                                     size_t len)
{
    if (BKI_LIKELY(id == BK_HASH_XXH3 || id == BK_HASH_DEFAULT)) {
        XXH128_hash_t r = bki_xxh3_key(key, len, seed);
        bk_hash_t h = {r.low64, r.high64};
        return h;
    }
    return bki_classic_key_hash(id, seed, key, len);
}

#endif /* BLOOMKIT_KEYHASH_H */
