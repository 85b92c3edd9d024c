/*
 * The exact join (see join.h): the lines present in every one of several
 * inputs, within a memory budget, at any input size.
 *
 * The seed problem: two files of 5 billion URLs each and 4 GB of memory.
 * The usual answer, `sort -u` both and `comm -12`, sorts everything on disk
 * (n log n, many passes). This is a hash join instead:
 *
 *  1. Read the smallest input into an exact in-memory set (lineset.c).
 *     If it fits, stream the other inputs through the set, stamping each
 *     line with the number of inputs it has been seen in so far, and emit
 *     the lines seen in all of them. Nothing touches the disk. A sample
 *     decides early (judge()): an input that fits only in the whole budget
 *     gets all of it, since nothing else needs memory when nothing spills.
 *  2. If the set outgrows its budget, switch to partitioning: every line is
 *     routed by its hash to one of P partitions of a spill file (spill.c),
 *     P chosen so one partition of the smallest input fits in memory
 *     (join_plan.c). The smallest input's lines also go into a Bloom
 *     filter, and the other inputs' lines spill only if the filter may
 *     contain them: lines that cannot be common never reach the disk.
 *  3. Each partition is then a smaller instance of the same problem and is
 *     solved by step 1; one that still does not fit (an estimate was off, or
 *     the input came from a pipe of unknown size) is partitioned again with
 *     a fresh hash seed, so memory stays bounded whatever the input.
 *
 * Steps 1 and 3 call each other (intersect <-> partition), so they live in
 * this one file. Each line is read from each input once (twice when a
 * projection that it fits in memory proves wrong) and written to and read
 * from the disk at most once per level (one level at any sensible budget),
 * so the cost is linear in the input. Spilled lines carry their hash, so
 * solving a partition hashes nothing again. Spill files are created
 * unlinked (spill.h), so they vanish on every kind of exit.
 *
 * Output order: within each partition, the order of first appearance in
 * the smallest input; partitions in turn. Which partition a line falls in
 * depends on the run's random seed (so crafted inputs cannot pile into one
 * partition or one chain of the table), so the order across partitions
 * changes from run to run.
 */
#include "join.h"
#include "join_plan.h"
#include "join_source.h"

#include <stdlib.h>
#include <string.h>

/* Deeper than this, partitioning has stopped making progress, which only
 * a broken hash or a single line larger than the budget could cause. */
#define MAX_LEVEL 12

/* load_smallest's outcomes besides -1. */
enum { LOADED = 0, PARTITIONED = 1 };

static int intersect(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, unsigned level);

/* ---- partitioning ---- */

/* Where the smallest input's keys go while partitioning. */
typedef struct dump {
    bkc_join_t *join;
    bkc_spill_t *sp;
    bk_filter_t *f; /* the prefilter; may be NULL */
    uint64_t seed;
    uint32_t parts;
} dump_t;

static int spill_key(dump_t *d, const char *key, size_t len)
{
    bk_hash_t h = bkc_join_hash(d->seed, key, len);
    if (d->f)
        (void)bk_filter_add_hash(d->f, h, NULL);
    if (bkc_spill_add(d->sp, bkc_join_part_of(h.hi, d->parts), h.lo, key, len) != 0)
        return bkc_join_fail(d->join, "%s", bkc_spill_error(d->sp));
    return 0;
}

/* A line of the set into the spill; once --lines: a line already seen
 * twice goes twice, so its partition sees it more than once too. */
static int dump_entry(void *vd, const char *key, size_t len, uint32_t stamp)
{
    const dump_t *d = vd;
    if (d->join->once && stamp == 1 && spill_key(vd, key, len) != 0)
        return -1;
    return spill_key(vd, key, len);
}

static int finish_spill(bkc_join_t *join, bkc_spill_t *sp)
{
    if (bkc_spill_finish(sp) != 0)
        return bkc_join_fail(join, "%s", bkc_spill_error(sp));
    return 0;
}

/* Spills the rest of s batch by batch. The smallest input (first) adds
 * its keys to the prefilter; the others spill only the keys the prefilter
 * may hold: keys that cannot be common never reach the disk. */
static int spill_batches(dump_t *d, bkc_join_src_t *s, bkc_join_batch_t *b, bool first)
{
    int r;
    while ((r = bkc_join_src_batch(d->join, s, b, d->seed, true)) == 1)
        if (bkc_join_spill_batch(d->join, d->sp, d->parts, d->f, first, b) != 0)
            return -1;
    if (r < 0)
        return -1;
    bkc_join_src_close(s);
    return finish_spill(d->join, d->sp);
}

/* Spills the smallest input: what the set holds, keys from..b->n-1 of the
 * batch (read but not in the set), then the rest of the input. Empties
 * the set. */
static int spill_smallest(dump_t *d, bkc_join_src_t *s, bkc_join_batch_t *b, uint32_t from)
{
    if (bkc_lineset_foreach(d->join->set, dump_entry, d) != 0)
        return -1;
    /* The set's memory stays for the partitions (within its 5/8). */
    bkc_lineset_reset(d->join->set);
    for (uint32_t j = from; j < b->n; j++)
        if (spill_key(d, bkc_join_batch_key(b, j), b->len[j]) != 0)
            return -1;
    return spill_batches(d, s, b, true);
}

static int spill_other(dump_t *d, bkc_join_src_t *s, bkc_join_batch_t *b)
{
    if (bkc_join_src_open(d->join, s) != 0)
        return -1;
    return spill_batches(d, s, b, false);
}

/* Solves partition after partition of the n spills, one level down; a
 * partition empty in any input has nothing in common. */
static int solve_partitions(bkc_join_t *join, bkc_spill_t **sp, uint32_t n, uint32_t parts,
                            unsigned level)
{
    bkc_join_src_t *sub = calloc(n, sizeof *sub);
    if (!sub)
        return bkc_join_fail(join, "out of memory");
    int rc = 0;
    for (uint32_t p = 0; p < parts && rc == 0; p++) {
        bool empty = false;
        for (uint32_t i = 0; i < n; i++) {
            memset(&sub[i], 0, sizeof sub[i]);
            sub[i].sp = &sp[i];
            sub[i].nsp = 1;
            sub[i].part = p;
            sub[i].size = bkc_spill_part_bytes(sp[i], p);
            empty = empty || sub[i].size == 0;
        }
        if (!empty)
            rc = intersect(join, sub, n, level + 1);
    }
    free(sub);
    return rc;
}

/* Spills all n inputs (the smallest first, see spill_smallest) into n
 * spills of the planned partitions. */
static int spill_all(dump_t *d, bkc_spill_t **sp, bkc_join_src_t *srcs, uint32_t n,
                     const bkc_join_parts_t *plan, bkc_join_batch_t *b, uint32_t from)
{
    char e[600];
    for (uint32_t i = 0; i < n; i++) {
        sp[i] = bkc_spill_create(d->join->tmpdir, plan->parts, plan->bufsize, e, sizeof e);
        if (!sp[i])
            return bkc_join_fail(d->join, "%s", e);
        d->sp = sp[i];
        if ((i == 0 ? spill_smallest(d, &srcs[0], b, from) : spill_other(d, &srcs[i], b)) != 0)
            return -1;
    }
    return 0;
}

/* Bytes of s read so far, and its size, counting only this worker's
 * share of an input file (spill partitions hold nothing else). */
static uint64_t own_bytes(const bkc_join_t *join, const bkc_join_src_t *s, uint64_t bytes)
{
    return !s->sp && join->nshards > 1 && bytes != UINT64_MAX ? bytes / join->nshards : bytes;
}

/* The smallest input did not fit: partition everything and recurse. The
 * set holds what was read of srcs[0] so far; keys from..b->n-1 of batch b
 * are read but not in the set. `count` lines from `off` bytes of srcs[0]
 * (this worker's share) are what the plan goes by. */
static int partition(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, unsigned level,
                     bkc_join_batch_t *b, uint32_t from, uint64_t count, uint64_t off)
{
    bkc_join_parts_t plan = bkc_join_plan_parts(join->mem, join->mem / 8, count, off,
                                                own_bytes(join, &srcs[0], srcs[0].size), n);
    dump_t d = {join, NULL, NULL, bkc_join_level_seed(join, level), plan.parts};
    /* No prefilter only costs spilling more. */
    if (bkc_join_filter(&d.f, plan.lines, join->mem / 4, 0.01, d.seed) != BK_OK)
        d.f = NULL;
    join->partitions += plan.parts;
    if (level + 1 > join->max_level)
        join->max_level = level + 1;
    bkc_spill_t **sp = calloc(n, sizeof *sp);
    int rc = sp ? spill_all(&d, sp, srcs, n, &plan, b, from) : bkc_join_fail(join, "out of memory");
    bk_filter_free(d.f);
    if (rc == 0) {
        for (uint32_t i = 0; i < n; i++)
            join->spilled_bytes += bkc_spill_total_bytes(sp[i]);
        rc = solve_partitions(join, sp, n, plan.parts, level);
    }
    bkc_join_close_all(srcs, n);
    for (uint32_t i = 0; sp && i < n; i++)
        bkc_spill_free(sp[i]);
    free(sp);
    return rc;
}

/* ---- the in-memory step ---- */

/* What judge() decides after a sample of the smallest input. */
enum { FITS = 0, TOO_BIG = 1 };

/* Once a sample of an input of known size is in, sizes the set for the
 * whole input: TOO_BIG if it clearly will not fit (partition at once rather
 * than fill the set only to spill it), else FITS, with the table made large
 * enough for the projected lines (no doubling later) and, at level 0 when
 * only the whole of join->mem holds them, the set's budget raised to all of
 * it: with nothing spilled, neither the Bloom filter nor spill buffers need
 * their shares, and reading the input once beats partitioning it. */
static int judge(bkc_join_t *join, const bkc_join_src_t *s, const bkc_join_batch_t *b,
                 unsigned level)
{
    uint64_t off = bkc_join_src_offset(s), count = bkc_lineset_count(join->set);
    uint64_t inbatch = b->used + b->n;
    double scale = (double)s->size / (double)(off ? off : 1);
    uint64_t own = own_bytes(join, s, off);
    own = own > inbatch ? own - inbatch : own;
    double lines = (double)count * scale * 1.1 + 1;
    double need = bkc_join_set_need(own, count, scale);
    size_t normal = bkc_join_set_budget(join->mem);
    bool may_raise = level == 0 && bkc_join_src_rereadable(s); /* see restart_partitioned */
    if (need <= (double)normal || (may_raise && need <= (double)join->mem)) {
        if (need > (double)normal) {
            bkc_lineset_set_budget(join->set, join->mem);
            join->set_raised = true;
        }
        (void)bkc_lineset_reserve(join->set, (uint64_t)lines);
        return FITS;
    }
    return bkc_join_set_bytes(own, count) * scale > (double)normal ? TOO_BIG : FITS;
}

/* The set outgrew all of join->mem, which judge() projected it would
 * not: the estimate was off. Frees the set, starts the smallest input
 * again with a set of the usual budget, and partitions (no memory is
 * left for a filter and spill buffers beside the full set). */
static int restart_partitioned(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n,
                               unsigned level, bkc_join_batch_t *b)
{
    uint64_t count = bkc_lineset_count(join->set);
    uint64_t off = own_bytes(join, &srcs[0], bkc_join_src_offset(&srcs[0]));
    bkc_lineset_free(join->set);
    join->set_raised = false;
    join->restarts++;
    join->set = bkc_lineset_new(bkc_join_set_budget(join->mem));
    if (!join->set)
        return bkc_join_fail(join, "out of memory");
    bkc_join_src_close(&srcs[0]);
    if (bkc_join_src_open(join, &srcs[0]) != 0)
        return -1;
    b->n = 0;
    return partition(join, srcs, n, level, b, 0, count, off);
}

/* Inserts batch b into the set: LOADED, or PARTITIONED once the set is
 * full (partition() has then solved this level), or -1. */
static int insert_batch(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, unsigned level,
                        bkc_join_batch_t *b)
{
    for (uint32_t j = 0; j < b->n; j++)
        bkc_lineset_prefetch(join->set, b->lo[j]);
    for (uint32_t j = 0; j < b->n; j++) {
        int ins = bkc_lineset_insert(join->set, b->lo[j], bkc_join_batch_key(b, j), b->len[j]);
        if (ins == BKC_SET_FULL && join->set_raised)
            return restart_partitioned(join, srcs, n, level, b) == 0 ? PARTITIONED : -1;
        if (ins == BKC_SET_FULL)
            return partition(join, srcs, n, level, b, j, bkc_lineset_count(join->set),
                             own_bytes(join, &srcs[0], bkc_join_src_offset(&srcs[0]))) == 0
                       ? PARTITIONED
                       : -1;
        if (ins == BKC_SET_NOMEM)
            return bkc_join_fail(join, "out of memory (try a smaller --memory)");
        if (ins == BKC_SET_OLD && join->once) {
            /* seen twice: never emitted (a single input's lines are
             * emitted with stamp 0) */
            uint32_t *st =
                bkc_lineset_stamp(join->set, b->lo[j], bkc_join_batch_key(b, j), b->len[j]);
            if (st)
                *st = 1;
        }
    }
    return LOADED;
}

/* Reads the smallest input into the set: LOADED, PARTITIONED (it did not
 * fit, and partition() has solved this level), or -1. */
static int load_smallest(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, unsigned level,
                         bkc_join_batch_t *b)
{
    uint64_t seed = bkc_join_level_seed(join, level);
    if (bkc_join_src_open(join, &srcs[0]) != 0)
        return -1;
    bool judged = srcs[0].size == UINT64_MAX;
    int r;
    while ((r = bkc_join_src_batch(join, &srcs[0], b, seed, false)) == 1) {
        if (!judged && bkc_lineset_count(join->set) >= 4096) {
            judged = true;
            if (judge(join, &srcs[0], b, level) == TOO_BIG)
                return partition(join, srcs, n, level, b, 0, bkc_lineset_count(join->set),
                                 own_bytes(join, &srcs[0], bkc_join_src_offset(&srcs[0]))) == 0
                           ? PARTITIONED
                           : -1;
        }
        int rc = insert_batch(join, srcs, n, level, b);
        if (rc != LOADED)
            return rc;
    }
    if (r < 0)
        return -1;
    bkc_join_src_close(&srcs[0]);
    return LOADED;
}

/* Streams input i through the set, moving the stamp of each line seen in
 * all inputs before it from i-1 to i. Returns how many lines are still
 * candidates, or -1. */
static int64_t stamp_source(bkc_join_t *join, bkc_join_src_t *s, uint32_t i, uint64_t seed,
                            bkc_join_batch_t *b)
{
    if (bkc_join_src_open(join, s) != 0)
        return -1;
    int64_t alive = 0;
    int r;
    while ((r = bkc_join_src_batch(join, s, b, seed, false)) == 1) {
        for (uint32_t j = 0; j < b->n; j++)
            bkc_lineset_prefetch(join->set, b->lo[j]);
        for (uint32_t j = 0; j < b->n; j++) {
            uint32_t *st =
                bkc_lineset_stamp(join->set, b->lo[j], bkc_join_batch_key(b, j), b->len[j]);
            if (st && *st == i - 1) {
                *st = i;
                alive++;
            }
        }
    }
    if (r < 0)
        return -1;
    bkc_join_src_close(s);
    return alive;
}

static int emit_if_common(void *vj, const char *key, size_t len, uint32_t stamp)
{
    bkc_join_t *join = vj;
    if (stamp + 1 != join->nsrc)
        return 0;
    return bkc_join_emit(join, key, len);
}

/* The other inputs through the loaded set, then the lines in all. */
static int stamp_and_emit(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, unsigned level,
                          bkc_join_batch_t *b)
{
    uint64_t seed = bkc_join_level_seed(join, level);
    for (uint32_t i = 1; i < n; i++) {
        int64_t alive = stamp_source(join, &srcs[i], i, seed, b);
        if (alive < 0)
            return -1;
        if (alive == 0)
            return 0; /* nothing can be common any more */
    }
    join->nsrc = n;
    return bkc_lineset_foreach(join->set, emit_if_common, join) != 0 ? -1 : 0;
}

/* Emits the lines common to all n sources. Sources are opened and closed
 * here. */
static int intersect(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, unsigned level)
{
    if (level > MAX_LEVEL)
        return bkc_join_fail(join,
                             "partitioning does not converge (a line longer than --memory?)");
    /* Small inputs first also shrink the candidate set early. */
    bkc_join_sort_by_size(srcs, n);
    if (!join->set)
        join->set = bkc_lineset_new(bkc_join_set_budget(join->mem));
    else
        bkc_lineset_reset(join->set);
    if (!join->set)
        return bkc_join_fail(join, "out of memory");
    bkc_join_batch_t b;
    memset(&b, 0, sizeof b);
    int rc = load_smallest(join, srcs, n, level, &b);
    if (rc == LOADED)
        rc = stamp_and_emit(join, srcs, n, level, &b);
    if (rc < 0)
        bkc_join_close_all(srcs, n);
    free(b.buf);
    return rc < 0 ? -1 : 0;
}

int bkc_join_exact_shard(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n)
{
    return intersect(join, srcs, n, 0);
}

int bkc_join_intersect(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, unsigned level)
{
    return intersect(join, srcs, n, level);
}

void bkc_join_release(bkc_join_t *join)
{
    bkc_lineset_free(join->set);
    join->set = NULL;
    free(join->kbuf);
    join->kbuf = NULL;
    join->kcap = 0;
}
