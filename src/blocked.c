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
 * computed in two 8-lane registers, masked to the k active lanes, and tested
 * against the line with two vptest. The scalar path computes the same bits;
 * tests check that both paths build bit-identical filters. The AVX2 path is
 * chosen once at load time from the CPU's feature bits.
 */
#include "internal.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BKI_HAVE_X86 1
#endif

/* 16 odd multipliers, one per lane: the low 32 bits of splitmix64(i) for
 * i = 0..15, forced odd. Independent-looking constants matter: multiples of
 * one constant would make a collision in one lane predict one in the next.
 * Fixed forever: they are part of the format. */
static const uint32_t lane_salt[BKI_LINE_LANES] __attribute__((aligned(64))) = {
    0x7b1dcdafu, 0x89025cc1u, 0x1c9756cfu, 0xdb018fedu, 0xe2338acbu, 0xa389c35bu,
    0xadefe001u, 0x59320dd7u, 0xef953637u, 0xbe706065u, 0x8a582fcbu, 0x2380309du,
    0x99de8f03u, 0xf8ad8affu, 0x35dbe63fu, 0xabf55005u,
};

const uint32_t *bki_blocked_salts(void)
{
    return lane_salt;
}

static bool force_scalar;
static bool have_avx2;

__attribute__((constructor)) static void detect_cpu(void)
{
#ifdef BKI_HAVE_X86
    __builtin_cpu_init();
    have_avx2 = __builtin_cpu_supports("avx2");
#endif
}

bool bki_blocked_have_avx2(void)
{
    return have_avx2;
}

bool bki_blocked_force_scalar(bool force)
{
    bool was = have_avx2 && !force_scalar;
    force_scalar = force;
    return was;
}

static inline uint32_t *line_of(const bk_filter_t *f, bk_hash_t h)
{
    return (uint32_t *)(void *)(f->data + bki_reduce(h.hi, f->lines) * BKI_LINE_BYTES);
}

/* The bit a key sets in one lane: top 5 bits of a multiply-shift hash. */
static inline uint32_t lane_bit(bki_lanes_t l, uint32_t lane)
{
    return UINT32_C(1) << ((l.x * lane_salt[lane]) >> 27);
}

const uint8_t *bki_blocked_line(const bk_filter_t *f, bk_hash_t h)
{
    return (const uint8_t *)line_of(f, h);
}

bool bki_blocked_add_scalar(bk_filter_t *f, bk_hash_t h)
{
    uint32_t *w = line_of(f, h);
    bki_lanes_t l = bki_lanes_of(h);
    uint32_t missing = 0;
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i);
        uint32_t bit = lane_bit(l, lane);
        missing |= ~w[lane] & bit;
        w[lane] |= bit;
    }
    return missing != 0;
}

bool bki_blocked_contains_scalar(const bk_filter_t *f, bk_hash_t h)
{
    const uint32_t *w = line_of(f, h);
    bki_lanes_t l = bki_lanes_of(h);
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
__attribute__((target("avx2"))) static inline void key_masks(const bk_filter_t *f, bk_hash_t h,
                                                            __m256i *lo, __m256i *hi)
{
    const bki_lanes_t l = bki_lanes_of(h);
    const uint32_t inverse = (l.stride * l.stride * l.stride) & 15u; /* stride^-1 mod 16 */
    const __m256i x = _mm256_set1_epi32((int)l.x);
    const __m256i r = _mm256_set1_epi32((int)l.first);
    const __m256i inv = _mm256_set1_epi32((int)inverse);
    const __m256i k = _mm256_set1_epi32((int)f->k);
    const __m256i fifteen = _mm256_set1_epi32(15);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i lanes_lo = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i lanes_hi = _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15);
    /* Lane l is probe number i = (l - r) * stride^-1 mod 16; active if i < k. */
    __m256i i_lo = _mm256_and_si256(_mm256_mullo_epi32(_mm256_sub_epi32(lanes_lo, r), inv), fifteen);
    __m256i i_hi = _mm256_and_si256(_mm256_mullo_epi32(_mm256_sub_epi32(lanes_hi, r), inv), fifteen);
    __m256i act_lo = _mm256_cmpgt_epi32(k, i_lo);
    __m256i act_hi = _mm256_cmpgt_epi32(k, i_hi);
    __m256i s_lo = _mm256_load_si256((const __m256i *)(const void *)lane_salt);
    __m256i s_hi = _mm256_load_si256((const __m256i *)(const void *)(lane_salt + 8));
    __m256i b_lo = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(x, s_lo), 27));
    __m256i b_hi = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(x, s_hi), 27));
    *lo = _mm256_and_si256(b_lo, act_lo);
    *hi = _mm256_and_si256(b_hi, act_hi);
}

__attribute__((target("avx2"))) static bool add_avx2(bk_filter_t *f, bk_hash_t h)
{
    __m256i *line = (__m256i *)(void *)line_of(f, h);
    __m256i lo, hi;
    key_masks(f, h, &lo, &hi);
    __m256i w_lo = _mm256_load_si256(line), w_hi = _mm256_load_si256(line + 1);
    bool present = _mm256_testc_si256(w_lo, lo) & _mm256_testc_si256(w_hi, hi);
    _mm256_store_si256(line, _mm256_or_si256(w_lo, lo));
    _mm256_store_si256(line + 1, _mm256_or_si256(w_hi, hi));
    return !present;
}

__attribute__((target("avx2"))) static bool contains_avx2(const bk_filter_t *f, bk_hash_t h)
{
    const __m256i *line = (const __m256i *)(const void *)line_of(f, h);
    __m256i lo, hi;
    key_masks(f, h, &lo, &hi);
    return _mm256_testc_si256(_mm256_load_si256(line), lo) &
           _mm256_testc_si256(_mm256_load_si256(line + 1), hi);
}
#endif

bool bki_blocked_add(bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (BKI_LIKELY(have_avx2 && !force_scalar))
        return add_avx2(f, h);
#endif
    return bki_blocked_add_scalar(f, h);
}

bool bki_blocked_contains(const bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (BKI_LIKELY(have_avx2 && !force_scalar))
        return contains_avx2(f, h);
#endif
    return bki_blocked_contains_scalar(f, h);
}

bool bki_blocked_add_atomic(bk_filter_t *f, bk_hash_t h)
{
    uint32_t *w = line_of(f, h);
    bki_lanes_t l = bki_lanes_of(h);
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
