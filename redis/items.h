/*
 * items.c: what BF and CBF commands share: reserve, add, exists, card (the ladder is in bkr.h).
 */
#ifndef BKR_ITEMS_H
#define BKR_ITEMS_H

#include "bkr.h"
#include "args.h"

#pragma GCC visibility push(hidden)

/* XX.RESERVE: creates keyname's filter with p; replies OK or the error. */
int bkr_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, bkr_family_t family,
                const bkr_params_t *p);
/* XX.ADD / XX.MADD / BF.INSERT: adds items to argv[1]'s filter, creating
 * it with p unless nocreate, and replies one boolean (multi false) or an
 * array of them; an error ends the array early, as RedisBloom does. */
int bkr_add_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bkr_family_t family,
                    const bkr_options_t *o, bool multi);
/* XX.EXISTS / XX.MEXISTS: checks items against a key's filter and
 * replies; a missing key or a key of another type answers all false, as
 * RedisBloom does. */
int bkr_exists_items(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family,
                     RedisModuleString **items, int n, bool multi);
/* Replies with the number of items added to keyname's filter of the
 * family, 0 for a missing key (BF.CARD, CBF.CARD). */
int bkr_reply_card(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family);

/* XX.CLAIM key id seconds item [item ...]: XX.MADD that a retry can repeat
 * safely. The first call with an id adds the items and keeps its answers
 * for that many seconds (a string key beside the filter, in its cluster
 * slot, replicated and persisted like any key); a call with the same key
 * and id within them replies those answers and adds nothing. */
int bkr_claim(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bkr_family_t family);

/* BKI.CREATE key FAMILY:capacity:error:expansion:nonscaling:seed
 * [item...]: how a key's creation reaches replicas and the AOF (the long
 * form of earlier releases still accepted). */
int bkr_cmd_create(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#pragma GCC visibility pop

#endif /* BKR_ITEMS_H */
