/*
 * Hash-partitioned spill files (see spill.h).
 *
 * Writes use plain write() at the end of the file (tracked in `size`, no
 * lseek), retried on EINTR and short counts; reads use pread() so several
 * partition readers can share the one descriptor. A write error is kept
 * with its errno text and the spill refuses further work, so a full disk is
 * reported once, clearly, and never turns into silently missing lines.
 */
#define _GNU_SOURCE
#include "spill.h"
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct block {
    uint64_t off;
    size_t len;
} block_t;

typedef struct part {
    char *buf;      /* write buffer, NULL until first use */
    size_t used;
    block_t *blocks;
    size_t nblocks, blocks_cap;
    uint64_t bytes; /* record bytes written or buffered */
    size_t max_block;
} part_t;

struct bkc_spill {
    int fd;
    char *dir;
    uint32_t nparts;
    size_t bufsize;
    part_t *parts;
    uint64_t size; /* file size so far */
    int failed;
    char err[512];
};

struct bkc_spill_reader {
    const bkc_spill_t *s;
    const part_t *p;
    size_t next_block;
    char *buf;
    size_t pos, len;
    uint64_t consumed;
    int failed;
    char err[256];
};

static void fail(bkc_spill_t *s, const char *what, int errnum)
{
    if (s->failed)
        return;
    s->failed = 1;
    snprintf(s->err, sizeof s->err, "%s spill file in %s: %s", what, s->dir,
             errnum ? strerror(errnum) : "out of memory");
}

static int open_unlinked(const char *dir)
{
    int fd = -1;
#ifdef O_TMPFILE
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    /* Only fall back when the file system lacks O_TMPFILE; any other error
     * (no such directory, no permission, no space) is the answer. */
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return -1;
#endif
    size_t n = strlen(dir) + sizeof "/bloomkit-common.XXXXXX";
    char *path = malloc(n);
    if (!path) {
        errno = ENOMEM;
        return -1;
    }
    snprintf(path, n, "%s/bloomkit-common.XXXXXX", dir);
    fd = mkstemp(path);
    if (fd >= 0) {
        unlink(path);
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    int saved = errno;
    free(path);
    errno = saved;
    return fd;
}

bkc_spill_t *bkc_spill_create(const char *dir, uint32_t parts, size_t bufsize, char *err,
                              size_t errlen)
{
    if (errlen)
        err[0] = '\0';
    bkc_spill_t *s = calloc(1, sizeof *s);
    if (s) {
        s->fd = -1;
        s->dir = strdup(dir);
        s->parts = calloc(parts ? parts : 1, sizeof *s->parts);
    }
    if (!s || !s->dir || !s->parts) {
        if (errlen)
            snprintf(err, errlen, "out of memory");
        bkc_spill_free(s);
        return NULL;
    }
    s->nparts = parts ? parts : 1;
    s->bufsize = bufsize < 64 ? 64 : bufsize;
    s->fd = open_unlinked(dir);
    if (s->fd < 0) {
        if (errlen)
            snprintf(err, errlen, "cannot create a spill file in %s: %s", dir,
                     strerror(errno));
        bkc_spill_free(s);
        return NULL;
    }
    return s;
}

void bkc_spill_free(bkc_spill_t *s)
{
    if (!s)
        return;
    if (s->parts) {
        for (uint32_t i = 0; i < s->nparts; i++) {
            free(s->parts[i].buf);
            free(s->parts[i].blocks);
        }
        free(s->parts);
    }
    if (s->fd >= 0)
        close(s->fd);
    free(s->dir);
    free(s);
}

const char *bkc_spill_error(const bkc_spill_t *s)
{
    return s->err;
}

uint64_t bkc_spill_part_bytes(const bkc_spill_t *s, uint32_t part)
{
    return part < s->nparts ? s->parts[part].bytes : 0;
}

uint64_t bkc_spill_total_bytes(const bkc_spill_t *s)
{
    uint64_t t = 0;
    for (uint32_t i = 0; i < s->nparts; i++)
        t += s->parts[i].bytes;
    return t;
}

static int write_all(bkc_spill_t *s, const char *p, size_t n)
{
    if (bkc_write_all(s->fd, p, n) != 0) {
        fail(s, "cannot write a", errno);
        return -1;
    }
    s->size += n;
    return 0;
}

static int add_block(bkc_spill_t *s, part_t *p, uint64_t off, size_t len)
{
    if (p->nblocks == p->blocks_cap) {
        size_t ncap = p->blocks_cap ? p->blocks_cap * 2 : 16;
        block_t *nb = realloc(p->blocks, ncap * sizeof *nb);
        if (!nb) {
            fail(s, "cannot index a", 0);
            return -1;
        }
        p->blocks = nb;
        p->blocks_cap = ncap;
    }
    p->blocks[p->nblocks].off = off;
    p->blocks[p->nblocks].len = len;
    p->nblocks++;
    if (len > p->max_block)
        p->max_block = len;
    return 0;
}

static int flush_part(bkc_spill_t *s, part_t *p)
{
    if (p->used == 0)
        return 0;
    uint64_t off = s->size;
    if (write_all(s, p->buf, p->used) != 0)
        return -1;
    if (add_block(s, p, off, p->used) != 0)
        return -1;
    p->used = 0;
    return 0;
}

static size_t put_varint(unsigned char *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (unsigned char)v;
    return n;
}

/* The bytes put_varint writes for v. */
static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

int bkc_spill_add(bkc_spill_t *s, uint32_t part, uint64_t h, const char *line, size_t len)
{
    if (s->failed)
        return -1;
    part_t *p = &s->parts[part];
    unsigned char hdr[10 + 8];
    size_t hn = varint_size(len) + 8;
    size_t need = hn + len;
    if (need > s->bufsize) {
        /* A line longer than a buffer is a block of its own. */
        if (flush_part(s, p) != 0)
            return -1;
        memcpy(hdr + put_varint(hdr, len), &h, 8);
        uint64_t off = s->size;
        if (write_all(s, (const char *)hdr, hn) != 0 || write_all(s, line, len) != 0)
            return -1;
        if (add_block(s, p, off, need) != 0)
            return -1;
        p->bytes += need;
        return 0;
    }
    if (!p->buf) {
        p->buf = malloc(s->bufsize);
        if (!p->buf) {
            fail(s, "cannot buffer a", 0);
            return -1;
        }
    }
    if (s->bufsize - p->used < need && flush_part(s, p) != 0)
        return -1;
    /* The header written in place: copied from beside, its few bytes of
     * varying length were a library call of their own, one a line (user
     * time of `common --memory 256M` on 2 x 10M URLs: 1.98 -> 1.88 s and
     * 1.67 -> 1.59 s, medians of two sets of alternating runs). */
    unsigned char *d = (unsigned char *)p->buf + p->used;
    memcpy(d + put_varint(d, len), &h, 8);
    if (len)
        memcpy(d + hn, line, len);
    p->used += need;
    p->bytes += need;
    return 0;
}

int bkc_spill_finish(bkc_spill_t *s)
{
    if (s->failed)
        return -1;
    for (uint32_t i = 0; i < s->nparts; i++) {
        if (s->parts[i].buf && flush_part(s, &s->parts[i]) != 0)
            return -1;
        free(s->parts[i].buf);
        s->parts[i].buf = NULL;
    }
    return 0;
}

bkc_spill_reader_t *bkc_spill_reader_open(const bkc_spill_t *s, uint32_t part)
{
    bkc_spill_reader_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->s = s;
    r->p = &s->parts[part < s->nparts ? part : 0];
    if (r->p->max_block) {
        r->buf = malloc(r->p->max_block);
        if (!r->buf) {
            free(r);
            return NULL;
        }
    }
    return r;
}

void bkc_spill_reader_close(bkc_spill_reader_t *r)
{
    if (!r)
        return;
    free(r->buf);
    free(r);
}

const char *bkc_spill_reader_error(const bkc_spill_reader_t *r)
{
    return r->err;
}

uint64_t bkc_spill_reader_offset(const bkc_spill_reader_t *r)
{
    return r->consumed;
}

static int reader_fail(bkc_spill_reader_t *r, const char *why)
{
    r->failed = 1;
    snprintf(r->err, sizeof r->err, "cannot read back a spill file in %s: %s", r->s->dir, why);
    return -1;
}

int bkc_spill_reader_next(bkc_spill_reader_t *r, const char **line, size_t *len, uint64_t *h)
{
    if (r->failed)
        return -1;
    while (r->pos == r->len) {
        if (r->next_block == r->p->nblocks)
            return 0;
        const block_t *b = &r->p->blocks[r->next_block++];
        size_t got = 0;
        while (got < b->len) {
            ssize_t n = pread(r->s->fd, r->buf + got, b->len - got, (off_t)(b->off + got));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return reader_fail(r, strerror(errno));
            if (n == 0)
                return reader_fail(r, "file shorter than written");
            got += (size_t)n;
        }
        r->pos = 0;
        r->len = b->len;
    }
    const unsigned char *p = (const unsigned char *)r->buf + r->pos;
    size_t avail = r->len - r->pos, i = 0;
    uint64_t v = 0;
    for (;;) {
        if (i == avail || i == 10)
            return reader_fail(r, "damaged record");
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i++] & 0x80))
            break;
    }
    if (avail - i < 8 || v > avail - i - 8)
        return reader_fail(r, "damaged record");
    memcpy(h, p + i, 8);
    i += 8;
    *line = (const char *)p + i;
    *len = (size_t)v;
    r->pos += i + (size_t)v;
    r->consumed += i + (size_t)v;
    return 1;
}
