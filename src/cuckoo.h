/*
 * The cuckoo filter's structs, shared by cuckoo.c (the filter) and
 * cuckoo_codec.c (its place in the file format). Not installed.
 */
#ifndef BLOOMKIT_CUCKOO_H
#define BLOOMKIT_CUCKOO_H

#include "internal.h"

#define ALT_MULT UINT64_C(0x5bd1e995)   /* RedisBloom's alternate-bucket factor */
#define NATIVE_MULT UINT64_C(0x9E3779B97F4A7C15) /* spreads a native fingerprint */
/* More sub-filters than this is a filter growing without bound: a native
 * filter's (its file format holds at most 4096 parts); a RedisBloom-flavour
 * one's, RedisBloom's own limit (a 16-bit count: its commands stop at
 * CF_MAX_EXPANSIONS, 32 unless a server was started with more), so every
 * filter a RedisBloom server can hold loads here. */
#define MAX_SUBS 4096u
#define MAX_SUBS_REDISBLOOM 65535u

typedef struct cuckoo_sub {
    uint64_t buckets;
    uint8_t *data; /* buckets * bucket_size slots of fp_bytes each */
    uint64_t nbytes;
    bki_mem_t mem; /* BKI_MEM_BORROWED: a file mapping's bytes */
} cuckoo_sub_t;

/* The 8-byte fields first and the narrow ones packed after them: 96
 * bytes, one allocator size class below the 112 the declaration order
 * took (a server holding many small filters pays it per key). */
struct bk_cuckoo {
    uint64_t buckets; /* first sub-filter's */
    uint64_t items, deletes;
    uint64_t seed;
    uint64_t capacity;
    double fpr;
    uint64_t max_bytes; /* 0: no cap */
    cuckoo_sub_t *subs;
    /* A filter of the planned 4x16 geometry with one sub-filter: that
     * sub-filter's buckets and their count (subs[0].data, .buckets),
     * copied here by note_shape (cuckoo.c) so that the one-key calls reach
     * them without loading subs first; NULL and 0 otherwise. */
    uint8_t *one_data;
    uint64_t one_buckets;
    uint32_t bucket_size, max_iterations, expansion;
    uint32_t fp_bytes;
    uint32_t nsubs, subs_cap;
    bk_cuckoo_flavour_t flavour;
    bool mapped; /* sub-filters borrow a file mapping: it cannot grow */
    bool key8_mix8; /* its filter hashes 8-byte keys with bki_mix8 (set by
                       bki_cuckoo_wrap) */
    bool one_key;   /* key8_mix8, 4x16 geometry and one sub-filter: an
                       8-byte key's add and remove take the geometry's own
                       code (cuckoo.c, note_shape keeps it) */
};

/* A native 16-bit fingerprint, reduce(hi, 2^16 - 1) + 1 (docs/FORMAT.md,
 * "Cuckoo filters"), without the multiply: hi * (2^16 - 1) = hi * 2^16 -
 * hi, whose high word is hi >> 48, less one when subtracting hi borrows
 * from the low word (hi << 16). A lookup's second bucket waits on its
 * fingerprint, which waits on the key's hash: a shift and a compare where
 * a multiply was shorten that chain by a multiply's latency. The same
 * value bit for bit (tests/unit/lib/test_cuckoo.c). */
static inline uint32_t bki_cuckoo_fp16(uint64_t hi)
{
    return (uint32_t)((hi >> 48) - ((hi << 16) < hi)) + 1;
}

/* A native filter of the given geometry with no sub-filters yet (the
 * codec adds them with bki_cuckoo_add_sub); NULL without memory. */
BKI_HIDDEN bk_cuckoo_t *bki_cuckoo_shell(uint32_t bucket_size, uint32_t fp_bits,
                                         uint32_t max_iterations, uint32_t expansion,
                                         uint64_t seed);
/* Appends a sub-filter of `buckets` buckets: zeroed, or borrowing `borrow`
 * (a mapping's bytes, never freed by the filter). */
BKI_HIDDEN bk_status_t bki_cuckoo_add_sub(bk_cuckoo_t *c, uint64_t buckets, uint8_t *borrow);

#endif /* BLOOMKIT_CUCKOO_H */
