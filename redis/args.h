/*
 * args.c: the options of BF.RESERVE / BF.INSERT / CBF.RESERVE (the ladder is in bkr.h).
 */
#ifndef BKR_ARGS_H
#define BKR_ARGS_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* Options a command accepts (bkr_parse_options_or_reply). */
enum {
    BKR_OPT_EXPANSION = 1 << 0,  /* EXPANSION x */
    BKR_OPT_NONSCALING = 1 << 1, /* NONSCALING */
    BKR_OPT_SEED = 1 << 2,       /* SEED s */
    BKR_OPT_INSERT = 1 << 3,     /* CAPACITY c, ERROR e, NOCREATE, ITEMS ... */
    BKR_OPT_TIGHTENING = 1 << 4  /* TIGHTENING r (valkey-bloom's) */
};

typedef struct bkr_options {
    bkr_params_t p;
    bool nocreate;
    bool create_only;     /* the key must not exist (BKI.CREATE) */
    bool as_madd;         /* items propagated as BF.MADD (a claim's) */
    bool *answers;        /* non-NULL: each item's answer, as replied */
    int *done;            /* non-NULL: the items taken before an error */
    int items;            /* BKR_OPT_INSERT: index of the first item */
} bkr_options_t;
/* Parses argv[2] (error rate) and argv[3] (capacity) into *p; false after
 * replying with RedisBloom's error. */
bool bkr_rate_capacity_or_reply(RedisModuleCtx *ctx, RedisModuleString **argv,
                                bkr_params_t *p);
/* Parses the options argv[from .. argc) of the kinds in `allowed` into *o
 * (which holds the defaults); false after replying with the error. With
 * BKR_OPT_INSERT parsing stops after ITEMS, which must be followed by at
 * least one item. */
bool bkr_parse_options_or_reply(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int from,
                                unsigned allowed, bkr_options_t *o);

#pragma GCC visibility pop

#endif /* BKR_ARGS_H */
