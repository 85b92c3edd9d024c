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
    uint64_t bytes = s->b1 ? (bk_bitmap_size(s->b1) + 7) / 8 : (bk_bitmap2_size(s->b2) + 3) / 4;
    /* the library keeps a touched-page record from 64 MiB of payload on
     * (bitmap.c), the payload being these bytes rounded up to 64 */
    return s->threads > 1 && bytes + 64 < (UINT64_C(64) << 20);
}

#define SCAN_BATCH 4096

typedef struct worker {
    const bkc_numscan_t *s;
    const char *text, *end;  /* whole lines, ending with "\n" */
    uint64_t lo, hi;         /* this thread's values */
    _Atomic int *failed;     /* a line was not plain: everyone stops */
    uint64_t lines, fresh;
    uint64_t vals[SCAN_BATCH], mine[SCAN_BATCH];
} worker_t;

static uint64_t set_values(const bkc_numscan_t *s, const uint64_t *v, size_t n)
{
    return s->b1 ? bk_bitmap_set_batch(s->b1, v, n) : bk_bitmap2_add_batch(s->b2, v, n);
}

static void *work(void *arg)
{
    worker_t *w = arg;
    const bkc_numscan_t *s = w->s;
    const char *p = w->text;
    size_t nmine = 0;
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
        p = q;
        for (size_t i = 0; i < n; i++) {
            uint64_t v = w->vals[i];
            w->mine[nmine] = v;
            nmine += v - w->lo < w->hi - w->lo; /* no branch: half are kept */
            if (nmine == SCAN_BATCH) {
                w->fresh += set_values(s, w->mine, nmine);
                nmine = 0;
            }
        }
    }
    w->fresh += set_values(s, w->mine, nmine);
    return NULL;
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
    unsigned t = s->threads > 8 ? 8 : s->threads;
    worker_t *w = ok ? calloc(t, sizeof *w) : NULL;
    pthread_t tid[8];
    _Atomic int failed = 0;
    unsigned started = 0;
    if (w) {
        /* Ranges on 512-value boundaries: whole cache lines of either map. */
        uint64_t per = ((s->max + t - 1) / t + 511) & ~(uint64_t)511;
        for (unsigned i = 0; i < t; i++) {
            w[i] = (worker_t){.s = s, .text = map, .end = body_end, .failed = &failed};
            w[i].lo = per * i;
            w[i].hi = per * (i + 1);
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
    if (w && !failed && started == t) {
        s->lines = w[0].lines;
        for (unsigned i = 0; i < t; i++)
            s->fresh += w[i].fresh;
        if (body_end != end) {
            s->lines++;
            s->fresh += set_values(s, &tail, 1);
        }
        rc = 1;
    }
    free(w);
    bkc_map_unguard(map);
    munmap(map, (size_t)size);
    return rc;
}
