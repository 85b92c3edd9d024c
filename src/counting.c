/*
 * Counting Bloom filter: a Bloom filter that can forget.
 *
 * A plain filter cannot delete: clearing a key's bits could clear bits other
 * keys share. Here every cell is a 4-bit counter; add increments the key's k
 * counters, remove decrements them, and a key is present while all of its
 * counters are non-zero. Four bits are enough in practice (a counter reaches
 * 16 only with probability ~1e-15 per counter in a filter sized by the usual
 * rules), and a counter that does saturate at 15 stays there forever: after
 * an overflow we no longer know its true value, and decrementing it could
 * bring it to zero while a key still needs it, a false negative.
 *
 * Layout: the blocked filter's, with a counter where it has a bit, so a key
 * still costs one 64-byte line (one memory access) per operation. A line is
 * 16 lanes of 32 bits; a lane holds 8 counters, counter c in bits 4c..4c+3.
 *   line  = reduce(h.hi, lines)
 *   x     = low 32 bits of h.lo,  r = bits 32..35 of h.lo,
 *   s     = 2 * (bits 36..38 of h.lo) + 1
 *   probe i (0 <= i < k <= 16) uses lane (r + i*s) mod 16 and, in it,
 *   counter (x * SALT[lane]) >> 29, with the blocked filter's lane
 *   multipliers (see blocked.c for why the stride is random and odd).
 * An odd stride visits 16 distinct lanes, so a key's k counters are
 * distinct and one operation never touches a counter twice. This mapping is
 * a stable promise: it decides which counters a key uses, so it is part of
 * the file format's meaning.
 *
 * As in the blocked filter, an AVX2 path (chosen in cpu.c) works on all
 * 16 lanes at once: per lane a mask of the key's counter (zero in lanes the
 * key does not use), one compare for "some counter is zero", one for
 * "saturated", and a masked add or subtract of 1. The portable scalar path
 * does the same one probe at a time; tests hold both to the same simulated
 * counters.
 *
 * remove first checks that all k counters are non-zero and only then
 * decrements, so removing a key that was never added (and is not a false
 * positive) is reported as BK_ENOTFOUND and changes nothing.
 */
#include "internal.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BKI_HAVE_X86 1
#endif

/* The key's line, as 16 lanes. */
static inline uint32_t *line_of(const bk_filter_t *f, bk_hash_t h)
{
    return bki_line_of(f, h.hi);
}

/* ---- portable scalar path: one probe at a time ---- */

/* Shift of probe i's counter within its lane. */
static inline uint32_t probe_shift(bki_lanes_t l, uint32_t lane, const uint32_t *salt)
{
    return ((l.x * salt[lane]) >> 29) * 4u;
}

static bool add_scalar(bk_filter_t *f, bk_hash_t h)
{
    const uint32_t *salt = bki_lane_salt;
    uint32_t *w = line_of(f, h);
    bki_lanes_t l = bki_lanes_of(h.lo);
    bool was_new = false;
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i), shift = probe_shift(l, lane, salt);
        uint32_t c = (w[lane] >> shift) & 15u;
        was_new |= c == 0;
        w[lane] += (uint32_t)(c < 15u) << shift; /* saturated stays at 15 */
    }
    return was_new;
}

/* Whether one of the key's counters is zero (the key is certainly absent). */
static bool any_zero_scalar(const bk_filter_t *f, bk_hash_t h)
{
    const uint32_t *salt = bki_lane_salt;
    const uint32_t *w = line_of(f, h);
    bki_lanes_t l = bki_lanes_of(h.lo);
    bool zero = false;
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i);
        zero |= ((w[lane] >> probe_shift(l, lane, salt)) & 15u) == 0;
    }
    return zero;
}

static void decrement_scalar(bk_filter_t *f, bk_hash_t h)
{
    const uint32_t *salt = bki_lane_salt;
    uint32_t *w = line_of(f, h);
    bki_lanes_t l = bki_lanes_of(h.lo);
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i), shift = probe_shift(l, lane, salt);
        w[lane] -= (uint32_t)(((w[lane] >> shift) & 15u) != 15u) << shift;
    }
}

/* ---- AVX2 path: all 16 lanes at once ---- */

#ifdef BKI_HAVE_X86
/* For each half of the line (lanes 0-7, 8-15): `act` all-ones in the key's
 * k lanes, `m` 0xF at the key's counter in each active lane, `one` the low
 * bit of that counter. The lane and counter choice is the scalar one. */
typedef struct masks {
    __m256i act[2], m[2], one[2];
} masks_t;

__attribute__((target("avx2"))) static inline void key_masks(const bk_filter_t *f, bk_hash_t h,
                                                            masks_t *o)
{
    const uint32_t *salt = bki_lane_salt;
    const bki_lanes_t l = bki_lanes_of(h.lo);
    const uint32_t inverse = (l.stride * l.stride * l.stride) & 15u; /* stride^-1 mod 16 */
    const __m256i x = _mm256_set1_epi32((int)l.x);
    const __m256i r = _mm256_set1_epi32((int)l.first);
    const __m256i inv = _mm256_set1_epi32((int)inverse);
    const __m256i k = _mm256_set1_epi32((int)f->k);
    const __m256i fifteen = _mm256_set1_epi32(15);
    const __m256i one = _mm256_set1_epi32(1);
    for (int half = 0; half < 2; half++) {
        const __m256i lanes = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                               _mm256_set1_epi32(8 * half));
        /* Lane l is probe number (l - r) * stride^-1 mod 16; active if < k. */
        __m256i i = _mm256_and_si256(_mm256_mullo_epi32(_mm256_sub_epi32(lanes, r), inv), fifteen);
        __m256i act = _mm256_cmpgt_epi32(k, i);
        __m256i s = _mm256_loadu_si256((const __m256i *)(const void *)(salt + 8 * half));
        __m256i shift = _mm256_slli_epi32(_mm256_srli_epi32(_mm256_mullo_epi32(x, s), 29), 2);
        o->act[half] = act;
        o->m[half] = _mm256_and_si256(_mm256_sllv_epi32(fifteen, shift), act);
        o->one[half] = _mm256_and_si256(_mm256_sllv_epi32(one, shift), act);
    }
}

/* True if some active lane's counter is zero. */
__attribute__((target("avx2"))) static inline bool any_zero_masks(const __m256i w[2],
                                                                 const masks_t *k)
{
    const __m256i zero = _mm256_setzero_si256();
    __m256i z0 = _mm256_cmpeq_epi32(_mm256_and_si256(w[0], k->m[0]), zero);
    __m256i z1 = _mm256_cmpeq_epi32(_mm256_and_si256(w[1], k->m[1]), zero);
    return !(_mm256_testz_si256(z0, k->act[0]) & _mm256_testz_si256(z1, k->act[1]));
}

__attribute__((target("avx2"))) static bool add_avx2(bk_filter_t *f, bk_hash_t h)
{
    __m256i *line = (__m256i *)(void *)line_of(f, h);
    masks_t k;
    key_masks(f, h, &k);
    __m256i w[2] = {_mm256_load_si256(line), _mm256_load_si256(line + 1)};
    bool was_new = any_zero_masks(w, &k);
    for (int half = 0; half < 2; half++) {
        /* +1 where the counter is not saturated (not all four bits set) */
        __m256i sat = _mm256_cmpeq_epi32(_mm256_and_si256(w[half], k.m[half]), k.m[half]);
        w[half] = _mm256_add_epi32(w[half], _mm256_andnot_si256(sat, k.one[half]));
        _mm256_store_si256(line + half, w[half]);
    }
    return was_new;
}

__attribute__((target("avx2"))) static bool any_zero_avx2(const bk_filter_t *f, bk_hash_t h)
{
    const __m256i *line = (const __m256i *)(const void *)line_of(f, h);
    masks_t k;
    key_masks(f, h, &k);
    __m256i w[2] = {_mm256_load_si256(line), _mm256_load_si256(line + 1)};
    return any_zero_masks(w, &k);
}

__attribute__((target("avx2"))) static void decrement_avx2(bk_filter_t *f, bk_hash_t h)
{
    __m256i *line = (__m256i *)(void *)line_of(f, h);
    masks_t k;
    key_masks(f, h, &k);
    for (int half = 0; half < 2; half++) {
        __m256i w = _mm256_load_si256(line + half);
        __m256i sat = _mm256_cmpeq_epi32(_mm256_and_si256(w, k.m[half]), k.m[half]);
        _mm256_store_si256(line + half, _mm256_sub_epi32(w, _mm256_andnot_si256(sat, k.one[half])));
    }
}
#endif

/* ---- the operations ---- */

#ifdef BKI_HAVE_X86
#define USE_AVX2 BKI_LIKELY(bki_simd_level >= BKI_SIMD_AVX2)
#else
#define USE_AVX2 0
#endif

bool bki_counting_add(bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return add_avx2(f, h);
#endif
    return add_scalar(f, h);
}

static inline bool any_zero(const bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return any_zero_avx2(f, h);
#endif
    return any_zero_scalar(f, h);
}

bool bki_counting_contains(const bk_filter_t *f, bk_hash_t h)
{
    return !any_zero(f, h);
}

unsigned bki_counting_count(const bk_filter_t *f, bk_hash_t h)
{
    const uint32_t *salt = bki_lane_salt;
    const uint32_t *w = line_of(f, h);
    bki_lanes_t l = bki_lanes_of(h.lo);
    unsigned min = 15;
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i);
        unsigned c = (w[lane] >> probe_shift(l, lane, salt)) & 15u;
        if (c < min)
            min = c;
    }
    return min;
}

bk_status_t bki_counting_remove(bk_filter_t *f, bk_hash_t h)
{
    /* All-or-nothing: check every counter before changing any. */
    if (any_zero(f, h))
        return BK_ENOTFOUND;
#ifdef BKI_HAVE_X86
    if (USE_AVX2) {
        decrement_avx2(f, h);
        return BK_OK;
    }
#endif
    decrement_scalar(f, h);
    return BK_OK;
}

/* Sixteen 4-bit counters at once: a + b per nibble, saturating at 15.
 * The low three bits of each nibble are added without carrying into the
 * next nibble, the top bit is put back with XOR, and a nibble whose sum
 * carried out of its top bit (majority of a's, b's and the incoming carry's
 * top bits) is forced to 15. */
static inline uint64_t add_sat4(uint64_t a, uint64_t b)
{
    const uint64_t high = UINT64_C(0x8888888888888888);
    uint64_t sum = ((a & ~high) + (b & ~high)) ^ ((a ^ b) & high);
    uint64_t carry = ((a & b) | ((a | b) & ~sum)) & high;
    return sum | ((carry >> 3) * 15u);
}

void bki_counting_union(bk_filter_t *dst, const bk_filter_t *src)
{
    /* Payloads are whole 64-byte lines, so a whole number of words. */
    for (uint64_t off = 0; off < dst->nbytes; off += 8) {
        uint64_t a, b;
        memcpy(&a, dst->data + off, 8);
        memcpy(&b, src->data + off, 8);
        a = add_sat4(a, b);
        memcpy(dst->data + off, &a, 8);
    }
}

/* The kind table's row (kinds.c). */
const bki_kind_ops_t bki_counting_ops = {
    .add = bki_counting_add,
    .contains = bki_counting_contains,
    .prefetch = bki_prefetch_line,
    .remove = bki_counting_remove,
    .counter = bki_counting_count,
    .union_into = bki_counting_union,
    .reads = bki_reads_line,
};
