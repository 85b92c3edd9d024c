/*
 * The join's inputs (see join_source.h): opening them all up front,
 * turning a line into its key, and reading batches of hashed keys.
 */
#define _GNU_SOURCE
#include "join_source.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bkc_join_fail(bkc_join_t *join, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(join->err, sizeof join->err, fmt, ap);
    va_end(ap);
    return -1;
}

int bkc_join_emit(bkc_join_t *join, const char *key, size_t len)
{
    join->found++;
    if (join->emit(join->emit_ctx, key, len) != 0) {
        join->emit_failed = true;
        return bkc_join_fail(join, "write error");
    }
    return 0;
}

/* Opens source i to learn its size; a pipe stays open (it cannot be
 * reopened), a regular file is closed until its turn (one reader's buffer
 * at a time). */
static int probe_source(bkc_join_t *join, bkc_join_src_t *s)
{
    char e[512];
    bkc_reader_t *r = bkc_reader_open(s->path, e, sizeof e);
    if (!r)
        return bkc_join_fail(join, "%s", e);
    int64_t sz = bkc_reader_size(r);
    s->size = sz < 0 ? UINT64_MAX : (uint64_t)sz;
    if (sz < 0)
        s->pre = r;
    else
        bkc_reader_close(r);
    return 0;
}

int bkc_join_sources_open(bkc_join_t *join, char **paths, uint32_t n, bkc_join_src_t **out)
{
    bkc_join_src_t *srcs = calloc(n, sizeof *srcs);
    if (!srcs)
        return bkc_join_fail(join, "out of memory");
    bool have_stdin = false;
    for (uint32_t i = 0; i < n; i++) {
        srcs[i].path = paths[i];
        bool is_stdin = strcmp(paths[i], "-") == 0;
        if (is_stdin && have_stdin) {
            bkc_join_sources_free(srcs, n);
            return bkc_join_fail(join, "standard input (-) can be given only once");
        }
        have_stdin = have_stdin || is_stdin;
        if (probe_source(join, &srcs[i]) != 0) {
            bkc_join_sources_free(srcs, n);
            return -1;
        }
    }
    *out = srcs;
    return 0;
}

void bkc_join_sources_free(bkc_join_src_t *srcs, uint32_t n)
{
    if (!srcs)
        return;
    for (uint32_t i = 0; i < n; i++) {
        bkc_reader_close(srcs[i].pre);
        bkc_join_src_close(&srcs[i]);
    }
    free(srcs);
}

void bkc_join_sort_by_size(bkc_join_src_t *srcs, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && srcs[j].size < srcs[j - 1].size; j--) {
            bkc_join_src_t t = srcs[j];
            srcs[j] = srcs[j - 1];
            srcs[j - 1] = t;
        }
}

int bkc_join_src_open(bkc_join_t *join, bkc_join_src_t *s)
{
    if (s->sp) {
        s->sp_at = 0;
        s->sp_done = 0;
        s->sr = bkc_spill_reader_open(s->sp[0], s->part);
        return s->sr ? 0 : bkc_join_fail(join, "out of memory");
    }
    if (s->pre) {
        s->rd = s->pre;
        s->pre = NULL;
        return 0;
    }
    char e[512];
    s->rd = s->ranged ? bkc_reader_open_range(s->path, s->lo, s->hi, e, sizeof e)
                      : bkc_reader_open(s->path, e, sizeof e);
    return s->rd ? 0 : bkc_join_fail(join, "%s", e);
}

void bkc_join_src_close(bkc_join_src_t *s)
{
    bkc_reader_close(s->rd);
    s->rd = NULL;
    bkc_spill_reader_close(s->sr);
    s->sr = NULL;
}

void bkc_join_close_all(bkc_join_src_t *srcs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        bkc_join_src_close(&srcs[i]);
}

bool bkc_join_src_rereadable(const bkc_join_src_t *s)
{
    return s->sp || (s->path && strcmp(s->path, "-") != 0 && s->size != UINT64_MAX);
}

uint64_t bkc_join_src_offset(const bkc_join_src_t *s)
{
    return s->sr   ? s->sp_done + bkc_spill_reader_offset(s->sr)
           : s->rd ? bkc_reader_offset(s->rd)
                   : 0;
}

/* The next record of a spilled partition, moving on from one spill to the
 * next at the end of each: 1, 0 at the end of the last, -1 with
 * join->err. */
static int next_spilled(bkc_join_t *join, bkc_join_src_t *s, const char **key, size_t *len,
                        uint64_t *h)
{
    for (;;) {
        int rc = bkc_spill_reader_next(s->sr, key, len, h);
        if (rc < 0)
            return bkc_join_fail(join, "%s", bkc_spill_reader_error(s->sr));
        if (rc == 1 || s->sp_at + 1 >= s->nsp)
            return rc;
        s->sp_done += bkc_spill_reader_offset(s->sr);
        bkc_spill_reader_close(s->sr);
        s->sr = bkc_spill_reader_open(s->sp[++s->sp_at], s->part);
        if (!s->sr)
            return bkc_join_fail(join, "out of memory");
    }
}

/* Makes join->kbuf hold at least need bytes. 0 or -1. */
static int reserve_key(bkc_join_t *join, size_t need)
{
    if (join->kcap >= need)
        return 0;
    char *nb = realloc(join->kbuf, need);
    if (!nb)
        return bkc_join_fail(join, "out of memory");
    join->kbuf = nb;
    join->kcap = need;
    return 0;
}

/* The key of an input line: normalized, then lowercased, in join->kbuf
 * when either applies. */
static int line_to_key(bkc_join_t *join, const char **line, size_t *len)
{
    if (join->norm != BKC_NORM_NONE) {
        ptrdiff_t n = bkc_normalize(join->norm, *line, *len, &join->kbuf, &join->kcap);
        if (n < 0)
            return bkc_join_fail(join, "out of memory");
        *line = join->kbuf;
        *len = (size_t)n;
    }
    if (!join->icase)
        return 0;
    if (*line != join->kbuf) {
        if (reserve_key(join, *len + 1) != 0)
            return -1;
        if (*len)
            memcpy(join->kbuf, *line, *len);
    }
    for (size_t i = 0; i < *len; i++)
        join->kbuf[i] = (char)tolower((unsigned char)join->kbuf[i]);
    *line = join->kbuf;
    return 0;
}

/* The next line of an input file as its key: 1, 0 at the end, -1. */
static int next_line_key(bkc_join_t *join, bkc_join_src_t *s, const char **key, size_t *len)
{
    int rc = bkc_reader_next(s->rd, key, len);
    if (rc < 0)
        return bkc_join_fail(join, "%s", bkc_reader_error(s->rd));
    if (rc == 0)
        return 0;
    return line_to_key(join, key, len) == 0 ? 1 : -1;
}

/* Remembers the first line longer than the join's allowance (see
 * join.h), for the command to report. */
static void note_long_line(bkc_join_t *join, const bkc_join_src_t *s, size_t len)
{
    if (len <= join->line_allowance || join->long_line)
        return;
    join->long_line = len;
    join->long_lineno = bkc_reader_lineno(s->rd);
    join->long_offset = bkc_reader_line_offset(s->rd);
    snprintf(join->long_path, sizeof join->long_path, "%s", bkc_reader_name(s->rd));
}

int bkc_join_src_next(bkc_join_t *join, bkc_join_src_t *s, const char **key, size_t *len)
{
    if (s->sr) {
        uint64_t h;
        return next_spilled(join, s, key, len, &h);
    }
    int rc = next_line_key(join, s, key, len);
    if (rc == 1)
        note_long_line(join, s, *len);
    return rc;
}

/* Copies key, with its two hash halves, into the batch. 0 or -1. */
static int batch_push(bkc_join_t *join, bkc_join_batch_t *b, const char *key, size_t len,
                      uint64_t lo, uint64_t hi)
{
    if (b->cap - b->used < len) {
        size_t ncap = b->cap ? b->cap : (size_t)64 << 10;
        while (ncap - b->used < len)
            ncap *= 2;
        char *nb = realloc(b->buf, ncap);
        if (!nb)
            return bkc_join_fail(join, "out of memory");
        b->buf = nb;
        b->cap = ncap;
    }
    if (len)
        memcpy(b->buf + b->used, key, len);
    b->off[b->n] = b->used;
    b->len[b->n] = len;
    b->lo[b->n] = lo;
    b->hi[b->n] = hi;
    b->used += len;
    b->n++;
    return 0;
}

/* The next key of s with its hash: from the spill record when the caller
 * only needs the set's half (fresh false), else computed with seed. At
 * level 0, keys of other workers' shards are skipped. 1, 0, or -1. */
static int next_hashed(bkc_join_t *join, bkc_join_src_t *s, uint64_t seed, bool fresh,
                       const char **key, size_t *len, uint64_t *lo, uint64_t *hi)
{
    if (s->sr) {
        int rc = next_spilled(join, s, key, len, lo);
        if (rc < 0)
            return -1;
        *hi = 0;
        if (rc == 1 && fresh) {
            bk_hash_t hv = bkc_join_hash(seed, *key, *len);
            *lo = hv.lo;
            *hi = hv.hi;
        }
        return rc;
    }
    for (;;) {
        int rc = next_line_key(join, s, key, len);
        if (rc != 1)
            return rc;
        bk_hash_t hv = bkc_join_hash(seed, *key, *len);
        if (join->nshards > 1 && bkc_join_shard_of(hv.hi, join->nshards) != join->shard)
            continue;
        note_long_line(join, s, *len);
        *lo = hv.lo;
        *hi = hv.hi;
        return 1;
    }
}

int bkc_join_src_batch(bkc_join_t *join, bkc_join_src_t *s, bkc_join_batch_t *b, uint64_t seed,
                       bool fresh)
{
    b->n = 0;
    b->used = 0;
    if (join->stop && __atomic_load_n(join->stop, __ATOMIC_RELAXED))
        return bkc_join_fail(join, "stopped");
    while (b->n < BKC_JOIN_BATCH) {
        const char *key;
        size_t len;
        uint64_t lo, hi;
        int r = next_hashed(join, s, seed, fresh, &key, &len, &lo, &hi);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        if (batch_push(join, b, key, len, lo, hi) != 0)
            return -1;
        /* A long line ends the batch early: the batch buffer stays small. */
        if (b->used >= ((size_t)32 << 10))
            break;
    }
    return b->n > 0;
}

int bkc_join_spill_batch(bkc_join_t *join, bkc_spill_t *sp, uint32_t parts, bk_filter_t *f,
                         bool add, const bkc_join_batch_t *b)
{
    bk_hash_t hs[BKC_JOIN_BATCH];
    bool in[BKC_JOIN_BATCH];
    for (uint32_t j = 0; j < b->n; j++) {
        hs[j].lo = b->lo[j];
        hs[j].hi = b->hi[j];
        in[j] = true;
    }
    if (f && add)
        (void)bk_filter_add_hash_batch(f, hs, b->n, NULL, NULL);
    else if (f)
        (void)bk_filter_contains_hash_batch(f, hs, b->n, in);
    for (uint32_t j = 0; j < b->n; j++) {
        if (!in[j]) {
            join->filtered_lines++;
            continue;
        }
        if (bkc_spill_add(sp, bkc_join_part_of(b->hi[j], parts), b->lo[j], bkc_join_batch_key(b, j),
                          b->len[j]) != 0)
            return bkc_join_fail(join, "%s", bkc_spill_error(sp));
    }
    return 0;
}
