/*
 * Blocked Bloom filter: the default kind.
 *
 * A classic filter's k probes land on k different cache lines, so a lookup
 * in a filter larger than the caches costs k memory accesses. Here all of a
 * key's probes fall in one 64-byte line, so a lookup costs one, at the price
 * of a few percent more bits for the same FPR (see plan.c).
 *
 * Layout and probe scheme (a stable promise: it decides which bits a key
 * sets, so it is part of the file format's meaning):
 *   line  = reduce(h.hi, lines)           one of `lines` 64-byte lines
 *   x     = low 32 bits of h.lo
 *   r     = bits 32..35 of h.lo           first lane
 *   s     = 2 * (bits 36..38 of h.lo) + 1 odd lane stride
 *   probe i (0 <= i < k <= 16) sets, in 32-bit lane (r + i*s) mod 16 of the
 *   line, bit (x * SALT[lane]) >> 27.
 * An odd stride visits 16 distinct lanes, so a key's k bits are distinct;
 * r spreads keys over all 16 lanes whatever k is; the per-key stride keeps
 * two keys' lane sets from overlapping in whole runs (with stride 1 every
 * key covers a contiguous window, neighbouring lanes fill together, and the
 * measured FPR came out 5-9% above the model; with random odd strides it
 * matches). The per-lane odd multipliers give multiply-shift hashes of x.
 *
 * The scheme is built for SIMD: with AVX2 one key's 16 candidate bits are
 * computed in two 8-lane registers, masked to the k active lanes (read from
 * a table indexed by k and the 7 hash bits that fix first lane and stride),
 * and tested against the line with two vptest. The scalar path computes the
 * same bits; tests check that both paths build bit-identical filters.
 * Which path runs is decided in cpu.c (bki_simd_level). Batched adds and
 * lookups instantiate the batch pipeline (batch.h) once per path, with the
 * hash and the probe inlined. The lane salts and line addressing are
 * layout facts shared with the counting filter (layout.c, internal.h).
 */
#include "batch.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BKI_HAVE_X86 1
#endif

/* active_lanes[k][b]: the lanes a key probes, as a 16-bit mask, for k and
 * b = bits 32..38 of h.lo (first lane and stride, see above). Replaces
 * computing each lane's probe number with vector multiplies in the SIMD
 * path: one load instead. 4.3 KB; a filter uses the 256 bytes of its k. */
static uint16_t active_lanes[BKI_BLOCKED_MAX_K + 1][128];

static void build_active_lanes(void)
{
    for (uint32_t k = 0; k <= BKI_BLOCKED_MAX_K; k++) {
        for (uint32_t b = 0; b < 128; b++) {
            bki_lanes_t l = bki_lanes_of((uint64_t)b << 32);
            uint32_t m = 0;
            for (uint32_t i = 0; i < k; i++)
                m |= UINT32_C(1) << bki_lane(l, i);
            active_lanes[k][b] = (uint16_t)m;
        }
    }
}

static inline uint32_t key_active_lanes(uint32_t k, uint64_t lo)
{
    return active_lanes[k][(lo >> 32) & 127u];
}

/* Built before main(); the table is read-only afterwards. */
__attribute__((constructor)) static void init_tables(void)
{
    build_active_lanes();
}

static inline const uint32_t *line_at(const bk_filter_t *f, uint64_t hi)
{
    return bki_line_of(f, hi);
}

/* The same line, writable: the filter's payload is (adds take f non-const). */
static inline uint32_t *line_of(const bk_filter_t *f, bk_hash_t h)
{
    return bki_line_of(f, h.hi);
}

/* The bit a key sets in one lane: top 5 bits of a multiply-shift hash. */
static inline uint32_t lane_bit(bki_lanes_t l, uint32_t lane)
{
    return UINT32_C(1) << ((l.x * bki_lane_salt[lane]) >> 27);
}

/* Sets a key's bits in its line w; true if one was clear (the key is new). */
static inline bool put_scalar(const bk_filter_t *f, uint32_t *w, uint64_t lo)
{
    bki_lanes_t l = bki_lanes_of(lo);
    uint32_t missing = 0;
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i);
        uint32_t bit = lane_bit(l, lane);
        missing |= ~w[lane] & bit;
        w[lane] |= bit;
    }
    return missing != 0;
}

/* The probes take the key's line and the low hash half separately, so the
 * batch loop computes each line once (for the prefetch) and reuses it. */
static inline bool probe_scalar(const bk_filter_t *f, const uint32_t *w, uint64_t lo)
{
    bki_lanes_t l = bki_lanes_of(lo);
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i);
        uint32_t bit = lane_bit(l, lane);
        if (!(w[lane] & bit))
            return false;
    }
    return true;
}

#ifdef BKI_HAVE_X86
/* The 16 lanes' candidate bits, masked to the key's k active lanes. */
__attribute__((target("avx2"))) static inline void key_masks(const bk_filter_t *f, uint64_t lo,
                                                            __m256i *mlo, __m256i *mhi)
{
    const __m256i x = _mm256_set1_epi32((int)(uint32_t)lo);
    const __m256i one = _mm256_set1_epi32(1);
    /* Lane j is active when bit j of the key's lane mask is set. */
    const __m256i act = _mm256_set1_epi32((int)key_active_lanes(f->k, lo));
    const __m256i sel_lo = _mm256_setr_epi32(1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5,
                                             1 << 6, 1 << 7);
    const __m256i sel_hi = _mm256_setr_epi32(1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12,
                                             1 << 13, 1 << 14, 1 << 15);
    __m256i act_lo = _mm256_cmpeq_epi32(_mm256_and_si256(act, sel_lo), sel_lo);
    __m256i act_hi = _mm256_cmpeq_epi32(_mm256_and_si256(act, sel_hi), sel_hi);
    __m256i s_lo = _mm256_load_si256((const __m256i *)(const void *)bki_lane_salt);
    __m256i s_hi = _mm256_load_si256((const __m256i *)(const void *)(bki_lane_salt + 8));
    __m256i b_lo = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(x, s_lo), 27));
    __m256i b_hi = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(x, s_hi), 27));
    *mlo = _mm256_and_si256(b_lo, act_lo);
    *mhi = _mm256_and_si256(b_hi, act_hi);
}

__attribute__((target("avx2"))) static inline bool put_avx2(const bk_filter_t *f, uint32_t *w,
                                                           uint64_t key_lo)
{
    __m256i *line = (__m256i *)(void *)w;
    __m256i lo, hi;
    key_masks(f, key_lo, &lo, &hi);
    __m256i w_lo = _mm256_load_si256(line), w_hi = _mm256_load_si256(line + 1);
    bool present = _mm256_testc_si256(w_lo, lo) & _mm256_testc_si256(w_hi, hi);
    _mm256_store_si256(line, _mm256_or_si256(w_lo, lo));
    _mm256_store_si256(line + 1, _mm256_or_si256(w_hi, hi));
    return !present;
}

__attribute__((target("avx2"))) static inline bool probe_avx2(const bk_filter_t *f,
                                                             const uint32_t *w, uint64_t lo)
{
    const __m256i *line = (const __m256i *)(const void *)w;
    __m256i mlo, mhi;
    key_masks(f, lo, &mlo, &mhi);
    return _mm256_testc_si256(_mm256_load_si256(line), mlo) &
           _mm256_testc_si256(_mm256_load_si256(line + 1), mhi);
}
#endif

/* ---- the operations ---- */

#ifdef BKI_HAVE_X86
#define USE_AVX2 BKI_LIKELY(bki_simd_level >= BKI_SIMD_AVX2)
#else
#define USE_AVX2 0
#endif

bool bki_blocked_add(bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return put_avx2(f, line_of(f, h), h.lo);
#endif
    return put_scalar(f, line_of(f, h), h.lo);
}

bool bki_blocked_contains(const bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return probe_avx2(f, line_at(f, h.hi), h.lo);
#endif
    return probe_scalar(f, line_at(f, h.hi), h.lo);
}

/* ---- batches: the pipeline of batch.h, once per instruction set ---- */

/* One pending key: its line and the half of its hash that picks the bits,
 * so the line is computed once (for the prefetch) and reused. */
typedef struct pending {
    uint32_t *line;
    uint64_t lo;
} pending_t;

static inline pending_t locate(const bk_filter_t *f, bk_hash_t h)
{
    pending_t p = {line_of(f, h), h.lo};
    return p;
}

static inline void prefetch(const bk_filter_t *f, pending_t p)
{
    (void)f;
    __builtin_prefetch(p.line);
}

#define PUT_SCALAR(f, p) put_scalar(f, (p).line, (p).lo)
#define PROBE_SCALAR(f, p) probe_scalar(f, (p).line, (p).lo)
BKI_DEFINE_ADD_BATCH(add_batch_scalar, , pending_t, locate, prefetch, PUT_SCALAR)
BKI_DEFINE_CONTAINS_BATCH(contains_batch_scalar, , pending_t, locate, prefetch, PROBE_SCALAR)
#ifdef BKI_HAVE_X86
#define PUT_AVX2(f, p) put_avx2(f, (p).line, (p).lo)
#define PROBE_AVX2(f, p) probe_avx2(f, (p).line, (p).lo)
BKI_DEFINE_ADD_BATCH(add_batch_avx2, __attribute__((target("avx2"))), pending_t, locate,
                     prefetch, PUT_AVX2)
BKI_DEFINE_CONTAINS_BATCH(contains_batch_avx2, __attribute__((target("avx2"))), pending_t,
                          locate, prefetch, PROBE_AVX2)
#endif

uint64_t bki_blocked_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return add_batch_avx2(f, keys, n, was_new);
#endif
    return add_batch_scalar(f, keys, n, was_new);
}

size_t bki_blocked_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n,
                                  bool *out)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return contains_batch_avx2(f, keys, n, out);
#endif
    return contains_batch_scalar(f, keys, n, out);
}

bool bki_blocked_add_atomic(bk_filter_t *f, bk_hash_t h)
{
    uint32_t *w = line_of(f, h);
    bki_lanes_t l = bki_lanes_of(h.lo);
    uint32_t missing = 0;
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i);
        uint32_t bit = lane_bit(l, lane);
        /* Skip the locked RMW when the bit is already set: the common case
         * in a filled filter, and it keeps the line shared between cores. */
        if (__atomic_load_n(&w[lane], __ATOMIC_RELAXED) & bit)
            continue;
        missing |= ~__atomic_fetch_or(&w[lane], bit, __ATOMIC_RELAXED) & bit;
    }
    return missing != 0;
}
