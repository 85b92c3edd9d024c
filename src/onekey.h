/*
 * The calls a kind with its own paths per instruction set defines (blocked
 * and blocked2 in blocked.c, split in split.c), written once here:
 *  - one key per call: the functions bk_filter_add, bk_filter_contains and
 *    bk_filter_contains_hash reach through f->add_key, f->contains_key and
 *    f->contains_hash, over a kind's probe(f, lo, hi) and put(f, lo, hi);
 *  - batches: the pipeline of batch.h instantiated for the scalar and the
 *    AVX2 probe, and the four bki_<kind>_*_batch entry points that pick one
 *    (BKI_DEFINE_KIND_BATCHES, at the end).
 *
 * Why they exist: a program that adds or looks up one key at a time in a
 * large filter waits for one cache miss per key; the CPU overlaps the
 * misses of consecutive calls only as far as its instruction window
 * reaches, so every instruction, call and dependent branch a call spends
 * cuts how many misses are in flight. Through the generic path (hash call,
 * kind dispatch, probe call, items branch) a 100M-key blocked lookup took
 * about 1.7x as long as with these.
 */
#ifndef BLOOMKIT_ONEKEY_H
#define BLOOMKIT_ONEKEY_H

#include "batch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BKI_HAVE_X86 1
#define USE_AVX2 BKI_LIKELY(bki_simd_level >= BKI_SIMD_AVX2)
#else
#define USE_AVX2 0
#endif

/* An add's bookkeeping: a new key counts in f's items (without a branch:
 * which way it would go is known only when the key's line arrives) and is
 * reported through was_new when the caller asked. The count is a plain +=
 * (internal.h says why that is safe): the compiler then adds the probe's
 * carry flag to memory in one instruction, where the atomic load and store
 * took three (one-key adds in cache 1.16-1.18x a split-block filter's time
 * instead of 1.22-1.24x, in a harness alternating the two). */
static inline bk_status_t count_added(bk_filter_t *f, bool added, bool *was_new)
{
    f->items += added;
    if (was_new)
        *was_new = added;
    return BK_OK;
}

/* The one-key calls of one kind on one instruction set, with probe(f, lo,
 * hi) and put(f, lo, hi) above: name##_contains_other and name##_add_other
 * for any filter and key (the general key hash), and for the two XXH3
 * hashes, name##_{add,contains}_xxh3 (BK_HASH_XXH3) and
 * name##_{add,contains}_mix8 (BK_HASH_XXH3_MIX8, the default), in which an
 * 8-byte key (an integer id, the common one-key call) is hashed and probed
 * in the entry function itself with its seed's part precomputed in
 * f->key8_secret; that function then needs no stack frame, and other keys go
 * on to the _other function by a tail call; and name##_{add,contains}_u64_
 * {mix8,xxh3}, the same with the key given as a 64-bit integer
 * (bk_filter_add_u64, bk_filter_contains_u64), paired in name##_u64_hname
 * for f->u64. Those check that the filter's bound byte call is their
 * sibling (a paged file's and a read-only mapping's adds are bound over
 * it) and otherwise pass the key's 8 little-endian bytes to the bound
 * call. Reached through one pointer, they take no jump of their own: at
 * 100M keys each jump between the caller and the probe cost one-key adds
 * about 2 ns (docs/BENCHMARKS.md, "The caller's frame"). A frame's saves
 * and restores are loads and stores, and in a loop of one-key calls on a large filter
 * those count like instructions: each holds its place in the CPU's queues
 * until the call's cache miss is served, so the fewer a call makes, the
 * more calls' misses overlap (measured: a frame alone cost one-key adds
 * 10-20%). */
#define DEFINE_KEY8_CALLS(name, hname, attr, probe, put, hash8)                                    \
    attr static bool name##_contains_##hname(const bk_filter_t *f, const void *key, size_t len)   \
    {                                                                                              \
        if (BKI_UNLIKELY(len != 8))                                                                \
            return name##_contains_other(f, key, len);                                             \
        XXH128_hash_t r = hash8(bki_key8_le(key), f->key8_secret);                                 \
        return probe(f, r.low64, r.high64);                                                        \
    }                                                                                              \
    attr static bk_status_t name##_add_##hname(bk_filter_t *f, const void *key, size_t len,        \
                                               bool *was_new)                                      \
    {                                                                                              \
        if (BKI_UNLIKELY(len != 8))                                                                \
            return name##_add_other(f, key, len, was_new);                                         \
        XXH128_hash_t r = hash8(bki_key8_le(key), f->key8_secret);                                 \
        return count_added(f, put(f, r.low64, r.high64), was_new);                                 \
    }                                                                                              \
    attr static bool name##_contains_u64_##hname(const bk_filter_t *f, uint64_t key)               \
    {                                                                                              \
        if (BKI_UNLIKELY(f->contains_key != name##_contains_##hname))                              \
            return bki_u64_contains_bytes(f, key);                                                 \
        XXH128_hash_t r = hash8(key, f->key8_secret);                                              \
        return probe(f, r.low64, r.high64);                                                        \
    }                                                                                              \
    attr static bk_status_t name##_add_u64_##hname(bk_filter_t *f, uint64_t key, bool *was_new)    \
    {                                                                                              \
        if (BKI_UNLIKELY(f->add_key != name##_add_##hname))                                        \
            return bki_u64_add_bytes(f, key, was_new);                                             \
        XXH128_hash_t r = hash8(key, f->key8_secret);                                              \
        return count_added(f, put(f, r.low64, r.high64), was_new);                                 \
    }                                                                                              \
    static const bki_u64_calls_t name##_u64_##hname = {name##_add_u64_##hname,                     \
                                                       name##_contains_u64_##hname};

#define DEFINE_KEY_CALLS(name, attr, probe, put)                                                   \
    __attribute__((noinline))                                                                      \
    attr static bool name##_contains_other(const bk_filter_t *f, const void *key, size_t len)      \
    {                                                                                              \
        bk_hash_t h = bki_key_hash(f->hash, f->seed, key, len);                                    \
        return probe(f, h.lo, h.hi);                                                               \
    }                                                                                              \
    __attribute__((noinline)) attr static bk_status_t name##_add_other(                            \
        bk_filter_t *f, const void *key, size_t len, bool *was_new)                                \
    {                                                                                              \
        bk_hash_t h = bki_key_hash(f->hash, f->seed, key, len);                                    \
        return count_added(f, put(f, h.lo, h.hi), was_new);                                        \
    }                                                                                              \
    DEFINE_KEY8_CALLS(name, xxh3, attr, probe, put, bki_xxh3_key8)                                 \
    DEFINE_KEY8_CALLS(name, mix8, attr, probe, put, bki_mix8)

/* bk_filter_contains_hash of one kind on one instruction set. */
#define DEFINE_HASH_CALLS(name, attr, probe)                                                       \
    attr static bool name##_contains_hash(const bk_filter_t *f, bk_hash_t h)                       \
    {                                                                                              \
        return probe(f, h.lo, h.hi);                                                               \
    }

/* The calls of one kind (named by its prefix) on the instruction set
 * cpu.c chose, for f's hash id; bki_array_bind (array.c) has set
 * f->key8_secret with bki_key8_secret (keyhash.h). */
#define BIND_ON(f, kind, isa)                                                                      \
    do {                                                                                           \
        if ((f)->hash == BK_HASH_XXH3_MIX8) {                                                      \
            (f)->add_key = kind##_##isa##_add_mix8;                                                \
            (f)->contains_key = kind##_##isa##_contains_mix8;                                      \
            (f)->u64 = &kind##_##isa##_u64_mix8;                                                   \
        } else if ((f)->hash == BK_HASH_XXH3) {                                                    \
            (f)->add_key = kind##_##isa##_add_xxh3;                                                \
            (f)->contains_key = kind##_##isa##_contains_xxh3;                                      \
            (f)->u64 = &kind##_##isa##_u64_xxh3;                                                   \
        } else {                                                                                   \
            (f)->add_key = kind##_##isa##_add_other;                                               \
            (f)->contains_key = kind##_##isa##_contains_other;                                     \
            (f)->u64 = NULL;                                                                       \
        }                                                                                          \
        (f)->contains_hash = kind##_##isa##_contains_hash;                                         \
    } while (0)
#ifdef BKI_HAVE_X86
#define BIND(f, kind)                                                                              \
    do {                                                                                           \
        if (USE_AVX2)                                                                              \
            BIND_ON(f, kind, avx2);                                                                \
        else                                                                                       \
            BIND_ON(f, kind, scalar);                                                              \
    } while (0)
#else
#define BIND(f, kind) BIND_ON(f, kind, scalar)
#endif

/* The batch calls of one kind: bki_##kind##_add_batch, _contains_batch,
 * _add_hash_batch and _contains_hash_batch (declared in internal.h), each
 * the pipeline with the scalar probe (PUT_S, PROBE_S) or, where cpu.c chose
 * AVX2, the AVX2 one (PUT_A, PROBE_A); P, locate and prefetch as batch.h
 * describes them. */
#define BKI_DEFINE_KIND_BATCHES_ON(kind, isa, attr, P, locate, prefetch, PUT, PROBE)              \
    BKI_DEFINE_ADD_BATCH(kind##_add_batch_##isa, attr, P, locate, prefetch, PUT)                   \
    BKI_DEFINE_CONTAINS_BATCH(kind##_contains_batch_##isa, attr, P, locate, prefetch, PROBE)       \
    BKI_DEFINE_ADD_HASH_BATCH(kind##_add_hash_batch_##isa, attr, P, locate, prefetch, PUT)         \
    BKI_DEFINE_CONTAINS_HASH_BATCH(kind##_contains_hash_batch_##isa, attr, P, locate, prefetch,    \
                                   PROBE)

#ifdef BKI_HAVE_X86
#define BKI_PICK_ISA(kind, call, ...)                                                              \
    (USE_AVX2 ? kind##_##call##_avx2(__VA_ARGS__) : kind##_##call##_scalar(__VA_ARGS__))
#define BKI_DEFINE_AVX2_BATCHES(kind, P, locate, prefetch, PUT_A, PROBE_A)                         \
    BKI_DEFINE_KIND_BATCHES_ON(kind, avx2, __attribute__((target("avx2"))), P, locate, prefetch,   \
                               PUT_A, PROBE_A)
#else
#define BKI_PICK_ISA(kind, call, ...) kind##_##call##_scalar(__VA_ARGS__)
#define BKI_DEFINE_AVX2_BATCHES(kind, P, locate, prefetch, PUT_A, PROBE_A)
#endif

#define BKI_DEFINE_KIND_BATCHES(kind, P, locate, prefetch, PUT_S, PROBE_S, PUT_A, PROBE_A)         \
    BKI_DEFINE_KIND_BATCHES_ON(kind, scalar, , P, locate, prefetch, PUT_S, PROBE_S)                \
    BKI_DEFINE_AVX2_BATCHES(kind, P, locate, prefetch, PUT_A, PROBE_A)                             \
    uint64_t bki_##kind##_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new) \
    {                                                                                              \
        return BKI_PICK_ISA(kind, add_batch, f, keys, n, was_new);                                 \
    }                                                                                              \
    size_t bki_##kind##_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n,       \
                                       bool *out)                                                  \
    {                                                                                              \
        return BKI_PICK_ISA(kind, contains_batch, f, keys, n, out);                                \
    }                                                                                              \
    uint64_t bki_##kind##_add_hash_batch(bk_filter_t *f, const bk_hash_t *hashes, size_t n,        \
                                         bool *was_new)                                            \
    {                                                                                              \
        return BKI_PICK_ISA(kind, add_hash_batch, f, hashes, n, was_new);                          \
    }                                                                                              \
    size_t bki_##kind##_contains_hash_batch(const bk_filter_t *f, const bk_hash_t *hashes,         \
                                            size_t n, bool *out)                                   \
    {                                                                                              \
        return BKI_PICK_ISA(kind, contains_hash_batch, f, hashes, n, out);                         \
    }

#endif /* BLOOMKIT_ONEKEY_H */
