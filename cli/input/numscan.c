/*
 * Plain decimal lines to values (see numscan.h).
 */
#define _GNU_SOURCE
#include "numscan.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *bkc_scan_plain(const char *p, const char *end, uint64_t max, unsigned width,
                           uint64_t *vals, size_t cap, size_t *n)
{
    size_t got = 0;
    while (p < end && got < cap) {
        const char *q = p;
        uint64_t v = 0;
        unsigned d;
        /* "\n" ends every line, so no bound test per digit; more than 19
         * digits may wrap v, but such lines are not taken */
        while ((d = (unsigned)(unsigned char)*q - '0') <= 9) {
            v = v * 10 + d;
            q++;
        }
        size_t ndigits = (size_t)(q - p);
        if (*q == '\r' && q[1] == '\n')
            q++;
        if (*q != '\n' || ndigits == 0 || ndigits > 19 || v >= max ||
            !bkc_digits_fit(p, ndigits, width))
            break;
        vals[got++] = v;
        p = q + 1;
    }
    *n = got;
    return p;
}

bool bkc_numscan_usable(const bkc_numscan_t *s)
{
    return s->threads > 1;
}

#define SCAN_BATCH 4096
/* Each thread reads its range in chunks of this size with pread: copies
 * from the page cache in parallel. (Mapping the file made every thread
 * fault its pages in, and the faults of one process scale poorly: on 16
 * cores 2 threads ran 1.3x and 16 5.8x.) */
#define READ_CHUNK (UINT64_C(1) << 20)
/* A plain line is at most 21 bytes; a cut or a tail is looked for within
 * this much, and a longer line is not plain anyway. */
#define LOOK_BYTES 4096u

typedef struct worker {
    const bkc_numscan_t *s;
    int fd;
    uint64_t from, to;   /* this thread's whole lines: [from, to) of the file */
    _Atomic int *failed; /* a line was not plain, or a read fell short */
    uint64_t lines, fresh;
    char *buf;           /* READ_CHUNK bytes */
    uint64_t vals[SCAN_BATCH];
} worker_t;

/* n bytes at off into dst, or false (an error, or the file shrank). */
static bool read_at(int fd, char *dst, uint64_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t r = pread(fd, dst, (size_t)n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        dst += r;
        off += (uint64_t)r;
        n -= (uint64_t)r;
    }
    return true;
}

/* Parses and sets the plain lines of text[0, len), which ends with "\n".
 * False at a line that is not plain. */
static bool take_lines(worker_t *w, const char *text, size_t len)
{
    const bkc_numscan_t *s = w->s;
    const char *p = text, *end = text + len;
    while (p < end) {
        size_t n;
        const char *q = bkc_scan_plain(p, end, s->max, s->width, w->vals, SCAN_BATCH, &n);
        if (n == 0)
            return false;
        w->lines += n;
        w->fresh += s->b1 ? bk_bitmap_set_batch_shared(s->b1, w->vals, n)
                          : bk_bitmap2_add_batch_shared(s->b2, w->vals, n);
        p = q;
    }
    return true;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    uint64_t pos = w->from;
    size_t keep = 0; /* the start of a line carried over from the last chunk */
    while (pos < w->to) {
        if (atomic_load_explicit(w->failed, memory_order_relaxed))
            return NULL;
        uint64_t want = READ_CHUNK - keep < w->to - pos ? READ_CHUNK - keep : w->to - pos;
        if (!read_at(w->fd, w->buf + keep, want, pos))
            goto fail;
        pos += want;
        size_t have = keep + (size_t)want;
        const char *last = memrchr(w->buf, '\n', have);
        if (!last) /* a line longer than a chunk: not plain */
            goto fail;
        size_t upto = (size_t)(last - w->buf) + 1;
        if (!take_lines(w, w->buf, upto))
            goto fail;
        keep = have - upto;
        memmove(w->buf, w->buf + upto, keep);
    }
    if (keep == 0)
        return NULL;
fail:
    atomic_store(w->failed, 1);
    return NULL;
}

/* Where the line holding byte `at` of the file ends (the offset after its
 * "\n"), looking at most LOOK_BYTES ahead; UINT64_MAX if not found. */
static uint64_t next_line_start(int fd, uint64_t at, uint64_t limit)
{
    char look[LOOK_BYTES];
    uint64_t n = limit - at < LOOK_BYTES ? limit - at : LOOK_BYTES;
    if (n == 0 || !read_at(fd, look, n, at))
        return UINT64_MAX;
    const char *nl = memchr(look, '\n', (size_t)n);
    return nl ? at + (uint64_t)(nl - look) + 1 : UINT64_MAX;
}

/* The last line when it has no "\n": plain digits (and an optional "\r")
 * or nothing. True and *v set if it is plain. */
static bool plain_tail(const char *p, size_t len, const bkc_numscan_t *s, uint64_t *v)
{
    char line[24];
    if (len == 0 || len > 20)
        return false;
    memcpy(line, p, len);
    line[len] = '\n'; /* so the one scanner applies */
    size_t n;
    bkc_scan_plain(line, line + len + 1, s->max, s->width, v, 1, &n);
    return n == 1;
}

int bkc_numscan_file(bkc_numscan_t *s, int fd, uint64_t size)
{
    s->lines = s->fresh = 0;
    if (size == 0)
        return 1;
#ifdef POSIX_FADV_SEQUENTIAL
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    /* the body (whole lines) and the tail after the last "\n" */
    char look[LOOK_BYTES];
    uint64_t n = size < LOOK_BYTES ? size : LOOK_BYTES;
    if (!read_at(fd, look, n, size - n))
        return 0;
    const char *nl = memrchr(look, '\n', (size_t)n);
    if (!nl && n < size)
        return 0; /* no line end near the end: a long line, not plain */
    uint64_t body = nl ? size - n + (uint64_t)(nl - look) + 1 : 0;
    uint64_t tail = 0;
    if (body != size && !plain_tail(look + (n - (size - body)), (size_t)(size - body), s, &tail))
        return 0;
    unsigned t = s->threads > BKC_NUMSCAN_MAX_THREADS ? BKC_NUMSCAN_MAX_THREADS : s->threads;
    /* ranges of at least a megabyte: fewer threads for a small file */
    if (body / t < READ_CHUNK)
        t = body / READ_CHUNK > 0 ? (unsigned)(body / READ_CHUNK) : 1;
    worker_t *w = calloc(t, sizeof *w);
    pthread_t *tid = calloc(t, sizeof *tid);
    _Atomic int failed = 0;
    unsigned started = 0;
    if (w && tid) {
        uint64_t from = 0;
        for (unsigned i = 0; i < t && !failed; i++) {
            uint64_t to = i + 1 == t ? body : next_line_start(fd, body / t * (i + 1) - 1, body);
            w[i] = (worker_t){.s = s, .fd = fd, .from = from, .to = to, .failed = &failed};
            w[i].buf = malloc(READ_CHUNK);
            if (to == UINT64_MAX || to < from || !w[i].buf ||
                pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
                atomic_store(&failed, 1);
                break;
            }
            started++;
            from = to;
        }
        for (unsigned i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
    }
    int rc = 0;
    if (w && tid && !failed && started == t) {
        for (unsigned i = 0; i < t; i++) {
            s->lines += w[i].lines;
            s->fresh += w[i].fresh;
        }
        if (body != size) {
            s->lines++;
            s->fresh += s->b1 ? bk_bitmap_set_batch_shared(s->b1, &tail, 1)
                              : bk_bitmap2_add_batch_shared(s->b2, &tail, 1);
        }
        rc = 1;
    }
    for (unsigned i = 0; w && i < t; i++)
        free(w[i].buf);
    free(w);
    free(tid);
    return rc;
}
