/*
 * The file format's internal interface (docs/FORMAT.md is the spec), shared
 * by the files on the top rung that read and write it:
 *   codec.c        bytes <-> objects: encoding, validation, building
 *                  filters from validated bytes; no file I/O, so the
 *                  serialize / deserialize calls and the fuzzer need only it
 *   file.c         atomic save, and reads of whole files (pread)
 *   map.c          mapped files (bk_filter_open, sync, verify)
 *   bitmap_file.c  bitmaps on the same container
 */
#ifndef BLOOMKIT_CODEC_H
#define BLOOMKIT_CODEC_H

#include "internal.h"

/* ---- layout constants (docs/FORMAT.md) ---- */

#define BKF_VERSION 1u
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
    H_RESERVED = 88 /* .. 128, zero */
};
/* Part-table entry field offsets. */
enum {
    P_KIND = 0, P_K = 4, P_CELLS = 8, P_CAPACITY = 16, P_FPR = 24, P_ITEMS = 32,
    P_SEED = 40, P_OFFSET = 48, P_LENGTH = 56, P_CHECKSUM = 64,
    P_RESERVED = 72 /* .. 96, zero */
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

/* Sets *why (when non-NULL) and returns status. */
#define FAIL(status, msg)                                                      \
    do {                                                                       \
        if (why)                                                               \
            *why = (msg);                                                      \
        return (status);                                                       \
    } while (0)

/* One part (a payload and its table entry). */
typedef struct bkf_part {
    uint32_t kind, k;
    uint64_t cells, capacity, items, seed, offset, length, sum;
    double fpr;
    const uint8_t *data; /* writer: source bytes */
} bkf_part_t;

/* The writer's view of an object: top-level fields plus its parts. */
/* Bytes of a window's state part at most (window_codec.c: 64 + 8 per
 * generation, up to 16). */
#define BKF_WINDOW_STATE_MAX 192u

typedef struct bkf_obj {
    uint32_t kind, hash, nparts, sub_kind, flags;
    uint64_t seed, capacity, items;
    double fpr, growth, tightening;
    const bk_filter_t *f;
    const uint8_t *bm_data; /* bitmaps */
    uint64_t bm_n;
    uint8_t window_state[BKF_WINDOW_STATE_MAX]; /* windows: part 1's bytes */
} bkf_obj_t;

/* The decoded and validated metadata. */
typedef struct bkf_meta {
    uint32_t kind, hash, nparts, sub_kind, flags;
    uint64_t seed, capacity, items, file_size;
    double fpr, growth, tightening;
    const uint8_t *table; /* nparts entries, inside the caller's buffer */
} bkf_meta_t;

/* Where payload bytes come from: a whole input in memory (buf), or a
 * reader (file.c's pread) when buf is NULL. */
typedef struct bkf_source {
    const uint8_t *buf;
    bk_status_t (*read)(const struct bkf_source *s, uint64_t off, void *dst, uint64_t n);
    int fd;
} bkf_source_t;

BKI_HIDDEN uint32_t bkf_get_u32(const uint8_t *p);
BKI_HIDDEN uint64_t bkf_get_u64(const uint8_t *p);
BKI_HIDDEN void bkf_put_u64(uint8_t *p, uint64_t v);
BKI_HIDDEN bool bkf_all_zero(const uint8_t *p, size_t n);
BKI_HIDDEN uint64_t bkf_checksum(const void *p, uint64_t n);
BKI_HIDDEN bk_status_t bkf_source_read(const bkf_source_t *s, uint64_t off, void *dst,
                                       uint64_t n);

/* Writing. obj_from_* describe an object (BK_EINVAL for one the format
 * cannot encode); encode_meta writes bkf_meta_len(nparts) bytes. */
BKI_HIDDEN bk_status_t bkf_obj_from_filter(bkf_obj_t *o, const bk_filter_t *f);
BKI_HIDDEN bk_status_t bkf_obj_from_bitmap(bkf_obj_t *o, uint32_t kind, uint64_t n,
                                           const uint64_t *words, uint64_t nbytes);
BKI_HIDDEN void bkf_obj_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p);
BKI_HIDDEN uint64_t bkf_obj_size(const bkf_obj_t *o);
BKI_HIDDEN void bkf_encode_meta(const bkf_obj_t *o, uint8_t *out);
BKI_HIDDEN bk_status_t bkf_obj_serialize(const bkf_obj_t *o, void *buf, size_t cap,
                                         size_t *written);

/* Reading. check_prefix: magic and version of `have` bytes. parse_meta:
 * the whole metadata in b (have bytes, at least bkf_meta_len) of an input
 * total bytes long, everything but the payload bytes. */
BKI_HIDDEN bk_status_t bkf_check_prefix(const uint8_t *b, uint64_t have, const char **why);
BKI_HIDDEN bk_status_t bkf_parse_meta(const uint8_t *b, uint64_t have, uint64_t total,
                                      bkf_meta_t *m, const char **why);
BKI_HIDDEN void bkf_decode_part(const bkf_meta_t *m, uint32_t i, bkf_part_t *p);
/* Padding after a payload and, when dst holds it and verify_sum, its
 * checksum and the kind's invariants. */
BKI_HIDDEN bk_status_t bkf_check_payload(const bkf_source_t *s, const bkf_part_t *p,
                                         const uint8_t *dst, bool verify_sum,
                                         const char **why);
/* Every payload of an input held in memory, in place. */
BKI_HIDDEN bk_status_t bkf_verify_payloads(const bkf_meta_t *m, const bkf_source_t *s,
                                           const char **why);
/* Builds the filter m describes. With map != NULL the payloads borrow the
 * mapping (nothing is allocated for them); otherwise they are read from s
 * (and, for readers, verified). */
BKI_HIDDEN bk_status_t bkf_build_filter(bk_filter_t **out, const bkf_meta_t *m,
                                        const bkf_source_t *s, uint8_t *map, const char **why);

/* ---- window_codec.c: where a window differs ---- */

/* Writing: the object's parts and state (o->f is a window). */
BKI_HIDDEN void bkf_window_obj(bkf_obj_t *o, const bk_filter_t *f);
BKI_HIDDEN void bkf_window_part(const bkf_obj_t *o, uint32_t i, bkf_part_t *p);
/* Reading: part i's prescribed length (0 if cells is not valid for it),
 * its fields, and the filter from validated metadata. */
BKI_HIDDEN uint64_t bkf_window_part_len(const bkf_meta_t *m, uint32_t i, uint64_t cells);
BKI_HIDDEN bk_status_t bkf_window_check_part(const bkf_meta_t *m, uint32_t i,
                                             const bkf_part_t *p, const char **why);
BKI_HIDDEN bk_status_t bkf_window_build(bk_filter_t **out, const bkf_meta_t *m,
                                        const bkf_source_t *s, uint8_t *map, const char **why);
/* A writable mapping's sync: the state part's bytes into the file image. */
BKI_HIDDEN void bkf_window_write_state(const bkf_obj_t *o, uint8_t *file);

/* ---- file.c ---- */

/* Atomic save of an object to path (temp file, fsync, rename, fsync of the
 * directory); errno is kept on error. */
BKI_HIDDEN bk_status_t bkf_save_obj(const bkf_obj_t *o, const char *path);
/* Opens path (with flags) and checks it is a regular file; *size its size. */
BKI_HIDDEN bk_status_t bkf_open_regular(const char *path, int flags, int *fd_out,
                                        uint64_t *size, const char **why);
/* Reads and validates the metadata of an open file into a heap buffer
 * (*meta_buf, caller frees), never larger than the file. */
BKI_HIDDEN bk_status_t bkf_read_file_meta(int fd, uint64_t size, uint8_t **meta_buf,
                                          bkf_meta_t *m, const char **why);
/* A source that reads fd with pread. */
BKI_HIDDEN bkf_source_t bkf_file_source(int fd);

#endif /* BLOOMKIT_CODEC_H */
