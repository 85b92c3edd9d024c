/*
 * Dense bitmaps over an integer range [0, n): the exact answer when the keys
 * are integers from a known, not too large range, where a Bloom filter would
 * only give a probable one.
 *
 *  - bk_bitmap: one bit per value. Counting the distinct 8-digit phone
 *    numbers in a file needs 10^8 bits, about 12 MB, however long the file.
 *  - bk_bitmap2: two bits per value, a saturating counter 0 (never seen),
 *    1 (seen once), 2 (seen twice or more). Finding the integers that appear
 *    exactly once among 250 million 32-bit integers needs 2^33 bits (1 GiB).
 *
 * Layout: 64-bit words, value v of a 1-bit map in bit (v & 63) of word
 * v >> 6; value v of a 2-bit map in bits 2(v & 31)..+1 of word v >> 5 (state
 * 3 never occurs). The payload is a whole number of 64-byte lines (the
 * sizes and BKI_BITMAP_MAX_N are layout facts, layout.c) from
 * bki_payload_alloc: zeroed, and for large maps an anonymous MAP_NORESERVE
 * mapping, so a map over 2^40 values (128 GiB of address space) costs only
 * the pages that are actually touched. The bits past n stay zero; counting
 * and iteration mask them anyway, so a payload loaded from elsewhere cannot
 * report values outside [0, n).
 *
 * The expected workload is many single-value updates (set, add) from a
 * stream, then one pass of counting or iteration: the updates touch one word
 * each, the passes go a word at a time (popcount, count-trailing-zeros).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <string.h>
#include <sys/mman.h>

#define LOW_BITS UINT64_C(0x5555555555555555) /* the low bit of every cell */

/* Zeroes a payload. A large anonymous mapping is handed back to the kernel
 * (MADV_DONTNEED makes its pages read as zero again) instead of being
 * written, so clearing a huge, sparsely touched map does not touch it all. */
static void payload_zero(uint64_t *words, uint64_t nbytes, bki_mem_t mem)
{
#ifdef MADV_DONTNEED
    if (mem == BKI_MEM_ANON && madvise(words, (size_t)nbytes, MADV_DONTNEED) == 0)
        return;
#endif
    memset(words, 0, (size_t)nbytes);
}


/* Mask of the valid bits of the last word holding `used_bits` bits
 * (used_bits % 64 of them; all when it is a multiple of 64). */
static uint64_t tail_mask(uint64_t used_bits)
{
    unsigned r = (unsigned)(used_bits & 63);
    return r ? (UINT64_C(1) << r) - 1 : ~UINT64_C(0);
}

/* ------------------------------------------------------------------------ */
/* 1-bit map                                                                 */
/* ------------------------------------------------------------------------ */

bk_status_t bk_bitmap_create(bk_bitmap_t **out, uint64_t n)
{
    if (!out)
        return BK_EINVAL;
    *out = NULL;
    if (n == 0 || n > BKI_BITMAP_MAX_N)
        return BK_EINVAL;
    bk_bitmap_t *b = bki_malloc(sizeof *b);
    if (!b)
        return BK_ENOMEM;
    b->n = n;
    b->nbytes = bki_layout_bytes(BK_KIND_BITMAP, n);
    b->words = (uint64_t *)bki_payload_alloc(b->nbytes, &b->mem);
    if (!b->words) {
        bki_free(b);
        return BK_ENOMEM;
    }
    *out = b;
    return BK_OK;
}

void bk_bitmap_free(bk_bitmap_t *b)
{
    if (!b)
        return;
    bki_payload_free((uint8_t *)b->words, b->nbytes, b->mem);
    bki_free(b);
}

uint64_t bk_bitmap_size(const bk_bitmap_t *b)
{
    return b->n;
}

bool bk_bitmap_set(bk_bitmap_t *b, uint64_t v)
{
    if (BKI_UNLIKELY(v >= b->n))
        return false;
    uint64_t *w = &b->words[v >> 6];
    uint64_t bit = UINT64_C(1) << (v & 63);
    bool was_clear = !(*w & bit);
    *w |= bit;
    return was_clear;
}

bool bk_bitmap_test(const bk_bitmap_t *b, uint64_t v)
{
    if (BKI_UNLIKELY(v >= b->n))
        return false;
    return (b->words[v >> 6] >> (v & 63)) & 1;
}

uint64_t bk_bitmap_count(const bk_bitmap_t *b)
{
    uint64_t full = b->n >> 6, total = 0;
    const uint64_t *w = b->words;
    for (uint64_t i = 0; i < full; i++)
        total += (uint64_t)__builtin_popcountll(w[i]);
    if (b->n & 63)
        total += (uint64_t)__builtin_popcountll(w[full] & tail_mask(b->n));
    return total;
}

/* Word i of the map with the bits past n cleared. */
static inline uint64_t bitmap_word(const bk_bitmap_t *b, uint64_t i)
{
    uint64_t w = b->words[i];
    if (i == (b->n - 1) >> 6)
        w &= tail_mask(b->n);
    return w;
}

bool bk_bitmap_foreach(const bk_bitmap_t *b, bool (*fn)(uint64_t v, void *ctx), void *ctx)
{
    uint64_t nwords = (b->n + 63) >> 6;
    for (uint64_t i = 0; i < nwords; i++) {
        uint64_t w = bitmap_word(b, i);
        while (w) {
            uint64_t v = (i << 6) | (uint64_t)__builtin_ctzll(w);
            if (!fn(v, ctx))
                return false;
            w &= w - 1;
        }
    }
    return true;
}

bool bk_bitmap_next(const bk_bitmap_t *b, uint64_t from, uint64_t *out)
{
    if (from >= b->n)
        return false;
    uint64_t nwords = (b->n + 63) >> 6;
    uint64_t i = from >> 6;
    uint64_t w = bitmap_word(b, i) & (~UINT64_C(0) << (from & 63));
    for (;;) {
        if (w) {
            *out = (i << 6) | (uint64_t)__builtin_ctzll(w);
            return true;
        }
        if (++i >= nwords)
            return false;
        w = bitmap_word(b, i);
    }
}

bk_status_t bk_bitmap_or(bk_bitmap_t *dst, const bk_bitmap_t *src)
{
    if (dst->n != src->n)
        return BK_EINCOMPAT;
    uint64_t nwords = dst->nbytes / 8;
    for (uint64_t i = 0; i < nwords; i++)
        dst->words[i] |= src->words[i];
    return BK_OK;
}

bk_status_t bk_bitmap_and(bk_bitmap_t *dst, const bk_bitmap_t *src)
{
    if (dst->n != src->n)
        return BK_EINCOMPAT;
    uint64_t nwords = dst->nbytes / 8;
    for (uint64_t i = 0; i < nwords; i++)
        dst->words[i] &= src->words[i];
    return BK_OK;
}

void bk_bitmap_clear(bk_bitmap_t *b)
{
    payload_zero(b->words, b->nbytes, b->mem);
}

/* ------------------------------------------------------------------------ */
/* 2-bit map                                                                 */
/* ------------------------------------------------------------------------ */

bk_status_t bk_bitmap2_create(bk_bitmap2_t **out, uint64_t n)
{
    if (!out)
        return BK_EINVAL;
    *out = NULL;
    if (n == 0 || n > BKI_BITMAP_MAX_N)
        return BK_EINVAL;
    bk_bitmap2_t *b = bki_malloc(sizeof *b);
    if (!b)
        return BK_ENOMEM;
    b->n = n;
    b->nbytes = bki_layout_bytes(BK_KIND_BITMAP2, n);
    b->words = (uint64_t *)bki_payload_alloc(b->nbytes, &b->mem);
    if (!b->words) {
        bki_free(b);
        return BK_ENOMEM;
    }
    *out = b;
    return BK_OK;
}

void bk_bitmap2_free(bk_bitmap2_t *b)
{
    if (!b)
        return;
    bki_payload_free((uint8_t *)b->words, b->nbytes, b->mem);
    bki_free(b);
}

uint64_t bk_bitmap2_size(const bk_bitmap2_t *b)
{
    return b->n;
}

unsigned bk_bitmap2_add(bk_bitmap2_t *b, uint64_t v)
{
    if (BKI_UNLIKELY(v >= b->n))
        return 0;
    uint64_t *w = &b->words[v >> 5];
    unsigned shift = (unsigned)(v & 31) * 2;
    unsigned state = (unsigned)(*w >> shift) & 3;
    if (state < 2) {
        /* 0 -> 1 -> 2: adding one to the cell never carries out of it. */
        *w += UINT64_C(1) << shift;
        state++;
    }
    return state;
}

unsigned bk_bitmap2_state(const bk_bitmap2_t *b, uint64_t v)
{
    if (BKI_UNLIKELY(v >= b->n))
        return 0;
    return (unsigned)(b->words[v >> 5] >> ((v & 31) * 2)) & 3;
}

/* For word i: a mask with the low bit of every cell of [0, n) in word i
 * set, i.e. LOW_BITS trimmed at the end of the range. */
static inline uint64_t bitmap2_valid(const bk_bitmap2_t *b, uint64_t i)
{
    if (i == (b->n - 1) >> 5)
        return LOW_BITS & tail_mask(b->n * 2);
    return LOW_BITS;
}

/* Of word w, the low bit of every cell in `state` (1, 2 or 0), within the
 * cells marked by `valid`. A cell is (hi, lo): state 1 = (0, 1), state 2 =
 * (1, 0); a corrupt 3 = (1, 1) matches no state except through >= 2 below,
 * which treats it as "twice or more" like bk_bitmap2_add would. */
static inline uint64_t cells_in_state(uint64_t w, unsigned state, uint64_t valid)
{
    uint64_t lo = w & LOW_BITS, hi = (w >> 1) & LOW_BITS;
    switch (state) {
    case 0: return ~(lo | hi) & valid;
    case 1: return lo & ~hi & valid;
    default: return hi & valid;
    }
}

void bk_bitmap2_counts(const bk_bitmap2_t *b, uint64_t counts[3])
{
    uint64_t nwords = (b->n + 31) >> 5, c1 = 0, c2 = 0;
    for (uint64_t i = 0; i < nwords; i++) {
        uint64_t w = b->words[i], valid = bitmap2_valid(b, i);
        c1 += (uint64_t)__builtin_popcountll(cells_in_state(w, 1, valid));
        c2 += (uint64_t)__builtin_popcountll(cells_in_state(w, 2, valid));
    }
    counts[0] = b->n - c1 - c2;
    counts[1] = c1;
    counts[2] = c2;
}

bool bk_bitmap2_foreach(const bk_bitmap2_t *b, unsigned state,
                        bool (*fn)(uint64_t v, void *ctx), void *ctx)
{
    if (state > 2)
        return true; /* no cell is ever in any other state */
    uint64_t nwords = (b->n + 31) >> 5;
    for (uint64_t i = 0; i < nwords; i++) {
        uint64_t m = cells_in_state(b->words[i], state, bitmap2_valid(b, i));
        while (m) {
            uint64_t v = (i << 5) | ((uint64_t)__builtin_ctzll(m) >> 1);
            if (!fn(v, ctx))
                return false;
            m &= m - 1;
        }
    }
    return true;
}

void bk_bitmap2_clear(bk_bitmap2_t *b)
{
    payload_zero(b->words, b->nbytes, b->mem);
}
