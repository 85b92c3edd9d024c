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
 * the pages that are actually touched; such maps also record which pages
 * the updates touched (touched.c), and every pass visits only those. The
 * bits past n stay zero; counting
 * and iteration mask them anyway, so a payload loaded from elsewhere cannot
 * report values outside [0, n).
 *
 * The expected workload is many single-value updates (set, add) from a
 * stream, then one pass of counting or iteration: the updates touch one word
 * each, the passes go a word at a time (popcount, count-trailing-zeros).
 * A map larger than the caches makes every update a cache miss; the batch
 * calls request each value's word BITMAP_AHEAD values before updating it, so
 * the misses overlap instead of queueing (the 12.5 MB map of 8-digit phone
 * numbers: about 4x fewer ns per value than one call per value), and count
 * without a branch on the word's old contents. The passes use the CPU's
 * popcount instruction where it has one (every CPU with AVX2 does): built
 * for the generic x86-64 target, __builtin_popcountll is a library call.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LOW_BITS UINT64_C(0x5555555555555555) /* the low bit of every cell */

/* Mask of the valid bits of the last word holding `used_bits` bits
 * (used_bits % 64 of them; all when it is a multiple of 64). */
static uint64_t tail_mask(uint64_t used_bits)
{
    unsigned r = (unsigned)(used_bits & 63);
    return r ? (UINT64_C(1) << r) - 1 : ~UINT64_C(0);
}

/* A zeroed payload and, for a large one, its touched-page summary. A map
 * larger than half the machine's memory can only ever be used sparsely, so
 * it is kept out of transparent huge pages: one value would otherwise make
 * the kernel back 2 MiB of it instead of 4 KiB. False if out of memory. */
static bool new_payload(uint64_t **words, uint64_t nbytes, bki_mem_t *mem, bki_touched_t *t)
{
    *words = (uint64_t *)bki_payload_alloc(nbytes, mem);
    if (!*words)
        return false;
    if (bki_touched_init(t, nbytes) != BK_OK) {
        bki_payload_free((uint8_t *)*words, nbytes, *mem);
        return false;
    }
#ifdef MADV_NOHUGEPAGE
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (*mem == BKI_MEM_ANON && pages > 0 && size > 0 &&
        nbytes > (uint64_t)pages * (uint64_t)size / 2)
        (void)madvise(*words, (size_t)nbytes, MADV_NOHUGEPAGE); /* a hint */
#endif
    return true;
}

/* The next run of words at or after `word` (below nwords) that lies in a
 * touched page: [*lo, returned end). *lo == nwords when there is none.
 * Without a summary the whole rest is one run. */
static uint64_t touched_run(const bki_touched_t *t, uint64_t word, uint64_t nwords, uint64_t *lo)
{
    if (!t->l1) {
        *lo = word;
        return nwords;
    }
    uint64_t page = bki_touched_next(t, word / BKI_PAGE_WORDS);
    uint64_t start = page * BKI_PAGE_WORDS, end = start + BKI_PAGE_WORDS;
    if (start < word)
        start = word;
    *lo = start < nwords ? start : nwords;
    return end < nwords ? end : nwords;
}

/* Every word, for passes that must see untouched values too. */
static uint64_t whole_run(const bki_touched_t *t, uint64_t word, uint64_t nwords, uint64_t *lo)
{
    (void)t;
    *lo = word;
    return nwords;
}

/* A bitmap read from a paged file (file not NULL) checks the page of word
 * w before its bits are trusted (write: and marks it for the next save);
 * a damaged page reads as all ones, so a value never reads "unset" there.
 * bk_bitmap_damage says so. */
static inline void page_in(const bk_filter_t *file, const uint64_t *w, bool write)
{
    (void)file->touch(file, (const uint8_t *)w, 8, write);
}

/* Before a pass over the whole map: every page of a paged file read and
 * checked (write: and marked for the next save); damage stays reported. */
#define pages_in(b, write)                                                    \
    do {                                                                      \
        if ((b)->file)                                                        \
            (b)->paging->all((b)->file, (write));                             \
    } while (0)

/* bki_bitmap_over for either kind (the two structs have the same fields):
 * a bitmap of `type` over the paged file's payload, or NULL with the file
 * freed. */
#define OVER(type)                                                            \
    do {                                                                      \
        type *b_ = bki_calloc(1, sizeof *b_);                                 \
        if (b_ && bki_touched_init(&b_->touched, file->nbytes) != BK_OK) {    \
            bki_free(b_);                                                     \
            b_ = NULL;                                                        \
        }                                                                     \
        if (!b_) {                                                            \
            paging->free(file);                                               \
            return NULL;                                                      \
        }                                                                     \
        b_->n = n;                                                            \
        b_->words = (uint64_t *)(void *)file->data;                           \
        b_->nbytes = file->nbytes;                                            \
        b_->mem = BKI_MEM_BORROWED;                                           \
        b_->file = file;                                                      \
        b_->paging = paging;                                                  \
        bki_touched_all(&b_->touched); /* any page may hold values */         \
        return b_;                                                            \
    } while (0)

void *bki_bitmap_over(unsigned bits, uint64_t n, bk_filter_t *file,
                      const bki_bitmap_paging_t *paging)
{
    if (bits == 1)
        OVER(bk_bitmap_t);
    OVER(bk_bitmap2_t);
}

#undef OVER

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
    bk_bitmap_t *b = bki_calloc(1, sizeof *b);
    if (!b)
        return BK_ENOMEM;
    b->n = n;
    b->nbytes = bki_layout_bytes(bki_bitmap_kind(1), n);
    if (!new_payload(&b->words, b->nbytes, &b->mem, &b->touched)) {
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
    bki_touched_free(&b->touched);
    if (b->file)
        b->paging->free(b->file); /* the paged file's memory, after its words */
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
    if (BKI_UNLIKELY(b->file != NULL))
        page_in(b->file, w, true);
    uint64_t bit = UINT64_C(1) << (v & 63);
    bool was_clear = !(*w & bit);
    *w |= bit;
    if (b->touched.l1)
        bki_touched_mark(&b->touched, v >> 6);
    return was_clear;
}

/* How far ahead of its update a value's word is requested: enough misses in
 * flight to cover memory latency, few enough that the words stay cached. */
#define BITMAP_AHEAD 16

/* Requests the word holding bit `bit` of words[] (bits past the map ask for
 * word 0: harmless, and no branch). */
static inline void prefetch_bit(const uint64_t *words, uint64_t bit, uint64_t nbits)
{
    __builtin_prefetch(&words[(bit < nbits ? bit : 0) >> 6], 1);
}

uint64_t bk_bitmap_set_batch(bk_bitmap_t *b, const uint64_t *v, size_t n)
{
    uint64_t fresh = 0;
    bki_touched_t *t = b->touched.l1 ? &b->touched : NULL;
    for (size_t i = 0; i < n; i++) {
        if (i + BITMAP_AHEAD < n)
            prefetch_bit(b->words, v[i + BITMAP_AHEAD], b->n);
        uint64_t x = v[i];
        if (BKI_UNLIKELY(x >= b->n))
            continue;
        uint64_t *w = &b->words[x >> 6];
        if (BKI_UNLIKELY(b->file != NULL))
            page_in(b->file, w, true);
        uint64_t bit = UINT64_C(1) << (x & 63);
        fresh += (*w & bit) == 0;
        *w |= bit;
        if (t)
            bki_touched_mark(t, x >> 6);
    }
    return fresh;
}

/* bki_touched_mark for maps that several threads update at once: the
 * summary's bits are set with atomic ORs, and a page is counted by the
 * thread whose OR set its bit. */
static inline void touched_mark_shared(bki_touched_t *t, uint64_t word)
{
    uint64_t page = word / BKI_PAGE_WORDS, group = page >> 12;
    uint64_t bit = UINT64_C(1) << (page & 63);
    if (__atomic_load_n(&t->l1[page >> 6], __ATOMIC_RELAXED) & bit)
        return;
    if (!(__atomic_fetch_or(&t->l1[page >> 6], bit, __ATOMIC_RELAXED) & bit)) {
        __atomic_fetch_or(&t->l2[group >> 6], UINT64_C(1) << (group & 63), __ATOMIC_RELAXED);
        __atomic_fetch_add(&t->marked, 1, __ATOMIC_RELAXED);
    }
}

uint64_t bk_bitmap_set_batch_shared(bk_bitmap_t *b, const uint64_t *v, size_t n)
{
    uint64_t fresh = 0;
    bki_touched_t *t = b->touched.l1 ? &b->touched : NULL;
    for (size_t i = 0; i < n; i++) {
        if (i + BITMAP_AHEAD < n)
            prefetch_bit(b->words, v[i + BITMAP_AHEAD], b->n);
        uint64_t x = v[i];
        if (BKI_UNLIKELY(x >= b->n))
            continue;
        uint64_t *w = &b->words[x >> 6];
        if (BKI_UNLIKELY(b->file != NULL))
            page_in(b->file, w, true); /* thread-safe: pages.c locks */
        uint64_t bit = UINT64_C(1) << (x & 63);
        /* a plain load first: a set bit (a duplicate) needs no locked op */
        if (__atomic_load_n(w, __ATOMIC_RELAXED) & bit)
            continue;
        fresh += (__atomic_fetch_or(w, bit, __ATOMIC_RELAXED) & bit) == 0;
        if (t)
            touched_mark_shared(t, x >> 6);
    }
    return fresh;
}

bool bk_bitmap_test(const bk_bitmap_t *b, uint64_t v)
{
    if (BKI_UNLIKELY(v >= b->n))
        return false;
    if (BKI_UNLIKELY(b->file != NULL))
        page_in(b->file, &b->words[v >> 6], false);
    return (b->words[v >> 6] >> (v & 63)) & 1;
}

#if defined(__x86_64__) || defined(__i386__)
#define BITMAP_HAVE_X86 1
#endif

static uint64_t popcount_words(const uint64_t *w, uint64_t n)
{
    return bki_popcount_words(w, n, false);
}

uint64_t bk_bitmap_count(const bk_bitmap_t *b)
{
    uint64_t full = b->n >> 6, total = 0, lo;
    pages_in(b, false);
    for (uint64_t i = 0, hi; i < full; i = hi) {
        hi = touched_run(&b->touched, i, full, &lo);
        total += popcount_words(b->words + lo, hi - lo);
    }
    if (b->n & 63)
        total += (uint64_t)__builtin_popcountll(b->words[full] & tail_mask(b->n));
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
    uint64_t nwords = (b->n + 63) >> 6, lo;
    pages_in(b, false);
    for (uint64_t at = 0, hi; at < nwords; at = hi) {
        hi = touched_run(&b->touched, at, nwords, &lo);
        for (uint64_t i = lo; i < hi; i++) {
            uint64_t w = bitmap_word(b, i);
            while (w) {
                uint64_t v = (i << 6) | (uint64_t)__builtin_ctzll(w);
                if (!fn(v, ctx))
                    return false;
                w &= w - 1;
            }
        }
    }
    return true;
}

bool bk_bitmap_next(const bk_bitmap_t *b, uint64_t from, uint64_t *out)
{
    if (from >= b->n)
        return false;
    uint64_t nwords = (b->n + 63) >> 6, lo;
    pages_in(b, false);
    uint64_t first = from >> 6, mask = ~UINT64_C(0) << (from & 63);
    for (uint64_t at = first, hi; at < nwords; at = hi) {
        hi = touched_run(&b->touched, at, nwords, &lo);
        for (uint64_t i = lo; i < hi; i++) {
            uint64_t w = bitmap_word(b, i) & (i == first ? mask : ~UINT64_C(0));
            if (w) {
                *out = (i << 6) | (uint64_t)__builtin_ctzll(w);
                return true;
            }
        }
    }
    return false;
}

bk_status_t bk_bitmap_or(bk_bitmap_t *dst, const bk_bitmap_t *src)
{
    if (dst->n != src->n)
        return BK_EINCOMPAT;
    pages_in(src, false);
    pages_in(dst, true);
    uint64_t nwords = dst->nbytes / 8, lo;
    for (uint64_t at = 0, hi; at < nwords; at = hi) { /* src's zero pages add nothing */
        hi = touched_run(&src->touched, at, nwords, &lo);
        for (uint64_t i = lo; i < hi; i++)
            dst->words[i] |= src->words[i];
    }
    bki_touched_merge(&dst->touched, &src->touched);
    return BK_OK;
}

bk_status_t bk_bitmap_and(bk_bitmap_t *dst, const bk_bitmap_t *src)
{
    if (dst->n != src->n)
        return BK_EINCOMPAT;
    pages_in(src, false);
    pages_in(dst, true);
    uint64_t nwords = dst->nbytes / 8, lo;
    /* dst's untouched pages are zero already; its summary stays a superset */
    for (uint64_t at = 0, hi; at < nwords; at = hi) {
        hi = touched_run(&dst->touched, at, nwords, &lo);
        for (uint64_t i = lo; i < hi; i++)
            dst->words[i] &= src->words[i];
    }
    return BK_OK;
}

void bk_bitmap_clear(bk_bitmap_t *b)
{
    pages_in(b, true); /* each page's old bytes known to the next save */
    bki_payload_zero((uint8_t *)b->words, b->nbytes, b->mem);
    bki_touched_none(&b->touched);
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
    bk_bitmap2_t *b = bki_calloc(1, sizeof *b);
    if (!b)
        return BK_ENOMEM;
    b->n = n;
    b->nbytes = bki_layout_bytes(bki_bitmap_kind(2), n);
    if (!new_payload(&b->words, b->nbytes, &b->mem, &b->touched)) {
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
    bki_touched_free(&b->touched);
    if (b->file)
        b->paging->free(b->file); /* the paged file's memory, after its words */
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
    if (BKI_UNLIKELY(b->file != NULL))
        page_in(b->file, w, true);
    unsigned shift = (unsigned)(v & 31) * 2;
    unsigned state = (unsigned)(*w >> shift) & 3;
    if (BKI_UNLIKELY(state == 3))
        return 2; /* a damaged page of a paged file: "more than once" */
    if (state < 2) {
        /* 0 -> 1 -> 2: adding one to the cell never carries out of it. */
        *w += UINT64_C(1) << shift;
        state++;
        if (b->touched.l1)
            bki_touched_mark(&b->touched, v >> 5);
    }
    return state;
}

uint64_t bk_bitmap2_add_batch(bk_bitmap2_t *b, const uint64_t *v, size_t n)
{
    uint64_t first = 0, ncells = b->n;
    bki_touched_t *t = b->touched.l1 ? &b->touched : NULL;
    for (size_t i = 0; i < n; i++) {
        if (i + BITMAP_AHEAD < n)
            prefetch_bit(b->words, v[i + BITMAP_AHEAD] * 2, ncells * 2);
        uint64_t x = v[i];
        if (BKI_UNLIKELY(x >= ncells))
            continue;
        uint64_t *w = &b->words[x >> 5];
        if (BKI_UNLIKELY(b->file != NULL))
            page_in(b->file, w, true);
        unsigned shift = (unsigned)(x & 31) * 2;
        uint64_t state = (*w >> shift) & 3;
        /* 0 -> 1 -> 2, saturating, without a branch on the old state. */
        *w += (uint64_t)(state < 2) << shift;
        first += state == 0;
        if (t)
            bki_touched_mark(t, x >> 5);
    }
    return first;
}

uint64_t bk_bitmap2_add_batch_shared(bk_bitmap2_t *b, const uint64_t *v, size_t n)
{
    uint64_t first = 0, ncells = b->n;
    bki_touched_t *t = b->touched.l1 ? &b->touched : NULL;
    for (size_t i = 0; i < n; i++) {
        if (i + BITMAP_AHEAD < n)
            prefetch_bit(b->words, v[i + BITMAP_AHEAD] * 2, ncells * 2);
        uint64_t x = v[i];
        if (BKI_UNLIKELY(x >= ncells))
            continue;
        uint64_t *w = &b->words[x >> 5];
        if (BKI_UNLIKELY(b->file != NULL))
            page_in(b->file, w, true);
        unsigned shift = (unsigned)(x & 31) * 2;
        uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED), state;
        /* 0 -> 1 -> 2, saturating: one compare-and-swap per sighting that
         * changes the cell (retried when another thread changed the word) */
        do {
            state = (old >> shift) & 3;
            if (state >= 2) /* 3: a damaged page, all ones */
                break;
        } while (!__atomic_compare_exchange_n(w, &old, old + (UINT64_C(1) << shift), true,
                                              __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        first += state == 0;
        if (t && state < 2)
            touched_mark_shared(t, x >> 5);
    }
    return first;
}

unsigned bk_bitmap2_state(const bk_bitmap2_t *b, uint64_t v)
{
    if (BKI_UNLIKELY(v >= b->n))
        return 0;
    if (BKI_UNLIKELY(b->file != NULL))
        page_in(b->file, &b->words[v >> 5], false);
    unsigned state = (unsigned)(b->words[v >> 5] >> ((v & 31) * 2)) & 3;
    return state == 3 ? 2 : state; /* 3: a damaged page, "more than once" */
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

/* Cells in states 1 and 2, per instruction set as popcount_words. */
#define DEFINE_COUNT_CELLS(name, attr)                                            \
    attr static void name(const bk_bitmap2_t *b, uint64_t lo, uint64_t hi,        \
                          uint64_t *c1, uint64_t *c2)                             \
    {                                                                             \
        uint64_t one = 0, two = 0;                                                \
        for (uint64_t i = lo; i < hi; i++) {                                      \
            uint64_t w = b->words[i], valid = bitmap2_valid(b, i);                \
            one += (uint64_t)__builtin_popcountll(cells_in_state(w, 1, valid));   \
            two += (uint64_t)__builtin_popcountll(cells_in_state(w, 2, valid));   \
        }                                                                         \
        *c1 += one;                                                               \
        *c2 += two;                                                               \
    }
DEFINE_COUNT_CELLS(count_cells_generic, )
#ifdef BITMAP_HAVE_X86
DEFINE_COUNT_CELLS(count_cells_hw, __attribute__((target("popcnt"))))
#endif

void bk_bitmap2_counts(const bk_bitmap2_t *b, uint64_t counts[3])
{
    uint64_t c1 = 0, c2 = 0, nwords = (b->n + 31) >> 5, lo;
    pages_in(b, false);
    for (uint64_t at = 0, hi; at < nwords; at = hi) {
        hi = touched_run(&b->touched, at, nwords, &lo);
#ifdef BITMAP_HAVE_X86
        if (bki_simd_level >= BKI_SIMD_AVX2)
            count_cells_hw(b, lo, hi, &c1, &c2);
        else
#endif
            count_cells_generic(b, lo, hi, &c1, &c2);
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
    uint64_t nwords = (b->n + 31) >> 5, lo;
    pages_in(b, false);
    /* State 0 is every value no update touched: the whole range. */
    uint64_t (*run)(const bki_touched_t *, uint64_t, uint64_t, uint64_t *) =
        state == 0 ? whole_run : touched_run;
    for (uint64_t at = 0, hi; at < nwords; at = hi) {
        hi = run(&b->touched, at, nwords, &lo);
        for (uint64_t i = lo; i < hi; i++) {
            uint64_t m = cells_in_state(b->words[i], state, bitmap2_valid(b, i));
            while (m) {
                uint64_t v = (i << 5) | ((uint64_t)__builtin_ctzll(m) >> 1);
                if (!fn(v, ctx))
                    return false;
                m &= m - 1;
            }
        }
    }
    return true;
}

void bk_bitmap2_clear(bk_bitmap2_t *b)
{
    pages_in(b, true);
    bki_payload_zero((uint8_t *)b->words, b->nbytes, b->mem);
    bki_touched_none(&b->touched);
}
