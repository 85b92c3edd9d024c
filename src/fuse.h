/*
 * The static kinds' structs (fuse8, fuse16: binary fuse filters), shared
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
    uint32_t fp_bits; /* 8 or 16 */
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

#endif /* BLOOMKIT_FUSE_H */
