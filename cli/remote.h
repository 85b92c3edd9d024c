/*
 * The tool's commands on a seen-set in Redis (--redis URL): the filter
 * Python's ShardedFilter uses, through libbloomkit-redis
 * (include/bloomkit/redis.h). Lines are read, normalized and sent in
 * batches; the output keeps the input's order.
 */
#ifndef BKC_REMOTE_H
#define BKC_REMOTE_H

#include "lines.h"
#include "options.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A FILE operand that names a filter in Redis: redis://... */
static inline bool bkc_is_remote(const char *operand)
{
    return operand[0] == 'r' && strncmp(operand, "redis://", 8) == 0;
}

typedef struct bkc_remote_opts {
    const char *url;  /* redis://HOST[:PORT]/NAME */
    uint64_t n;       /* with create: the capacity */
    double p;         /* with create: the error rate */
    bool create;      /* -n given: create the filter when it does not exist */
    unsigned shards;  /* --shards; 0: the filter's own, or the default */
    const char *run_id; /* --run-id: claims a re-run of the same input repeats */
} bkc_remote_opts_t;

/* dedup --redis: prints each line whose key this run added first, in
 * order. Returns the exit status (0; 2 after a message). */
int bkc_remote_dedup(const bkc_remote_opts_t *o, char **paths, int n, const bkc_input_opts_t *in);

/* check --redis: prints the lines the filter may hold (or, absent, those
 * it certainly does not). Returns 0 when a line was printed, 1 when none
 * was, 2 after a message. With count_only, prints their number instead. */
int bkc_remote_check(const bkc_remote_opts_t *o, char **paths, int n, const bkc_input_opts_t *in,
                     bool absent, bool count_only);

/* add --redis: adds the lines; prints how many were new unless quiet.
 * Returns 0 or 2. */
int bkc_remote_add(const bkc_remote_opts_t *o, char **paths, int n, const bkc_input_opts_t *in);

/* info --redis: the layout and the shards' numbers (--json: one object).
 * Returns 0 or 2. */
int bkc_remote_info(const bkc_remote_opts_t *o, bool json);

#endif /* BKC_REMOTE_H */
