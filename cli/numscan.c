/*
 * Plain decimal lines to values (see numscan.h).
 */
#define _GNU_SOURCE
#include "numscan.h"
#include "mapguard.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

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

typedef struct worker {
    const bkc_numscan_t *s;
    const char *text, *end;  /* this thread's whole lines, ending with "\n" */
    _Atomic int *failed;     /* a line was not plain: everyone stops */
    uint64_t lines, fresh;
    uint64_t vals[SCAN_BATCH];
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    const bkc_numscan_t *s = w->s;
    const char *p = w->text;
    while (p < w->end) {
        if (atomic_load_explicit(w->failed, memory_order_relaxed))
            return NULL;
        size_t n;
        const char *q = bkc_scan_plain(p, w->end, s->max, s->width, w->vals, SCAN_BATCH, &n);
        if (n == 0 && q < w->end) { /* a line that is not plain */
            atomic_store(w->failed, 1);
            return NULL;
        }
        w->lines += n;
        w->fresh += s->b1 ? bk_bitmap_set_batch_shared(s->b1, w->vals, n)
                          : bk_bitmap2_add_batch_shared(s->b2, w->vals, n);
        p = q;
    }
    return NULL;
}

/* The start of the line holding byte at (text <= at <= end): just after
 * the previous "\n", so every line belongs to exactly one range. */
static const char *line_start(const char *text, const char *at, const char *end)
{
    if (at >= end)
        return end;
    const char *nl = at > text ? memchr(at - 1, '\n', (size_t)(end - at + 1)) : NULL;
    return at == text ? text : nl ? nl + 1 : end;
}

/* The last line when it has no "\n": plain digits (and an optional "\r")
 * or nothing. True and *v set if it is plain. */
static bool plain_tail(const char *p, const char *end, const bkc_numscan_t *s, uint64_t *v)
{
    char line[24];
    size_t len = (size_t)(end - p);
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
    char *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        return 0;
    (void)madvise(map, (size_t)size, MADV_SEQUENTIAL);
    (void)bkc_map_guard(map, (size_t)size, s->path ? s->path : "input");
    const char *end = map + size, *nl = memrchr(map, '\n', (size_t)size);
    const char *body_end = nl ? nl + 1 : map;
    uint64_t tail = 0;
    bool ok = body_end == end || plain_tail(body_end, end, s, &tail);
    unsigned t = s->threads > BKC_NUMSCAN_MAX_THREADS ? BKC_NUMSCAN_MAX_THREADS : s->threads;
    /* ranges of at least a megabyte: fewer threads for a small file */
    uint64_t body = (uint64_t)(body_end - map);
    if (body / t < (UINT64_C(1) << 20))
        t = body >> 20 > 0 ? (unsigned)(body >> 20) : 1;
    worker_t *w = ok ? calloc(t, sizeof *w) : NULL;
    pthread_t *tid = ok ? calloc(t, sizeof *tid) : NULL;
    _Atomic int failed = 0;
    unsigned started = 0;
    if (w && tid) {
        const char *from = map;
        for (unsigned i = 0; i < t; i++) {
            const char *to =
                i + 1 == t ? body_end : line_start(map, map + body / t * (i + 1), body_end);
            w[i] = (worker_t){.s = s, .text = from, .end = to, .failed = &failed};
            from = to;
            if (pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
                atomic_store(&failed, 1);
                break;
            }
            started++;
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
        if (body_end != end) {
            s->lines++;
            s->fresh += s->b1 ? bk_bitmap_set_batch_shared(s->b1, &tail, 1)
                              : bk_bitmap2_add_batch_shared(s->b2, &tail, 1);
        }
        rc = 1;
    }
    free(w);
    free(tid);
    bkc_map_unguard(map);
    munmap(map, (size_t)size);
    return rc;
}
