/*
 * BF.* commands: RedisBloom's Bloom filter command set with its arguments,
 * defaults (capacity 100, error rate 0.01, expansion 2, each new
 * sub-filter's error halved, NONSCALING), replies and error messages, so
 * client code written for RedisBloom runs unchanged. Replies are RESP3
 * booleans and maps where RedisBloom gives them; the server turns them into
 * integers and flat arrays for RESP2 clients.
 *
 * Handlers parse, look the key up, call the library and reply; the filter
 * logic is all in the library. Differences from RedisBloom (documented in
 * docs/REDIS.md): BF.EXISTS/MEXISTS/CARD answer WRONGTYPE for a key of
 * another type, unknown arguments are an error rather than ignored, and
 * sizes are limited by MAX_BYTES.
 */
#define _GNU_SOURCE
#include "module.h"

#include <string.h>

/* Items per batch call: a stack array, no allocation per command. */
#define BKR_BATCH 128

static bkr_params_t bf_defaults(void)
{
    bkr_params_t p;
    memset(&p, 0, sizeof p);
    p.capacity = bkr_config.bf_capacity;
    p.error = bkr_config.bf_error;
    p.expansion = bkr_config.bf_expansion;
    return p;
}

/* ---- shared by BF and CBF ---- */

static bool add_one_or_reply(RedisModuleCtx *ctx, bkr_obj_t *o, RedisModuleString *item)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(item, &len);
    const char *limit = bkr_growth_check(o);
    if (limit) {
        /* An item already present needs no room: answer as usual. */
        if (bk_filter_contains(o->f, s, len)) {
            RedisModule_ReplyWithBool(ctx, 0);
            return true;
        }
        RedisModule_ReplyWithError(ctx, limit);
        return false;
    }
    bool was_new = false;
    bk_status_t st = bk_filter_add(o->f, s, len, &was_new);
    if (st != BK_OK) {
        bkr_reply_status(ctx, st);
        return false;
    }
    bkr_growth_note(o);
    RedisModule_ReplyWithBool(ctx, was_new);
    return true;
}

void bkr_add_items(RedisModuleCtx *ctx, bkr_obj_t *o, RedisModuleString **items, int n,
                   bool multi)
{
    bkr_obj_touch(o);
    if (!multi) {
        add_one_or_reply(ctx, o, items[0]);
        return;
    }
    RedisModule_ReplyWithArray(ctx, REDISMODULE_POSTPONED_LEN);
    long replied = 0;
    int i = 0;
    while (i < n) {
        int m = n - i < BKR_BATCH ? n - i : BKR_BATCH;
        /* A batch is safe when it cannot reach the point where the filter
         * grows or is full; there, items go one at a time so the limit
         * check and the "full" error land on the right item. */
        if (o->limit_known && bk_filter_items(o->f) + (uint64_t)m < o->grow_check_at) {
            bk_key_t keys[BKR_BATCH];
            bool was_new[BKR_BATCH];
            for (int j = 0; j < m; j++)
                keys[j].ptr = RedisModule_StringPtrLen(items[i + j], &keys[j].len);
            bk_status_t st = bk_filter_add_batch(o->f, keys, (size_t)m, was_new, NULL);
            if (st != BK_OK) {
                bkr_reply_status(ctx, st);
                replied++;
                break;
            }
            for (int j = 0; j < m; j++)
                RedisModule_ReplyWithBool(ctx, was_new[j]);
            replied += m;
            i += m;
            continue;
        }
        replied++;
        if (!add_one_or_reply(ctx, o, items[i]))
            break;
        i++;
    }
    RedisModule_ReplySetArrayLength(ctx, replied);
}

int bkr_exists_items(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family,
                     RedisModuleString **items, int n, bool multi)
{
    RedisModuleKey *key = RedisModule_OpenKey(ctx, keyname, REDISMODULE_READ);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, family, &o);
    if (st != BKR_FOUND && st != BKR_EMPTY) {
        bkr_reply_lookup_error(ctx, st);
        return bkr_done(key);
    }
    if (multi)
        RedisModule_ReplyWithArray(ctx, n);
    int i = 0;
    while (i < n) {
        int m = n - i < BKR_BATCH ? n - i : BKR_BATCH;
        bk_key_t keys[BKR_BATCH];
        bool found[BKR_BATCH];
        if (o) {
            for (int j = 0; j < m; j++)
                keys[j].ptr = RedisModule_StringPtrLen(items[i + j], &keys[j].len);
            bk_filter_contains_batch(o->f, keys, (size_t)m, found);
        } else {
            memset(found, 0, sizeof found);
        }
        for (int j = 0; j < m; j++)
            RedisModule_ReplyWithBool(ctx, found[j]);
        i += m;
    }
    return bkr_done(key);
}

/* ---- option parsing ---- */

/* Parses an error rate argument; false after replying. */
static bool error_arg_or_reply(RedisModuleCtx *ctx, RedisModuleString *arg, double *out)
{
    if (!bkr_arg_double(arg, out)) {
        RedisModule_ReplyWithError(ctx, "ERR bad error rate");
        return false;
    }
    if (!(*out > 0 && *out < 1)) {
        RedisModule_ReplyWithError(ctx, "ERR (0 < error rate range < 1)");
        return false;
    }
    return true;
}

static bool capacity_arg_or_reply(RedisModuleCtx *ctx, RedisModuleString *arg, uint64_t *out)
{
    long long v;
    if (RedisModule_StringToLongLong(arg, &v) != REDISMODULE_OK) {
        RedisModule_ReplyWithError(ctx, "ERR bad capacity");
        return false;
    }
    if (v <= 0) {
        RedisModule_ReplyWithError(ctx, "ERR (capacity should be larger than 0)");
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

static bool expansion_arg_or_reply(RedisModuleCtx *ctx, RedisModuleString *arg, uint64_t *out)
{
    long long v;
    if (RedisModule_StringToLongLong(arg, &v) != REDISMODULE_OK) {
        RedisModule_ReplyWithError(ctx, "ERR bad expansion");
        return false;
    }
    if (v < 1) {
        RedisModule_ReplyWithError(ctx, "ERR expansion should be greater or equal to 1");
        return false;
    }
    if (v > 32768) {
        RedisModule_ReplyWithError(ctx, "ERR expansion should be at most 32768");
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

static int reply_unknown_arg(RedisModuleCtx *ctx, RedisModuleString *arg)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    return bkr_reply_errorf(ctx, "ERR unknown argument '%.*s'", (int)(len > 64 ? 64 : len), s);
}

/* ---- commands ---- */

/* BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING] */
int bkr_cmd_bf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4 || argc > 7)
        return RedisModule_WrongArity(ctx);
    bkr_params_t p = bf_defaults();
    if (!error_arg_or_reply(ctx, argv[2], &p.error) ||
        !capacity_arg_or_reply(ctx, argv[3], &p.capacity))
        return REDISMODULE_OK;
    bool expansion_given = false;
    for (int i = 4; i < argc; i++) {
        if (bkr_arg_is(argv[i], "NONSCALING")) {
            p.nonscaling = true;
        } else if (bkr_arg_is(argv[i], "EXPANSION")) {
            if (i + 1 == argc)
                return RedisModule_ReplyWithError(ctx, "ERR no expansion");
            if (!expansion_arg_or_reply(ctx, argv[++i], &p.expansion))
                return REDISMODULE_OK;
            expansion_given = true;
        } else {
            return reply_unknown_arg(ctx, argv[i]);
        }
    }
    if (p.nonscaling && expansion_given)
        return RedisModule_ReplyWithError(ctx, "ERR nonscaling filters cannot expand");

    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, BKR_BF, &o);
    if (st != BKR_EMPTY) {
        bkr_reply_lookup_error(ctx, st == BKR_LOADING ? BKR_FOUND : st);
        return bkr_done(key);
    }
    if (bkr_create_key_or_reply(ctx, key, argv[1], BKR_BF, &p))
        RedisModule_ReplyWithSimpleString(ctx, "OK");
    return bkr_done(key);
}

/* Adds items to key, creating it with p unless nocreate. */
static int bf_insert_common(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
                            RedisModuleString **items, int n, const bkr_params_t *p,
                            bool nocreate, bool multi)
{
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, BKR_BF, &o);
    bool created = false;
    if (st == BKR_EMPTY && !nocreate) {
        o = bkr_create_key_or_reply(ctx, key, argv[1], BKR_BF, p);
        if (!o)
            return bkr_done(key);
        created = true;
    } else if (st != BKR_FOUND) {
        bkr_reply_lookup_error(ctx, st);
        return bkr_done(key);
    }
    bkr_add_items(ctx, o, items, n, multi);
    bkr_propagate(ctx, created, argv, argc);
    return bkr_done(key);
}

/* BF.ADD key item */
int bkr_cmd_bf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    bkr_params_t p = bf_defaults();
    return bf_insert_common(ctx, argv, argc, argv + 2, 1, &p, false, false);
}

/* BF.MADD key item [item ...] */
int bkr_cmd_bf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    bkr_params_t p = bf_defaults();
    return bf_insert_common(ctx, argv, argc, argv + 2, argc - 2, &p, false, true);
}

/* BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING]
 *           ITEMS item [item ...] */
int bkr_cmd_bf_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    bkr_params_t p = bf_defaults();
    bool nocreate = false;
    int items = -1;
    for (int i = 2; i < argc && items < 0; i++) {
        if (bkr_arg_is(argv[i], "ITEMS")) {
            items = i + 1;
        } else if (bkr_arg_is(argv[i], "NOCREATE")) {
            nocreate = true;
        } else if (bkr_arg_is(argv[i], "NONSCALING")) {
            p.nonscaling = true;
        } else if (bkr_arg_is(argv[i], "CAPACITY") || bkr_arg_is(argv[i], "ERROR") ||
                   bkr_arg_is(argv[i], "EXPANSION")) {
            if (i + 1 == argc)
                return RedisModule_WrongArity(ctx);
            bool ok = bkr_arg_is(argv[i], "CAPACITY")
                          ? capacity_arg_or_reply(ctx, argv[i + 1], &p.capacity)
                      : bkr_arg_is(argv[i], "ERROR")
                          ? error_arg_or_reply(ctx, argv[i + 1], &p.error)
                          : expansion_arg_or_reply(ctx, argv[i + 1], &p.expansion);
            if (!ok)
                return REDISMODULE_OK;
            i++;
        } else {
            return reply_unknown_arg(ctx, argv[i]);
        }
    }
    if (items < 0 || items >= argc)
        return RedisModule_WrongArity(ctx);
    return bf_insert_common(ctx, argv, argc, argv + items, argc - items, &p, nocreate, true);
}

/* BF.EXISTS key item */
int bkr_cmd_bf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    return bkr_exists_items(ctx, argv[1], BKR_BF, argv + 2, 1, false);
}

/* BF.MEXISTS key item [item ...] */
int bkr_cmd_bf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    return bkr_exists_items(ctx, argv[1], BKR_BF, argv + 2, argc - 2, true);
}

/* BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION] */
int bkr_cmd_bf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2 && argc != 3)
        return RedisModule_WrongArity(ctx);
    static const char *const fields[] = {"CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"};
    static const char *const labels[] = {"Capacity", "Size", "Number of filters",
                                         "Number of items inserted", "Expansion rate"};
    int only = -1;
    if (argc == 3) {
        for (int i = 0; i < 5; i++)
            if (bkr_arg_is(argv[2], fields[i]))
                only = i;
        if (only < 0)
            return RedisModule_ReplyWithError(ctx, "ERR Invalid information value");
    }
    RedisModuleKey *key;
    bkr_obj_t *o = bkr_open_or_reply(ctx, argv[1], REDISMODULE_READ, BKR_BF, &key);
    if (!o)
        return REDISMODULE_OK;
    const bk_filter_info_t *in = bkr_info(o);
    bool scaling = in->kind == BK_KIND_SCALABLE && !in->nonscaling;
    long long values[4] = {(long long)in->capacity, (long long)in->bytes,
                           (long long)in->filters, (long long)in->items};
    if (only >= 0)
        RedisModule_ReplyWithArray(ctx, 1);
    else
        RedisModule_ReplyWithMap(ctx, 5);
    for (int i = 0; i < 5; i++) {
        if (only >= 0 && i != only)
            continue;
        if (only < 0)
            RedisModule_ReplyWithSimpleString(ctx, labels[i]);
        if (i < 4)
            RedisModule_ReplyWithLongLong(ctx, values[i]);
        else if (scaling)
            RedisModule_ReplyWithLongLong(ctx, (long long)in->growth);
        else
            RedisModule_ReplyWithNull(ctx);
    }
    return bkr_done(key);
}

/* BF.CARD key: items added (0 for a missing key). */
int bkr_cmd_bf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    return bkr_reply_card(ctx, argv[1], BKR_BF);
}
