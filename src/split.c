/*
 * Split-block Bloom filters (kind "split"): the layout of Apache Parquet's
 * Bloom filters, the fastest one-key filter published.
 *
 * The payload is an array of 256-bit blocks, each eight 32-bit words. A key
 * sets exactly one bit in each of its block's eight words, so a lookup is
 * one 32-byte load, and with AVX2 one multiply, one shift, one variable
 * shift and one test. A blocked filter's 512-bit line with its 16 lanes
 * takes twice that work per key (it pays for a k chosen per error rate and
 * for lines that hold twice the keys, so it uses a few percent fewer bits
 * at 1% and far fewer below 0.2%); in the caches, where the work is the
 * cost, split's one-key adds and lookups measured 1.2-1.3x as fast as
 * blocked's (docs/BENCHMARKS.md), and on a large filter more one-key calls
 * overlap their cache misses. It is the default kind where its space
 * stays close to blocked's (kinds.c, bki_kind_default: 0.4% to 2%).
 *
 * Layout (a stable promise, docs/FORMAT.md):
 *   block = reduce(h.hi, blocks)     one of `blocks` 32-byte blocks
 *   x     = low 32 bits of h.lo
 *   word i (0 <= i < 8) gets bit (x * SALT[i]) >> 27
 * with Parquet's eight salts; k is always 8. Parquet picks the block from
 * the top 32 bits of a 64-bit hash, (h >> 32) * blocks >> 32; the 64-bit
 * reduce here reaches every block of a filter past 2^32 blocks (128 GB) and
 * is the same operation at the sizes both can have.
 *
 * Blocks are aligned to 32 bytes (payloads start on 64), two to a cache
 * line: a key still costs one memory access.
 */
#include "batch.h"
#include "onekey.h"

#define SPLIT_BLOCK_BYTES 32u
#define SPLIT_WORDS 8u

/* The salts of the Parquet specification (BloomFilter.md, "Technical
 * Approach"), one odd multiplier per word. Aligned for the AVX2 load. */
static const uint32_t split_salt[SPLIT_WORDS] __attribute__((aligned(32))) = {
    0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
    0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u,
};

/* Eight 1s, loaded as a vector by one-key lookups: left to itself the
 * compiler builds the constant in three instructions of every call (AVX2
 * has no broadcast from a general register), where one load from L1 does
 * (one-key lookups in cache 1.05x -> 0.96x a split-block filter's). Adds
 * gained nothing from it in the same runs (1.13-1.16x without, 1.19-1.20x
 * with), and loops hoist the constant out, so adds and batches build it. */
static const uint32_t split_one[SPLIT_WORDS] __attribute__((aligned(32))) = {1, 1, 1, 1,
                                                                              1, 1, 1, 1};

static inline uint32_t *block_of(const bk_filter_t *f, uint64_t hi)
{
    return (uint32_t *)(void *)(f->data + bki_reduce(hi, f->lines) * SPLIT_BLOCK_BYTES);
}

/* The key's bit in word i: the top 5 bits of a multiply-shift hash of x. */
static inline uint32_t word_bit(uint32_t x, uint32_t i)
{
    return UINT32_C(1) << ((x * split_salt[i]) >> 27);
}

/* Sets the key's bits in block w; true if one was clear (the key is new). */
static inline bool put_scalar(uint32_t *w, uint64_t lo)
{
    uint32_t missing = 0;
    for (uint32_t i = 0; i < SPLIT_WORDS; i++) {
        uint32_t bit = word_bit((uint32_t)lo, i);
        missing |= ~w[i] & bit;
        w[i] |= bit;
    }
    return missing != 0;
}

static inline bool probe_scalar(const uint32_t *w, uint64_t lo)
{
    uint32_t missing = 0;
    for (uint32_t i = 0; i < SPLIT_WORDS; i++)
        missing |= ~w[i] & word_bit((uint32_t)lo, i);
    return missing == 0;
}

#ifdef BKI_HAVE_X86
/* The key's eight bits as one 256-bit mask, one per word; `one` holds eight
 * 1s (see split_one). */
__attribute__((target("avx2"))) static inline __m256i key_mask(uint64_t lo, __m256i one)
{
    const __m256i salt = _mm256_load_si256((const __m256i *)(const void *)split_salt);
    __m256i shift = _mm256_srli_epi32(_mm256_mullo_epi32(_mm256_set1_epi32((int)lo), salt), 27);
    return _mm256_sllv_epi32(one, shift);
}

__attribute__((target("avx2"))) static inline bool put_avx2(uint32_t *w, uint64_t lo)
{
    __m256i *block = (__m256i *)(void *)w;
    __m256i mask = key_mask(lo, _mm256_set1_epi32(1)), old = _mm256_load_si256(block);
    _mm256_store_si256(block, _mm256_or_si256(old, mask));
    return !_mm256_testc_si256(old, mask);
}

__attribute__((target("avx2"))) static inline bool probe_avx2(const uint32_t *w, uint64_t lo)
{
    return _mm256_testc_si256(_mm256_load_si256((const __m256i *)(const void *)w),
                              key_mask(lo, _mm256_set1_epi32(1)));
}

/* probe_avx2 for one key per call, its 1s loaded (split_one). */
__attribute__((target("avx2"))) static inline bool probe_avx2_one(const uint32_t *w, uint64_t lo)
{
    __m256i one;
    __asm__("vmovdqa %1, %0" : "=x"(one) : "m"(split_one)); /* a load, kept one */
    return _mm256_testc_si256(_mm256_load_si256((const __m256i *)(const void *)w),
                              key_mask(lo, one));
}
#endif

/* ---- one key per call (onekey.h) ---- */

#define DEFINE_SPLIT_PROBES(suffix, attr, probe, put)                                              \
    attr static inline bool probe_##suffix##_key(const bk_filter_t *f, uint64_t lo, uint64_t hi)   \
    {                                                                                              \
        return probe(block_of(f, hi), lo);                                                         \
    }                                                                                              \
    attr static inline bool put_##suffix##_key(const bk_filter_t *f, uint64_t lo, uint64_t hi)     \
    {                                                                                              \
        return put(block_of(f, hi), lo);                                                           \
    }

DEFINE_SPLIT_PROBES(scalar, , probe_scalar, put_scalar)
DEFINE_HASH_CALLS(split_scalar, , probe_scalar_key)
DEFINE_KEY_CALLS(split_scalar, __attribute__((flatten)), probe_scalar_key, put_scalar_key)
#ifdef BKI_HAVE_X86
DEFINE_SPLIT_PROBES(avx2, __attribute__((target("avx2"))), probe_avx2_one, put_avx2)
DEFINE_HASH_CALLS(split_avx2, __attribute__((target("avx2"))), probe_avx2_key)
DEFINE_KEY_CALLS(split_avx2, __attribute__((target("avx2"), flatten)), probe_avx2_key,
                 put_avx2_key)
#endif

void bki_split_bind(bk_filter_t *f)
{
    BIND(f, split);
}

/* ---- the kind table's operations (array.c) ---- */

bool bki_split_add(bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return put_avx2(block_of(f, h.hi), h.lo);
#endif
    return put_scalar(block_of(f, h.hi), h.lo);
}

bool bki_split_contains(const bk_filter_t *f, bk_hash_t h)
{
#ifdef BKI_HAVE_X86
    if (USE_AVX2)
        return probe_avx2(block_of(f, h.hi), h.lo);
#endif
    return probe_scalar(block_of(f, h.hi), h.lo);
}

void bki_split_prefetch(const bk_filter_t *f, bk_hash_t h)
{
    __builtin_prefetch(block_of(f, h.hi));
}

static uint32_t split_reads(const bk_filter_t *f, bk_hash_t h, uint64_t *off)
{
    off[0] = (uint64_t)((const uint8_t *)block_of(f, h.hi) - f->data);
    return 1;
}

/* Atomic ORs, skipping the locked RMW where the bit is already set (the
 * common case in a filled filter; it keeps the line shared between cores). */
bool bki_split_add_atomic(bk_filter_t *f, bk_hash_t h)
{
    uint32_t *w = block_of(f, h.hi), missing = 0;
    for (uint32_t i = 0; i < SPLIT_WORDS; i++) {
        uint32_t bit = word_bit((uint32_t)h.lo, i);
        if (__atomic_load_n(&w[i], __ATOMIC_RELAXED) & bit)
            continue;
        missing |= ~__atomic_fetch_or(&w[i], bit, __ATOMIC_RELAXED) & bit;
    }
    return missing != 0;
}

/* ---- batches: the pipeline of batch.h, once per instruction set ---- */

/* One pending key: its block (computed once, for the prefetch) and the
 * half of its hash that picks the bits. */
typedef struct pending {
    uint32_t *block;
    uint64_t lo;
} pending_t;

static inline pending_t locate(const bk_filter_t *f, bk_hash_t h)
{
    pending_t p = {block_of(f, h.hi), h.lo};
    return p;
}

static inline void prefetch(const bk_filter_t *f, pending_t p)
{
    (void)f;
    __builtin_prefetch(p.block);
}

#define PUT_SCALAR(f, p) ((void)(f), put_scalar((p).block, (p).lo))
#define PROBE_SCALAR(f, p) ((void)(f), probe_scalar((p).block, (p).lo))
#define PUT_AVX2(f, p) ((void)(f), put_avx2((p).block, (p).lo))
#define PROBE_AVX2(f, p) ((void)(f), probe_avx2((p).block, (p).lo))
BKI_DEFINE_KIND_BATCHES(split, pending_t, locate, prefetch, PUT_SCALAR, PROBE_SCALAR, PUT_AVX2,
                        PROBE_AVX2)

/* ---- the kind table's row (kinds.c) ---- */

const bki_kind_ops_t bki_split_ops = {
    .add = bki_split_add,
    .contains = bki_split_contains,
    .prefetch = bki_split_prefetch,
    .reads = split_reads,
    .add_atomic = bki_split_add_atomic,
    .add_batch = bki_split_add_batch,
    .contains_batch = bki_split_contains_batch,
    .add_hash_batch = bki_split_add_hash_batch,
    .contains_hash_batch = bki_split_contains_hash_batch,
    .bind = bki_split_bind,
};
