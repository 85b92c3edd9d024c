/*
 * Precise Bloom filter: the classic layout (k probes over one bit array)
 * with every probe position hashed on its own.
 *
 * The classic kind derives probe i from the key's two hash halves by double
 * hashing, reduced with the top bits of a 64-bit sum (bloom.c). Its FPR
 * has a floor the textbook model does not show: a key whose stride lo is
 * close to a fraction a/b of 2^64 with small b sends its k probes to only
 * about b distinct bits, and such keys are false positives far more often.
 * Measured (300 filters of each size, tests in test_precise.c keep the
 * comparison): n = 1000 at p = 1e-5 gives 1.8e-5; n = 128 at p = 1e-4
 * gives 1.8e-4; n = 1 at p = 1e-4 gives 2.4e-3. Large filters at
 * moderate p do not notice, so the classic kind keeps its frozen layout.
 *
 * Here probe i sets bit reduce(mix(hi + mix(lo + i * G)), m), with mix the
 * splitmix64 finalizer and G = 0x9E3779B97F4A7C15: each position depends
 * on all 128 bits of the key's hash and on i through two full-avalanche
 * bijections, so probes behave as independent and the exact classic model
 * (1 - (1 - 1/m)^(kn))^k holds at any size and any error down to what 128
 * bits of hash can tell apart. Two mixes per probe cost a few ns; a lookup
 * of an absent key stops at its first clear bit (two probes on average in
 * a half-full filter).
 *
 * Scalable chains use this kind for their sub-filters with errors below
 * 1e-7 (scalable.c): deep chains need per-sub-filter errors of 1e-10 and
 * far below, where both older kinds overstate what they deliver.
 */
#include "internal.h"

#define PRECISE_STEP UINT64_C(0x9E3779B97F4A7C15)

/* Probe i's value before reduction: the same in every precise filter, so
 * a chain computes a key's first few once for all its sub-filters. */
static inline uint64_t probe_value(bk_hash_t h, uint64_t i)
{
    return bki_mix64(h.hi + bki_mix64(h.lo + i * PRECISE_STEP));
}

static inline uint64_t probe_pos(bk_hash_t h, uint64_t i, uint64_t m)
{
    return bki_reduce(probe_value(h, i), m);
}

void bki_precise_values(bk_hash_t h, uint64_t u[BKI_PRECISE_VALUES])
{
    for (uint32_t i = 0; i < BKI_PRECISE_VALUES; i++)
        u[i] = probe_value(h, i);
}

bool bki_precise_contains_values(const bk_filter_t *f, bk_hash_t h,
                                 const uint64_t u[BKI_PRECISE_VALUES])
{
    const uint64_t *w = (const uint64_t *)(const void *)f->data;
    for (uint64_t i = 0; i < f->k; i++) {
        uint64_t pos = bki_reduce(i < BKI_PRECISE_VALUES ? u[i] : probe_value(h, i), f->cells);
        if (!(w[pos >> 6] & (UINT64_C(1) << (pos & 63))))
            return false;
    }
    return true;
}

bool bki_precise_add(bk_filter_t *f, bk_hash_t h)
{
    uint64_t *w = (uint64_t *)(void *)f->data;
    uint64_t missing = 0;
    for (uint64_t i = 0; i < f->k; i++) {
        uint64_t pos = probe_pos(h, i, f->cells), bit = UINT64_C(1) << (pos & 63);
        missing |= ~w[pos >> 6] & bit;
        w[pos >> 6] |= bit;
    }
    return missing != 0;
}

bool bki_precise_add_atomic(bk_filter_t *f, bk_hash_t h)
{
    uint64_t *w = (uint64_t *)(void *)f->data;
    uint64_t missing = 0;
    for (uint64_t i = 0; i < f->k; i++) {
        uint64_t pos = probe_pos(h, i, f->cells), bit = UINT64_C(1) << (pos & 63);
        if (__atomic_load_n(&w[pos >> 6], __ATOMIC_RELAXED) & bit)
            continue;
        missing |= ~__atomic_fetch_or(&w[pos >> 6], bit, __ATOMIC_RELAXED) & bit;
    }
    return missing != 0;
}

bool bki_precise_contains(const bk_filter_t *f, bk_hash_t h)
{
    const uint64_t *w = (const uint64_t *)(const void *)f->data;
    for (uint64_t i = 0; i < f->k; i++) {
        uint64_t pos = probe_pos(h, i, f->cells);
        if (!(w[pos >> 6] & (UINT64_C(1) << (pos & 63))))
            return false;
    }
    return true;
}

void bki_precise_prefetch(const bk_filter_t *f, bk_hash_t h)
{
    const uint64_t *w = (const uint64_t *)(const void *)f->data;
    for (uint64_t i = 0; i < f->k; i++)
        __builtin_prefetch(&w[probe_pos(h, i, f->cells) >> 6]);
}

static uint32_t precise_reads(const bk_filter_t *f, bk_hash_t h, uint64_t *off)
{
    for (uint64_t i = 0; i < f->k; i++)
        off[i] = (probe_pos(h, i, f->cells) >> 6) * 8;
    return f->k;
}

/* The kind table's row (kinds.c). */
const bki_kind_ops_t bki_precise_ops = {
    .reads = precise_reads,
    .add = bki_precise_add,
    .contains = bki_precise_contains,
    .prefetch = bki_precise_prefetch,
    .add_atomic = bki_precise_add_atomic,
};
