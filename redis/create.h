/*
 * create.c: creating filters within MAX_BYTES, growth checks (the ladder is in bkr.h).
 */
#ifndef BKR_CREATE_H
#define BKR_CREATE_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* Creates a key's filter with p's seed, or a fresh random one, and
 * propagates the creation (BKI.CREATE with that seed) followed by the
 * command itself, so replicas and the AOF build a filter with the same
 * bits. On failure replies with an error and returns NULL (nothing
 * created). */
bkr_obj_t *bkr_create_key_or_reply(RedisModuleCtx *ctx, RedisModuleKey *key,
                                   RedisModuleString *keyname, bkr_family_t family,
                                   const bkr_params_t *p);
/* What BKI.CREATE needs to make the same filter elsewhere. */
typedef struct bkr_made {
    bkr_family_t family;
    bkr_params_t p; /* its seed as chosen */
} bkr_made_t;
/* bkr_create_key_or_reply without the propagation: *made says what to
 * send (bkr_replicate_made), so a command that adds items to the key it
 * made sends one command, BKI.CREATE ... ITEMS, instead of BKI.CREATE and
 * itself in a MULTI/EXEC (an AOF replay of key creations ran 4 commands
 * a key where RedisBloom's runs 1). */
bkr_obj_t *bkr_create_key_quietly(RedisModuleCtx *ctx, RedisModuleKey *key, bkr_family_t family,
                                  const bkr_params_t *p, bkr_made_t *made);
/* Propagates BKI.CREATE for *made, with the n items it took (none: the
 * creation alone). */
void bkr_replicate_made(RedisModuleCtx *ctx, RedisModuleString *keyname, const bkr_made_t *made,
                        RedisModuleString **items, int n);
/* Before adding a new item to a BF: NULL, or the error to reply because
 * the chain would grow past the cap in ctx (bkr_cap; an O(1) look at the
 * filter's shape; a fixed-size filter answers NULL, the library refuses it
 * when full). */
const char *bkr_growth_check(RedisModuleCtx *ctx, const bkr_obj_t *o);
/* True if m items can be added in one batch: none of them can make the
 * filter grow or find it full, so no check is due between them. */
bool bkr_batch_safe(const bkr_obj_t *o, int m);
/* The same from a shape of o's filter taken since its last change. */
bool bkr_batch_safe_shape(const bk_filter_shape_t *s, int m);
/* A new value of the family for p (its seed as given), not yet a key's;
 * NULL after replying with the error. */
void *bkr_new_value_or_reply(RedisModuleCtx *ctx, bkr_family_t family, const bkr_params_t *p);

#pragma GCC visibility pop

#endif /* BKR_CREATE_H */
