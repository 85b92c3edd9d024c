/*
 * Classic Bloom filter: k probes over the whole bit array.
 *
 * The space-optimal kind (m = -n ln p / (ln 2)^2), at the cost of up to k
 * cache misses per lookup once the filter outgrows the caches. Positions come
 * from one 128-bit hash by enhanced double hashing (Dillinger & Manolios,
 * 2004): x = h.hi, y = h.lo; probe i is reduce(x, m), then x += y, y += i.
 * The cubic term that y += i adds keeps probes apart where plain double
 * hashing would repeat a stride. reduce() is multiply-shift, so m need not be
 * a power of two and no division sits on the hot path.
 *
 * The payload is addressed as little-endian 64-bit words (internal.h).
 */
#include "internal.h"

#define FOR_EACH_PROBE(f, h, pos)                                     \
    for (uint64_t x_ = (h).hi, y_ = (h).lo, i_ = 0, pos;              \
         i_ < (f)->k && ((pos = bki_reduce(x_, (f)->cells)), 1);      \
         x_ += y_, y_ += i_, i_++)

bool bki_classic_add(bk_filter_t *f, bk_hash_t h)
{
    uint64_t *w = (uint64_t *)(void *)f->data;
    uint64_t missing = 0;
    FOR_EACH_PROBE(f, h, pos) {
        uint64_t bit = UINT64_C(1) << (pos & 63);
        missing |= ~w[pos >> 6] & bit;
        w[pos >> 6] |= bit;
    }
    return missing != 0;
}

bool bki_classic_add_atomic(bk_filter_t *f, bk_hash_t h)
{
    uint64_t *w = (uint64_t *)(void *)f->data;
    uint64_t missing = 0;
    FOR_EACH_PROBE(f, h, pos) {
        uint64_t bit = UINT64_C(1) << (pos & 63);
        if (__atomic_load_n(&w[pos >> 6], __ATOMIC_RELAXED) & bit)
            continue;
        missing |= ~__atomic_fetch_or(&w[pos >> 6], bit, __ATOMIC_RELAXED) & bit;
    }
    return missing != 0;
}

bool bki_classic_contains(const bk_filter_t *f, bk_hash_t h)
{
    const uint64_t *w = (const uint64_t *)(const void *)f->data;
    FOR_EACH_PROBE(f, h, pos) {
        if (!(w[pos >> 6] & (UINT64_C(1) << (pos & 63))))
            return false;
    }
    return true;
}

void bki_classic_prefetch(const bk_filter_t *f, bk_hash_t h)
{
    const uint64_t *w = (const uint64_t *)(const void *)f->data;
    FOR_EACH_PROBE(f, h, pos) {
        __builtin_prefetch(&w[pos >> 6]);
    }
}

static uint32_t classic_reads(const bk_filter_t *f, bk_hash_t h, uint64_t *off)
{
    uint32_t n = 0;
    FOR_EACH_PROBE(f, h, pos) {
        off[n++] = (pos >> 6) * 8;
    }
    return n;
}

/* The kind table's row (kinds.c). */
const bki_kind_ops_t bki_classic_ops = {
    .add = bki_classic_add,
    .contains = bki_classic_contains,
    .prefetch = bki_classic_prefetch,
    .add_atomic = bki_classic_add_atomic,
    .reads = classic_reads,
};
