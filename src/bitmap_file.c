/*
 * Bitmap persistence: bk_bitmap and bk_bitmap2 in the filters' container
 * (docs/FORMAT.md), one part each. The two kinds share every step here;
 * a small view (bits a value, n, words) is all that differs, so each public call
 * is a one-line use of the shared read and write.
 *
 * A bitmap of 1 MiB or more is saved paged (a checksum per 4 KiB page, as
 * a large filter is), and loading such a file reads only its header and
 * group checksums: the bitmap's words are a filter shell's payload
 * (kind bitmap or bitmap2, no key calls), read and checked a page at a
 * time by pages.c as values touch them, and a save to the same file is
 * that shell's checkpoint, writing the pages that changed. A gigabyte
 * bitmap kept between runs then costs what each run touches.
 */
#define _GNU_SOURCE
#include "codec.h"
#include "pages.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

/* What the format needs of either bitmap kind. */
typedef struct dense {
    unsigned bits; /* a value takes: 1 (bk_bitmap_t) or 2 (bk_bitmap2_t) */
    uint64_t n;
    uint64_t *words;
    uint64_t nbytes;
    bki_touched_t *touched;
    bk_filter_t *file; /* a paged file's shell, or NULL */
} dense_t;

static dense_t view1(const bk_bitmap_t *b)
{
    dense_t d = {1, b->n, b->words, b->nbytes, (bki_touched_t *)&b->touched, b->file};
    return d;
}

static dense_t view2(const bk_bitmap2_t *b)
{
    dense_t d = {2, b->n, b->words, b->nbytes, (bki_touched_t *)&b->touched, b->file};
    return d;
}

/* Creates an empty bitmap of `bits` bits a value over [0, n); *d views it. */
static bk_status_t dense_create(unsigned bits, uint64_t n, void **obj, dense_t *d)
{
    if (bits == 1) {
        bk_bitmap_t *b = NULL;
        bk_status_t st = bk_bitmap_create(&b, n);
        if (st == BK_OK)
            *d = view1(b);
        *obj = b;
        return st;
    }
    bk_bitmap2_t *b = NULL;
    bk_status_t st = bk_bitmap2_create(&b, n);
    if (st == BK_OK)
        *d = view2(b);
    *obj = b;
    return st;
}

static void dense_free(unsigned bits, void *obj)
{
    if (bits == 1)
        bk_bitmap_free(obj);
    else
        bk_bitmap2_free(obj);
}

/* The data must hold the bitmap kind asked for. */
static bk_status_t check_bitmap_kind(const bkf_meta_t *m, unsigned bits, const char **why)
{
    if (m->kind != (uint32_t)bki_bitmap_kind(bits)) {
        if (bki_kind_is((bk_kind_t)m->kind, BKI_KIND_BITMAP))
            FAIL(BK_EKIND, "the data holds the other bitmap kind");
        FAIL(BK_EKIND, "the data holds a filter, not a bitmap");
    }
    return BK_OK;
}

/* Validated metadata from a buffer (payload verified in place) or from a
 * file (opened: *fd, *meta_buf to release with parse_done). */
static bk_status_t dense_parse(const void *buf, size_t len, const char *path, unsigned bits,
                               bkf_meta_t *m, bkf_source_t *s, uint8_t **meta_buf, int *fd,
                               const char **why)
{
    *meta_buf = NULL;
    *fd = -1;
    bk_status_t st;
    if (path) {
        uint64_t size;
        /* a checkpoint in progress waited for, a killed one finished */
        st = bkf_open_settled(path, O_RDONLY, fd, &size, why);
        if (st != BK_OK)
            return st;
        st = bkf_read_file_meta(*fd, size, meta_buf, m, why);
        *s = bkf_file_source(*fd);
    } else {
        if (!buf && len)
            FAIL(BK_EINVAL, "invalid argument");
        if (len == 0)
            FAIL(BK_ECORRUPT, "empty input");
        st = bkf_parse_meta(buf, len, len, m, why);
        bkf_source_t b = {.buf = buf, .read = NULL, .fd = -1};
        *s = b;
    }
    if (st == BK_OK)
        st = check_bitmap_kind(m, bits, why);
    if (st == BK_OK && !path)
        st = bkf_verify_payloads(m, s, why);
    return st;
}

static void parse_done(uint8_t *meta_buf, int fd)
{
    bki_free(meta_buf);
    if (fd >= 0) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
}

/* Copies the validated payload into d's words (verifying a file's). */
static bk_status_t fill(const dense_t *d, const bkf_meta_t *m, const bkf_source_t *s,
                        const char **why)
{
    bkf_part_t p;
    bkf_decode_part(m, 0, &p);
    if (d->nbytes < p.length)
        FAIL(BK_ECORRUPT, "bitmap size the library cannot build");
    if (bkf_source_read(s, p.offset, d->words, p.length) != BK_OK)
        FAIL(BK_EIO, "read error");
    bki_touched_all(d->touched); /* every page was written */
    if (s->buf) /* verified in place already */
        return BK_OK;
    /* a paged file's payload is checked by its pages */
    bk_status_t st = bkf_check_payload(s, &p, (const uint8_t *)d->words, !m->paged, why);
    if (st == BK_OK && m->paged)
        st = bkf_pages_verify(m, s, (const uint8_t *)d->words, why);
    return st;
}

/* Builds a bitmap of the kind from validated metadata. */
static bk_status_t dense_build(unsigned bits, void **out, const bkf_meta_t *m,
                               const bkf_source_t *s, const char **why)
{
    void *obj = NULL;
    dense_t d;
    bk_status_t st = dense_create(bits, m->capacity, &obj, &d);
    if (st != BK_OK) {
        if (why)
            *why = st == BK_ENOMEM ? "out of memory" : "bitmap size the library cannot build";
        return st == BK_EINVAL ? BK_ECORRUPT : st;
    }
    st = fill(&d, m, s, why);
    if (st != BK_OK) {
        dense_free(bits, obj);
        return st;
    }
    *out = obj;
    return BK_OK;
}

/* bitmap.c's calls into the paging code (bki_bitmap_paging_t). */
static void shell_all(const bk_filter_t *shell, bool write)
{
    (void)bki_pages_all(shell, NULL); /* damage stays reported */
    if (write)
        bki_pages_mark_all_written(shell);
}

static const bki_bitmap_paging_t shell_paging = {shell_all, bk_filter_free};

/* A paged file's bitmap (file.c's load_paged, for a bitmap): an anonymous
 * mapping the size of the file's payload, each page read into it and
 * checked the first time a value touches it, held by a filter shell of
 * the bitmap's kind that pages.c and the checkpoint work on. On success
 * the bitmap owns a duplicate of fd and the memory. BK_ENOMEM with
 * nothing made: the caller reads the file whole instead. */
static bk_status_t dense_load_paged(unsigned bits, void **out, int fd, const bkf_meta_t *m,
                                    const uint8_t *meta, const char **why)
{
    bkf_part_t p;
    bkf_decode_part(m, 0, &p);
    if (m->nparts != 1 || m->capacity == 0 || m->capacity > BKI_BITMAP_MAX_N ||
        bki_layout_bytes((bk_kind_t)m->kind, m->capacity) != p.length)
        FAIL(BK_ECORRUPT, "bitmap size the library cannot build");
    uint64_t len = bkf_align_page(m->body_end);
    if (len > SIZE_MAX)
        return BK_ENOMEM;
    uint8_t *map = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    bk_filter_t *shell = map == MAP_FAILED ? NULL : bki_calloc(1, sizeof *shell);
    int keep = shell ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (keep < 0) {
        bki_free(shell);
        if (map != MAP_FAILED)
            munmap(map, (size_t)len);
        return BK_ENOMEM;
    }
    (void)madvise(map, (size_t)len, MADV_NOHUGEPAGE); /* a page read is 4 KiB */
    shell->kind = (bk_kind_t)m->kind;
    shell->capacity = m->capacity;
    shell->data = map + p.offset;
    shell->nbytes = p.length;
    shell->mem = BKI_MEM_BORROWED;
    shell->map_fd = -1;
    bk_status_t st = bki_pages_attach(shell, keep, m, meta, map, len, true, NULL, why);
    if (st != BK_OK) { /* keep is closed, the mapping left to us */
        bki_free(shell);
        munmap(map, (size_t)len);
        return st;
    }
    *out = bki_bitmap_over(bits, m->capacity, shell, &shell_paging); /* frees shell if not */
    if (!*out)
        FAIL(BK_ENOMEM, "out of memory");
    /* the duplicate shares fd's checkpoint lock: dropped, so that saves
     * are not held off for the bitmap's lifetime */
    bkf_settle_end(fd);
    return BK_OK;
}

/* The one reader behind the four public ones: from buf/len or from path.
 * *out is the new bitmap on success, NULL otherwise. */
static bk_status_t dense_read(unsigned bits, void **out, const void *buf, size_t len,
                              const char *path, const char **why)
{
    *out = NULL;
    bkf_meta_t m;
    bkf_source_t s;
    uint8_t *mb;
    int fd;
    bk_status_t st = dense_parse(buf, len, path, bits, &m, &s, &mb, &fd, why);
    if (st == BK_OK && path && m.paged) {
        st = dense_load_paged(bits, out, fd, &m, mb, why);
        if (st == BK_ENOMEM)
            st = BK_OK; /* no room for the page records: read it whole */
    }
    if (st == BK_OK && !*out) {
#ifdef POSIX_FADV_SEQUENTIAL
        if (fd >= 0)
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
        st = dense_build(bits, out, &m, &s, why);
    }
    parse_done(mb, fd);
    return st;
}

static bk_status_t dense_obj(const void *b, dense_t d, bkf_obj_t *o)
{
    if (!b)
        return BK_EINVAL;
    return bkf_obj_from_bitmap(o, (uint32_t)bki_bitmap_kind(d.bits), d.n, d.words, d.nbytes);
}

/* Every page of a paged file's bitmap read and checked, before its bytes
 * are written anywhere: BK_ECORRUPT (and the bytes are not written) when
 * one is damaged. */
static bk_status_t dense_whole(dense_t d, const char **why)
{
    return d.file ? bki_pages_all(d.file, why) : BK_OK;
}

static uint64_t dense_size(const void *b, dense_t d)
{
    bkf_obj_t o;
    return dense_obj(b, d, &o) == BK_OK ? bkf_obj_size(&o) : 0;
}

static bk_status_t dense_serialize(const void *b, dense_t d, void *buf, size_t cap,
                                   size_t *written)
{
    bkf_obj_t o;
    bk_status_t st = dense_obj(b, d, &o);
    if (st == BK_OK)
        st = dense_whole(d, NULL);
    return st != BK_OK ? st : bkf_obj_serialize(&o, buf, cap, written);
}

static bk_status_t dense_save(const void *b, dense_t d, const char *path)
{
    bkf_obj_t o;
    bk_status_t st = dense_obj(b, d, &o);
    if (st != BK_OK)
        return st;
    if (d.file) {
        /* Read from a paged file: to that file, the pages that changed
         * (in place, through the checkpoint journal); to any other, the
         * whole bitmap, every page checked first. A damaged page is
         * BK_ECORRUPT either way, and nothing is written. */
        bk_checkpoint_t *cp = NULL;
        st = bk_checkpoint_new(&cp, d.file, path);
        if (st == BK_OK)
            st = bk_checkpoint_save(cp, d.file, NULL);
        bk_checkpoint_free(cp);
        return st;
    }
    return bkf_save_obj(&o, path);
}

static bk_status_t dense_damage(const void *b, dense_t d, const char **why)
{
    if (!b)
        FAIL(BK_EINVAL, "invalid argument");
    return d.file ? bk_filter_damage(d.file, why) : BK_OK;
}

static bk_status_t dense_verify(const void *b, dense_t d, const char **why)
{
    if (!b)
        FAIL(BK_EINVAL, "invalid argument");
    return dense_whole(d, why);
}

static void dense_pages(dense_t d, uint64_t *checked, uint64_t *total)
{
    bk_filter_pages(d.file, checked, total);
}

/* Runs dense_read for a public reader with a typed out pointer. */
#define READ_INTO(out, bits, buf, len, path)                                   \
    do {                                                                       \
        if (!(out))                                                            \
            FAIL(BK_EINVAL, "invalid argument");                               \
        void *obj_;                                                            \
        bk_status_t st_ = dense_read(bits, &obj_, buf, len, path, why);        \
        *(out) = obj_;                                                         \
        return st_;                                                            \
    } while (0)

/* A view of a possibly NULL bitmap (only dereferenced when non-NULL). */
#define VIEW1(b) ((b) ? view1(b) : (dense_t){1, 0, NULL, 0, NULL, NULL})
#define VIEW2(b) ((b) ? view2(b) : (dense_t){2, 0, NULL, 0, NULL, NULL})

uint64_t bk_bitmap_serialized_size(const bk_bitmap_t *b)
{
    return dense_size(b, VIEW1(b));
}

bk_status_t bk_bitmap_serialize(const bk_bitmap_t *b, void *buf, size_t cap, size_t *written)
{
    return dense_serialize(b, VIEW1(b), buf, cap, written);
}

bk_status_t bk_bitmap_deserialize(bk_bitmap_t **out, const void *buf, size_t len,
                                  const char **why)
{
    READ_INTO(out, 1, buf, len, NULL);
}

bk_status_t bk_bitmap_save(const bk_bitmap_t *b, const char *path)
{
    return dense_save(b, VIEW1(b), path);
}

bk_status_t bk_bitmap_load(bk_bitmap_t **out, const char *path, const char **why)
{
    if (!path)
        FAIL(BK_EINVAL, "invalid argument");
    READ_INTO(out, 1, NULL, 0, path);
}

uint64_t bk_bitmap2_serialized_size(const bk_bitmap2_t *b)
{
    return dense_size(b, VIEW2(b));
}

bk_status_t bk_bitmap2_serialize(const bk_bitmap2_t *b, void *buf, size_t cap,
                                 size_t *written)
{
    return dense_serialize(b, VIEW2(b), buf, cap, written);
}

bk_status_t bk_bitmap2_deserialize(bk_bitmap2_t **out, const void *buf, size_t len,
                                   const char **why)
{
    READ_INTO(out, 2, buf, len, NULL);
}

bk_status_t bk_bitmap2_save(const bk_bitmap2_t *b, const char *path)
{
    return dense_save(b, VIEW2(b), path);
}

bk_status_t bk_bitmap2_load(bk_bitmap2_t **out, const char *path, const char **why)
{
    if (!path)
        FAIL(BK_EINVAL, "invalid argument");
    READ_INTO(out, 2, NULL, 0, path);
}

bk_status_t bk_bitmap_damage(const bk_bitmap_t *b, const char **why)
{
    return dense_damage(b, VIEW1(b), why);
}

bk_status_t bk_bitmap2_damage(const bk_bitmap2_t *b, const char **why)
{
    return dense_damage(b, VIEW2(b), why);
}

bk_status_t bk_bitmap_verify(const bk_bitmap_t *b, const char **why)
{
    return dense_verify(b, VIEW1(b), why);
}

bk_status_t bk_bitmap2_verify(const bk_bitmap2_t *b, const char **why)
{
    return dense_verify(b, VIEW2(b), why);
}

void bk_bitmap_pages(const bk_bitmap_t *b, uint64_t *checked, uint64_t *total)
{
    dense_pages(VIEW1(b), checked, total);
}

void bk_bitmap2_pages(const bk_bitmap2_t *b, uint64_t *checked, uint64_t *total)
{
    dense_pages(VIEW2(b), checked, total);
}
