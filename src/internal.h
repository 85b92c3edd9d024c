/*
 * Internal definitions shared by the library's modules; not installed.
 *
 * Every filter kind lives in one struct bk_filter so that the public API
 * has one handle type. Single-array kinds (blocked, classic, counting) use
 * the payload fields; a scalable filter uses `subs`, a chain of single-array
 * filters that it owns (or, when mapped, that borrow the parent's mapping).
 *
 * Payload bit order (also the file's): bit i of the payload is bit (i & 7)
 * of byte (i >> 3). On a little-endian host this is the same as bit (i & 63)
 * of 64-bit word (i >> 6), and bit (i & 31) of 32-bit word (i >> 5), which is
 * how the hot paths address it. Big-endian hosts are refused at compile time
 * rather than silently writing files other machines would misread.
 */
#ifndef BLOOMKIT_INTERNAL_H
#define BLOOMKIT_INTERNAL_H

#include "bloomkit/bloomkit.h"

#include <stdatomic.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "bloomkit supports little-endian hosts only (see docs/FORMAT.md)"
#endif

#define BKI_HIDDEN __attribute__((visibility("hidden")))
#define BKI_LIKELY(x) __builtin_expect(!!(x), 1)
#define BKI_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* One 64-byte cache line: the unit of blocked and counting filters. */
#define BKI_LINE_BYTES 64u
#define BKI_LINE_BITS 512u
#define BKI_LINE_LANES 16u       /* 32-bit lanes per line */
#define BKI_LINE_COUNTERS 128u   /* 4-bit counters per line */
#define BKI_BLOCKED_MAX_K 16u    /* one probe per lane at most */
#define BKI_CLASSIC_MAX_K 64u

/* Largest payload we agree to allocate or load: 2^46 bytes (64 TiB). Also
 * bounds every multiplication of sizes so none can overflow 64 bits. */
#define BKI_MAX_PAYLOAD_BYTES (UINT64_C(1) << 46)

__extension__ typedef unsigned __int128 bki_u128;

/* Range reduction without '%': maps a uniform 64-bit x to [0, n). */
static inline uint64_t bki_reduce(uint64_t x, uint64_t n)
{
    return (uint64_t)(((bki_u128)x * n) >> 64);
}

/* How a payload's memory was obtained, so free() undoes the right thing. */
typedef enum bki_mem {
    BKI_MEM_NONE = 0,
    BKI_MEM_HEAP,      /* aligned_alloc */
    BKI_MEM_ANON,      /* anonymous mmap (large; asks for huge pages) */
    BKI_MEM_BORROWED   /* points into memory owned by someone else */
} bki_mem_t;

struct bk_filter {
    bk_kind_t kind;
    bk_hash_id_t hash;
    uint64_t seed;
    uint64_t capacity; /* n it was sized for */
    double fpr;        /* p it was sized for */
    _Atomic uint64_t items; /* keys added that were new */

    /* single-array kinds */
    uint64_t cells;    /* bits, or counters for counting */
    uint64_t lines;    /* blocked, counting: 64-byte lines */
    uint32_t k;
    uint8_t *data;     /* 64-byte aligned */
    uint64_t nbytes;
    bki_mem_t mem;

    /* scalable */
    bk_filter_t **subs;
    uint32_t nsubs;
    uint32_t subs_cap;
    bk_kind_t sub_kind;
    double growth;
    double tightening;
    bool nonscaling;
    bool first_error_as_given;

    /* file mapping (bk_filter_open); owned by the outermost filter */
    void *map_base;
    uint64_t map_len;
    int map_fd;        /* -1 when not mapped */
    bool readonly;
};

/* Dense bitmaps over [0, n): 1 bit per value (bk_bitmap) or 2 bits per
 * value (bk_bitmap2: value v in bits 2(v mod 32)..+1 of word v/32, states
 * 0, 1, 2; 3 never occurs). words holds nbytes bytes, a multiple of 64. */
struct bk_bitmap {
    uint64_t n;
    uint64_t *words;
    uint64_t nbytes;
    bki_mem_t mem;
};

struct bk_bitmap2 {
    uint64_t n;
    uint64_t *words;
    uint64_t nbytes;
    bki_mem_t mem;
};

/* ---- alloc.c ---- */

/* Allocation-failure injection for tests: when > 0, each allocation
 * decrements it and the one that brings it to 0 fails. */
extern BKI_HIDDEN long bki_fail_countdown;

BKI_HIDDEN void *bki_malloc(size_t n);
BKI_HIDDEN void *bki_calloc(size_t count, size_t size);
BKI_HIDDEN void *bki_realloc(void *p, size_t n);
BKI_HIDDEN void bki_free(void *p);
/* A zeroed, 64-byte aligned payload; large ones are anonymous mappings with
 * transparent huge pages requested. */
BKI_HIDDEN uint8_t *bki_payload_alloc(uint64_t nbytes, bki_mem_t *mem);
BKI_HIDDEN void bki_payload_free(uint8_t *p, uint64_t nbytes, bki_mem_t mem);

/* ---- filter.c ---- */

/* Allocates a filter struct with zeroed payload of the given geometry.
 * kind is BLOCKED, CLASSIC or COUNTING; cells already rounded. */
BKI_HIDDEN bk_status_t bki_filter_new(bk_filter_t **out, bk_kind_t kind, uint64_t cells,
                                      uint32_t k, bk_hash_id_t hash, uint64_t seed);
/* Rounds a requested cell count to the kind's granularity; 0 on overflow. */
BKI_HIDDEN uint64_t bki_round_cells(bk_kind_t kind, uint64_t cells);
BKI_HIDDEN uint64_t bki_payload_bytes(bk_kind_t kind, uint64_t cells);
/* Popcount over the payload (counting: non-zero counters). */
BKI_HIDDEN uint64_t bki_cells_set(const bk_filter_t *f);

/* The in-line probe scheme shared by blocked and counting filters (the
 * full description is at the top of blocked.c): probe i of a key goes to
 * 32-bit lane (first + i * stride) mod 16 of its line, and within the lane
 * to the slot picked by the top bits of x * salt[lane]. */
typedef struct bki_lanes {
    uint32_t x, first, stride;
} bki_lanes_t;

static inline bki_lanes_t bki_lanes_of(bk_hash_t h)
{
    bki_lanes_t l;
    l.x = (uint32_t)h.lo;
    l.first = (uint32_t)(h.lo >> 32) & 15u;
    l.stride = ((uint32_t)(h.lo >> 36) & 7u) * 2u + 1u;
    return l;
}

static inline uint32_t bki_lane(bki_lanes_t l, uint32_t i)
{
    return (l.first + i * l.stride) & 15u;
}

/* Batch pipelines (filter.c, blocked.c): keys are hashed and their memory
 * requested BKI_BATCH_AHEAD keys ahead of the probe (a power of two: the
 * ring is indexed by mask); payloads under BKI_BATCH_PIPELINE_MIN_BYTES
 * stay in the caches and are probed directly. */
#define BKI_BATCH_AHEAD 32
#define BKI_BATCH_PIPELINE_MIN_BYTES (UINT64_C(1) << 20)

/* ---- blocked.c ---- */
BKI_HIDDEN bool bki_blocked_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_blocked_add_atomic(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_blocked_contains(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN const uint8_t *bki_blocked_line(const bk_filter_t *f, bk_hash_t h);
/* The portable scalar path, exposed so tests can compare it with AVX2. */
BKI_HIDDEN bool bki_blocked_add_scalar(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_blocked_contains_scalar(const bk_filter_t *f, bk_hash_t h);
/* Batched lookup of n keys (bk_filter_contains_batch for a blocked filter;
 * keys and out non-NULL when n > 0); returns the number of hits. */
BKI_HIDDEN size_t bki_blocked_contains_batch(const bk_filter_t *f, const bk_key_t *keys,
                                             size_t n, bool *out);
/* Batched add of n keys (bk_filter_add_batch for a writable blocked filter;
 * keys non-NULL when n > 0, was_new may be NULL); returns the number of new
 * keys. Does not touch the item count. */
BKI_HIDDEN uint64_t bki_blocked_add_batch(bk_filter_t *f, const bk_key_t *keys, size_t n,
                                          bool *was_new);
/* Forces the scalar path (for tests); returns whether a SIMD path was in use. */
BKI_HIDDEN bool bki_blocked_force_scalar(bool force);
BKI_HIDDEN bool bki_blocked_have_avx2(void);
/* The probe implementations, by instruction set. Tests select one with
 * set_simd (clamped to what the CPU has; returns the previous level). */
enum { BKI_SIMD_SCALAR = 0, BKI_SIMD_AVX2 = 1 };
BKI_HIDDEN int bki_blocked_simd_available(void);
BKI_HIDDEN int bki_blocked_set_simd(int level);
/* The 16 per-lane multipliers (shared with the counting filter's layout). */
BKI_HIDDEN const uint32_t *bki_blocked_salts(void);

/* ---- bloom.c (classic) ---- */
BKI_HIDDEN bool bki_classic_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_classic_add_atomic(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_classic_contains(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN void bki_classic_prefetch(const bk_filter_t *f, bk_hash_t h);

/* ---- counting.c ---- */
BKI_HIDDEN bool bki_counting_add(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bool bki_counting_contains(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN bk_status_t bki_counting_remove(bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN unsigned bki_counting_count(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN void bki_counting_union(bk_filter_t *dst, const bk_filter_t *src);
/* Forces the scalar path (for tests); returns whether AVX2 was in use. */
BKI_HIDDEN bool bki_counting_force_scalar(bool force);

/* ---- scalable.c ---- */
/* Longest chain: growth makes capacities geometric, so real chains are far
 * shorter; the limit bounds loops and loaders. */
#define BKI_SCALABLE_MAX_SUBS 128u
BKI_HIDDEN bk_status_t bki_scalable_create(bk_filter_t **out, uint64_t capacity, double fpr,
                                           const bk_options_t *opts, bk_hash_id_t hash,
                                           uint64_t seed);
BKI_HIDDEN bk_status_t bki_scalable_add(bk_filter_t *f, bk_hash_t h, bool *was_new);
BKI_HIDDEN bool bki_scalable_contains(const bk_filter_t *f, bk_hash_t h);
/* Capacity and error of sub-filter i of a scalable filter. */
BKI_HIDDEN uint64_t bki_scalable_sub_capacity(const bk_filter_t *f, uint32_t i);
BKI_HIDDEN double bki_scalable_sub_fpr(const bk_filter_t *f, uint32_t i);
/* The whole-filter operations of filter.c for a chain. */
BKI_HIDDEN bk_status_t bki_scalable_clear(bk_filter_t *f);
BKI_HIDDEN bk_status_t bki_scalable_union(bk_filter_t *dst, const bk_filter_t *src);
BKI_HIDDEN bk_status_t bki_scalable_clone(bk_filter_t **out, const bk_filter_t *f);
BKI_HIDDEN void bki_scalable_info(const bk_filter_t *f, bk_filter_info_t *out);

/* ---- hash.c ---- */
BKI_HIDDEN uint64_t bki_mix64(uint64_t x);

#endif /* BLOOMKIT_INTERNAL_H */
