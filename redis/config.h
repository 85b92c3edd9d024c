/*
 * config.c: settings from module arguments and the library's memory (the ladder is in bkr.h).
 */
#ifndef BKR_CONFIG_H
#define BKR_CONFIG_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* Settings from module arguments (see docs/REDIS.md). */
typedef struct bkr_config {
    uint64_t max_bytes;      /* largest filter payload held, however made */
    double bf_error;         /* defaults for BF.ADD/BF.INSERT auto-create */
    uint64_t bf_capacity;
    uint64_t bf_expansion;
    double cbf_error;        /* defaults for CBF.ADD auto-create */
    uint64_t cbf_capacity;
    uint64_t chunk_bytes;    /* SCANDUMP / AOF rewrite chunk size */
    uint32_t cf_max_expansions; /* CF_MAX_EXPANSIONS: a CF key's sub-filters */
    bool rb_layout;          /* LAYOUT redisbloom: new BF keys are RedisBloom chains */
} bkr_config_t;

extern bkr_config_t bkr_config;


/* The library's allocator: Redis' (TryAlloc, TryCalloc where the server
 * has it), counting what it hands out. */
bk_allocator_t bkr_library_allocator(void);
/* Bytes of Redis memory the library holds now. A difference of two
 * readings around a library call is what the call took. */
uint64_t bkr_lib_bytes(void);

#pragma GCC visibility pop

#endif /* BKR_CONFIG_H */
