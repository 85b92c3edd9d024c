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

/* A batch's items become hashes through two macros, so one pipeline serves
 * keys and hashes the caller already has (the pre-hashed batch calls):
 * ITEM_HASH(f, items, i) is item i's hash, ITEM_FETCH(items, i) requests
 * its bytes ahead of the hash. Keys are hashed with the filter's hash and
 * seed; given hashes are used as they are, with nothing to request. */
#define BKI_KEY_HASH(f, keys, i) bki_key_hash((f)->hash, (f)->seed, (keys)[i].ptr, (keys)[i].len)
#define BKI_KEY_FETCH(keys, i) __builtin_prefetch((keys)[i].ptr)
#define BKI_GIVEN_HASH(f, hashes, i) ((void)(f), (hashes)[i])
#define BKI_GIVEN_FETCH(hashes, i) ((void)0)

/* Fills the ring with the first items, their memory requested. */
#define BKI_BATCH_PRIME(ITEM_HASH, locate, prefetch, f, items, n, ring)                            \
    for (size_t j_ = 0; j_ < (n) && j_ < BKI_BATCH_AHEAD; j_++) {                                  \
        (ring)[j_] = locate(f, ITEM_HASH(f, items, j_));                                           \
        prefetch(f, (ring)[j_]);                                                                   \
    }

/* One step of the ring: returns item i's pending entry and refills its slot
 * with item i + BKI_BATCH_AHEAD's. */
#define BKI_BATCH_STEP(P, ITEM_HASH, ITEM_FETCH, locate, prefetch, f, items, n, ring, i, out_p)    \
    do {                                                                                           \
        if ((i) + 2 * BKI_BATCH_AHEAD < (n))                                                       \
            ITEM_FETCH(items, (i) + 2 * BKI_BATCH_AHEAD);                                          \
        out_p = (ring)[(i) & (BKI_BATCH_AHEAD - 1)];                                               \
        if ((i) + BKI_BATCH_AHEAD < (n)) {                                                         \
            P next_ = locate(f, ITEM_HASH(f, items, (i) + BKI_BATCH_AHEAD));                       \
            prefetch(f, next_);                                                                    \
            (ring)[(i) & (BKI_BATCH_AHEAD - 1)] = next_;                                           \
        }                                                                                          \
    } while (0)

/* Defines `static size_t name(f, items, n, out)` over items of type T: the
 * hits among n items. probe and put may be macros that use their pending
 * argument more than once, so it is always a variable here, never the
 * locate() call itself (which would hash the key once per use). */
#define BKI_DEFINE_CONTAINS_BATCH_OF(name, attr, T, ITEM_HASH, ITEM_FETCH, P, locate, prefetch,    \
                                     probe)                                                        \
    attr static size_t name(const bk_filter_t *f, const T *items, size_t n, bool *out)             \
    {                                                                                              \
        size_t hits = 0;                                                                           \
        if (f->nbytes < BKI_BATCH_PIPELINE_MIN_BYTES) {                                            \
            for (size_t i = 0; i < n; i++) {                                                       \
                P p_ = locate(f, ITEM_HASH(f, items, i));                                          \
                bool hit = probe(f, p_);                                                           \
                out[i] = hit;                                                                      \
                hits += hit;                                                                       \
            }                                                                                      \
            return hits;                                                                           \
        }                                                                                          \
        P ring[BKI_BATCH_AHEAD];                                                                   \
        BKI_BATCH_PRIME(ITEM_HASH, locate, prefetch, f, items, n, ring);                           \
        for (size_t i = 0; i < n; i++) {                                                           \
            P p;                                                                                   \
            BKI_BATCH_STEP(P, ITEM_HASH, ITEM_FETCH, locate, prefetch, f, items, n, ring, i, p);   \
            bool hit = probe(f, p);                                                                \
            out[i] = hit;                                                                          \
            hits += hit;                                                                           \
        }                                                                                          \
        return hits;                                                                               \
    }

/* Defines `static uint64_t name(f, items, n, was_new)`: adds n items in
 * array order (was_new may be NULL); returns the number of new ones. */
#define BKI_DEFINE_ADD_BATCH_OF(name, attr, T, ITEM_HASH, ITEM_FETCH, P, locate, prefetch, put)    \
    attr static uint64_t name(bk_filter_t *f, const T *items, size_t n, bool *was_new)             \
    {                                                                                              \
        uint64_t fresh = 0;                                                                        \
        if (f->nbytes < BKI_BATCH_PIPELINE_MIN_BYTES) {                                            \
            for (size_t i = 0; i < n; i++) {                                                       \
                P p_ = locate(f, ITEM_HASH(f, items, i));                                          \
                bool added = put(f, p_);                                                           \
                if (was_new)                                                                       \
                    was_new[i] = added;                                                            \
                fresh += added;                                                                    \
            }                                                                                      \
            return fresh;                                                                          \
        }                                                                                          \
        P ring[BKI_BATCH_AHEAD];                                                                   \
        BKI_BATCH_PRIME(ITEM_HASH, locate, prefetch, f, items, n, ring);                           \
        for (size_t i = 0; i < n; i++) {                                                           \
            P p;                                                                                   \
            BKI_BATCH_STEP(P, ITEM_HASH, ITEM_FETCH, locate, prefetch, f, items, n, ring, i, p);   \
            bool added = put(f, p);                                                                \
            if (was_new)                                                                           \
                was_new[i] = added;                                                                \
            fresh += added;                                                                        \
        }                                                                                          \
        return fresh;                                                                              \
    }

/* The key and the pre-hashed instances of each. */
#define BKI_DEFINE_CONTAINS_BATCH(name, attr, P, locate, prefetch, probe)                          \
    BKI_DEFINE_CONTAINS_BATCH_OF(name, attr, bk_key_t, BKI_KEY_HASH, BKI_KEY_FETCH, P, locate,     \
                                 prefetch, probe)
#define BKI_DEFINE_CONTAINS_HASH_BATCH(name, attr, P, locate, prefetch, probe)                     \
    BKI_DEFINE_CONTAINS_BATCH_OF(name, attr, bk_hash_t, BKI_GIVEN_HASH, BKI_GIVEN_FETCH, P,        \
                                 locate, prefetch, probe)
#define BKI_DEFINE_ADD_BATCH(name, attr, P, locate, prefetch, put)                                 \
    BKI_DEFINE_ADD_BATCH_OF(name, attr, bk_key_t, BKI_KEY_HASH, BKI_KEY_FETCH, P, locate,          \
                            prefetch, put)
#define BKI_DEFINE_ADD_HASH_BATCH(name, attr, P, locate, prefetch, put)                            \
    BKI_DEFINE_ADD_BATCH_OF(name, attr, bk_hash_t, BKI_GIVEN_HASH, BKI_GIVEN_FETCH, P, locate,     \
                            prefetch, put)

#endif /* BLOOMKIT_BATCH_H */
