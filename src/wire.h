/*
 * The file format's shared definitions (docs/FORMAT.md is the spec): its
 * constants, the part and object descriptions, little-endian field access,
 * and the reading pieces of wire.c. Below both codecs: codec.c (bytes <->
 * objects, no file I/O, so serialize / deserialize and the fuzzer need
 * only it) and window_codec.c (what a window stores differently, which
 * codec.c calls). File I/O (file.c, map.c, bitmap_file.c) sits on codec.h.
 */
#ifndef BLOOMKIT_WIRE_H
#define BLOOMKIT_WIRE_H

#include "internal.h"

#include <string.h>

/* ---- layout constants (docs/FORMAT.md) ---- */

#define BKF_VERSION 1u         /* every file without a recorded key form */
#define BKF_VERSION_KEY_FORM 2u /* version 1 plus the key-form field */
#define BKF_VERSION_PAGED 3u    /* a single array's file with page checksums */
#define BKF_PAGE 4096u          /* a paged file's unit of checksumming */
#define BKF_PAGE_SHIFT 12u
#define BKF_GROUP 512u          /* page sums per group (one page of sums) */
/* Payload bytes from which a saved single-array file is paged: below it,
 * reading the whole file costs no more than a page table would save. */
#define BKF_PAGED_MIN (UINT64_C(1) << 20)
#define BKF_HEADER 128u      /* fixed header */
#define BKF_PART 96u         /* one part-table entry */
#define BKF_MAX_PARTS 65536u /* scalable chains longer than this are refused */
#define BKF_FLAG_NONSCALING 1u
#define BKF_FLAG_FIRST_ERROR 2u
#define BKF_FLAGS_KNOWN (BKF_FLAG_NONSCALING | BKF_FLAG_FIRST_ERROR)

/* Header field offsets. */
enum {
    H_MAGIC = 0, H_VERSION = 8, H_KIND = 12, H_HASH = 16, H_NPARTS = 20,
    H_SEED = 24, H_CAPACITY = 32, H_FPR = 40, H_ITEMS = 48, H_FILESIZE = 56,
    H_SUBKIND = 64, H_FLAGS = 68, H_GROWTH = 72, H_TIGHTENING = 80,
    H_KEY_FORM = 88, /* version 2 only; zero in version 1 */
    H_RB_OPTIONS = 92, /* RedisBloom chains: RedisBloom's options; else 0 */
    H_RESERVED = 96,   /* .. 128, zero (cuckoo filters: from H_CK_RESERVED) */
    /* version 3 (paged) only; zero otherwise: */
    H_PAGE_SHIFT = 112, H_GROUPS_SUM = 120,
    /* cuckoo filters (kind 12) only: */
    H_CK_FP_BITS = 92, H_CK_ITERATIONS = 96, H_CK_DELETES = 104,
    H_CK_RESERVED = 112
};
/* Part-table entry field offsets. */
enum {
    P_KIND = 0, P_K = 4, P_CELLS = 8, P_CAPACITY = 16, P_FPR = 24, P_ITEMS = 32,
    P_SEED = 40, P_OFFSET = 48, P_LENGTH = 56, P_CHECKSUM = 64,
    P_RB_N2 = 72,   /* RedisBloom links: u32 n2, then 4 zero bytes */
    P_RB_BPE = 80,  /* RedisBloom links: f64 bits per entry */
    P_RB_END = 88,  /* RedisBloom links: zero from here to 96 */
    P_FZ_SEG_LOG = 72,   /* static kinds: u32 log2 of the segment length */
    P_FZ_SEG_COUNT = 76, /* static kinds: u32 segments */
    P_FZ_END = 80,       /* static kinds: zero from here to 96 */
    P_RESERVED = 72 /* .. 96, zero for every other kind */
};

static inline uint64_t bkf_align64(uint64_t x)
{
    return (x + 63) & ~(uint64_t)63;
}

/* Bytes of metadata before the first payload: header, part table, header
 * checksum, zero padding to a 64-byte boundary. */
static inline uint64_t bkf_meta_len(uint64_t nparts)
{
    return bkf_align64(BKF_HEADER + BKF_PART * nparts + 8);
}

/* Sets *why (when non-NULL) and returns status (internal.h). */
#define FAIL(status, msg) BKI_FAIL(status, msg)

/* One part (a payload and its table entry). */
typedef struct bkf_part {
    uint32_t kind, k;
    uint64_t cells, capacity, items, seed, offset, length, sum;
    double fpr;
    uint32_t rb_n2; /* RedisBloom links (kind 11); else 0 */
    double rb_bpe;
    uint32_t fz_seg_log, fz_seg_count; /* static kinds (13, 14); else 0 */
    const uint8_t *data; /* writer: source bytes */
    bool sum_known;      /* writer: sum is the payload's checksum already */
} bkf_part_t;

/* The writer's view of an object: top-level fields plus its parts. */
/* Bytes of a window's state part at most (window_codec.c: 64 + 16 per
 * slot of a slotted time window, up to 32). */
#define BKF_WINDOW_STATE_MAX 576u

typedef struct bkf_obj {
    uint32_t kind, hash, nparts, sub_kind, flags;
    uint32_t key_form; /* bk_key_form_t; not 0 makes the file version 2 */
    uint32_t rb_options; /* RedisBloom chains; else 0 */
    uint32_t ck_fp_bits, ck_iterations; /* cuckoo filters; else 0 */
    uint64_t ck_deletes;
    uint64_t seed, capacity, items;
    double fpr, growth, tightening;
    const bk_filter_t *f;
    const uint8_t *bm_data; /* bitmaps */
    uint64_t bm_n;
    uint8_t window_state[BKF_WINDOW_STATE_MAX]; /* windows: part 1's bytes */
    /* Payload checksums computed by the caller (nparts of them), or NULL:
     * the checkpointer hashes every payload anyway, so the metadata need
     * not read them a second time. */
    const uint64_t *sums;
    /* A paged file (version 3): the part checksums are zero and the page
     * checksums, behind the payload, cover it; groups_sum is the header's
     * checksum of the group sums (the writer computes it). */
    bool paged;
    uint64_t groups_sum;
} bkf_obj_t;

/* The decoded and validated metadata. */
typedef struct bkf_meta {
    uint32_t version, kind, hash, nparts, sub_kind, flags;
    uint32_t key_form; /* 0 in version 1 */
    uint32_t rb_options; /* RedisBloom chains; else 0 */
    uint32_t ck_fp_bits, ck_iterations; /* cuckoo filters; else 0 */
    uint64_t ck_deletes;
    uint64_t seed, capacity, items, file_size;
    double fpr, growth, tightening;
    const uint8_t *table; /* nparts entries, inside the caller's buffer */
    bool paged;           /* version 3 */
    uint32_t page_shift;  /* version 3: log2 of the page size */
    uint64_t groups_sum;  /* version 3: checksum of the group sums */
    uint64_t body_end;    /* end of the last payload's padding (version 3:
                             where the page checksums begin, rounded up) */
} bkf_meta_t;

/* Where a paged file's pieces lie (docs/FORMAT.md, "Paged files"): pages
 * of the payload region [body, end), numbered from the 4 KiB file page
 * that holds body; their checksums from `trailer`, the group sums from
 * `groups_at`; the file's size. */
typedef struct bkf_paging {
    uint64_t body, end, first, npages, ngroups, trailer, groups_at, size;
    uint64_t parts_end; /* the end of the last part (its padding included):
                           end itself but for a window, whose small state
                           part follows the paged one with its own sum */
} bkf_paging_t;

static inline uint64_t bkf_align_page(uint64_t x)
{
    return (x + BKF_PAGE - 1) & ~(uint64_t)(BKF_PAGE - 1);
}

/* Pages over [body, end) (part 0 with its padding); the sums after every
 * part, from parts_end. */
static inline void bkf_paging_of(uint64_t body, uint64_t end, uint64_t parts_end,
                                 bkf_paging_t *g)
{
    g->body = body;
    g->end = end;
    g->parts_end = parts_end;
    g->first = body / BKF_PAGE;
    g->npages = end > body ? (end + BKF_PAGE - 1) / BKF_PAGE - g->first : 0;
    g->ngroups = (g->npages + BKF_GROUP - 1) / BKF_GROUP;
    g->trailer = bkf_align_page(parts_end);
    g->groups_at = g->trailer + bkf_align_page(g->npages * 8);
    g->size = g->groups_at + ((g->ngroups * 8 + 63) & ~(uint64_t)63);
}

/* Page j's bytes: [*lo, *hi) of the file. */
static inline void bkf_page_span(const bkf_paging_t *g, uint64_t j, uint64_t *lo, uint64_t *hi)
{
    uint64_t a = (g->first + j) * BKF_PAGE, b = a + BKF_PAGE;
    *lo = a < g->body ? g->body : a;
    *hi = b > g->end ? g->end : b;
}

/* Where payload bytes come from: a whole input in memory (buf), or a
 * reader (file.c's pread) when buf is NULL. */
typedef struct bkf_source {
    const uint8_t *buf;
    /* Payload bytes arrive later: the filter is built with zeroed payloads
     * that the incremental loader (loader.c) fills and verifies. */
    bool deferred;
    bk_status_t (*read)(const struct bkf_source *s, uint64_t off, void *dst, uint64_t n);
    int fd;
} bkf_source_t;

/* ---- little-endian field access, byte by byte (no alignment assumed):
 * inline, so the codec and the window codec share them without calling
 * each other ---- */

static inline void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_f64(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put_u64(p, v);
}

static inline uint32_t bkf_get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline double get_f64(const uint8_t *p)
{
    uint64_t v = get_u64(p);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

/* Whether n bytes are all zero: the first byte, then memcmp of the block
 * against itself one byte on (libc's vector compare, where a byte loop
 * took a third of a fresh 2 GB filter's save). */
static inline bool all_zero(const uint8_t *p, size_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static inline uint64_t bkf_get_u64(const uint8_t *p)
{
    return get_u64(p);
}

static inline void bkf_put_u64(uint8_t *p, uint64_t v)
{
    put_u64(p, v);
}

static inline bool bkf_all_zero(const uint8_t *p, size_t n)
{
    return all_zero(p, n);
}

/* Copies the part of src (at offset `at` of a serialized object, n bytes
 * long; NULL stands for zeros) that overlaps the range [off, off + len)
 * into dst, which holds that range. How the range readers (codec.c,
 * loader.c) assemble any slice of an object from its pieces. */
static inline void bkf_copy_overlap(uint8_t *dst, uint64_t off, uint64_t len,
                                    const uint8_t *src, uint64_t at, uint64_t n)
{
    uint64_t lo = at > off ? at : off;
    uint64_t hi = at + n < off + len ? at + n : off + len;
    if (lo >= hi)
        return;
    if (src)
        memcpy(dst + (lo - off), src + (lo - at), (size_t)(hi - lo));
    else
        memset(dst + (lo - off), 0, (size_t)(hi - lo));
}

/* ---- wire.c: the pieces of reading both codecs use ---- */
BKI_HIDDEN uint64_t bkf_checksum(const void *p, uint64_t n);
BKI_HIDDEN bk_status_t bkf_source_read(const bkf_source_t *s, uint64_t off, void *dst,
                                       uint64_t n);

BKI_HIDDEN void bkf_decode_part(const bkf_meta_t *m, uint32_t i, bkf_part_t *p);
/* A paged file's page geometry from its metadata: pages over part 0, the
 * sums after every part (m->body_end). */
BKI_HIDDEN void bkf_meta_paging(const bkf_meta_t *m, bkf_paging_t *g);
/* Padding after a payload and, when dst holds it and verify_sum, its
 * checksum and the kind's invariants. */
BKI_HIDDEN bk_status_t bkf_check_payload(const bkf_source_t *s, const bkf_part_t *p,
                                         const uint8_t *dst, bool verify_sum,
                                         const char **why);
/* A composite part's payload into place (unpaged files): a mapping's
 * bytes (mapped) are checked where they lie; from a reader the bytes are
 * read into dst and checked (a buffer given whole was checked before); a
 * loader fed in pieces (deferred) fills and checks them itself. */
BKI_HIDDEN bk_status_t bkf_part_payload(const bkf_source_t *s, const bkf_part_t *p, bool mapped,
                                        uint8_t *dst, const char **why);

/* ---- window_codec.c: where a window differs ---- */

/* Writing: the object's parts and state (o->f is a window). */
BKI_HIDDEN void bkf_window_obj(bkf_obj_t *o, const bk_filter_t *f);
BKI_HIDDEN void bkf_window_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p);
/* Reading: part i's prescribed length (0 if cells is not valid for it),
 * its fields, and the filter from validated metadata. */
BKI_HIDDEN uint64_t bkf_window_part_len(const bkf_meta_t *m, uint32_t i, const bkf_part_t *p);
BKI_HIDDEN bk_status_t bkf_window_check_part(const bkf_meta_t *m, uint32_t i,
                                             const bkf_part_t *p, const char **why);
BKI_HIDDEN bk_status_t bkf_window_build(bk_filter_t **out, const bkf_meta_t *m,
                                        const bkf_source_t *s, uint8_t *map, const char **why);
/* The window from its verified state part's bytes and a verified payload
 * (data, allocated as mem by bki_payload_alloc), which it takes over:
 * freed here on failure. */
BKI_HIDDEN bk_status_t bkf_window_adopt(bk_filter_t **out, const bkf_meta_t *m,
                                        const uint8_t *state, uint8_t *data, bki_mem_t mem,
                                        const char **why);
/* A writable mapping's sync: the state part's bytes into the file image. */
BKI_HIDDEN void bkf_window_write_state(const bkf_obj_t *o, uint8_t *file);

#endif /* BLOOMKIT_WIRE_H */
