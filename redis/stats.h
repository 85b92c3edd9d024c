/*
 * The module's numbers for operators: an INFO section (`INFO bloomkit`)
 * with counts of what the module did since the server started.
 */
#ifndef BLOOMKIT_REDIS_STATS_H
#define BLOOMKIT_REDIS_STATS_H

#include "module_api.h"

#include <stdint.h>

/* Counted by the commands and type callbacks that do each thing; read by
 * INFO. The server runs commands and callbacks on one thread. */
typedef struct bkr_stats {
    uint64_t keys_created; /* keys made by a command: a reserve (BF, CBF,
                              CF, WBF) or an add or insert that creates */
    /* creations sent to the AOF or replicas with their seed (BKI.CREATE;
     * stream.c) */
    uint64_t creations_propagated;
    uint64_t filters_grown; /* sub-filters added by scaling filters' growth */
    uint64_t adds_refused;  /* items a full filter or a limit refused */
    uint64_t values_loaded; /* values loaded from an RDB or a DUMP payload */
    uint64_t defrag_moved;  /* blocks active defragmentation moved */
} bkr_stats_t;

extern bkr_stats_t bkr_stats;

/* A mover for the library's bk_filter_defrag and bk_cuckoo_defrag: arg is
 * the server's RedisModuleDefragCtx; counts what it moved. */
void *bkr_defrag_move(void *arg, void *block);

/* Registers the INFO section. REDISMODULE_OK, or ERR. */
int bkr_stats_register(RedisModuleCtx *ctx);

#endif /* BLOOMKIT_REDIS_STATS_H */
