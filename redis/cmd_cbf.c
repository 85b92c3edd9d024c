/*
 * CBF.* commands: a counting Bloom filter with delete, the one thing
 * RedisBloom's Bloom filters cannot do. 4-bit saturating counters
 * (bloomkit's counting kind): CBF.DEL of an added item makes it absent
 * again; a counter that reached 15 is never decremented (that could create
 * false negatives), so heavy repeats degrade to "cannot delete" instead of
 * to wrong answers. Fixed size (no scaling). Argument order, defaults and
 * error messages follow BF.* (see docs/REDIS.md).
 */
#define _GNU_SOURCE
#include "cmd_cbf.h"
#include "args.h"
#include "events.h"
#include "items.h"
#include "obj.h"
#include "reply.h"
#include "value.h"

#include <string.h>

/* CBF.RESERVE key error_rate capacity [SEED seed] */
int bkr_cmd_cbf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 4 && argc != 6)
        return RedisModule_WrongArity(ctx);
    bkr_options_t o = {.p = bkr_defaults(BKR_CBF)};
    if (!bkr_rate_capacity_or_reply(ctx, argv, &o.p) ||
        !bkr_parse_options_or_reply(ctx, argv, argc, 4, BKR_OPT_SEED, &o))
        return REDISMODULE_OK;
    return bkr_reserve(ctx, argv, BKR_CBF, &o.p);
}

/* CBF.ADD key item: 1 if the item was new (not already present). */
int bkr_cmd_cbf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    bkr_options_t o = {.p = bkr_defaults(BKR_CBF), .items = 2};
    return bkr_add_command(ctx, argv, argc, BKR_CBF, &o, false);
}

/* CBF.MADD key item [item ...] */
int bkr_cmd_cbf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    bkr_options_t o = {.p = bkr_defaults(BKR_CBF), .items = 2};
    return bkr_add_command(ctx, argv, argc, BKR_CBF, &o, true);
}

/* CBF.DEL key item: 1 if removed, 0 if the item was not in the filter. */
int bkr_cmd_cbf_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_obj_t *o =
        bkr_open_or_reply(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, BKR_CBF, &key);
    if (!o)
        return REDISMODULE_OK;
    size_t len;
    const char *s = RedisModule_StringPtrLen(argv[2], &len);
    bk_status_t rs = bk_filter_remove(o->f, s, len);
    if (rs == BK_OK) {
        RedisModule_ReplicateVerbatim(ctx);
        bkr_notify(ctx, argv[0], argv[1]);
        RedisModule_ReplyWithBool(ctx, 1);
    } else if (rs == BK_ENOTFOUND) {
        RedisModule_ReplyWithBool(ctx, 0);
    } else {
        bkr_reply_status(ctx, rs);
    }
    return bkr_done(key);
}

/* CBF.EXISTS key item */
int bkr_cmd_cbf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    return bkr_exists_items(ctx, argv[1], BKR_CBF, argv + 2, 1, false);
}

/* CBF.MEXISTS key item [item ...] */
int bkr_cmd_cbf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    return bkr_exists_items(ctx, argv[1], BKR_CBF, argv + 2, argc - 2, true);
}

/* CBF.COUNT key item: an upper bound of how many times the item is in the
 * filter (the smallest of its counters, at most 15); 0 if absent. */
int bkr_cmd_cbf_count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, BKR_CBF, &o);
    if (st == BKR_EMPTY) {
        RedisModule_ReplyWithLongLong(ctx, 0);
    } else if (st != BKR_FOUND) {
        bkr_reply_lookup_error(ctx, st);
    } else {
        size_t len;
        const char *s = RedisModule_StringPtrLen(argv[2], &len);
        bkr_reply_u64(ctx, bk_filter_count(o->f, s, len));
    }
    return bkr_done(key);
}

/* CBF.INFO key: Capacity, Size, Number of items inserted, Error rate,
 * Number of counters, Hash functions. */
int bkr_cmd_cbf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_obj_t *o = bkr_open_or_reply(ctx, argv[1], REDISMODULE_READ, BKR_CBF, &key);
    if (!o)
        return REDISMODULE_OK;
    bk_filter_info_t info; /* its counter count; a CBF is one array */
    bk_filter_info(o->f, &info);
    const bk_filter_info_t *in = &info;
    RedisModule_ReplyWithMap(ctx, 6);
    RedisModule_ReplyWithSimpleString(ctx, "Capacity");
    bkr_reply_u64(ctx, in->capacity);
    RedisModule_ReplyWithSimpleString(ctx, "Size");
    bkr_reply_u64(ctx, in->bytes);
    RedisModule_ReplyWithSimpleString(ctx, "Number of items inserted");
    bkr_reply_u64(ctx, in->items);
    RedisModule_ReplyWithSimpleString(ctx, "Error rate");
    RedisModule_ReplyWithDouble(ctx, in->fpr_target);
    RedisModule_ReplyWithSimpleString(ctx, "Number of counters");
    bkr_reply_u64(ctx, in->cells);
    RedisModule_ReplyWithSimpleString(ctx, "Hash functions");
    bkr_reply_u64(ctx, in->k);
    return bkr_done(key);
}

/* CBF.CARD key: items in the filter (0 for a missing key). */
int bkr_cmd_cbf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    return bkr_reply_card(ctx, argv[1], BKR_CBF);
}
