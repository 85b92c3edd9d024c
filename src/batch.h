/*
 * The batch pipeline, written once and instantiated per probe.
 *
 * Batches exist for large filters: one lookup there is one cache miss
 * (~80-100 ns), but the memory system can serve ten or more misses at once.
 * The pipeline runs over a ring of BKI_BATCH_AHEAD pending keys: the ring is
 * primed with the first keys (hashed, their memory requested), then each
 * step takes key i out of its slot, puts key i + BKI_BATCH_AHEAD in (hashed,
 * memory requested) and probes key i. Unlike hashing and probing fixed
 * groups, the memory system never drains at a group boundary. It also
 * requests the bytes of the key 2 * BKI_BATCH_AHEAD ahead: with the memory
 * system busy with the filter's lines, long keys such as URLs otherwise
 * arrive late for the hash (on a 272 MB blocked filter this took batched
 * 66-byte URL lookups from about 38 to 31 ns; 8-byte keys are unchanged).
 * Probes run in array order, so results are those of the one-at-a-time
 * calls (a key repeated within a batch is new only the first time;
 * prefetching a line an earlier key of the ring will still write is
 * harmless). A payload small enough to stay in the caches gains nothing
 * from this and is probed directly.
 *
 * An instantiation names a pending type P and three operations:
 *   P    locate(f, bk_hash_t h)   where key h's probe will look
 *   void prefetch(f, P p)         requests that memory
 *   bool probe(f, P p) / put(f, P p)   the lookup / the add
 * array.c instantiates it for every kind through the kind table; blocked.c
 * once more per instruction set, so the default kind's hot loop has the
 * hash and the probe inlined instead of called through the table.
 */
#ifndef BLOOMKIT_BATCH_H
#define BLOOMKIT_BATCH_H

#include "keyhash.h"

/* How far ahead of the probe keys are hashed and their memory requested.
 * Memory latency on a loaded server can reach several hundred ns; on a
 * 272 MB blocked filter 32 measured about 10% faster than 16, and 64 no
 * faster than 32. A power of two (the ring is indexed by mask). */
#define BKI_BATCH_AHEAD 32
#define BKI_BATCH_PIPELINE_MIN_BYTES (UINT64_C(1) << 20)

#define BKI_BATCH_HASH(f, key) bki_key_hash((f)->hash, (f)->seed, (key).ptr, (key).len)

/* Fills the ring with the first keys, their memory requested. */
#define BKI_BATCH_PRIME(locate, prefetch, f, keys, n, ring)                              \
    for (size_t j_ = 0; j_ < (n) && j_ < BKI_BATCH_AHEAD; j_++) {                        \
        (ring)[j_] = locate(f, BKI_BATCH_HASH(f, (keys)[j_]));                           \
        prefetch(f, (ring)[j_]);                                                         \
    }

/* One step of the ring: returns key i's pending entry and refills its slot
 * with key i + BKI_BATCH_AHEAD's. */
#define BKI_BATCH_STEP(P, locate, prefetch, f, keys, n, ring, i, out_p)                  \
    do {                                                                                \
        if ((i) + 2 * BKI_BATCH_AHEAD < (n))                                            \
            __builtin_prefetch((keys)[(i) + 2 * BKI_BATCH_AHEAD].ptr);                  \
        out_p = (ring)[(i) & (BKI_BATCH_AHEAD - 1)];                                    \
        if ((i) + BKI_BATCH_AHEAD < (n)) {                                              \
            P next_ = locate(f, BKI_BATCH_HASH(f, (keys)[(i) + BKI_BATCH_AHEAD]));      \
            prefetch(f, next_);                                                         \
            (ring)[(i) & (BKI_BATCH_AHEAD - 1)] = next_;                                \
        }                                                                               \
    } while (0)

/* Defines `static size_t name(f, keys, n, out)`: the hits among n keys. */
#define BKI_DEFINE_CONTAINS_BATCH(name, attr, P, locate, prefetch, probe)                   \
    attr static size_t name(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out) \
    {                                                                                       \
        size_t hits = 0;                                                                    \
        if (f->nbytes < BKI_BATCH_PIPELINE_MIN_BYTES) {                                     \
            for (size_t i = 0; i < n; i++) {                                                \
                bool hit = probe(f, locate(f, BKI_BATCH_HASH(f, keys[i])));                 \
                out[i] = hit;                                                               \
                hits += hit;                                                                \
            }                                                                               \
            return hits;                                                                    \
        }                                                                                   \
        P ring[BKI_BATCH_AHEAD];                                                            \
        BKI_BATCH_PRIME(locate, prefetch, f, keys, n, ring);                                \
        for (size_t i = 0; i < n; i++) {                                                    \
            P p;                                                                            \
            BKI_BATCH_STEP(P, locate, prefetch, f, keys, n, ring, i, p);                    \
            bool hit = probe(f, p);                                                         \
            out[i] = hit;                                                                   \
            hits += hit;                                                                    \
        }                                                                                   \
        return hits;                                                                        \
    }

/* Defines `static uint64_t name(f, keys, n, was_new)`: adds n keys in array
 * order (was_new may be NULL); returns the number of new keys. */
#define BKI_DEFINE_ADD_BATCH(name, attr, P, locate, prefetch, put)                            \
    attr static uint64_t name(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new) \
    {                                                                                         \
        uint64_t fresh = 0;                                                                   \
        if (f->nbytes < BKI_BATCH_PIPELINE_MIN_BYTES) {                                       \
            for (size_t i = 0; i < n; i++) {                                                  \
                bool added = put(f, locate(f, BKI_BATCH_HASH(f, keys[i])));                   \
                if (was_new)                                                                  \
                    was_new[i] = added;                                                       \
                fresh += added;                                                               \
            }                                                                                 \
            return fresh;                                                                     \
        }                                                                                     \
        P ring[BKI_BATCH_AHEAD];                                                              \
        BKI_BATCH_PRIME(locate, prefetch, f, keys, n, ring);                                  \
        for (size_t i = 0; i < n; i++) {                                                      \
            P p;                                                                              \
            BKI_BATCH_STEP(P, locate, prefetch, f, keys, n, ring, i, p);                      \
            bool added = put(f, p);                                                           \
            if (was_new)                                                                      \
                was_new[i] = added;                                                           \
            fresh += added;                                                                   \
        }                                                                                     \
        return fresh;                                                                         \
    }

#endif /* BLOOMKIT_BATCH_H */
