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

static inline bk_hash_t bki_key_hash(bk_hash_id_t id, uint64_t seed, const void *key,
                                     size_t len)
{
    if (BKI_LIKELY(id == BK_HASH_XXH3 || id == BK_HASH_DEFAULT)) {
        XXH128_hash_t r = XXH3_128bits_withSeed(key ? key : bki_empty_key, len, seed);
        bk_hash_t h = {r.low64, r.high64};
        return h;
    }
    return bki_classic_key_hash(id, seed, key, len);
}

#endif /* BLOOMKIT_KEYHASH_H */
