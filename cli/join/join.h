/*
 * The join behind `bloomkit common`: the lines present in every one of
 * several inputs, exact (join.c) or from Bloom filters alone (join_approx.c).
 * These files print nothing and never exit: each call returns 0 or -1 with
 * the reason in join->err, and the command (cmd_common.c) says it in the
 * tool's words. Common lines are handed to join->emit.
 *
 * Layering, bottom up: join_plan.c (sizing arithmetic, no I/O),
 * join_source.c (inputs and spill partitions read as batches of hashed
 * keys), then join.c (one thread's exact join) and join_approx.c, which
 * use both and not each other, and join_parallel.c (the exact join on
 * several threads, and the crew of worker threads of join_crew.h), which
 * runs join.c once per thread, on a shard of the keys each or, through
 * join_split.c when the smallest input is too large to hold, on the
 * partitions of inputs split by byte ranges. join_mapped.c is the exact
 * join's fast path when the smallest input fits in memory as it is on
 * disk; bkc_join_exact tries it first.
 */
#ifndef BKC_JOIN_H
#define BKC_JOIN_H

#include "lineset.h"
#include "normalize.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bkc_join_src bkc_join_src_t;

/* Receives one common line; non-zero stops the join (a write error). */
typedef int (*bkc_join_emit_fn)(void *ctx, const char *line, size_t len);

typedef struct bkc_join {
    /* Set by the caller before the join. */
    size_t mem;             /* working budget: set + filter + spill buffers */
    const char *tmpdir;     /* where spill files go */
    uint64_t seed;          /* hash seed of the run (partition choice) */
    bkc_norm_t norm;        /* --normalize */
    bool icase;             /* --ignore-case: keys lowercased (ASCII) */
    bkc_join_emit_fn emit;
    void *emit_ctx;
    /* Optional: takes common lines in bulk, bytes[0..len) of whole lines
     * each ending in "\n", in order (the mapped join formats them on its
     * threads); non-zero stops the join. NULL: emit, line by line. */
    int (*emit_lines)(void *ctx, const char *bytes, size_t len);
    bool count_only;        /* the common lines are counted, not emitted */
    /* once --lines (one input): a line met again while the input is
     * loaded is marked as seen twice, so the lines emitted are those the
     * input holds exactly once */
    bool once;
    unsigned threads;       /* workers for the exact join (0 or 1: one) */
    /* Lines up to this long fit in the memory set aside beside mem; a
     * longer one is held anyway (the join stays exact) and reported in
     * long_line, because holding it takes memory beyond --memory. */
    size_t line_allowance;

    /* Results. */
    uint64_t found;         /* lines handed to emit */
    bool emit_failed;       /* the join stopped because emit said so */
    char err[1024];         /* why a call returned -1 */
    uint64_t spilled_bytes, filtered_lines, partitions; /* for --verbose */
    unsigned max_level;
    double approx_false_rate; /* --approx: a printed line is not common */
    double approx_miss_rate;  /* --approx: a common line is left out */
    uint64_t long_line;       /* length of the first line over the allowance, 0: none */
    uint64_t long_lineno;     /* its line number, 0 if not known (a thread's byte range) */
    uint64_t long_offset;     /* and the byte offset it starts at */
    char long_path[512];      /* and its input */
    unsigned workers;         /* threads the exact join ran on */
    uint64_t restarts;        /* inputs held whole until they outgrew the estimate */
    bool mapped;              /* joined by bkc_join_mapped */
    bool split;               /* the threads read byte ranges (bkc_join_split) */
    char timing[160];         /* the mapped join's phases in seconds, for --verbose */

    /* Working state, owned by the join (bkc_join_release frees it). */
    char *kbuf;
    size_t kcap;
    uint32_t nsrc;          /* inputs in the intersection being printed */
    bkc_lineset_t *set;     /* one set, reset and reused for every partition */
    uint32_t shard, nshards; /* a worker's share of the keys (join_parallel.c) */
    int *stop;              /* set by a failing worker: the others stop too */
    bool set_raised;        /* the set may use all of mem (nothing spills) */
} bkc_join_t;

/* Opens paths[0..n) up front so a missing file fails before any work ("-"
 * is standard input, allowed once). Regular files are closed again and
 * reopened in turn; pipes stay open. *out (free with
 * bkc_join_sources_free) on success; -1 with join->err set. */
int bkc_join_sources_open(bkc_join_t *join, char **paths, uint32_t n, bkc_join_src_t **out);
void bkc_join_sources_free(bkc_join_src_t *srcs, uint32_t n);

/* Exact: emits each line common to all n sources once. Memory stays
 * within join->mem whatever the input sizes (spilling to join->tmpdir),
 * lines longer than join->line_allowance aside. With join->threads > 1 and
 * every input a regular file, the work is split between the threads, each
 * in its share of join->mem: by byte ranges of the inputs when the
 * smallest is too large to hold (join_split.c), else by shards of the keys
 * (join_parallel.c); emit is called from one thread at a time. 0, or -1
 * with join->err. */
int bkc_join_exact(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n);

/* The exact join when every input is a named regular file, nothing is
 * normalized, and the smallest input, mapped, fits in join->mem beside an
 * index of its lines (join_mapped.c): nothing copied or spilled, every
 * input split between join->threads threads by byte ranges. Lines come out
 * in order of first appearance in the smallest input. 0 when done, 1 when
 * not taken (nothing was emitted: join the usual way), -1 with join->err. */
int bkc_join_mapped(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n);

/* The exact join of this thread's shard of the keys (all of them when
 * join->nshards <= 1), in join->mem (join.c). 0, or -1 with join->err. */
int bkc_join_exact_shard(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n);

/* The exact join of sources at a level below 0 (partitions of spills
 * written with bkc_join_level_seed(join, level - 1)), in join->mem, on
 * this thread (join.c). Opens and closes the sources. 0, or -1 with
 * join->err. */
int bkc_join_intersect(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, unsigned level);

/* From Bloom filters alone at false-positive rate fpr each: never misses
 * a common line except through the duplicate filter, may emit lines that
 * are not common; sets the two approx_* rates. 0, or -1 with join->err. */
int bkc_join_approx(bkc_join_t *join, bkc_join_src_t *srcs, uint32_t n, double fpr);

/* Frees the working state (not the sources). */
void bkc_join_release(bkc_join_t *join);

#endif /* BKC_JOIN_H */
