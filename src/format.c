/*
 * The on-disk format: serialize, save, load, map and validate filters and
 * bitmaps. docs/FORMAT.md is the specification; this file implements it.
 *
 * Why it is written this way:
 *  - Every field is encoded one at a time, little-endian, at a fixed offset
 *    (never a raw struct), so the same bytes load on any compiler or ABI.
 *  - Loading never trusts a field before checking it: the part count and
 *    every payload size are bounded by the real length of the input before
 *    anything is allocated or read, so a hostile header cannot make us
 *    allocate or read more than the bytes we were given justify.
 *  - The layout is canonical: offsets, padding and reserved bytes are fully
 *    determined by the fields, and checked, so any input we accept
 *    re-serializes to exactly the same bytes (the fuzzer relies on that).
 *  - Saving goes through a temp file in the same directory, fsync, rename,
 *    fsync of the directory: after a crash at any moment the path holds the
 *    old file or the new one, never a mix.
 *  - Payloads start at 64-byte offsets, so a mapped payload is cache-line
 *    aligned exactly like an allocated one and the query paths need no
 *    special case for mapped filters.
 */
#define _GNU_SOURCE
#include "internal.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- layout constants (docs/FORMAT.md) ---- */

static const uint8_t bkf_magic[8] = {0x89, 'B', 'K', 'F', '\r', '\n', 0x1a, '\n'};
#define BKF_VERSION 1u
#define BKF_HEADER 128u      /* fixed header */
#define BKF_PART 96u         /* one part-table entry */
#define BKF_MAX_PARTS 65536u /* scalable chains longer than this are refused */
#define BKF_FLAG_NONSCALING 1u
#define BKF_FLAG_FIRST_ERROR 2u
#define BKF_FLAGS_KNOWN (BKF_FLAG_NONSCALING | BKF_FLAG_FIRST_ERROR)
#define BKF_BITMAP_MAX_N (UINT64_C(1) << 48)

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

static uint64_t align64(uint64_t x)
{
    return (x + 63) & ~(uint64_t)63;
}

/* Bytes of metadata before the first payload: header, part table, header
 * checksum, zero padding to a 64-byte boundary. */
static uint64_t meta_len(uint64_t nparts)
{
    return align64(BKF_HEADER + BKF_PART * nparts + 8);
}

/* ---- little-endian field access, byte by byte (no alignment assumed) ---- */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_f64(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put_u64(p, v);
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static double get_f64(const uint8_t *p)
{
    uint64_t v = get_u64(p);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static uint64_t checksum(const void *p, uint64_t n)
{
    return XXH3_64bits(p, (size_t)n);
}

/* The payload length the format prescribes for a part, or 0 if cells is
 * not a valid size for the kind. Filters use every payload bit; bitmaps
 * round up to whole 64-byte lines. */
static uint64_t payload_len(uint32_t kind, uint64_t cells)
{
    if (cells == 0)
        return 0;
    switch (kind) {
    case BK_KIND_BLOCKED:
        return cells % BKI_LINE_BITS ? 0 : cells / 8;
    case BK_KIND_COUNTING:
        return cells % BKI_LINE_COUNTERS ? 0 : cells / 2;
    case BK_KIND_CLASSIC:
        return cells % 64 ? 0 : cells / 8;
    case BK_KIND_BITMAP:
        return cells > BKF_BITMAP_MAX_N ? 0 : (cells + 511) / 512 * 64;
    case BK_KIND_BITMAP2:
        return cells > BKF_BITMAP_MAX_N ? 0 : (cells + 255) / 256 * 64;
    default:
        return 0;
    }
}

/* ========================================================================
 * The writer's view of an object: top-level fields plus a way to get part i.
 * ======================================================================== */

typedef struct part {
    uint32_t kind, k;
    uint64_t cells, capacity, items, seed, offset, length, sum;
    double fpr;
    const uint8_t *data; /* writer: source bytes */
} part_t;

typedef struct obj {
    uint32_t kind, hash, nparts, sub_kind, flags;
    uint64_t seed, capacity, items;
    double fpr, growth, tightening;
    const bk_filter_t *f;
    const uint8_t *bm_data; /* bitmaps */
    uint64_t bm_n;
} obj_t;

static void part_of_filter(const bk_filter_t *s, part_t *p)
{
    p->kind = (uint32_t)s->kind;
    p->k = s->k;
    p->cells = s->cells;
    p->capacity = s->capacity;
    p->fpr = s->fpr;
    p->items = atomic_load_explicit(&((bk_filter_t *)s)->items, memory_order_relaxed);
    p->seed = s->seed;
    p->data = s->data;
    p->length = payload_len(p->kind, p->cells);
}

static void obj_part(const obj_t *o, uint32_t i, part_t *p)
{
    memset(p, 0, sizeof *p);
    if (o->f) {
        part_of_filter(o->kind == BK_KIND_SCALABLE ? o->f->subs[i] : o->f, p);
    } else {
        p->kind = o->kind;
        p->cells = o->bm_n;
        p->capacity = o->bm_n;
        p->data = o->bm_data;
        p->length = payload_len(p->kind, p->cells);
    }
}

/* Describes a filter for writing; BK_EINVAL if it cannot be written (a
 * geometry the format has no encoding for: a bug elsewhere, not a user
 * error, but reported rather than written wrongly). */
static bk_status_t obj_from_filter(obj_t *o, const bk_filter_t *f)
{
    memset(o, 0, sizeof *o);
    if (!f)
        return BK_EINVAL;
    o->f = f;
    o->kind = (uint32_t)f->kind;
    o->hash = (uint32_t)f->hash;
    o->seed = f->seed;
    o->capacity = f->capacity;
    o->fpr = f->fpr;
    o->items = atomic_load_explicit(&((bk_filter_t *)f)->items, memory_order_relaxed);
    if (f->kind == BK_KIND_SCALABLE) {
        if (f->nsubs == 0 || f->nsubs > BKF_MAX_PARTS || !f->subs)
            return BK_EINVAL;
        o->nparts = f->nsubs;
        o->sub_kind = (uint32_t)f->sub_kind;
        o->flags = (f->nonscaling ? BKF_FLAG_NONSCALING : 0) |
                   (f->first_error_as_given ? BKF_FLAG_FIRST_ERROR : 0);
        o->growth = f->growth;
        o->tightening = f->tightening;
    } else if (f->kind == BK_KIND_BLOCKED || f->kind == BK_KIND_CLASSIC ||
               f->kind == BK_KIND_COUNTING) {
        o->nparts = 1;
    } else {
        return BK_EINVAL;
    }
    /* Refuse to write anything the loader would refuse: every file
     * bloomkit writes must load. */
    for (uint32_t i = 0; i < o->nparts; i++) {
        const bk_filter_t *s = f->kind == BK_KIND_SCALABLE ? f->subs[i] : f;
        if (!s)
            return BK_EINVAL;
        part_t p;
        obj_part(o, i, &p);
        if (p.length == 0 || !p.data || s->nbytes < p.length || s->hash != f->hash ||
            s->seed != f->seed)
            return BK_EINVAL;
        if (f->kind == BK_KIND_SCALABLE && s->kind != f->sub_kind)
            return BK_EINVAL;
    }
    return BK_OK;
}

static bk_status_t obj_from_bitmap(obj_t *o, uint32_t kind, uint64_t n, const uint64_t *words,
                                   uint64_t nbytes)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->nparts = 1;
    o->capacity = n;
    o->bm_n = n;
    o->bm_data = (const uint8_t *)words;
    uint64_t len = payload_len(kind, n);
    if (len == 0 || !words || nbytes < len)
        return BK_EINVAL;
    return BK_OK;
}

/* Total serialized size. */
static uint64_t obj_size(const obj_t *o)
{
    uint64_t total = meta_len(o->nparts);
    for (uint32_t i = 0; i < o->nparts; i++) {
        part_t p;
        obj_part(o, i, &p);
        total += align64(p.length);
    }
    return total;
}

/* Encodes the metadata (header, part table with payload checksums, header
 * checksum, padding) into out, which holds meta_len(o->nparts) bytes.
 * Reads every payload once, for its checksum. */
static void encode_meta(const obj_t *o, uint8_t *out)
{
    uint64_t mlen = meta_len(o->nparts);
    memset(out, 0, (size_t)mlen);
    memcpy(out + H_MAGIC, bkf_magic, 8);
    put_u32(out + H_VERSION, BKF_VERSION);
    put_u32(out + H_KIND, o->kind);
    put_u32(out + H_HASH, o->hash);
    put_u32(out + H_NPARTS, o->nparts);
    put_u64(out + H_SEED, o->seed);
    put_u64(out + H_CAPACITY, o->capacity);
    put_f64(out + H_FPR, o->fpr);
    put_u64(out + H_ITEMS, o->items);
    put_u32(out + H_SUBKIND, o->sub_kind);
    put_u32(out + H_FLAGS, o->flags);
    put_f64(out + H_GROWTH, o->growth);
    put_f64(out + H_TIGHTENING, o->tightening);
    uint64_t off = mlen;
    for (uint32_t i = 0; i < o->nparts; i++) {
        part_t p;
        obj_part(o, i, &p);
        uint8_t *e = out + BKF_HEADER + (uint64_t)BKF_PART * i;
        put_u32(e + P_KIND, p.kind);
        put_u32(e + P_K, p.k);
        put_u64(e + P_CELLS, p.cells);
        put_u64(e + P_CAPACITY, p.capacity);
        put_f64(e + P_FPR, p.fpr);
        put_u64(e + P_ITEMS, p.items);
        put_u64(e + P_SEED, p.seed);
        put_u64(e + P_OFFSET, off);
        put_u64(e + P_LENGTH, p.length);
        put_u64(e + P_CHECKSUM, checksum(p.data, p.length));
        off += align64(p.length);
    }
    put_u64(out + H_FILESIZE, off);
    uint64_t table_end = BKF_HEADER + (uint64_t)BKF_PART * o->nparts;
    put_u64(out + table_end, checksum(out, table_end));
}

static bk_status_t obj_serialize(const obj_t *o, void *buf, size_t cap, size_t *written)
{
    uint64_t total = obj_size(o);
    if (!buf || total > cap)
        return BK_EINVAL;
    uint8_t *out = buf;
    encode_meta(o, out);
    uint64_t off = meta_len(o->nparts);
    for (uint32_t i = 0; i < o->nparts; i++) {
        part_t p;
        obj_part(o, i, &p);
        memcpy(out + off, p.data, (size_t)p.length);
        memset(out + off + p.length, 0, (size_t)(align64(p.length) - p.length));
        off += align64(p.length);
    }
    if (written)
        *written = (size_t)total;
    return BK_OK;
}

/* ========================================================================
 * Saving
 * ======================================================================== */

static bk_status_t errno_status(void)
{
    return (errno == ENOSPC || errno == EDQUOT) ? BK_ENOSPC : BK_EIO;
}

static bk_status_t write_all(int fd, const void *buf, uint64_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        size_t chunk = n > (UINT64_C(1) << 30) ? (size_t)1 << 30 : (size_t)n;
        ssize_t w = write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno_status();
        }
        if (w == 0) {
            errno = ENOSPC;
            return BK_ENOSPC;
        }
        p += w;
        n -= (uint64_t)w;
    }
    return BK_OK;
}

/* Opens a fresh temp file next to path (same directory, so rename is
 * atomic). The name carries the pid and a counter so concurrent savers,
 * in this process or others, never collide. *tmp_out is heap-owned. */
static int open_temp(const char *path, char **tmp_out, mode_t mode)
{
    static _Atomic unsigned long counter;
    size_t plen = strlen(path);
    size_t cap = plen + 64;
    char *tmp = bki_malloc(cap);
    if (!tmp)
        return -2;
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned long c = atomic_fetch_add(&counter, 1);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        snprintf(tmp, cap, "%s.tmp-%ld-%lu-%lx", path, (long)getpid(), c,
                 (unsigned long)ts.tv_nsec);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd >= 0) {
            *tmp_out = tmp;
            return fd;
        }
        if (errno != EEXIST)
            break;
    }
    int saved = errno;
    bki_free(tmp);
    errno = saved;
    return -1;
}

/* The directory part of path ("." if none), heap-owned; NULL if out of
 * memory. Computed before the rename so nothing can fail for want of
 * memory once the new file is in place. */
static char *parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    char *dir = bki_malloc(n + 1);
    if (!dir)
        return NULL;
    if (!slash)
        memcpy(dir, ".", 1);
    else
        memcpy(dir, path, n);
    dir[n] = '\0';
    return dir;
}

static bk_status_t fsync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return BK_EIO;
    bk_status_t st = BK_OK;
    if (fsync(dfd) != 0 && errno != EINVAL) /* some filesystems cannot */
        st = BK_EIO;
    int saved = errno;
    close(dfd);
    errno = saved;
    return st;
}

static bk_status_t obj_save(const obj_t *o, const char *path)
{
    if (!path || !*path)
        return BK_EINVAL;
    uint64_t mlen = meta_len(o->nparts);
    if (mlen > SIZE_MAX)
        return BK_ENOMEM;
    uint8_t *meta = bki_malloc((size_t)mlen);
    char *dir = parent_dir(path);
    if (!meta || !dir) {
        bki_free(meta);
        bki_free(dir);
        return BK_ENOMEM;
    }
    encode_meta(o, meta);

    /* A replaced file keeps its permissions; a new one gets 0666 & ~umask. */
    struct stat st_old;
    mode_t mode = 0666;
    bool keep_mode = stat(path, &st_old) == 0 && S_ISREG(st_old.st_mode);
    char *tmp = NULL;
    int fd = open_temp(path, &tmp, mode);
    if (fd < 0) {
        int saved = errno;
        bki_free(meta);
        bki_free(dir);
        errno = saved;
        return fd == -2 ? BK_ENOMEM : errno_status();
    }
    if (keep_mode)
        (void)fchmod(fd, st_old.st_mode & 07777);

    static const uint8_t zeros[64];
    bk_status_t st = write_all(fd, meta, mlen);
    for (uint32_t i = 0; i < o->nparts && st == BK_OK; i++) {
        part_t p;
        obj_part(o, i, &p);
        st = write_all(fd, p.data, p.length);
        if (st == BK_OK)
            st = write_all(fd, zeros, align64(p.length) - p.length);
    }
    if (st == BK_OK && fsync(fd) != 0)
        st = errno_status();
    int saved = errno;
    if (close(fd) != 0 && st == BK_OK) {
        st = errno_status();
        saved = errno;
    }
    if (st == BK_OK && rename(tmp, path) != 0) {
        st = errno_status();
        saved = errno;
    }
    if (st != BK_OK) {
        unlink(tmp);
    } else {
        /* The rename is done; this makes it survive a power loss. */
        st = fsync_dir(dir);
        saved = errno;
    }
    bki_free(tmp);
    bki_free(meta);
    bki_free(dir);
    errno = saved;
    return st;
}

/* ========================================================================
 * Reading and validation
 * ======================================================================== */

#define FAIL(status, msg)                                                      \
    do {                                                                       \
        if (why)                                                               \
            *why = (msg);                                                      \
        return (status);                                                       \
    } while (0)

/* Where payload bytes come from: a buffer, or a file read with pread. */
typedef struct source {
    const uint8_t *buf; /* whole input, or NULL for fd */
    int fd;
} source_t;

static bk_status_t source_read(const source_t *s, uint64_t off, void *dst, uint64_t n)
{
    if (s->buf) {
        memcpy(dst, s->buf + off, (size_t)n);
        return BK_OK;
    }
    uint8_t *p = dst;
    while (n > 0) {
        size_t chunk = n > (UINT64_C(1) << 30) ? (size_t)1 << 30 : (size_t)n;
        ssize_t r = pread(s->fd, p, chunk, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return BK_EIO;
        }
        if (r == 0) { /* the file shrank under us */
            errno = EIO;
            return BK_EIO;
        }
        p += r;
        off += (uint64_t)r;
        n -= (uint64_t)r;
    }
    return BK_OK;
}

/* The decoded and validated metadata. */
typedef struct meta {
    uint32_t kind, hash, nparts, sub_kind, flags;
    uint64_t seed, capacity, items, file_size;
    double fpr, growth, tightening;
    const uint8_t *table; /* nparts entries, inside the caller's buffer */
} meta_t;

static void decode_part(const meta_t *m, uint32_t i, part_t *p)
{
    const uint8_t *e = m->table + (uint64_t)BKF_PART * i;
    memset(p, 0, sizeof *p);
    p->kind = get_u32(e + P_KIND);
    p->k = get_u32(e + P_K);
    p->cells = get_u64(e + P_CELLS);
    p->capacity = get_u64(e + P_CAPACITY);
    p->fpr = get_f64(e + P_FPR);
    p->items = get_u64(e + P_ITEMS);
    p->seed = get_u64(e + P_SEED);
    p->offset = get_u64(e + P_OFFSET);
    p->length = get_u64(e + P_LENGTH);
    p->sum = get_u64(e + P_CHECKSUM);
}

static bool same_f64(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Checks the fixed prefix (magic, version) of at least `have` bytes. */
static bk_status_t check_prefix(const uint8_t *b, uint64_t have, const char **why)
{
    uint64_t n = have < 8 ? have : 8;
    if (memcmp(b, bkf_magic, (size_t)n) != 0)
        FAIL(BK_ECORRUPT, "not a bloomkit file (bad magic)");
    if (have < BKF_HEADER)
        FAIL(BK_ECORRUPT, "truncated: shorter than the 128-byte header");
    uint32_t version = get_u32(b + H_VERSION);
    if (version != BKF_VERSION)
        FAIL(BK_EVERSION, "unknown format version (this library reads version 1)");
    return BK_OK;
}

/* Validates the metadata in b (have bytes available, at least the fixed
 * header) of an input that is total bytes long. Checks everything except
 * the payload bytes themselves. */
static bk_status_t parse_meta(const uint8_t *b, uint64_t have, uint64_t total, meta_t *m,
                              const char **why)
{
    bk_status_t st = check_prefix(b, have < total ? have : total, why);
    if (st != BK_OK)
        return st;
    memset(m, 0, sizeof *m);
    m->nparts = get_u32(b + H_NPARTS);
    if (m->nparts == 0 || m->nparts > BKF_MAX_PARTS)
        FAIL(BK_ECORRUPT, "part count is zero or absurd");
    uint64_t table_end = BKF_HEADER + (uint64_t)BKF_PART * m->nparts;
    uint64_t mlen = meta_len(m->nparts);
    if (total < mlen)
        FAIL(BK_ECORRUPT, "truncated inside the header or part table");
    if (have < mlen) /* caller error: it must give us the whole metadata */
        FAIL(BK_ECORRUPT, "truncated inside the header or part table");
    if (get_u64(b + table_end) != checksum(b, table_end))
        FAIL(BK_ECORRUPT, "header checksum mismatch (header damaged)");
    if (!all_zero(b + table_end + 8, (size_t)(mlen - table_end - 8)))
        FAIL(BK_ECORRUPT, "header padding is not zero");
    if (!all_zero(b + H_RESERVED, BKF_HEADER - H_RESERVED))
        FAIL(BK_ECORRUPT, "reserved header bytes are not zero");

    m->kind = get_u32(b + H_KIND);
    m->hash = get_u32(b + H_HASH);
    m->seed = get_u64(b + H_SEED);
    m->capacity = get_u64(b + H_CAPACITY);
    m->fpr = get_f64(b + H_FPR);
    m->items = get_u64(b + H_ITEMS);
    m->file_size = get_u64(b + H_FILESIZE);
    m->sub_kind = get_u32(b + H_SUBKIND);
    m->flags = get_u32(b + H_FLAGS);
    m->growth = get_f64(b + H_GROWTH);
    m->tightening = get_f64(b + H_TIGHTENING);
    m->table = b + BKF_HEADER;

    if (m->file_size > total)
        FAIL(BK_ECORRUPT, "truncated: shorter than the size in its header");
    if (m->file_size < total)
        FAIL(BK_ECORRUPT, "trailing bytes after the end of the data");

    bool is_filter = false;
    switch (m->kind) {
    case BK_KIND_BLOCKED:
    case BK_KIND_CLASSIC:
    case BK_KIND_COUNTING:
    case BK_KIND_SCALABLE:
        is_filter = true;
        break;
    case BK_KIND_BITMAP:
    case BK_KIND_BITMAP2:
        break;
    default:
        FAIL(BK_ECORRUPT, "unknown kind");
    }
    if (is_filter) {
        if (m->hash < 1 || m->hash > BK_HASH_COUNT)
            FAIL(BK_ECORRUPT, "unknown hash id");
        if (!(m->fpr >= 0.0 && m->fpr <= 1.0))
            FAIL(BK_ECORRUPT, "false-positive rate is not in [0, 1]");
    } else {
        if (m->hash != 0 || m->seed != 0 || m->items != 0 || !same_f64(m->fpr, 0.0))
            FAIL(BK_ECORRUPT, "bitmap header has filter fields set");
    }
    if (m->kind == BK_KIND_SCALABLE) {
        if (m->sub_kind != BK_KIND_BLOCKED && m->sub_kind != BK_KIND_CLASSIC)
            FAIL(BK_ECORRUPT, "scalable filter with an invalid sub-filter kind");
        if (m->flags & ~BKF_FLAGS_KNOWN)
            FAIL(BK_ECORRUPT, "unknown flags set");
        /* The same bounds bk_filter_create puts on these. */
        if (!(m->growth >= 1.0) || isinf(m->growth))
            FAIL(BK_ECORRUPT, "scalable growth factor is not a finite number >= 1");
        if (!(m->tightening > 0.0 && m->tightening < 1.0))
            FAIL(BK_ECORRUPT, "scalable tightening ratio is not in (0, 1)");
        if (!(m->fpr > 0.0 && m->fpr < 1.0))
            FAIL(BK_ECORRUPT, "false-positive rate is not in (0, 1)");
        if (m->nparts > BKI_SCALABLE_MAX_SUBS)
            FAIL(BK_ECORRUPT, "scalable chain longer than the library allows");
    } else {
        if (m->nparts != 1)
            FAIL(BK_ECORRUPT, "part count is not 1 for a single-array kind");
        if (m->sub_kind != 0 || m->flags != 0 || !same_f64(m->growth, 0.0) ||
            !same_f64(m->tightening, 0.0))
            FAIL(BK_ECORRUPT, "scalable-only fields set on another kind");
    }

    uint64_t off = mlen;
    for (uint32_t i = 0; i < m->nparts; i++) {
        part_t p;
        decode_part(m, i, &p);
        if (!all_zero(m->table + (uint64_t)BKF_PART * i + P_RESERVED, BKF_PART - P_RESERVED))
            FAIL(BK_ECORRUPT, "reserved part-table bytes are not zero");
        uint32_t want_kind = m->kind == BK_KIND_SCALABLE ? m->sub_kind : m->kind;
        if (p.kind != want_kind)
            FAIL(BK_ECORRUPT, "part kind disagrees with the header");
        uint64_t len = payload_len(p.kind, p.cells);
        if (len == 0)
            FAIL(BK_ECORRUPT, "cell count is zero or not a whole number of units");
        if (len > BKI_MAX_PAYLOAD_BYTES)
            FAIL(BK_ECORRUPT, "payload larger than the 64 TiB limit");
        if (p.length != len)
            FAIL(BK_ECORRUPT, "payload length disagrees with the cell count");
        if (p.offset != off)
            FAIL(BK_ECORRUPT, "payload offset is not where the layout puts it");
        /* off <= total here and len <= 2^46, so this cannot overflow */
        if (align64(len) > total - off)
            FAIL(BK_ECORRUPT, "payload extends past the end of the data");
        off += align64(len);
        if (is_filter) {
            uint32_t max_k = p.kind == BK_KIND_CLASSIC ? BKI_CLASSIC_MAX_K : BKI_BLOCKED_MAX_K;
            if (p.k == 0 || p.k > max_k)
                FAIL(BK_ECORRUPT, "probe count k is zero or too large for the kind");
            if (!(p.fpr >= 0.0 && p.fpr <= 1.0))
                FAIL(BK_ECORRUPT, "false-positive rate is not in [0, 1]");
            /* A chain hashes a key once, with the parent's seed, for all
             * its sub-filters: a sub-filter with another seed would give
             * false negatives. */
            if (p.seed != m->seed)
                FAIL(BK_ECORRUPT, "part seed disagrees with the header");
            if (m->kind != BK_KIND_SCALABLE &&
                (p.capacity != m->capacity || !same_f64(p.fpr, m->fpr) || p.items != m->items))
                FAIL(BK_ECORRUPT, "part fields disagree with the header");
        } else {
            if (p.k != 0 || p.items != 0 || p.seed != 0 || !same_f64(p.fpr, 0.0) ||
                p.capacity != p.cells || m->capacity != p.cells)
                FAIL(BK_ECORRUPT, "bitmap part fields are inconsistent");
        }
    }
    if (off != m->file_size)
        FAIL(BK_ECORRUPT, "file size disagrees with the payload sizes");
    return BK_OK;
}

/* Checks the padding after a payload and, when dst holds the payload, its
 * checksum and the kind's invariants. */
static bk_status_t check_payload(const source_t *s, const part_t *p, const uint8_t *dst,
                                 bool verify_sum, const char **why)
{
    uint8_t pad[64];
    uint64_t padn = align64(p->length) - p->length;
    if (padn) {
        if (source_read(s, p->offset + p->length, pad, padn) != BK_OK)
            FAIL(BK_EIO, "read error");
        if (!all_zero(pad, (size_t)padn))
            FAIL(BK_ECORRUPT, "padding after a payload is not zero");
    }
    if (!verify_sum)
        return BK_OK;
    if (checksum(dst, p->length) != p->sum)
        FAIL(BK_ECORRUPT, "payload checksum mismatch (data damaged)");
    if (p->kind == BK_KIND_BITMAP || p->kind == BK_KIND_BITMAP2) {
        /* Values >= n must be clear, and 2-bit cells never hold 3: a
         * checksum-valid file that breaks these would give wrong counts. */
        unsigned per_byte = p->kind == BK_KIND_BITMAP ? 8 : 4;
        uint64_t used = p->cells / per_byte;
        unsigned rem = (unsigned)(p->cells % per_byte);
        if (rem) {
            uint8_t mask = (uint8_t)(0xffu << (rem * (8 / per_byte)));
            if (dst[used] & mask)
                FAIL(BK_ECORRUPT, "bits set past the end of the bitmap");
            used++;
        }
        if (!all_zero(dst + used, (size_t)(p->length - used)))
            FAIL(BK_ECORRUPT, "bits set past the end of the bitmap");
        if (p->kind == BK_KIND_BITMAP2) {
            for (uint64_t i = 0; i < p->length; i++) {
                uint8_t b = dst[i];
                if (b & (b >> 1) & 0x55)
                    FAIL(BK_ECORRUPT, "2-bit bitmap cell holds the invalid state 3");
            }
        }
    }
    return BK_OK;
}

/* For an input already in memory: checks every payload in place, so that
 * damaged bytes are refused before anything is allocated for them. */
static bk_status_t verify_payloads(const meta_t *m, const source_t *s, const char **why)
{
    for (uint32_t i = 0; i < m->nparts; i++) {
        part_t p;
        decode_part(m, i, &p);
        bk_status_t st = check_payload(s, &p, s->buf + p.offset, true, why);
        if (st != BK_OK)
            return st;
    }
    return BK_OK;
}

/* ========================================================================
 * Building filters from validated metadata
 * ======================================================================== */

/* A single-array filter of part p's geometry with a zeroed payload. */
static bk_status_t new_part_filter(bk_filter_t **out, const meta_t *m, const part_t *p)
{
    bk_filter_t *f = NULL;
    bk_status_t st = bki_filter_new(&f, (bk_kind_t)p->kind, p->cells, p->k,
                                    (bk_hash_id_t)m->hash, p->seed);
    if (st != BK_OK)
        return st == BK_EINVAL ? BK_ECORRUPT : st;
    if (f->nbytes < p->length || f->cells != p->cells) {
        bk_filter_free(f);
        return BK_ECORRUPT;
    }
    f->capacity = p->capacity;
    f->fpr = p->fpr;
    atomic_store_explicit(&f->items, p->items, memory_order_relaxed);
    *out = f;
    return BK_OK;
}

/* Builds the filter described by m. With map != NULL, payloads point into
 * the mapping (borrowed); otherwise they are read from s and verified. */
static bk_status_t build_filter(bk_filter_t **out, const meta_t *m, const source_t *s,
                                uint8_t *map, const char **why)
{
    bk_status_t st;
    if (m->kind == BK_KIND_BITMAP || m->kind == BK_KIND_BITMAP2)
        FAIL(BK_EKIND, "the data holds a bitmap, not a filter");
    bk_filter_t *top = NULL;
    if (m->kind == BK_KIND_SCALABLE) {
        top = bki_calloc(1, sizeof *top);
        if (!top)
            FAIL(BK_ENOMEM, "out of memory");
        top->map_fd = -1;
        top->kind = BK_KIND_SCALABLE;
        top->hash = (bk_hash_id_t)m->hash;
        top->seed = m->seed;
        top->capacity = m->capacity;
        top->fpr = m->fpr;
        atomic_store_explicit(&top->items, m->items, memory_order_relaxed);
        top->sub_kind = (bk_kind_t)m->sub_kind;
        top->growth = m->growth;
        top->tightening = m->tightening;
        top->nonscaling = (m->flags & BKF_FLAG_NONSCALING) != 0;
        top->first_error_as_given = (m->flags & BKF_FLAG_FIRST_ERROR) != 0;
        top->subs = bki_calloc(m->nparts, sizeof *top->subs);
        if (!top->subs) {
            bki_free(top);
            FAIL(BK_ENOMEM, "out of memory");
        }
        top->subs_cap = m->nparts;
    }
    for (uint32_t i = 0; i < m->nparts; i++) {
        part_t p;
        decode_part(m, i, &p);
        bk_filter_t *f = NULL;
        st = new_part_filter(&f, m, &p);
        if (st != BK_OK) {
            bk_filter_free(top);
            FAIL(st, st == BK_ENOMEM ? "out of memory" : "geometry the library cannot build");
        }
        if (map && f->nbytes > align64(p.length)) {
            bk_filter_free(f);
            bk_filter_free(top);
            FAIL(BK_ECORRUPT, "geometry the library cannot map");
        }
        if (map) {
            bki_payload_free(f->data, f->nbytes, f->mem);
            f->data = map + p.offset;
            f->mem = BKI_MEM_BORROWED;
            st = check_payload(s, &p, NULL, false, why);
        } else {
            /* Buffers were verified in place before; files are verified
             * here, once read. */
            st = source_read(s, p.offset, f->data, p.length);
            if (st != BK_OK && why)
                *why = "read error";
            if (st == BK_OK && !s->buf)
                st = check_payload(s, &p, f->data, true, why);
        }
        if (st != BK_OK) {
            bk_filter_free(f);
            bk_filter_free(top);
            return st;
        }
        if (!top) {
            *out = f;
            return BK_OK;
        }
        top->subs[top->nsubs++] = f;
    }
    *out = top;
    return BK_OK;
}

/* ========================================================================
 * Public API: filters
 * ======================================================================== */

uint64_t bk_filter_serialized_size(const bk_filter_t *f)
{
    obj_t o;
    if (obj_from_filter(&o, f) != BK_OK)
        return 0;
    return obj_size(&o);
}

bk_status_t bk_filter_serialize(const bk_filter_t *f, void *buf, size_t cap, size_t *written)
{
    obj_t o;
    bk_status_t st = obj_from_filter(&o, f);
    if (st != BK_OK)
        return st;
    return obj_serialize(&o, buf, cap, written);
}

bk_status_t bk_filter_deserialize(bk_filter_t **out, const void *buf, size_t len,
                                  const char **why)
{
    if (!out || (!buf && len))
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    if (len == 0)
        FAIL(BK_ECORRUPT, "empty input");
    meta_t m;
    bk_status_t st = parse_meta(buf, len, len, &m, why);
    if (st != BK_OK)
        return st;
    if (m.kind == BK_KIND_BITMAP || m.kind == BK_KIND_BITMAP2)
        FAIL(BK_EKIND, "the data holds a bitmap, not a filter");
    source_t s = {.buf = buf, .fd = -1};
    st = verify_payloads(&m, &s, why);
    if (st != BK_OK)
        return st;
    return build_filter(out, &m, &s, NULL, why);
}

bk_status_t bk_filter_save(const bk_filter_t *f, const char *path)
{
    obj_t o;
    bk_status_t st = obj_from_filter(&o, f);
    if (st != BK_OK)
        return st;
    return obj_save(&o, path);
}

/* Reads and validates the metadata of an open file into a heap buffer
 * (*meta_buf, caller frees). The buffer is never larger than the file. */
static bk_status_t read_file_meta(int fd, uint64_t size, uint8_t **meta_buf, meta_t *m,
                                  const char **why)
{
    uint8_t head[BKF_HEADER];
    uint64_t n = size < BKF_HEADER ? size : BKF_HEADER;
    *meta_buf = NULL;
    if (size == 0)
        FAIL(BK_ECORRUPT, "empty file");
    source_t s = {.buf = NULL, .fd = fd};
    if (source_read(&s, 0, head, n) != BK_OK)
        FAIL(BK_EIO, "read error");
    bk_status_t st = check_prefix(head, n, why);
    if (st != BK_OK)
        return st;
    uint32_t nparts = get_u32(head + H_NPARTS);
    if (nparts == 0 || nparts > BKF_MAX_PARTS)
        FAIL(BK_ECORRUPT, "part count is zero or absurd");
    uint64_t mlen = meta_len(nparts);
    if (mlen > size)
        FAIL(BK_ECORRUPT, "truncated inside the header or part table");
    uint8_t *b = bki_malloc((size_t)mlen);
    if (!b)
        FAIL(BK_ENOMEM, "out of memory");
    if (source_read(&s, 0, b, mlen) != BK_OK) {
        bki_free(b);
        FAIL(BK_EIO, "read error");
    }
    st = parse_meta(b, mlen, size, m, why);
    if (st != BK_OK) {
        bki_free(b);
        return st;
    }
    *meta_buf = b;
    return BK_OK;
}

static bk_status_t open_regular(const char *path, int flags, int *fd_out, uint64_t *size,
                                const char **why)
{
    if (!path)
        FAIL(BK_EINVAL, "invalid argument");
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        FAIL(BK_EIO, "cannot open the file");
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        FAIL(BK_EIO, "cannot stat the file");
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        FAIL(BK_EIO, "not a regular file");
    }
    *fd_out = fd;
    *size = (uint64_t)st.st_size;
    return BK_OK;
}

bk_status_t bk_filter_load(bk_filter_t **out, const char *path, const char **why)
{
    if (!out)
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    int fd;
    uint64_t size;
    bk_status_t st = open_regular(path, O_RDONLY, &fd, &size, why);
    if (st != BK_OK)
        return st;
#ifdef POSIX_FADV_SEQUENTIAL
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    uint8_t *mb;
    meta_t m;
    st = read_file_meta(fd, size, &mb, &m, why);
    if (st == BK_OK) {
        source_t s = {.buf = NULL, .fd = fd};
        st = build_filter(out, &m, &s, NULL, why);
        bki_free(mb);
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return st;
}

static void set_readonly(bk_filter_t *f, bool ro)
{
    f->readonly = ro;
    if (f->kind == BK_KIND_SCALABLE)
        for (uint32_t i = 0; i < f->nsubs; i++)
            f->subs[i]->readonly = ro;
}

bk_status_t bk_filter_open(bk_filter_t **out, const char *path, bk_map_mode_t mode,
                           const char **why)
{
    if (!out || (mode != BK_MAP_READONLY && mode != BK_MAP_WRITABLE))
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    bool writable = mode == BK_MAP_WRITABLE;
    int fd;
    uint64_t size;
    bk_status_t st = open_regular(path, writable ? O_RDWR : O_RDONLY, &fd, &size, why);
    if (st != BK_OK)
        return st;
    if (size < BKF_HEADER || size > SIZE_MAX) {
        /* Read what is there for the precise message. */
        uint8_t *mb = NULL;
        meta_t m;
        st = read_file_meta(fd, size, &mb, &m, why);
        bki_free(mb);
        close(fd);
        if (st == BK_OK)
            FAIL(BK_ENOMEM, "file too large to map");
        return st;
    }
    void *map = mmap(NULL, (size_t)size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                     MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int saved = errno;
        close(fd);
        errno = saved;
        FAIL(saved == ENOMEM ? BK_ENOMEM : BK_EIO, "cannot map the file");
    }
    meta_t m;
    st = parse_meta(map, size, size, &m, why);
    if (st == BK_OK) {
        source_t s = {.buf = map, .fd = -1};
        st = build_filter(out, &m, &s, map, why);
    }
    if (st != BK_OK) {
        munmap(map, (size_t)size);
        close(fd);
        return st;
    }
    /* Queries probe random lines: read-ahead around each would be waste. */
    (void)madvise(map, (size_t)size, MADV_RANDOM);
    bk_filter_t *f = *out;
    f->map_base = map;
    f->map_len = size;
    f->map_fd = fd;
    set_readonly(f, !writable);
    return BK_OK;
}

bk_status_t bk_filter_sync(bk_filter_t *f)
{
    if (!f || !f->map_base)
        return BK_EINVAL;
    if (f->readonly)
        return BK_EREADONLY;
    obj_t o;
    bk_status_t st = obj_from_filter(&o, f);
    if (st != BK_OK)
        return st;
    /* The chain cannot have grown (mapped scalable filters do not), so the
     * layout is the one on disk; refuse rather than write past it. */
    if (obj_size(&o) != f->map_len ||
        get_u32((const uint8_t *)f->map_base + H_NPARTS) != o.nparts)
        return BK_EINVAL;
    encode_meta(&o, f->map_base);
    if (msync(f->map_base, (size_t)f->map_len, MS_SYNC) != 0)
        return BK_EIO;
    return BK_OK;
}

bk_status_t bk_filter_verify(const bk_filter_t *f, const char **why)
{
    if (!f)
        FAIL(BK_EINVAL, "invalid argument");
    if (!f->map_base)
        return BK_OK;
    meta_t m;
    bk_status_t st = parse_meta(f->map_base, f->map_len, f->map_len, &m, why);
    if (st != BK_OK)
        return st;
    for (uint32_t i = 0; i < m.nparts; i++) {
        part_t p;
        decode_part(&m, i, &p);
        if (checksum((const uint8_t *)f->map_base + p.offset, p.length) != p.sum)
            FAIL(BK_ECORRUPT, "payload checksum mismatch (data damaged or not synced)");
    }
    return BK_OK;
}

bk_status_t bk_peek_kind(const void *buf, size_t len, bk_kind_t *out)
{
    if (!buf || !out)
        return BK_EINVAL;
    const char *why;
    const uint8_t *b = buf;
    bk_status_t st = check_prefix(b, len, &why);
    if (st != BK_OK)
        return st;
    uint32_t kind = get_u32(b + H_KIND);
    if (kind < BK_KIND_BLOCKED || kind > BK_KIND_BITMAP2)
        return BK_ECORRUPT;
    /* With the whole metadata at hand, make sure the kind is not a
     * damaged byte. */
    uint32_t nparts = get_u32(b + H_NPARTS);
    if (nparts == 0 || nparts > BKF_MAX_PARTS)
        return BK_ECORRUPT;
    uint64_t table_end = BKF_HEADER + (uint64_t)BKF_PART * nparts;
    if (len >= table_end + 8 && get_u64(b + table_end) != checksum(b, table_end))
        return BK_ECORRUPT;
    *out = (bk_kind_t)kind;
    return BK_OK;
}

/* ========================================================================
 * Public API: bitmaps
 * ======================================================================== */

/* The data must hold the bitmap kind asked for. */
static bk_status_t check_bitmap_kind(const meta_t *m, uint32_t kind, const char **why)
{
    if (m->kind != kind) {
        if (m->kind == BK_KIND_BITMAP || m->kind == BK_KIND_BITMAP2)
            FAIL(BK_EKIND, "the data holds the other bitmap kind");
        FAIL(BK_EKIND, "the data holds a filter, not a bitmap");
    }
    return BK_OK;
}

static bk_status_t fill_bitmap(uint64_t *words, uint64_t nbytes, const meta_t *m,
                               const source_t *s, const char **why)
{
    part_t p;
    decode_part(m, 0, &p);
    if (nbytes < p.length)
        FAIL(BK_ECORRUPT, "bitmap size the library cannot build");
    if (source_read(s, p.offset, words, p.length) != BK_OK)
        FAIL(BK_EIO, "read error");
    if (s->buf) /* verified in place already */
        return BK_OK;
    return check_payload(s, &p, (const uint8_t *)words, true, why);
}

/* Shared by the two bitmap kinds: parse from a buffer or a file. */
static bk_status_t bitmap_parse(const void *buf, size_t len, const char *path, uint32_t kind,
                                meta_t *m, source_t *s, uint8_t **meta_buf, int *fd,
                                const char **why)
{
    *meta_buf = NULL;
    *fd = -1;
    bk_status_t st;
    if (path) {
        uint64_t size;
        st = open_regular(path, O_RDONLY, fd, &size, why);
        if (st != BK_OK)
            return st;
        st = read_file_meta(*fd, size, meta_buf, m, why);
        s->buf = NULL;
        s->fd = *fd;
    } else {
        if (!buf && len)
            FAIL(BK_EINVAL, "invalid argument");
        if (len == 0)
            FAIL(BK_ECORRUPT, "empty input");
        st = parse_meta(buf, len, len, m, why);
        s->buf = buf;
        s->fd = -1;
    }
    if (st == BK_OK)
        st = check_bitmap_kind(m, kind, why);
    if (st == BK_OK && !path)
        st = verify_payloads(m, s, why);
    return st;
}

static void bitmap_parse_done(uint8_t *meta_buf, int fd)
{
    bki_free(meta_buf);
    if (fd >= 0) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
}

static bk_status_t bitmap_read(bk_bitmap_t **out, const void *buf, size_t len, const char *path,
                               const char **why)
{
    if (!out)
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    meta_t m;
    source_t s;
    uint8_t *mb;
    int fd;
    bk_status_t st = bitmap_parse(buf, len, path, BK_KIND_BITMAP, &m, &s, &mb, &fd, why);
    if (st == BK_OK) {
        bk_bitmap_t *b = NULL;
        st = bk_bitmap_create(&b, m.capacity);
        if (st != BK_OK) {
            if (why)
                *why = st == BK_ENOMEM ? "out of memory" : "bitmap size the library cannot build";
            if (st == BK_EINVAL)
                st = BK_ECORRUPT;
        } else {
            st = fill_bitmap(b->words, b->nbytes, &m, &s, why);
        }
        if (st == BK_OK)
            *out = b;
        else
            bk_bitmap_free(b);
    }
    bitmap_parse_done(mb, fd);
    return st;
}

static bk_status_t bitmap2_read(bk_bitmap2_t **out, const void *buf, size_t len,
                                const char *path, const char **why)
{
    if (!out)
        FAIL(BK_EINVAL, "invalid argument");
    *out = NULL;
    meta_t m;
    source_t s;
    uint8_t *mb;
    int fd;
    bk_status_t st = bitmap_parse(buf, len, path, BK_KIND_BITMAP2, &m, &s, &mb, &fd, why);
    if (st == BK_OK) {
        bk_bitmap2_t *b = NULL;
        st = bk_bitmap2_create(&b, m.capacity);
        if (st != BK_OK) {
            if (why)
                *why = st == BK_ENOMEM ? "out of memory" : "bitmap size the library cannot build";
            if (st == BK_EINVAL)
                st = BK_ECORRUPT;
        } else {
            st = fill_bitmap(b->words, b->nbytes, &m, &s, why);
        }
        if (st == BK_OK)
            *out = b;
        else
            bk_bitmap2_free(b);
    }
    bitmap_parse_done(mb, fd);
    return st;
}

uint64_t bk_bitmap_serialized_size(const bk_bitmap_t *b)
{
    obj_t o;
    if (!b || obj_from_bitmap(&o, BK_KIND_BITMAP, b->n, b->words, b->nbytes) != BK_OK)
        return 0;
    return obj_size(&o);
}

bk_status_t bk_bitmap_serialize(const bk_bitmap_t *b, void *buf, size_t cap, size_t *written)
{
    obj_t o;
    if (!b)
        return BK_EINVAL;
    bk_status_t st = obj_from_bitmap(&o, BK_KIND_BITMAP, b->n, b->words, b->nbytes);
    return st != BK_OK ? st : obj_serialize(&o, buf, cap, written);
}

bk_status_t bk_bitmap_deserialize(bk_bitmap_t **out, const void *buf, size_t len,
                                  const char **why)
{
    return bitmap_read(out, buf, len, NULL, why);
}

bk_status_t bk_bitmap_save(const bk_bitmap_t *b, const char *path)
{
    obj_t o;
    if (!b)
        return BK_EINVAL;
    bk_status_t st = obj_from_bitmap(&o, BK_KIND_BITMAP, b->n, b->words, b->nbytes);
    return st != BK_OK ? st : obj_save(&o, path);
}

bk_status_t bk_bitmap_load(bk_bitmap_t **out, const char *path, const char **why)
{
    if (!path)
        FAIL(BK_EINVAL, "invalid argument");
    return bitmap_read(out, NULL, 0, path, why);
}

uint64_t bk_bitmap2_serialized_size(const bk_bitmap2_t *b)
{
    obj_t o;
    if (!b || obj_from_bitmap(&o, BK_KIND_BITMAP2, b->n, b->words, b->nbytes) != BK_OK)
        return 0;
    return obj_size(&o);
}

bk_status_t bk_bitmap2_serialize(const bk_bitmap2_t *b, void *buf, size_t cap,
                                 size_t *written)
{
    obj_t o;
    if (!b)
        return BK_EINVAL;
    bk_status_t st = obj_from_bitmap(&o, BK_KIND_BITMAP2, b->n, b->words, b->nbytes);
    return st != BK_OK ? st : obj_serialize(&o, buf, cap, written);
}

bk_status_t bk_bitmap2_deserialize(bk_bitmap2_t **out, const void *buf, size_t len,
                                   const char **why)
{
    return bitmap2_read(out, buf, len, NULL, why);
}

bk_status_t bk_bitmap2_save(const bk_bitmap2_t *b, const char *path)
{
    obj_t o;
    if (!b)
        return BK_EINVAL;
    bk_status_t st = obj_from_bitmap(&o, BK_KIND_BITMAP2, b->n, b->words, b->nbytes);
    return st != BK_OK ? st : obj_save(&o, path);
}

bk_status_t bk_bitmap2_load(bk_bitmap2_t **out, const char *path, const char **why)
{
    if (!path)
        FAIL(BK_EINVAL, "invalid argument");
    return bitmap2_read(out, NULL, 0, path, why);
}
