/*
 * `bloomkit common`: the lines present in every one of several files,
 * exactly, within a memory cap, at any input size.
 *
 * The seed problem: two files of 5 billion URLs each and 4 GB of memory.
 * The usual answer, `sort -u` both and `comm -12`, sorts everything on disk
 * (n log n, many passes). This is a hash join instead:
 *
 *  1. Read the smallest input into an exact in-memory set (lineset.c).
 *     If it fits, stream the other inputs through the set, stamping each
 *     line with the number of inputs it has been seen in so far, and print
 *     the lines seen in all of them. Nothing touches the disk.
 *  2. If the set outgrows its budget, switch to partitioning: every line is
 *     routed by its hash to one of P partitions of a spill file (spill.c),
 *     P chosen so one partition of the smallest input fits in memory. The
 *     smallest input's lines also go into a Bloom filter, and the other
 *     inputs' lines spill only if the filter may contain them: lines that
 *     cannot be common never reach the disk.
 *  3. Each partition is then a smaller instance of the same problem and is
 *     solved by step 1; one that still does not fit (an estimate was off, or
 *     the input came from a pipe of unknown size) is partitioned again with
 *     a fresh hash seed, so memory stays bounded whatever the input.
 *
 * Each line is read from each input once and written to and read from the
 * disk at most once per level (one level at any sensible --memory), so the
 * cost is linear in the input.
 *
 * Memory: the budget (--memory, minus a reserve for the reader's buffer,
 * the output buffer and the process itself) is split so that at any moment
 * the set (5/8), the Bloom filter (1/4) and the spill buffers (1/8) fit in
 * it together. Spill files are created unlinked (spill.h), so they vanish
 * on every kind of exit: success, error, Ctrl-C or kill -9.
 *
 * Output order: within each partition, the order of first appearance in
 * the smallest input (the first of the smallest, on ties); partitions in
 * turn. When nothing spills that is simply the order of first appearance
 * in the smallest input. Which partition a line falls in depends on a hash
 * seed drawn at random for each run (so crafted inputs cannot pile into
 * one partition or one chain of the table), so the order across partitions
 * changes from run to run; it is never sorted: pipe through sort if order
 * matters.
 *
 * Errors: every input is opened before any work, so a missing file fails
 * at once (regular files are closed again and reopened in turn, pipes stay
 * open). In the spilling case every input has been read completely
 * before the first line is printed; an error after printing began (a full
 * disk while re-partitioning, a write error) ends with exit 2 and a message
 * that says the output is incomplete.
 */
#define _GNU_SOURCE
#include "bloomkit/bloomkit.h"
#include "commands.h"
#include "input.h"
#include "lineset.h"
#include "normalize.h"
#include "spill.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define PROG "bloomkit common"
/* Deeper than this, partitioning has stopped making progress, which only
 * a broken hash or a single line larger than the budget could cause. */
#define MAX_LEVEL 12
#define MIN_MEMORY ((uint64_t)64 << 10)

typedef struct src {
    const char *path;          /* level 0 */
    bkc_reader_t *pre;         /* level 0: a pipe, opened up front */
    bkc_reader_t *rd;
    const bkc_spill_t *sp;     /* deeper levels: partition `part` of sp */
    uint32_t part;
    bkc_spill_reader_t *sr;
    uint64_t size;             /* bytes, UINT64_MAX if unknown */
} src_t;

typedef struct ctx {
    size_t mem;        /* working budget: set + filter + spill buffers */
    const char *tmpdir;
    uint64_t seed;
    bkc_norm_t norm;
    bool icase;
    bool count_only;
    bool verbose;
    char *kbuf;
    size_t kcap;
    uint64_t found;
    uint32_t nsrc; /* inputs in the current intersection */
    bkc_lineset_t *set; /* one set, reset and reused for every partition */
    char err[1024];
    /* statistics for --verbose */
    uint64_t spilled_bytes, filtered_lines, partitions;
    unsigned max_level;
} ctx_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bloomkit common [options] FILE FILE [FILE...]\n"
            "Prints each line present in every FILE, once. Exact: lines are compared\n"
            "byte for byte, whatever the input sizes, within --memory; inputs that do\n"
            "not fit are hash-partitioned into temporary files under --tmpdir.\n"
            "FILE may be - (standard input, once). Lines end at \\n; a \\r before it is\n"
            "dropped. Output order: first appearance in the smallest input within\n"
            "each partition (not sorted).\n"
            "\n"
            "  -m, --memory SIZE     memory cap, e.g. 512M, 4G (default: 1/4 of RAM)\n"
            "  -T, --tmpdir DIR      where to spill (default: $TMPDIR or /tmp)\n"
            "  -c, --count           print only how many lines are common\n"
            "  -i, --ignore-case     compare ASCII letters case-insensitively (prints\n"
            "                        lines lowercased)\n"
            "      --normalize MODE  url or email: compare canonical forms (prints them)\n"
            "      --approx          answer from Bloom filters alone: faster, never misses\n"
            "                        a common line except as stated, but may print lines\n"
            "                        that are not common (the rate goes to stderr)\n"
            "      --fpr P           --approx: false-positive rate per filter (0.001)\n"
            "  -v, --verbose         statistics on stderr\n"
            "  -h, --help            this help\n"
            "\n"
            "Exit status: 0 if some line is common, 1 if none, 2 on error.\n");
}

/* "256M", "4G", "65536", "1.5G": bytes (binary units), or 0 if invalid. */
static uint64_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0))
        return 0;
    double mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mul = 1024.0; end++; break;
    case 'M': mul = 1024.0 * 1024; end++; break;
    case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'i' && end[-1] != *s)
        end++;
    if (toupper((unsigned char)*end) == 'B')
        end++;
    if (*end)
        return 0;
    v *= mul;
    if (v >= 9.2e18)
        return 0;
    return (uint64_t)v;
}

static uint64_t default_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), pg = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || pg <= 0)
        return (uint64_t)1 << 30;
    return (uint64_t)pages * (uint64_t)pg / 4;
}

static int failf(ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(ctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- sources: an input file at level 0, a spill partition below ---- */

static int src_open(ctx_t *c, src_t *s)
{
    if (s->sp) {
        s->sr = bkc_spill_reader_open(s->sp, s->part);
        return s->sr ? 0 : failf(c, "out of memory");
    }
    if (s->pre) {
        s->rd = s->pre;
        s->pre = NULL;
        return 0;
    }
    char e[512];
    s->rd = bkc_reader_open(s->path, e, sizeof e);
    return s->rd ? 0 : failf(c, "%s", e);
}

static void src_close(src_t *s)
{
    bkc_reader_close(s->rd);
    s->rd = NULL;
    bkc_spill_reader_close(s->sr);
    s->sr = NULL;
}

static uint64_t src_offset(const src_t *s)
{
    return s->sr ? bkc_spill_reader_offset(s->sr) : s->rd ? bkc_reader_offset(s->rd) : 0;
}

/* Next key: at level 0 the line after --normalize / --ignore-case. */
static int src_next(ctx_t *c, src_t *s, const char **line, size_t *len)
{
    if (s->sr) {
        int rc = bkc_spill_reader_next(s->sr, line, len);
        if (rc < 0)
            failf(c, "%s", bkc_spill_reader_error(s->sr));
        return rc;
    }
    int rc = bkc_reader_next(s->rd, line, len);
    if (rc < 0) {
        failf(c, "%s", bkc_reader_error(s->rd));
        return -1;
    }
    if (rc == 0)
        return 0;
    if (c->norm != BKC_NORM_NONE) {
        ptrdiff_t n = bkc_normalize(c->norm, *line, *len, &c->kbuf, &c->kcap);
        if (n < 0)
            return failf(c, "out of memory");
        *line = c->kbuf;
        *len = (size_t)n;
    }
    if (c->icase) {
        if (*line != c->kbuf) {
            if (c->kcap < *len + 1) {
                char *nb = realloc(c->kbuf, *len + 1);
                if (!nb)
                    return failf(c, "out of memory");
                c->kbuf = nb;
                c->kcap = *len + 1;
            }
            if (*len)
                memcpy(c->kbuf, *line, *len);
        }
        for (size_t i = 0; i < *len; i++)
            c->kbuf[i] = (char)tolower((unsigned char)c->kbuf[i]);
        *line = c->kbuf;
    }
    return 1;
}

static bk_hash_t key_hash(uint64_t seed, const char *line, size_t len)
{
    return bk_hash_key(BK_HASH_XXH3, seed, line, len);
}

/* ---- batches: hash a group of lines first, then probe them, so the
 * memory accesses of the group overlap instead of queueing ---- */

#define BATCH 32

typedef struct batch {
    uint32_t n;
    char *buf; /* copies of the lines (the reader's are valid for one call) */
    size_t cap, used;
    size_t off[BATCH], len[BATCH];
    uint64_t lo[BATCH], hi[BATCH]; /* the two halves of each line's hash */
} batch_t;

static const char *batch_line(const batch_t *b, uint32_t j)
{
    return b->buf + b->off[j];
}

/* Reads up to BATCH keys of s into b and hashes them with seed: 1 if any
 * were read, 0 at the end, -1 on error. */
static int src_batch(ctx_t *c, src_t *s, batch_t *b, uint64_t seed)
{
    b->n = 0;
    b->used = 0;
    while (b->n < BATCH) {
        const char *line;
        size_t len;
        int r = src_next(c, s, &line, &len);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        if (b->cap - b->used < len) {
            size_t ncap = b->cap ? b->cap : (size_t)64 << 10;
            while (ncap - b->used < len)
                ncap *= 2;
            char *nb = realloc(b->buf, ncap);
            if (!nb)
                return failf(c, "out of memory");
            b->buf = nb;
            b->cap = ncap;
        }
        if (len)
            memcpy(b->buf + b->used, line, len);
        b->off[b->n] = b->used;
        b->len[b->n] = len;
        /* Halves in separate arrays: gcc copied the returned struct as one
         * 16-byte load of two 8-byte stores, which cannot be forwarded and
         * stalled every line (about 7% of the CPU time in perf). */
        bk_hash_t hv = key_hash(seed, b->buf + b->used, len);
        b->lo[b->n] = hv.lo;
        b->hi[b->n] = hv.hi;
        b->used += len;
        b->n++;
        /* A long line ends the batch early: the batch buffer stays small. */
        if (b->used >= ((size_t)32 << 10))
            break;
    }
    return b->n > 0;
}

/* ---- output ---- */

static int emit(ctx_t *c, const char *line, size_t len)
{
    c->found++;
    if (c->count_only)
        return 0;
    /* One thread writes stdout: the unlocked calls skip a lock per line. */
    if ((len && fwrite_unlocked(line, 1, len, stdout) != len) || putchar_unlocked('\n') == EOF)
        return failf(c, "write error: %s", strerror(errno));
    return 0;
}

static int emit_if_common(void *vc, const char *line, size_t len, uint32_t stamp)
{
    ctx_t *c = vc;
    if (stamp + 1 != c->nsrc)
        return 0;
    return emit(c, line, len);
}

/* ---- the join ---- */

static uint64_t level_seed(const ctx_t *c, unsigned level)
{
    return c->seed ^ (UINT64_C(0x9E3779B97F4A7C15) * (level + 1));
}


/* Partition of a key: the top 32 bits of the hash's high half scaled to
 * [0, parts) by multiply-shift; the set uses the low half, so the lines of
 * one partition still spread over the whole table. */
static uint32_t part_of(uint64_t hi, uint32_t parts)
{
    return (uint32_t)(((hi >> 32) * parts) >> 32);
}

static int intersect(ctx_t *c, src_t *srcs, uint32_t n, unsigned level);

typedef struct dump {
    ctx_t *c;
    bkc_spill_t *sp;
    bk_filter_t *f;
    uint64_t seed;
    uint32_t parts;
} dump_t;

static int spill_line(dump_t *d, const char *line, size_t len)
{
    bk_hash_t h = key_hash(d->seed, line, len);
    if (d->f)
        (void)bk_filter_add_hash(d->f, h, NULL);
    uint32_t part = part_of(h.hi, d->parts);
    if (bkc_spill_add(d->sp, part, line, len) != 0)
        return failf(d->c, "%s", bkc_spill_error(d->sp));
    return 0;
}

static int dump_entry(void *vd, const char *line, size_t len, uint32_t stamp)
{
    (void)stamp;
    return spill_line(vd, line, len);
}

/* What a set holding `count` lines read from `off` bytes of input costs:
 * the bytes, a record header and padding per line, and table slots at a
 * load between 3/8 and 3/4 (16 bytes each). */
static double est_set_bytes(uint64_t off, uint64_t count)
{
    return (double)off + (double)count * (12.0 + 32.0);
}

/* A Bloom filter of the smallest input's (estimated) n lines within
 * `bytes`; NULL if it cannot be had, which only costs spilling more. */
static bk_filter_t *make_prefilter(uint64_t n_est, size_t bytes, uint64_t seed)
{
    bk_options_t o = {0};
    o.kind = BK_KIND_BLOCKED;
    o.hash = BK_HASH_XXH3;
    o.seed_set = true;
    o.seed = seed;
    if (n_est == 0)
        n_est = 1;
    bk_plan_t plan;
    bk_filter_t *f = NULL;
    if (bk_plan(BK_KIND_BLOCKED, n_est, 0.01, &plan) == BK_OK && plan.bytes <= bytes) {
        if (bk_filter_create(&f, n_est, 0.01, &o) == BK_OK)
            return f;
        return NULL;
    }
    uint64_t cells = (uint64_t)bytes * 8;
    if (cells < 512)
        return NULL;
    double kk = (double)cells / (double)n_est * 0.6931;
    uint32_t k = kk < 1 ? 1 : kk > 16 ? 16 : (uint32_t)(kk + 0.5);
    if (bk_filter_create_exact(&f, BK_KIND_BLOCKED, cells, k, &o) != BK_OK)
        return NULL;
    return f;
}

/* The smallest input did not fit: partition everything and recurse. The
 * set holds what was read of srcs[0] so far; lines from..b->n-1 of batch b
 * are read but not in the set. Empties the set. */
static int partition(ctx_t *c, src_t *srcs, uint32_t n, unsigned level, bkc_lineset_t *set,
                     batch_t *b, uint32_t from)
{
    int rc = -1;
    uint64_t seed = level_seed(c, level);
    size_t set_limit = c->mem / 8 * 5;
    uint64_t count = bkc_lineset_count(set);
    uint64_t off = src_offset(&srcs[0]);
    double scale = 16; /* unknown size: assume the input is large */
    if (srcs[0].size != UINT64_MAX && off > 0)
        scale = (double)srcs[0].size / (double)off;
    if (scale < 1)
        scale = 1;
    double est = est_set_bytes(off, count) * scale * 1.1;
    /* Partitions of about an eighth of the set's budget. Half would be
     * enough for the random spread of partition sizes never to make one
     * overflow, but smaller ones are faster to solve: each partition's set
     * (records and table) touches fewer fresh pages and less memory beyond
     * the caches. On 2 x 10 million URLs with --memory 256M, 55 partitions
     * instead of 14 took about 15% less CPU time (bench/common.sh). */
    double want = ceil(est / ((double)set_limit / 8));
    size_t bufmem = c->mem / 8;
    uint64_t pmax = bufmem / (16 << 10);
    if (pmax > 4096)
        pmax = 4096;
    if (pmax < 2)
        pmax = 2;
    uint32_t parts = want < 2 ? 2 : want > (double)pmax ? (uint32_t)pmax : (uint32_t)want;
    size_t bufsize = bufmem / parts;
    /* The child reads n partitions at once, each through a buffer of one
     * block: keep those within a sixteenth of the budget. */
    if (bufsize > c->mem / 16 / n)
        bufsize = c->mem / 16 / n;
    /* Small buffers stay in the cache between the copy into them and the
     * write() out of them: 128 KB took less CPU than 1 MB (bench/common.sh)
     * and still makes each write() and pread() a large sequential one. */
    if (bufsize > ((size_t)128 << 10))
        bufsize = (size_t)128 << 10;
    if (bufsize < 4096)
        bufsize = 4096;

    bkc_spill_t **sp = calloc(n, sizeof *sp);
    dump_t d = {c, NULL, NULL, seed, parts};
    if (!sp) {
        failf(c, "out of memory");
        goto out;
    }
    d.f = make_prefilter((uint64_t)((double)count * scale * 1.1), c->mem / 4, seed);
    c->partitions += parts;
    if (level + 1 > c->max_level)
        c->max_level = level + 1;

    char e[600];
    sp[0] = bkc_spill_create(c->tmpdir, parts, bufsize, e, sizeof e);
    if (!sp[0]) {
        failf(c, "%s", e);
        goto out;
    }
    d.sp = sp[0];
    if (bkc_lineset_foreach(set, dump_entry, &d) != 0)
        goto out;
    /* The set's memory stays for the partitions (within its 5/8). */
    bkc_lineset_reset(set);
    for (uint32_t j = from; j < b->n; j++)
        if (spill_line(&d, batch_line(b, j), b->len[j]) != 0)
            goto out;
    bk_key_t keys[BATCH];
    bool in[BATCH];
    int r;
    while ((r = src_batch(c, &srcs[0], b, seed)) == 1) {
        for (uint32_t j = 0; j < b->n; j++) {
            keys[j].ptr = batch_line(b, j);
            keys[j].len = b->len[j];
        }
        if (d.f)
            (void)bk_filter_add_batch(d.f, keys, b->n, NULL, NULL);
        for (uint32_t j = 0; j < b->n; j++)
            if (bkc_spill_add(sp[0], part_of(b->hi[j], parts), keys[j].ptr, keys[j].len) != 0) {
                failf(c, "%s", bkc_spill_error(sp[0]));
                goto out;
            }
    }
    if (r < 0)
        goto out;
    src_close(&srcs[0]);
    if (bkc_spill_finish(sp[0]) != 0) {
        failf(c, "%s", bkc_spill_error(sp[0]));
        goto out;
    }

    for (uint32_t i = 1; i < n; i++) {
        sp[i] = bkc_spill_create(c->tmpdir, parts, bufsize, e, sizeof e);
        if (!sp[i]) {
            failf(c, "%s", e);
            goto out;
        }
        if (src_open(c, &srcs[i]) != 0)
            goto out;
        while ((r = src_batch(c, &srcs[i], b, seed)) == 1) {
            for (uint32_t j = 0; j < b->n; j++) {
                keys[j].ptr = batch_line(b, j);
                keys[j].len = b->len[j];
                in[j] = true;
            }
            if (d.f)
                (void)bk_filter_contains_batch(d.f, keys, b->n, in);
            for (uint32_t j = 0; j < b->n; j++) {
                if (!in[j]) {
                    c->filtered_lines++;
                    continue;
                }
                if (bkc_spill_add(sp[i], part_of(b->hi[j], parts), keys[j].ptr, keys[j].len) != 0) {
                    failf(c, "%s", bkc_spill_error(sp[i]));
                    goto out;
                }
            }
        }
        if (r < 0)
            goto out;
        src_close(&srcs[i]);
        if (bkc_spill_finish(sp[i]) != 0) {
            failf(c, "%s", bkc_spill_error(sp[i]));
            goto out;
        }
    }
    bk_filter_free(d.f);
    d.f = NULL;
    for (uint32_t i = 0; i < n; i++)
        c->spilled_bytes += bkc_spill_total_bytes(sp[i]);

    src_t *sub = calloc(n, sizeof *sub);
    if (!sub) {
        failf(c, "out of memory");
        goto out;
    }
    for (uint32_t p = 0; p < parts; p++) {
        bool empty = false;
        for (uint32_t i = 0; i < n; i++) {
            memset(&sub[i], 0, sizeof sub[i]);
            sub[i].sp = sp[i];
            sub[i].part = p;
            sub[i].size = bkc_spill_part_bytes(sp[i], p);
            if (sub[i].size == 0)
                empty = true;
        }
        if (empty)
            continue;
        if (intersect(c, sub, n, level + 1) != 0) {
            free(sub);
            goto out;
        }
    }
    free(sub);
    rc = 0;
out:
    for (uint32_t i = 0; i < n; i++)
        src_close(&srcs[i]);
    bk_filter_free(d.f);
    if (sp)
        for (uint32_t i = 0; i < n; i++)
            bkc_spill_free(sp[i]);
    free(sp);
    return rc;
}

/* Prints the lines common to all n sources. Sources are opened and closed
 * here. */
static int intersect(ctx_t *c, src_t *srcs, uint32_t n, unsigned level)
{
    if (level > MAX_LEVEL)
        return failf(c, "partitioning does not converge (a line longer than --memory?)");
    /* Smallest first: it becomes the in-memory set, and small inputs
     * shrink the candidate set early. Insertion sort: n is small. */
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && srcs[j].size < srcs[j - 1].size; j--) {
            src_t t = srcs[j];
            srcs[j] = srcs[j - 1];
            srcs[j - 1] = t;
        }
    uint64_t seed = level_seed(c, level);
    if (!c->set)
        c->set = bkc_lineset_new(c->mem / 8 * 5);
    else
        bkc_lineset_reset(c->set);
    bkc_lineset_t *set = c->set;
    if (!set)
        return failf(c, "out of memory");
    batch_t b;
    memset(&b, 0, sizeof b);
    int r;
    if (src_open(c, &srcs[0]) != 0)
        goto fail;
    bool judged = srcs[0].size == UINT64_MAX;
    while ((r = src_batch(c, &srcs[0], &b, seed)) == 1) {
        /* Once a sample is in, an input of known size that will clearly
         * not fit goes to partitioning at once, rather than filling the
         * set only to spill it. */
        if (!judged && bkc_lineset_count(set) >= 4096) {
            judged = true;
            uint64_t off = src_offset(&srcs[0]), inbatch = b.used + b.n;
            off = off > inbatch ? off - inbatch : off;
            double proj = est_set_bytes(off, bkc_lineset_count(set)) * (double)srcs[0].size /
                          (double)(off ? off : 1);
            if (proj > (double)(c->mem / 8 * 5)) {
                int rc = partition(c, srcs, n, level, set, &b, 0);
                free(b.buf);
                return rc;
            }
        }
        for (uint32_t j = 0; j < b.n; j++)
            bkc_lineset_prefetch(set, b.lo[j]);
        for (uint32_t j = 0; j < b.n; j++) {
            int ins = bkc_lineset_insert(set, b.lo[j], batch_line(&b, j), b.len[j]);
            if (ins == BKC_SET_FULL) {
                int rc = partition(c, srcs, n, level, set, &b, j);
                free(b.buf);
                return rc;
            }
            if (ins == BKC_SET_NOMEM) {
                failf(c, "out of memory (try a smaller --memory)");
                goto fail;
            }
        }
    }
    if (r < 0)
        goto fail;
    src_close(&srcs[0]);

    uint32_t i;
    for (i = 1; i < n; i++) {
        uint64_t alive = 0;
        if (src_open(c, &srcs[i]) != 0)
            goto fail;
        while ((r = src_batch(c, &srcs[i], &b, seed)) == 1) {
            for (uint32_t j = 0; j < b.n; j++)
                bkc_lineset_prefetch(set, b.lo[j]);
            for (uint32_t j = 0; j < b.n; j++) {
                uint32_t *st = bkc_lineset_stamp(set, b.lo[j], batch_line(&b, j), b.len[j]);
                if (st && *st == i - 1) {
                    *st = i;
                    alive++;
                }
            }
        }
        if (r < 0)
            goto fail;
        src_close(&srcs[i]);
        if (alive == 0)
            break; /* nothing can be common any more */
    }
    if (i == n) {
        c->nsrc = n;
        if (bkc_lineset_foreach(set, emit_if_common, c) != 0)
            goto fail;
    }
    free(b.buf);
    return 0;
fail:
    for (uint32_t j = 0; j < n; j++)
        src_close(&srcs[j]);
    free(b.buf);
    return -1;
}

/* ---- --approx: Bloom filters only ---- */

static bk_filter_t *approx_filter(ctx_t *c, uint64_t size, size_t bytes, double fpr,
                                  uint64_t seed)
{
    /* Lines are assumed to be about 32 bytes when sizing; the rate that
     * is reported is measured from the filled filter, not assumed. */
    uint64_t n_est = size == UINT64_MAX ? (uint64_t)bytes : size / 32 + 1;
    bk_options_t o = {0};
    o.kind = BK_KIND_BLOCKED;
    o.hash = BK_HASH_XXH3;
    o.seed_set = true;
    o.seed = seed;
    bk_plan_t plan;
    bk_filter_t *f = NULL;
    bk_status_t st;
    if (bk_plan(BK_KIND_BLOCKED, n_est, fpr, &plan) == BK_OK && plan.bytes <= bytes) {
        st = bk_filter_create(&f, n_est, fpr, &o);
    } else {
        uint64_t cells = (uint64_t)bytes * 8;
        double kk = (double)cells / (double)n_est * 0.6931;
        uint32_t k = kk < 1 ? 1 : kk > 16 ? 16 : (uint32_t)(kk + 0.5);
        st = bk_filter_create_exact(&f, BK_KIND_BLOCKED, cells < 512 ? 512 : cells, k, &o);
    }
    if (st != BK_OK) {
        failf(c, "cannot create a filter: %s", bk_strerror(st));
        return NULL;
    }
    return f;
}

/* Filter i holds the lines of input i that passed filter i-1, so the last
 * one approximates the intersection of all but the last input; the last
 * input's lines that pass it are printed, once each thanks to a last
 * filter of printed lines. */
static int approx(ctx_t *c, src_t *srcs, uint32_t n, double fpr)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && srcs[j].size < srcs[j - 1].size; j--) {
            src_t t = srcs[j];
            srcs[j] = srcs[j - 1];
            srcs[j - 1] = t;
        }
    uint64_t seed = level_seed(c, 0);
    size_t each = c->mem / 3;
    bk_filter_t *prev = NULL, *cur = NULL, *printed = NULL;
    double fp_total = 0, fp_printed = 0;
    const char *line;
    size_t len;
    int r;
    for (uint32_t i = 0; i + 1 < n; i++) {
        cur = approx_filter(c, srcs[i].size, each, fpr, seed);
        if (!cur || src_open(c, &srcs[i]) != 0)
            goto fail;
        while ((r = src_next(c, &srcs[i], &line, &len)) == 1) {
            bk_hash_t h = key_hash(seed, line, len);
            if (prev && !bk_filter_contains_hash(prev, h))
                continue;
            if (bk_filter_add_hash(cur, h, NULL) != BK_OK) {
                failf(c, "filter add failed");
                goto fail;
            }
        }
        if (r < 0)
            goto fail;
        src_close(&srcs[i]);
        bk_filter_info_t inf;
        bk_filter_info(cur, &inf);
        fp_total += inf.expected_fpr;
        bk_filter_free(prev);
        prev = cur;
        cur = NULL;
    }
    printed = approx_filter(c, srcs[n - 1].size, each, fpr / 100, seed ^ 1);
    if (!printed || src_open(c, &srcs[n - 1]) != 0)
        goto fail;
    while ((r = src_next(c, &srcs[n - 1], &line, &len)) == 1) {
        bk_hash_t h = key_hash(seed, line, len);
        if (!bk_filter_contains_hash(prev, h))
            continue;
        bool was_new = false;
        if (bk_filter_add(printed, line, len, &was_new) != BK_OK) {
            failf(c, "filter add failed");
            goto fail;
        }
        if (was_new && emit(c, line, len) != 0)
            goto fail;
    }
    if (r < 0)
        goto fail;
    src_close(&srcs[n - 1]);
    {
        bk_filter_info_t inf;
        bk_filter_info(printed, &inf);
        fp_printed = inf.expected_fpr;
    }
    fprintf(stderr,
            PROG ": approximate: a printed line is not common with probability <= %.3g; "
                 "a common line is left out with probability <= %.3g (duplicate filter)\n",
            fp_total > 1 ? 1.0 : fp_total, fp_printed);
    bk_filter_free(prev);
    bk_filter_free(printed);
    return 0;
fail:
    for (uint32_t j = 0; j < n; j++)
        src_close(&srcs[j]);
    bk_filter_free(prev);
    bk_filter_free(cur);
    bk_filter_free(printed);
    return -1;
}

/* The kernel's limit on open files does not matter here (one spill file
 * per input per level), but many inputs may be given. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int bkc_cmd_common(int argc, char **argv)
{
    static const struct option opts[] = {
        {"memory", required_argument, NULL, 'm'},
        {"tmpdir", required_argument, NULL, 'T'},
        {"count", no_argument, NULL, 'c'},
        {"ignore-case", no_argument, NULL, 'i'},
        {"normalize", required_argument, NULL, 'N'},
        {"approx", no_argument, NULL, 'A'},
        {"fpr", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    ctx_t c;
    memset(&c, 0, sizeof c);
    uint64_t memory = 0;
    bool approx_mode = false;
    double fpr = 0.001;
    const char *tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir)
        tmpdir = "/tmp";

    optind = 0; /* full re-initialization: argv[0] is the subcommand */
    opterr = 0;
    int o;
    while ((o = getopt_long(argc, argv, "+m:T:cihv", opts, NULL)) != -1) {
        switch (o) {
        case 'm':
            memory = parse_size(optarg);
            if (memory < MIN_MEMORY) {
                fprintf(stderr, PROG ": --memory: '%s' is not a size of at least 64K\n",
                        optarg);
                return 2;
            }
            break;
        case 'T': tmpdir = optarg; break;
        case 'c': c.count_only = true; break;
        case 'i': c.icase = true; break;
        case 'N':
            if (bkc_norm_parse(optarg, &c.norm) != 0) {
                fprintf(stderr, PROG ": --normalize: unknown mode '%s' (url, email, none)\n",
                        optarg);
                return 2;
            }
            break;
        case 'A': approx_mode = true; break;
        case 'P': {
            char *end;
            fpr = strtod(optarg, &end);
            if (*end || !(fpr > 0 && fpr < 1)) {
                fprintf(stderr, PROG ": --fpr: '%s' is not in (0, 1)\n", optarg);
                return 2;
            }
            break;
        }
        case 'v': c.verbose = true; break;
        case 'h': usage(stdout); return 0;
        default:
            fprintf(stderr, PROG ": unknown or incomplete option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    uint32_t n = argc - optind > 0 ? (uint32_t)(argc - optind) : 0;
    if (n < 2) {
        fprintf(stderr, PROG ": needs at least two files\n");
        usage(stderr);
        return 2;
    }
    if (!memory)
        memory = default_memory();
    /* Reserve for the process, the reader's and stdout's buffers. */
    uint64_t reserve = (uint64_t)4 << 20;
    if (reserve > memory / 2)
        reserve = memory / 2;
    c.mem = (size_t)(memory - reserve);
    c.tmpdir = tmpdir;
    c.seed = bk_random_seed();
    raise_nofile();

    src_t *srcs = calloc(n, sizeof *srcs);
    if (!srcs) {
        fprintf(stderr, PROG ": out of memory\n");
        return 2;
    }
    /* Open everything first: a missing file fails before any work. */
    int status = 2;
    bool have_stdin = false;
    for (uint32_t i = 0; i < n; i++) {
        char e[512];
        srcs[i].path = argv[optind + (int)i];
        bool is_stdin = strcmp(srcs[i].path, "-") == 0;
        if (is_stdin && have_stdin) {
            fprintf(stderr, PROG ": standard input (-) can be given only once\n");
            goto done;
        }
        bkc_reader_t *r = bkc_reader_open(srcs[i].path, e, sizeof e);
        if (!r) {
            fprintf(stderr, PROG ": %s\n", e);
            goto done;
        }
        int64_t sz = bkc_reader_size(r);
        srcs[i].size = sz < 0 ? UINT64_MAX : (uint64_t)sz;
        have_stdin = have_stdin || is_stdin;
        /* A regular file is reopened when its turn comes (only one
         * reader's buffer at a time); a pipe cannot be, so it stays open. */
        if (sz < 0)
            srcs[i].pre = r;
        else
            bkc_reader_close(r);
    }

    static char outbuf[1 << 20];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    int rc = approx_mode ? approx(&c, srcs, n, fpr) : intersect(&c, srcs, n, 0);
    if (rc == 0 && c.count_only)
        printf("%llu\n", (unsigned long long)c.found);
    if (fflush(stdout) != 0 && rc == 0)
        rc = failf(&c, "write error: %s", strerror(errno));
    if (rc != 0) {
        if (c.found && !c.count_only)
            fprintf(stderr, PROG ": %s; the output is incomplete\n", c.err);
        else
            fprintf(stderr, PROG ": %s\n", c.err);
        goto done;
    }
    if (c.verbose)
        fprintf(stderr,
                PROG ": %llu common; %llu partitions, %u levels, %llu bytes spilled, "
                     "%llu lines kept off disk by the filter\n",
                (unsigned long long)c.found, (unsigned long long)c.partitions, c.max_level,
                (unsigned long long)c.spilled_bytes, (unsigned long long)c.filtered_lines);
    status = c.found ? 0 : 1;
done:
    bkc_lineset_free(c.set);
    for (uint32_t i = 0; i < n; i++) {
        bkc_reader_close(srcs[i].pre);
        bkc_reader_close(srcs[i].rd);
    }
    free(c.kbuf);
    free(srcs);
    return status;
}
