/*
 * The exact join on several threads when the smallest input is too large
 * for memory (see join_crew.h), every input a named regular file.
 *
 * Partitioned, reading and hashing the inputs is most of the work. Split
 * into shards (join_parallel.c), every thread would read and hash every
 * line to keep its own share; here each input is split into byte ranges
 * instead, one per thread, so every line is read, hashed and spilled once,
 * by one thread:
 *
 *  1. the smallest input: each thread reads its range, adds each key to a
 *     Bloom filter of its own and spills it to a spill file of its own,
 *     partitioned by hash exactly as join.c partitions (same plan, hash and
 *     seed). The filters, all of one shape, are then merged into one
 *     (bk_filter_union), so it holds every key of the input;
 *  2. the other inputs: each thread reads its range of each and spills the
 *     keys the merged filter may hold (read-only by now: shared without
 *     locks); keys it cannot hold are not common and never reach the disk;
 *  3. the partitions: the threads take them in turn from a shared counter
 *     and solve each with join.c, one level down, in their share of the
 *     memory (partitioning again if one still does not fit). Partition p
 *     of an input is partition p of each thread's spill, read in the order
 *     of the ranges, so its lines come back in the input's order, as from
 *     one spill.
 *
 * Memory: the plan is join.c's for one thread's share (join->mem / threads)
 * and the whole input, so one partition fits in a worker's set. No set
 * exists while the inputs are spilled, so each thread's filter, sized for
 * all of the smallest input's keys, may take half its share (join.c's
 * filter, beside a set, gets a quarter), and its spill buffers a quarter
 * (join.c: an eighth): every thread writes every partition, so at a small
 * budget per line the partitions are capped by their buffers (16 KB at
 * least each), and with an eighth they would come out too large for one
 * level (at --memory 86M for 2 x 100 million URLs). The filters are freed
 * before the partitions' sets are made.
 */
#include "join_crew.h"
#include "join_plan.h"
#include "join_source.h"

#include <stdlib.h>
#include <string.h>

/* Lines of the smallest input read to project its size. */
#define SAMPLE_LINES 4096

typedef struct split {
    bkc_join_src_t *srcs; /* by size, smallest first */
    uint32_t n, threads;
    bkc_join_parts_t plan;
    uint64_t seed;         /* of level 0: partitions and the filter */
    bkc_spill_t **spills;  /* input i, thread t: spills[i * threads + t] */
    bk_filter_t **filters; /* one per thread; NULL: no filter at all */
    uint32_t next_part;    /* the next partition to solve */
} split_t;

/* Where thread t's range of a `size`-byte input starts (its end is where
 * thread t + 1's starts). */
static uint64_t range_start(uint64_t size, uint32_t t, uint32_t threads)
{
    return size / threads * t + size % threads * t / threads;
}

/* Spills this thread's range of input i. The smallest input (i == 0) adds
 * every key to the thread's filter; the others spill only the keys the
 * merged filter (filters[0]) may hold. */
static int spill_range(bkc_join_worker_t *w, split_t *s, uint32_t i)
{
    bkc_join_t *join = &w->join;
    uint32_t t = w->index;
    char e[600];
    bkc_spill_t *sp = bkc_spill_create(join->tmpdir, s->plan.parts, s->plan.bufsize, e, sizeof e);
    if (!sp)
        return bkc_join_fail(join, "%s", e);
    s->spills[i * s->threads + t] = sp;
    bkc_join_src_t src = {0};
    src.path = s->srcs[i].path;
    src.ranged = true;
    src.lo = range_start(s->srcs[i].size, t, s->threads);
    src.hi = range_start(s->srcs[i].size, t + 1, s->threads);
    if (bkc_join_src_open(join, &src) != 0)
        return -1;
    bk_filter_t *f = s->filters ? s->filters[i == 0 ? t : 0] : NULL;
    bkc_join_batch_t b;
    memset(&b, 0, sizeof b);
    int r;
    while ((r = bkc_join_src_batch(join, &src, &b, s->seed, true)) == 1)
        if ((r = bkc_join_spill_batch(join, sp, s->plan.parts, f, i == 0, &b)) != 0)
            break;
    free(b.buf);
    bkc_join_src_close(&src);
    if (r < 0)
        return -1;
    if (bkc_spill_finish(sp) != 0)
        return bkc_join_fail(join, "%s", bkc_spill_error(sp));
    join->spilled_bytes += bkc_spill_total_bytes(sp);
    return 0;
}

static int spill_smallest(bkc_join_worker_t *w, void *arg)
{
    return spill_range(w, arg, 0);
}

static int spill_others(bkc_join_worker_t *w, void *arg)
{
    split_t *s = arg;
    for (uint32_t i = 1; i < s->n; i++)
        if (spill_range(w, s, i) != 0)
            return -1;
    return 0;
}

/* Solves partitions until none is left; one empty in any input has
 * nothing in common. */
static int solve_partitions(bkc_join_worker_t *w, void *arg)
{
    split_t *s = arg;
    bkc_join_t *join = &w->join;
    bkc_join_src_t *sub = calloc(s->n, sizeof *sub);
    if (!sub)
        return bkc_join_fail(join, "out of memory");
    int rc = 0;
    for (;;) {
        uint32_t p = __atomic_fetch_add(&s->next_part, 1, __ATOMIC_RELAXED);
        if (p >= s->plan.parts)
            break;
        if (__atomic_load_n(join->stop, __ATOMIC_RELAXED)) {
            rc = bkc_join_fail(join, "stopped");
            break;
        }
        bool empty = false;
        for (uint32_t i = 0; i < s->n; i++) {
            memset(&sub[i], 0, sizeof sub[i]);
            sub[i].sp = &s->spills[i * s->threads];
            sub[i].nsp = s->threads;
            sub[i].part = p;
            for (uint32_t t = 0; t < s->threads; t++)
                sub[i].size += bkc_spill_part_bytes(sub[i].sp[t], p);
            empty = empty || sub[i].size == 0;
        }
        if (!empty && (rc = bkc_join_intersect(join, sub, s->n, 1)) != 0)
            break;
    }
    free(sub);
    return rc;
}

/* Reads a sample of the smallest input: *count keys in *bytes bytes. 1 if
 * the sample ended before the input did, 0 if the input is no larger
 * than the sample, -1 with join->err. */
static int sample(bkc_join_t *join, bkc_join_src_t *s, uint64_t *count, uint64_t *bytes)
{
    bkc_join_src_t probe = {0};
    probe.path = s->path;
    probe.size = s->size;
    if (bkc_join_src_open(join, &probe) != 0)
        return -1;
    const char *key;
    size_t len;
    int r = 1;
    *count = 0;
    while (*count < SAMPLE_LINES && (r = bkc_join_src_next(join, &probe, &key, &len)) == 1)
        ++*count;
    *bytes = bkc_join_src_offset(&probe);
    bkc_join_src_close(&probe);
    /* The sample's long line, if any, is noted again when its range is read. */
    join->long_line = 0;
    return r < 0 ? -1 : r == 1 && *bytes < s->size;
}

/* The plan and filters, unless the smallest input fits in the whole
 * budget (1, not taken). 0 or -1 with join->err. */
static int prepare(bkc_join_t *join, split_t *s)
{
    uint64_t count, bytes;
    int more = sample(join, &s->srcs[0], &count, &bytes);
    if (more <= 0)
        return more < 0 ? -1 : 1;
    double scale = (double)s->srcs[0].size / (double)bytes;
    if (bkc_join_set_need(bytes, count, scale) <= (double)join->mem)
        return 1;
    size_t share = join->mem / s->threads;
    s->plan = bkc_join_plan_parts(share, share / 4, count, bytes, s->srcs[0].size, s->n);
    s->seed = bkc_join_level_seed(join, 0);
    s->spills = calloc((size_t)s->n * s->threads, sizeof *s->spills);
    s->filters = calloc(s->threads, sizeof *s->filters);
    if (!s->spills || !s->filters)
        return bkc_join_fail(join, "out of memory");
    /* All of one shape, so they can be merged; if any cannot be made,
     * none is used (a filter missing keys would drop common lines). */
    for (uint32_t t = 0; t < s->threads; t++)
        if (bkc_join_filter(&s->filters[t], s->plan.lines, share / 2, 0.01, s->seed) != BK_OK) {
            s->filters[t] = NULL;
            for (uint32_t u = 0; u < s->threads; u++)
                bk_filter_free(s->filters[u]);
            free(s->filters);
            s->filters = NULL;
            break;
        }
    return 0;
}

/* Merges every thread's filter into the first and frees the others. */
static int merge_filters(bkc_join_t *join, split_t *s)
{
    for (uint32_t t = 1; s->filters && t < s->threads; t++) {
        if (bk_filter_union(s->filters[0], s->filters[t]) != BK_OK)
            return bkc_join_fail(join, "cannot merge the threads' filters");
        bk_filter_free(s->filters[t]);
        s->filters[t] = NULL;
    }
    return 0;
}

static void split_free(split_t *s)
{
    for (size_t k = 0; s->spills && k < (size_t)s->n * s->threads; k++)
        bkc_spill_free(s->spills[k]);
    free(s->spills);
    for (uint32_t t = 0; s->filters && t < s->threads; t++)
        bk_filter_free(s->filters[t]);
    free(s->filters);
}

int bkc_join_split(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, uint32_t threads)
{
    bkc_join_sort_by_size(srcs, n);
    split_t s = {srcs, n, threads, {0}, 0, NULL, NULL, 0};
    int rc = prepare(join, &s);
    if (rc != 0) {
        split_free(&s);
        return rc;
    }
    join->split = true;
    bkc_join_crew_t *crew = bkc_join_crew_new(join, threads);
    rc = crew ? bkc_join_crew_run(crew, spill_smallest, &s) : -1;
    if (rc == 0)
        rc = merge_filters(join, &s);
    if (rc == 0 && n > 1)
        rc = bkc_join_crew_run(crew, spill_others, &s);
    for (uint32_t t = 0; s.filters && t < threads; t++) {
        bk_filter_free(s.filters[t]); /* the partitions' sets need the memory */
        s.filters[t] = NULL;
    }
    if (rc == 0) {
        join->partitions += s.plan.parts;
        if (join->max_level < 1)
            join->max_level = 1;
        rc = bkc_join_crew_run(crew, solve_partitions, &s);
    }
    bkc_join_crew_free(crew);
    split_free(&s);
    return rc;
}
