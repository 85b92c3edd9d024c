/*
 * The exact join on several threads (see join.h).
 *
 * The keys are split by hash into one shard per thread, and each thread
 * runs the whole exact join (join.c) on its own shard: it reads every
 * input, hashes every line, keeps the lines of its shard and drops the
 * others, within its share of the memory budget, with its own set, Bloom
 * filter and spill files. The shards share nothing but the output, so
 * nothing is locked while lines are read, spilled or looked up, and the
 * partitions of each shard are solved on its own thread, all threads at
 * once. Reading and hashing every line in every thread is the price (a
 * fraction of the per-line work: the set's probes, copies and the spill
 * are split); it keeps the method the same at every size and needs no
 * hand-off of lines between threads.
 *
 * Standard input and pipes can be read only once, so a join with one of
 * them among its inputs runs on one thread.
 *
 * Output: each thread collects its common lines in a buffer of its own
 * and hands a full buffer to join->emit under a lock, so lines are never
 * interleaved and the lock is taken once per buffer, not per line.
 */
#include "join.h"
#include "join_source.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Common lines a worker collects before taking the output lock. */
#define OUT_BUFFER ((size_t)64 << 10)

typedef struct shared {
    bkc_join_t *parent;
    pthread_mutex_t out_lock;
    int stop;
    int first_failed; /* index of the worker that failed first, or -1 */
} shared_t;

typedef struct worker {
    bkc_join_t join;
    shared_t *sh;
    bkc_join_src_t *srcs;
    uint32_t n, index;
    int rc;
    char *out; /* records: u32 length, then the line */
    size_t used;
} worker_t;

/* Hands the collected lines to the parent's emit, under the lock. */
static int flush_out(worker_t *w)
{
    bkc_join_t *parent = w->sh->parent;
    int rc = 0;
    pthread_mutex_lock(&w->sh->out_lock);
    for (size_t pos = 0; pos < w->used && rc == 0;) {
        uint32_t len;
        memcpy(&len, w->out + pos, 4);
        rc = parent->emit(parent->emit_ctx, w->out + pos + 4, len);
        pos += 4 + (size_t)len;
    }
    pthread_mutex_unlock(&w->sh->out_lock);
    w->used = 0;
    return rc;
}

/* The worker's emit: collects a line, flushing when the buffer is full;
 * a line too long for the buffer goes out on its own. */
static int worker_emit(void *ctx, const char *line, size_t len)
{
    worker_t *w = ctx;
    if (4 + len > OUT_BUFFER - w->used && w->used && flush_out(w) != 0)
        return -1;
    if (4 + len > OUT_BUFFER) {
        pthread_mutex_lock(&w->sh->out_lock);
        int rc = w->sh->parent->emit(w->sh->parent->emit_ctx, line, len);
        pthread_mutex_unlock(&w->sh->out_lock);
        return rc;
    }
    uint32_t len32 = (uint32_t)len;
    memcpy(w->out + w->used, &len32, 4);
    if (len)
        memcpy(w->out + w->used + 4, line, len);
    w->used += 4 + len;
    return 0;
}

static void *run_worker(void *vw)
{
    worker_t *w = vw;
    w->rc = bkc_join_exact_shard(&w->join, w->srcs, w->n);
    if (w->rc == 0 && w->used && flush_out(w) != 0) {
        w->join.emit_failed = true;
        w->rc = bkc_join_fail(&w->join, "write error");
    }
    if (w->rc != 0) {
        int none = -1;
        __atomic_compare_exchange_n(&w->sh->first_failed, &none, (int)w->index, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        __atomic_store_n(&w->sh->stop, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* A worker's copy of the join and of the inputs (paths and sizes; each
 * thread opens its own readers), with its share of the memory. */
static int worker_init(worker_t *w, shared_t *sh, const bkc_join_src_t *srcs, uint32_t n,
                       uint32_t index, uint32_t count)
{
    bkc_join_t *parent = sh->parent;
    memset(w, 0, sizeof *w);
    w->sh = sh;
    w->n = n;
    w->index = index;
    w->join = *parent;
    w->join.mem = parent->mem / count;
    w->join.shard = index;
    w->join.nshards = count;
    w->join.stop = &sh->stop;
    w->join.emit = worker_emit;
    w->join.emit_ctx = w;
    w->join.set = NULL;
    w->join.kbuf = NULL;
    w->join.kcap = 0;
    w->srcs = calloc(n, sizeof *w->srcs);
    w->out = malloc(OUT_BUFFER);
    if (!w->srcs || !w->out)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        w->srcs[i].path = srcs[i].path;
        w->srcs[i].size = srcs[i].size;
    }
    return 0;
}

static void worker_free(worker_t *w)
{
    if (w->srcs)
        bkc_join_sources_free(w->srcs, w->n);
    free(w->out);
    bkc_join_release(&w->join);
}

/* Adds a worker's results to the parent's. */
static void gather(bkc_join_t *parent, const worker_t *w)
{
    const bkc_join_t *j = &w->join;
    parent->found += j->found;
    parent->emit_failed = parent->emit_failed || j->emit_failed;
    parent->spilled_bytes += j->spilled_bytes;
    parent->filtered_lines += j->filtered_lines;
    parent->partitions += j->partitions;
    parent->restarts += j->restarts;
    if (j->max_level > parent->max_level)
        parent->max_level = j->max_level;
    if (j->long_line && !parent->long_line) {
        parent->long_line = j->long_line;
        parent->long_lineno = j->long_lineno;
        memcpy(parent->long_path, j->long_path, sizeof parent->long_path);
    }
}

/* Runs count workers; the first failure's reason goes to join->err. */
static int run_workers(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, uint32_t count)
{
    shared_t sh = {join, PTHREAD_MUTEX_INITIALIZER, 0, -1};
    worker_t *ws = calloc(count, sizeof *ws);
    pthread_t *tids = calloc(count, sizeof *tids);
    bool *started = calloc(count, sizeof *started);
    int rc = ws && tids && started ? 0 : bkc_join_fail(join, "out of memory");
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        if (worker_init(&ws[i], &sh, srcs, n, i, count) != 0)
            rc = bkc_join_fail(join, "out of memory");
        else if (pthread_create(&tids[i], NULL, run_worker, &ws[i]) != 0)
            rc = bkc_join_fail(join, "cannot start a thread");
        else
            started[i] = true;
    }
    if (rc != 0)
        __atomic_store_n(&sh.stop, 1, __ATOMIC_RELAXED);
    for (uint32_t i = 0; ws && i < count; i++) {
        if (started[i]) {
            pthread_join(tids[i], NULL);
            gather(join, &ws[i]);
        }
    }
    if (rc == 0 && sh.first_failed >= 0)
        rc = bkc_join_fail(join, "%s", ws[sh.first_failed].join.err);
    for (uint32_t i = 0; ws && i < count; i++)
        worker_free(&ws[i]);
    free(ws);
    free(tids);
    free(started);
    pthread_mutex_destroy(&sh.out_lock);
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
    int rc = run_workers(join, srcs, n, count);
    bkc_join_close_all(srcs, n);
    return rc;
}
