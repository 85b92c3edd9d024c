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
#include "module.h"

#include <string.h>

static bkr_params_t cbf_defaults(void)
{
    bkr_params_t p;
    memset(&p, 0, sizeof p);
    p.capacity = bkr_config.cbf_capacity;
    p.error = bkr_config.cbf_error;
    p.expansion = 1;
    p.nonscaling = true;
    return p;
}

/* CBF.RESERVE key error_rate capacity */
int bkr_cmd_cbf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 4)
        return RedisModule_WrongArity(ctx);
    bkr_params_t p = cbf_defaults();
    long long cap;
    if (!bkr_arg_double(argv[2], &p.error))
        return RedisModule_ReplyWithError(ctx, "ERR bad error rate");
    if (!(p.error > 0 && p.error < 1))
        return RedisModule_ReplyWithError(ctx, "ERR (0 < error rate range < 1)");
    if (RedisModule_StringToLongLong(argv[3], &cap) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, "ERR bad capacity");
    if (cap <= 0)
        return RedisModule_ReplyWithError(ctx, "ERR (capacity should be larger than 0)");
    p.capacity = (uint64_t)cap;

    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, BKR_CBF, &o);
    if (st != BKR_EMPTY) {
        bkr_reply_lookup_error(ctx, st == BKR_LOADING ? BKR_FOUND : st);
        return bkr_done(key);
    }
    if (bkr_create_key_or_reply(ctx, key, argv[1], BKR_CBF, &p))
        RedisModule_ReplyWithSimpleString(ctx, "OK");
    return bkr_done(key);
}

static int cbf_add_common(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool multi)
{
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, BKR_CBF, &o);
    bool created = false;
    if (st == BKR_EMPTY) {
        bkr_params_t p = cbf_defaults();
        o = bkr_create_key_or_reply(ctx, key, argv[1], BKR_CBF, &p);
        if (!o)
            return bkr_done(key);
        created = true;
    } else if (st != BKR_FOUND) {
        bkr_reply_lookup_error(ctx, st);
        return bkr_done(key);
    }
    bkr_add_items(ctx, o, argv + 2, argc - 2, multi);
    bkr_propagate(ctx, created, argv, argc);
    return bkr_done(key);
}

/* CBF.ADD key item: 1 if the item was new (not already present). */
int bkr_cmd_cbf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    return cbf_add_common(ctx, argv, argc, false);
}

/* CBF.MADD key item [item ...] */
int bkr_cmd_cbf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    return cbf_add_common(ctx, argv, argc, true);
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
    bkr_obj_touch(o);
    bk_status_t rs = bk_filter_remove(o->f, s, len);
    if (rs == BK_OK) {
        RedisModule_ReplicateVerbatim(ctx);
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
        RedisModule_ReplyWithLongLong(ctx, (long long)bk_filter_count(o->f, s, len));
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
    const bk_filter_info_t *in = bkr_info(o);
    RedisModule_ReplyWithMap(ctx, 6);
    RedisModule_ReplyWithSimpleString(ctx, "Capacity");
    RedisModule_ReplyWithLongLong(ctx, (long long)in->capacity);
    RedisModule_ReplyWithSimpleString(ctx, "Size");
    RedisModule_ReplyWithLongLong(ctx, (long long)in->bytes);
    RedisModule_ReplyWithSimpleString(ctx, "Number of items inserted");
    RedisModule_ReplyWithLongLong(ctx, (long long)in->items);
    RedisModule_ReplyWithSimpleString(ctx, "Error rate");
    RedisModule_ReplyWithDouble(ctx, in->fpr_target);
    RedisModule_ReplyWithSimpleString(ctx, "Number of counters");
    RedisModule_ReplyWithLongLong(ctx, (long long)in->cells);
    RedisModule_ReplyWithSimpleString(ctx, "Hash functions");
    RedisModule_ReplyWithLongLong(ctx, (long long)in->k);
    return bkr_done(key);
}

/* CBF.CARD key: items in the filter (0 for a missing key). */
int bkr_cmd_cbf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    return bkr_reply_card(ctx, argv[1], BKR_CBF);
}
