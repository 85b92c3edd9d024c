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
 * same bits; tests check that both paths build bit-identical filters. The
 * AVX2 path is chosen once at load time from the CPU's feature bits, as
 * function pointers, so a probe does not re-test the CPU. Batched adds and
 * lookups have their own loops here, compiled per path, with the hash and
 * the probe inlined.
 */
#include "internal.h"

#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

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

/* Which probe implementation runs: chosen once at load time from the
 * CPU's feature bits (the best one available), or lowered by tests. */
static int simd_available = BKI_SIMD_SCALAR;
static int simd_level = BKI_SIMD_SCALAR;

/* active_lanes[k][b]: the lanes a key probes, as a 16-bit mask, for k and
 * b = bits 32..38 of h.lo (first lane and stride, see above). Replaces
 * computing each lane's probe number with vector multiplies in the SIMD
 * path: one load instead. 4.3 KB; a filter uses the 256 bytes of its k. */
static uint16_t active_lanes[BKI_BLOCKED_MAX_K + 1][128];

static void build_active_lanes(void)
{
    for (uint32_t k = 0; k <= BKI_BLOCKED_MAX_K; k++) {
        for (uint32_t b = 0; b < 128; b++) {
            bk_hash_t h = {(uint64_t)b << 32, 0};
            bki_lanes_t l = bki_lanes_of(h);
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

typedef bool (*contains_fn_t)(const bk_filter_t *f, bk_hash_t h);
typedef bool (*add_fn_t)(bk_filter_t *f, bk_hash_t h);
typedef size_t (*batch_fn_t)(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out);
typedef uint64_t (*add_batch_fn_t)(bk_filter_t *f, const bk_key_t *keys, size_t n,
                                   bool *was_new);

static void select_level(int level);

__attribute__((constructor)) static void detect_cpu(void)
{
    build_active_lanes();
#ifdef BKI_HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        simd_available = BKI_SIMD_AVX2;
#endif
    select_level(simd_available);
}

bool bki_blocked_have_avx2(void)
{
    return simd_available >= BKI_SIMD_AVX2;
}

int bki_blocked_simd_available(void)
{
    return simd_available;
}

int bki_blocked_set_simd(int level)
{
    int was = simd_level;
    if (level > simd_available)
        level = simd_available;
    select_level(level < BKI_SIMD_SCALAR ? BKI_SIMD_SCALAR : level);
    return was;
}

bool bki_blocked_force_scalar(bool force)
{
    bool was = simd_level != BKI_SIMD_SCALAR;
    select_level(force ? BKI_SIMD_SCALAR : simd_available);
    return was;
}

static inline const uint32_t *line_at(const bk_filter_t *f, uint64_t hi)
{
    return (const uint32_t *)(const void *)(f->data + bki_reduce(hi, f->lines) * BKI_LINE_BYTES);
}

/* The same line, writable: the filter's payload is (adds take f non-const). */
static inline uint32_t *line_of(const bk_filter_t *f, bk_hash_t h)
{
    return (uint32_t *)(uintptr_t)line_at(f, h.hi);
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

/* Sets a key's bits in its line w; true if one was clear (the key is new). */
static inline bool put_scalar(const bk_filter_t *f, uint32_t *w, uint64_t lo)
{
    bk_hash_t h = {lo, 0};
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

bool bki_blocked_add_scalar(bk_filter_t *f, bk_hash_t h)
{
    return put_scalar(f, line_of(f, h), h.lo);
}

/* The probes take the key's line and the low hash half separately, so the
 * batch loop computes each line once (for the prefetch) and reuses it. */
static inline bool probe_scalar(const bk_filter_t *f, const uint32_t *w, uint64_t lo)
{
    bk_hash_t h = {lo, 0};
    bki_lanes_t l = bki_lanes_of(h);
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t lane = bki_lane(l, i);
        uint32_t bit = lane_bit(l, lane);
        if (!(w[lane] & bit))
            return false;
    }
    return true;
}

bool bki_blocked_contains_scalar(const bk_filter_t *f, bk_hash_t h)
{
    return probe_scalar(f, line_at(f, h.hi), h.lo);
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
    __m256i s_lo = _mm256_load_si256((const __m256i *)(const void *)lane_salt);
    __m256i s_hi = _mm256_load_si256((const __m256i *)(const void *)(lane_salt + 8));
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

__attribute__((target("avx2"))) static bool add_avx2(bk_filter_t *f, bk_hash_t h)
{
    return put_avx2(f, line_of(f, h), h.lo);
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

__attribute__((target("avx2"))) static bool contains_avx2(const bk_filter_t *f, bk_hash_t h)
{
    return probe_avx2(f, line_at(f, h.hi), h.lo);
}
#endif

/* ---- batched lookups ---- */

static const unsigned char empty_key[1];

/* The key's hash, as bk_filter_hash computes it; XXH3 (the default) is
 * inlined into the batch loop. */
static inline bk_hash_t key_hash(const bk_filter_t *f, const bk_key_t *key)
{
    if (BKI_LIKELY(f->hash == BK_HASH_XXH3)) {
        const void *p = key->ptr ? key->ptr : empty_key;
        XXH128_hash_t r = XXH3_128bits_withSeed(p, key->len, f->seed);
        bk_hash_t h = {r.low64, r.high64};
        return h;
    }
    return bk_filter_hash(f, key->ptr, key->len);
}

/* One pending key of the pipeline: its line (already requested) and the
 * half of its hash that picks the bits. */
typedef struct pending {
    const uint32_t *line;
    uint64_t lo;
} pending_t;

static inline pending_t hash_prefetch(const bk_filter_t *f, const bk_key_t *key)
{
    bk_hash_t h = key_hash(f, key);
    pending_t p = {line_at(f, h.hi), h.lo};
    __builtin_prefetch(p.line);
    return p;
}

/* The batch loop for one probe implementation, compiled for its
 * instruction set so the hash and the probe inline into it. Large payloads
 * run the rolling pipeline described in filter.c (hash and prefetch
 * BKI_BATCH_AHEAD keys ahead of the probe), and also request the bytes of
 * the key after next round (2 * BKI_BATCH_AHEAD ahead of the probe): with
 * the memory system busy with the filter's lines, long keys such as URLs
 * otherwise arrive late for the hash (on a 272 MB filter this took batched
 * 66-byte URL lookups from about 38 to 31 ns; 8-byte keys are unchanged).
 * Small payloads are probed directly. Results are those of the
 * one-at-a-time calls. */
#define DEFINE_CONTAINS_BATCH(name, attr, probe)                                            \
    attr static size_t name(const bk_filter_t *f, const bk_key_t *keys, size_t n, bool *out) \
    {                                                                                       \
        size_t hits = 0, i = 0;                                                             \
        if (f->nbytes < BKI_BATCH_PIPELINE_MIN_BYTES) {                                     \
            for (; i < n; i++) {                                                            \
                bk_hash_t h = key_hash(f, &keys[i]);                                        \
                bool hit = probe(f, line_at(f, h.hi), h.lo);                                \
                out[i] = hit;                                                               \
                hits += hit;                                                                \
            }                                                                               \
            return hits;                                                                    \
        }                                                                                   \
        pending_t ring[BKI_BATCH_AHEAD];                                                    \
        size_t ahead = n < BKI_BATCH_AHEAD ? n : BKI_BATCH_AHEAD;                           \
        for (size_t j = 0; j < ahead; j++)                                                  \
            ring[j] = hash_prefetch(f, &keys[j]);                                           \
        for (; i + BKI_BATCH_AHEAD < n; i++) {                                              \
            if (i + 2 * BKI_BATCH_AHEAD < n)                                                \
                __builtin_prefetch(keys[i + 2 * BKI_BATCH_AHEAD].ptr);                      \
            pending_t p = ring[i & (BKI_BATCH_AHEAD - 1)];                                  \
            ring[i & (BKI_BATCH_AHEAD - 1)] = hash_prefetch(f, &keys[i + BKI_BATCH_AHEAD]); \
            bool hit = probe(f, p.line, p.lo);                                              \
            out[i] = hit;                                                                   \
            hits += hit;                                                                    \
        }                                                                                   \
        for (; i < n; i++) {                                                                \
            pending_t p = ring[i & (BKI_BATCH_AHEAD - 1)];                                  \
            bool hit = probe(f, p.line, p.lo);                                              \
            out[i] = hit;                                                                   \
            hits += hit;                                                                    \
        }                                                                                   \
        return hits;                                                                        \
    }

/* The same pipeline for adds. Keys are added in array order, so a key
 * repeated within the batch is new only the first time, as with single
 * calls; prefetching a line that an earlier key of the ring will still
 * write is harmless. Returns the number of new keys. */
#define DEFINE_ADD_BATCH(name, attr, put)                                                     \
    attr static uint64_t name(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new) \
    {                                                                                         \
        uint64_t fresh = 0;                                                                   \
        size_t i = 0;                                                                         \
        if (f->nbytes < BKI_BATCH_PIPELINE_MIN_BYTES) {                                       \
            for (; i < n; i++) {                                                              \
                bk_hash_t h = key_hash(f, &keys[i]);                                          \
                bool added = put(f, line_of(f, h), h.lo);                                     \
                if (was_new)                                                                  \
                    was_new[i] = added;                                                       \
                fresh += added;                                                               \
            }                                                                                 \
            return fresh;                                                                     \
        }                                                                                     \
        pending_t ring[BKI_BATCH_AHEAD];                                                      \
        size_t ahead = n < BKI_BATCH_AHEAD ? n : BKI_BATCH_AHEAD;                             \
        for (size_t j = 0; j < ahead; j++)                                                    \
            ring[j] = hash_prefetch(f, &keys[j]);                                             \
        for (; i < n; i++) {                                                                  \
            if (i + 2 * BKI_BATCH_AHEAD < n)                                                  \
                __builtin_prefetch(keys[i + 2 * BKI_BATCH_AHEAD].ptr);                        \
            pending_t p = ring[i & (BKI_BATCH_AHEAD - 1)];                                    \
            if (i + BKI_BATCH_AHEAD < n)                                                      \
                ring[i & (BKI_BATCH_AHEAD - 1)] = hash_prefetch(f, &keys[i + BKI_BATCH_AHEAD]); \
            bool added = put(f, (uint32_t *)(uintptr_t)p.line, p.lo);                        \
            if (was_new)                                                                      \
                was_new[i] = added;                                                           \
            fresh += added;                                                                   \
        }                                                                                     \
        return fresh;                                                                         \
    }

DEFINE_ADD_BATCH(add_batch_scalar, , put_scalar)
#ifdef BKI_HAVE_X86
DEFINE_ADD_BATCH(add_batch_avx2, __attribute__((target("avx2"))), put_avx2)
#endif

DEFINE_CONTAINS_BATCH(batch_scalar, , probe_scalar)
#ifdef BKI_HAVE_X86
DEFINE_CONTAINS_BATCH(batch_avx2, __attribute__((target("avx2"))), probe_avx2)
#endif

/* The selected implementation. The scalar one until the load-time check
 * has run, so a call from another constructor is still answered. Changed
 * only at load time and by tests (not while other threads probe). */
static contains_fn_t contains_fn = bki_blocked_contains_scalar;
static add_fn_t add_fn = bki_blocked_add_scalar;
static batch_fn_t batch_fn = batch_scalar;
static add_batch_fn_t add_batch_fn = add_batch_scalar;

static void select_level(int level)
{
    simd_level = level;
    contains_fn = bki_blocked_contains_scalar;
    add_fn = bki_blocked_add_scalar;
    batch_fn = batch_scalar;
    add_batch_fn = add_batch_scalar;
#ifdef BKI_HAVE_X86
    if (level == BKI_SIMD_AVX2) {
        contains_fn = contains_avx2;
        add_fn = add_avx2;
        batch_fn = batch_avx2;
        add_batch_fn = add_batch_avx2;
    }
#endif
}

bool bki_blocked_add(bk_filter_t *f, bk_hash_t h)
{
    return add_fn(f, h);
}

bool bki_blocked_contains(const bk_filter_t *f, bk_hash_t h)
{
    return contains_fn(f, h);
}

uint64_t bki_blocked_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n, bool *was_new)
{
    return add_batch_fn(f, keys, n, was_new);
}

size_t bki_blocked_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n,
                                  bool *out)
{
    return batch_fn(f, keys, n, out);
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
