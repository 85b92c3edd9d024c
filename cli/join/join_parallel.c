/*
 * The exact join on several threads (see join.h), on the crew of worker
 * threads of join_crew.c.
 *
 * Two ways to split the work:
 *
 *  - byte ranges (join_split.c), when the smallest input is too large for
 *    memory and will be partitioned anyway: each line is read, hashed and
 *    spilled once, by the thread whose range holds it, and the partitions
 *    are then solved by all threads at once;
 *  - shards (here), otherwise: the keys are split by hash into one shard
 *    per thread, and each thread runs the whole exact join (join.c) on its
 *    own shard: it reads every input, hashes every line, keeps the lines
 *    of its shard and drops the others, with its own set. Nothing is
 *    shared but the output, so nothing is locked while lines are read or
 *    looked up. Reading and hashing every line in every thread is the
 *    price, small beside the set's probes and copies when the inputs are
 *    held in memory, and it needs no hand-off of lines between threads.
 *
 * Standard input and pipes can be read only once, so a join with one of
 * them among its inputs runs on one thread.
 */
#include "join_crew.h"
#include "join_source.h"

#include <stdlib.h>
#include <string.h>

/* ---- shards ---- */

typedef struct shard_task {
    const bkc_join_src_t *srcs;
    uint32_t n;
} shard_task_t;

/* One worker's whole join of its shard, with readers of its own. */
static int solve_shard(bkc_join_worker_t *w, void *arg)
{
    const shard_task_t *task = arg;
    const bkc_join_src_t *srcs = task->srcs;
    uint32_t n = task->n;
    bkc_join_src_t *own = calloc(n, sizeof *own);
    if (!own)
        return bkc_join_fail(&w->join, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        own[i].path = srcs[i].path;
        own[i].size = srcs[i].size;
    }
    w->join.shard = w->index;
    w->join.nshards = w->count;
    int rc = bkc_join_exact_shard(&w->join, own, n);
    bkc_join_sources_free(own, n);
    return rc;
}

static int run_shards(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, uint32_t count)
{
    bkc_join_crew_t *crew = bkc_join_crew_new(join, count);
    if (!crew)
        return -1;
    shard_task_t task = {srcs, n};
    int rc = bkc_join_crew_run(crew, solve_shard, &task);
    bkc_join_crew_free(crew);
    return rc;
}

int bkc_join_exact(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n)
{
    int mapped = bkc_join_mapped(join, srcs, n);
    if (mapped <= 0)
        return mapped;
    uint32_t count = join->threads ? join->threads : 1;
    for (uint32_t i = 0; i < n && count > 1; i++)
        if (!bkc_join_src_rereadable(&srcs[i]))
            count = 1; /* standard input or a pipe: read once, by one thread */
    join->workers = count;
    join->nshards = 1;
    if (count == 1)
        return bkc_join_exact_shard(join, srcs, n);
    int rc = bkc_join_split(join, srcs, n, count);
    if (rc == 1)
        rc = run_shards(join, srcs, n, count);
    bkc_join_close_all(srcs, n);
    return rc;
}
