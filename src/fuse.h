/*
 * The static kinds' structs (fuse8, fuse16, fuse32: binary fuse filters), shared
 * by fuse.c (building and lookups) and fuse_codec.c (their place in the
 * file format). Not installed.
 */
#ifndef BLOOMKIT_FUSE_H
#define BLOOMKIT_FUSE_H

#include "internal.h"

/* A part holds at most this many keys, so its cells fit in 32 bits with
 * the 1.125 space factor and the segments around it. */
#define BKI_FUSE_PART_MAX_KEYS (UINT64_C(1) << 31)
/* More parts than this is a key set no file of ours holds (2^43 keys). */
#define BKI_FUSE_MAX_PARTS 4096u
/* Segments are at most this long (2^18 cells): longer ones gain nothing
 * in space and lose locality while building. */
#define BKI_FUSE_MAX_SEG_LOG 18u

/* One binary fuse filter: the keys whose hash falls in its range. Key x
 * (the key's 64-bit hash mixed with `seed`) reads the cells h0, h1, h2 of
 * three consecutive segments and answers "present" when their
 * fingerprints xor to x's. */
typedef struct bki_fuse_part {
    /* what a lookup reads, first: */
    uint8_t *data;      /* cells fingerprints of fp_bytes each */
    uint64_t seed;      /* the seed that let this part's keys peel (0: none) */
    uint64_t span;      /* seg_count << seg_log: where h0 may fall */
    uint64_t seg;       /* 1 << seg_log */
    uint64_t keys;      /* distinct key hashes it holds */
    uint64_t cells;     /* (seg_count + 2) * seg_len */
    uint64_t nbytes;    /* cells * fp_bytes */
    uint32_t seg_log;   /* log2 of the segment length */
    uint32_t seg_count; /* segments a key's first cell may fall in */
    bki_mem_t mem;      /* BKI_MEM_BORROWED: a file mapping's bytes */
} bki_fuse_part_t;

struct bki_fuse {
    uint32_t fp_bits; /* 8, 16 or 32 */
    uint32_t nparts;  /* a key's part: bki_reduce(hash, nparts) */
    uint64_t keys;    /* over every part */
    bki_fuse_part_t parts[];
};

/* The geometry binary fuse filters give n keys: segment length (log2),
 * segment count and cells. Zero keys take one segment of 4 cells (no key
 * reads it; an empty part answers "absent"). */
BKI_HIDDEN void bki_fuse_geometry(uint64_t n, uint32_t *seg_log, uint32_t *seg_count,
                                  uint64_t *cells);
/* Sets a part's span and seg from its seg_log and seg_count. */
static inline void bki_fuse_part_shape(bki_fuse_part_t *p)
{
    p->seg = UINT64_C(1) << p->seg_log;
    p->span = (uint64_t)p->seg_count << p->seg_log;
}

/* An empty static filter of nparts parts, each to be filled by the codec
 * (data NULL); NULL without memory. */
BKI_HIDDEN struct bki_fuse *bki_fuse_shell(uint32_t fp_bits, uint32_t nparts);
/* Frees a static filter's parts (borrowed ones are left) and the struct. */
BKI_HIDDEN void bki_fuse_free(struct bki_fuse *z);

/* ---- fuse.c: the static kinds (fuse8, fuse16, fuse32) as a bk_filter_t ---- */
BKI_HIDDEN bk_status_t bki_fuse_add_hash(bk_filter_t *f, bk_hash_t h, bool *was_new);
BKI_HIDDEN bool bki_fuse_contains_hash(const bk_filter_t *f, bk_hash_t h);
BKI_HIDDEN size_t bki_fuse_contains_batch(const bk_filter_t *f, const bk_key_t *keys, size_t n,
                                          bool *out);
/* The hashes a static filter takes: the default and XXH3 (64 bits of
 * the 128 are used). */
BKI_HIDDEN bool bki_fuse_hash_ok(bk_hash_id_t hash);
/* The rate a static kind gives (2^-8, 2^-16), or 0 for another kind. */
BKI_HIDDEN double bki_fuse_rate(bk_kind_t kind);
/* A static filter of nparts empty parts, each then built once with
 * bki_fuse_build_part; BK_EINVAL for a kind that is not static, another
 * hash or a part count out of range. */
BKI_HIDDEN bk_status_t bki_fuse_filter_new(bk_filter_t **out, bk_kind_t kind, uint32_t nparts,
                                           double fpr, bk_hash_id_t hash, uint64_t seed);
/* The plan of a static kind (nonzero) for n keys at rate p (0: the
 * kind's own rate); BK_EINVAL for a kind that is not this file's or a p
 * below its rate. */
BKI_HIDDEN bk_status_t bki_fuse_plan(bk_kind_t kind, uint64_t n, double p,
                                     bk_static_plan_t *out);
/* Its parts. */
BKI_HIDDEN uint32_t bki_fuse_parts(const bk_filter_t *f);
/* The part a key hash (bk_hash_t.lo) belongs to. */
BKI_HIDDEN uint32_t bki_fuse_part_of(const bk_filter_t *f, uint64_t h);
/* Builds part `part` from n key hashes (reordered and deduplicated in
 * place): BK_ENOMEM, or BK_EINVAL (built already, too many keys). */
BKI_HIDDEN bk_status_t bki_fuse_build_part(bk_filter_t *f, uint32_t part, uint64_t *h,
                                           size_t n);
/* Wraps z in a new handle that owns it (z freed on BK_ENOMEM). */
BKI_HIDDEN bk_status_t bki_fuse_wrap(bk_filter_t **out, struct bki_fuse *z, bk_hash_id_t hash,
                                     uint64_t seed, double fpr);
BKI_HIDDEN bk_status_t bki_fuse_filter_clone(bk_filter_t **out, const bk_filter_t *f);
BKI_HIDDEN void bki_fuse_filter_free(bk_filter_t *f);
BKI_HIDDEN void bki_fuse_filter_info(const bk_filter_t *f, bk_filter_info_t *out);
BKI_HIDDEN void bki_fuse_filter_shape(const bk_filter_t *f, bk_filter_shape_t *out);
BKI_HIDDEN uint64_t bki_fuse_items(const bk_filter_t *f);


#endif /* BLOOMKIT_FUSE_H */
