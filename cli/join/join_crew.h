/*
 * The threads of a parallel exact join (see join.h), whichever way the
 * work is split between them: a crew of workers, each with its own copy of
 * the join (its share of join->mem, its own set and buffers), run phase
 * after phase (join_crew.c). join_parallel.c splits the keys into shards,
 * one per worker; join_split.c splits the inputs into byte ranges and the
 * partitions between workers.
 *
 * Output: each worker collects its common lines in a buffer of its own and
 * hands a full buffer to the parent's emit under a lock, so lines are
 * never interleaved and the lock is taken once per buffer, not per line.
 */
#ifndef BKC_JOIN_CREW_H
#define BKC_JOIN_CREW_H

#include "join.h"

#include <stdint.h>

typedef struct bkc_join_crew bkc_join_crew_t;

typedef struct bkc_join_worker {
    bkc_join_t join; /* the worker's own: emits through the crew */
    bkc_join_crew_t *crew;
    uint32_t index, count; /* this worker, of count */
    int rc;                /* of the last phase */
    char *out;             /* collected lines: u32 length, then the line */
    size_t used;
} bkc_join_worker_t;

/* count workers for the parent join, each with parent->mem / count.
 * NULL with parent->err set when out of memory. */
bkc_join_crew_t *bkc_join_crew_new(bkc_join_t *parent, uint32_t count);

bkc_join_worker_t *bkc_join_crew_worker(bkc_join_crew_t *crew, uint32_t index);

/* Runs phase(worker, arg) on every worker at once, one thread each, and
 * waits for all. phase returns 0, or -1 with worker->join.err set; the
 * first failure sets the stop flag the others' reads check (they then fail
 * with "stopped"). 0 if every worker succeeded, else -1 with parent->err
 * the first failure's reason. */
int bkc_join_crew_run(bkc_join_crew_t *crew, int (*phase)(bkc_join_worker_t *w, void *arg),
                      void *arg);

/* Adds the workers' counts to the parent's (found, spilled bytes, ...)
 * and frees the crew. NULL is a no-op. */
void bkc_join_crew_free(bkc_join_crew_t *crew);

/* The byte-range split (join_split.c): 0 when done, 1 when not taken
 * (the smallest input fits in memory: the caller joins some other way;
 * nothing was emitted), -1 with join->err. Every input must be a named
 * regular file. */
int bkc_join_split(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, uint32_t threads);

#endif /* BKC_JOIN_CREW_H */
