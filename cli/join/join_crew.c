/*
 * The crew of worker threads a parallel exact join runs on (join_crew.h):
 * each worker a copy of the join with its share of the memory, run phase
 * after phase, its common lines collected in a buffer of its own and handed
 * to the parent's emit under a lock. Used by both ways of splitting the
 * work: shards (join_parallel.c) and byte ranges (join_split.c).
 */
#include "join_crew.h"
#include "join_source.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Common lines a worker collects before taking the output lock. */
#define OUT_BUFFER ((size_t)64 << 10)

struct bkc_join_crew {
    bkc_join_t *parent;
    uint32_t count;
    bkc_join_worker_t *ws;
    pthread_mutex_t out_lock;
    int stop;
    int first_failed; /* index of the worker that failed first, or -1 */
    int (*phase)(bkc_join_worker_t *w, void *arg);
    void *arg;
};

/* Hands the collected lines to the parent's emit, under the lock. */
static int flush_out(bkc_join_worker_t *w)
{
    bkc_join_t *parent = w->crew->parent;
    int rc = 0;
    pthread_mutex_lock(&w->crew->out_lock);
    for (size_t pos = 0; pos < w->used && rc == 0;) {
        uint32_t len;
        memcpy(&len, w->out + pos, 4);
        rc = parent->emit(parent->emit_ctx, w->out + pos + 4, len);
        pos += 4 + (size_t)len;
    }
    pthread_mutex_unlock(&w->crew->out_lock);
    w->used = 0;
    return rc;
}

/* The worker's emit: collects a line, flushing when the buffer is full;
 * a line too long for the buffer goes out on its own. */
static int worker_emit(void *ctx, const char *line, size_t len)
{
    bkc_join_worker_t *w = ctx;
    if (4 + len > OUT_BUFFER - w->used && w->used && flush_out(w) != 0)
        return -1;
    if (4 + len > OUT_BUFFER) {
        pthread_mutex_lock(&w->crew->out_lock);
        int rc = w->crew->parent->emit(w->crew->parent->emit_ctx, line, len);
        pthread_mutex_unlock(&w->crew->out_lock);
        return rc;
    }
    uint32_t len32 = (uint32_t)len;
    memcpy(w->out + w->used, &len32, 4);
    if (len)
        memcpy(w->out + w->used + 4, line, len);
    w->used += 4 + len;
    return 0;
}

bkc_join_crew_t *bkc_join_crew_new(bkc_join_t *parent, uint32_t count)
{
    bkc_join_crew_t *crew = calloc(1, sizeof *crew);
    bkc_join_worker_t *ws = calloc(count, sizeof *ws);
    if (!crew || !ws) {
        free(crew);
        free(ws);
        bkc_join_fail(parent, "out of memory");
        return NULL;
    }
    crew->parent = parent;
    crew->count = count;
    crew->ws = ws;
    crew->first_failed = -1;
    pthread_mutex_init(&crew->out_lock, NULL);
    for (uint32_t i = 0; i < count; i++) {
        bkc_join_worker_t *w = &ws[i];
        w->crew = crew;
        w->index = i;
        w->count = count;
        w->join = *parent;
        w->join.mem = parent->mem / count;
        w->join.shard = 0;
        w->join.nshards = 1;
        w->join.stop = &crew->stop;
        w->join.emit = worker_emit;
        w->join.emit_ctx = w;
        w->join.set = NULL;
        w->join.kbuf = NULL;
        w->join.kcap = 0;
        w->join.found = w->join.spilled_bytes = w->join.filtered_lines = 0;
        w->join.partitions = w->join.restarts = 0;
        w->join.max_level = 0;
        w->join.long_line = 0;
        w->join.err[0] = '\0';
        w->out = malloc(OUT_BUFFER);
        if (!w->out) {
            crew->count = i + 1;
            bkc_join_crew_free(crew);
            bkc_join_fail(parent, "out of memory");
            return NULL;
        }
    }
    return crew;
}

bkc_join_worker_t *bkc_join_crew_worker(bkc_join_crew_t *crew, uint32_t index)
{
    return &crew->ws[index];
}

static void *run_phase(void *vw)
{
    bkc_join_worker_t *w = vw;
    bkc_join_crew_t *crew = w->crew;
    w->rc = crew->phase(w, crew->arg);
    if (w->rc == 0 && w->used && flush_out(w) != 0) {
        w->join.emit_failed = true;
        w->rc = bkc_join_fail(&w->join, "write error");
    }
    if (w->rc != 0) {
        int none = -1;
        __atomic_compare_exchange_n(&crew->first_failed, &none, (int)w->index, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        __atomic_store_n(&crew->stop, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

int bkc_join_crew_run(bkc_join_crew_t *crew, int (*phase)(bkc_join_worker_t *w, void *arg),
                      void *arg)
{
    bkc_join_t *parent = crew->parent;
    pthread_t *tids = calloc(crew->count, sizeof *tids);
    if (!tids)
        return bkc_join_fail(parent, "out of memory");
    crew->phase = phase;
    crew->arg = arg;
    int rc = 0;
    uint32_t started = 0;
    for (; started < crew->count; started++)
        if (pthread_create(&tids[started], NULL, run_phase, &crew->ws[started]) != 0) {
            rc = bkc_join_fail(parent, "cannot start a thread");
            __atomic_store_n(&crew->stop, 1, __ATOMIC_RELAXED);
            break;
        }
    for (uint32_t i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    free(tids);
    if (rc == 0 && crew->first_failed >= 0)
        rc = bkc_join_fail(parent, "%s", crew->ws[crew->first_failed].join.err);
    return rc;
}

/* Adds a worker's results to the parent's. */
static void gather(bkc_join_t *parent, const bkc_join_worker_t *w)
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
        parent->long_offset = j->long_offset;
        memcpy(parent->long_path, j->long_path, sizeof parent->long_path);
    }
}

void bkc_join_crew_free(bkc_join_crew_t *crew)
{
    if (!crew)
        return;
    for (uint32_t i = 0; i < crew->count; i++) {
        gather(crew->parent, &crew->ws[i]);
        free(crew->ws[i].out);
        bkc_join_release(&crew->ws[i].join);
    }
    pthread_mutex_destroy(&crew->out_lock);
    free(crew->ws);
    free(crew);
}
