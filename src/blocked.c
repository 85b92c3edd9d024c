/*
 * Blocked Bloom filters: the default kind (one line per key) and blocked2
 * (two lines per key, for low error rates; its own section below).
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
 * computed in two 8-lane registers, masked to the k active lanes (two
 * 256-bit masks read from a table indexed by k and the 7 hash bits that fix
 * first lane and stride), and tested against the line with one vptest. The
 * scalar path computes the same bits; tests check that both paths build
 * bit-identical filters. Which path runs is decided in cpu.c
 * (bki_simd_level). Batched adds and lookups instantiate the batch pipeline
 * (batch.h) once per path, and one-key adds and lookups have their own
 * functions per path, both with the hash and the probe inlined. The lane
 * salts and line addressing are layout facts shared with the counting
 * filter (layout.c, internal.h).
 */
#include "batch.h"
#include "onekey.h"

#include <string.h>

/* active_masks[k][b]: the key's 16 lanes as 32-bit words, 1 in the lanes
 * it probes and 0 elsewhere, for k and b = bits 32..38 of h.lo (first lane
 * and stride, see above). The AVX2 probe shifts these two 256-bit rows left
 * by each lane's bit number, which gives the key's bit in its active lanes
 * and 0 in the others in one instruction per half. That is three
 * instructions fewer per key than shifting a vector of 1s and masking it
 * with all-ones rows, and nine fewer than expanding a 16-bit lane mask in
 * registers; it matters most for one-key calls: on a large filter, the
 * fewer instructions a probe takes, the more independent probes the CPU
 * keeps in flight while their lines come from memory, and in the cache the
 * fewer it takes the faster it runs. 64 bytes per (k, b): 8 KB per k, of
 * which a filter uses its own k's; 136 KB in all, built once at load time. */
static uint32_t active_masks[BKI_BLOCKED_MAX_K + 1][128][BKI_LINE_LANES]
    __attribute__((aligned(64)));

static void build_active_masks(void)
{
    for (uint32_t k = 0; k <= BKI_BLOCKED_MAX_K; k++) {
        for (uint32_t b = 0; b < 128; b++) {
            bki_lanes_t l = bki_lanes_of((uint64_t)b << 32);
            for (uint32_t i = 0; i < k; i++)
                active_masks[k][b][bki_lane(l, i)] = 1;
        }
    }
}

/* Built before main(); the table is read-only afterwards. */
__attribute__((constructor)) static void init_tables(void)
{
    build_active_masks();
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
/* The key's bit in each of its k active lanes, 0 in the other lanes: the
 * lane's bit number, (x * SALT[lane]) >> 27, shifts the row's 1s. The row
 * offset is b * 64 bytes, taken straight from the hash bits. */
__attribute__((target("avx2"))) static inline void key_masks(const bk_filter_t *f, uint64_t lo,
                                                             __m256i *mlo, __m256i *mhi)
{
    const __m256i *act = (const __m256i *)(const void *)((const char *)f->lane_rows +
                                                         ((lo >> 26) & (UINT64_C(127) << 6)));
    const __m256i x = _mm256_set1_epi32((int)(uint32_t)lo);
    __m256i s_lo = _mm256_load_si256((const __m256i *)(const void *)bki_lane_salt);
    __m256i s_hi = _mm256_load_si256((const __m256i *)(const void *)(bki_lane_salt + 8));
    *mlo = _mm256_sllv_epi32(_mm256_load_si256(act),
                             _mm256_srli_epi32(_mm256_mullo_epi32(x, s_lo), 27));
    *mhi = _mm256_sllv_epi32(_mm256_load_si256(act + 1),
                             _mm256_srli_epi32(_mm256_mullo_epi32(x, s_hi), 27));
}

/* The key's bits that the line lacks, both halves in one register: one
 * test says whether any is missing (two tests, one per half, measured the
 * same; this is one instruction fewer in the one-key path). */
__attribute__((target("avx2"))) static inline __m256i missing_bits(__m256i w_lo, __m256i w_hi,
                                                                   __m256i m_lo, __m256i m_hi)
{
    return _mm256_or_si256(_mm256_andnot_si256(w_lo, m_lo), _mm256_andnot_si256(w_hi, m_hi));
}

__attribute__((target("avx2"))) static inline bool put_avx2(const bk_filter_t *f, uint32_t *w,
                                                            uint64_t key_lo)
{
    __m256i *line = (__m256i *)(void *)w;
    __m256i lo, hi;
    key_masks(f, key_lo, &lo, &hi);
    __m256i w_lo = _mm256_load_si256(line), w_hi = _mm256_load_si256(line + 1);
    __m256i miss = missing_bits(w_lo, w_hi, lo, hi);
    _mm256_store_si256(line, _mm256_or_si256(w_lo, lo));
    _mm256_store_si256(line + 1, _mm256_or_si256(w_hi, hi));
    return !_mm256_testz_si256(miss, miss);
}

__attribute__((target("avx2"))) static inline bool probe_avx2(const bk_filter_t *f,
                                                              const uint32_t *w, uint64_t lo)
{
    const __m256i *line = (const __m256i *)(const void *)w;
    __m256i mlo, mhi;
    key_masks(f, lo, &mlo, &mhi);
    __m256i miss = missing_bits(_mm256_load_si256(line), _mm256_load_si256(line + 1), mlo, mhi);
    return _mm256_testz_si256(miss, miss);
}
#endif

/* ---- the operations ---- */

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

/* ---- one key per call ---- */

/* bk_filter_add and bk_filter_contains on a blocked filter: the key's hash
 * and the probe in one function per instruction set, with nothing called
 * per key (onekey.h says why). */

/* A key's probe and put from its two hash halves, one line (blocked: the
 * line from hi, the bits from lo) or two (blocked2: the same, and the line
 * from lo with the bits from hi; see its section below). Both lines of
 * blocked2 are always probed: & and |, not && and ||, so the two loads are
 * independent and no branch waits for the first line. */
#define DEFINE_KEY_PROBES(suffix, attr, probe, put)                                                \
    attr static inline bool probe1_##suffix(const bk_filter_t *f, uint64_t lo, uint64_t hi)        \
    {                                                                                              \
        return probe(f, line_at(f, hi), lo);                                                       \
    }                                                                                              \
    attr static inline bool probe2_##suffix(const bk_filter_t *f, uint64_t lo, uint64_t hi)        \
    {                                                                                              \
        return (int)probe(f, line_at(f, hi), lo) & (int)probe(f, line_at(f, lo), hi);              \
    }                                                                                              \
    attr static inline bool put1_##suffix(const bk_filter_t *f, uint64_t lo, uint64_t hi)          \
    {                                                                                              \
        return put(f, bki_line_of(f, hi), lo);                                                     \
    }                                                                                              \
    attr static inline bool put2_##suffix(const bk_filter_t *f, uint64_t lo, uint64_t hi)          \
    {                                                                                              \
        return (int)put(f, bki_line_of(f, hi), lo) | (int)put(f, bki_line_of(f, lo), hi);          \
    }

DEFINE_KEY_PROBES(scalar, , probe_scalar, put_scalar)
#ifdef BKI_HAVE_X86
DEFINE_KEY_PROBES(avx2, __attribute__((target("avx2"))), probe_avx2, put_avx2)
#endif

DEFINE_HASH_CALLS(one_scalar, , probe1_scalar)
DEFINE_HASH_CALLS(two_scalar, , probe2_scalar)
#ifdef BKI_HAVE_X86
DEFINE_HASH_CALLS(one_avx2, __attribute__((target("avx2"))), probe1_avx2)
DEFINE_HASH_CALLS(two_avx2, __attribute__((target("avx2"))), probe2_avx2)
#endif

DEFINE_KEY_CALLS(one_scalar, __attribute__((flatten)), probe1_scalar, put1_scalar)
DEFINE_KEY_CALLS(two_scalar, __attribute__((flatten)), probe2_scalar, put2_scalar)
#ifdef BKI_HAVE_X86
DEFINE_KEY_CALLS(one_avx2, __attribute__((target("avx2"), flatten)), probe1_avx2, put1_avx2)
DEFINE_KEY_CALLS(two_avx2, __attribute__((target("avx2"), flatten)), probe2_avx2, put2_avx2)
#endif

/* bk_filter_add, bk_filter_contains and bk_filter_contains_hash call the
 * bound functions with no check of kind, hash, instruction set or read-only
 * flag per key (and the probe finds its active-lane rows through
 * f->lane_rows, not from k): each such check is a load, and loads limit how
 * many one-key calls overlap (see DEFINE_KEY_CALLS). The instruction set is
 * the one chosen when the filter was made: the test hook bki_simd_set()
 * applies to filters made after it. */
void bki_blocked_bind(bk_filter_t *f)
{
    if (f->k <= BKI_BLOCKED_MAX_K)
        f->lane_rows = active_masks[f->k][0];
    if (bki_layout_of(f->kind)->key_lines == 1) /* blocked; blocked2 has 2 */
        BIND(f, one);
    else
        BIND(f, two);
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
#define PUT_AVX2(f, p) put_avx2(f, (p).line, (p).lo)
#define PROBE_AVX2(f, p) probe_avx2(f, (p).line, (p).lo)
BKI_DEFINE_KIND_BATCHES(blocked, pending_t, locate, prefetch, PUT_SCALAR, PROBE_SCALAR, PUT_AVX2,
                        PROBE_AVX2)

/* Sets a key's bits in line w with atomic ORs; true if one was clear. */
static bool put_atomic(const bk_filter_t *f, uint32_t *w, uint64_t lo)
{
    bki_lanes_t l = bki_lanes_of(lo);
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

bool bki_blocked_add_atomic(bk_filter_t *f, bk_hash_t h)
{
    return put_atomic(f, line_of(f, h), h.lo);
}

/* ---- blocked2: a key's probes over two lines ----
 *
 * At low error rates one line per key costs space: a line holds few keys,
 * their number varies a lot from line to line (Poisson), and the crowded
 * lines set the FPR, so at 1e-6 a blocked filter needs 1.38x the classic
 * optimum's bits. blocked2 gives each key k probes in each of two lines,
 * chosen independently: a lookup's answer is the product of two lines'
 * answers, which evens out the crowding (1.09x at 1e-6, 1.16x at 1e-8) for
 * the price of a second, independent memory access per key (issued at the
 * same time as the first, so a lookup waits about as long; the memory
 * system carries twice the lines).
 *
 * Layout (a stable promise, docs/FORMAT.md): line A = reduce(hi, lines),
 * probed exactly like a blocked filter's line with the bits of lo; line B
 * = reduce(lo, lines), probed the same way with the bits of hi. The two
 * halves of the hash swap roles, so no key needs more hashing than a
 * blocked filter, and each line's index and in-line bits still come from
 * different halves. A and B may coincide (one key in 1 / lines). */

static inline uint32_t *line_b(const bk_filter_t *f, bk_hash_t h)
{
    return bki_line_of(f, h.lo);
}

bool bki_blocked2_add(bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return put2_avx2(f, h.lo, h.hi);
#endif
    return put2_scalar(f, h.lo, h.hi);
}

bool bki_blocked2_contains(const bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return probe2_avx2(f, h.lo, h.hi);
#endif
    return probe2_scalar(f, h.lo, h.hi);
}

bool bki_blocked2_add_atomic(bk_filter_t *f, bk_hash_t h)
{
    return (int)put_atomic(f, line_of(f, h), h.lo) | (int)put_atomic(f, line_b(f, h), h.hi);
}

void bki_blocked2_prefetch(const bk_filter_t *f, bk_hash_t h)
{
    __builtin_prefetch(line_of(f, h));
    __builtin_prefetch(line_b(f, h));
}

/* ---- the kind table's rows (kinds.c) ---- */

void bki_prefetch_line(const bk_filter_t *f, bk_hash_t h)
{
    __builtin_prefetch(bki_line_of(f, h.hi));
}

uint32_t bki_reads_line(const bk_filter_t *f, bk_hash_t h, uint64_t *off)
{
    off[0] = (uint64_t)((const uint8_t *)bki_line_of(f, h.hi) - f->data);
    return 1;
}

static uint32_t blocked2_reads(const bk_filter_t *f, bk_hash_t h, uint64_t *off)
{
    off[0] = (uint64_t)((const uint8_t *)line_of(f, h) - f->data);
    off[1] = (uint64_t)((const uint8_t *)line_b(f, h) - f->data);
    return 2;
}

const bki_kind_ops_t bki_blocked_ops = {
    .add = bki_blocked_add,
    .contains = bki_blocked_contains,
    .prefetch = bki_prefetch_line,
    .add_atomic = bki_blocked_add_atomic,
    .add_batch = bki_blocked_add_batch,
    .contains_batch = bki_blocked_contains_batch,
    .add_hash_batch = bki_blocked_add_hash_batch,
    .contains_hash_batch = bki_blocked_contains_hash_batch,
    .bind = bki_blocked_bind,
    .reads = bki_reads_line,
};

const bki_kind_ops_t bki_blocked2_ops = {
    .add = bki_blocked2_add,
    .contains = bki_blocked2_contains,
    .prefetch = bki_blocked2_prefetch,
    .add_atomic = bki_blocked2_add_atomic,
    .bind = bki_blocked_bind,
    .reads = blocked2_reads,
};
