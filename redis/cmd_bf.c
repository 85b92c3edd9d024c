/*
 * BF.* commands: RedisBloom's Bloom filter command set with its arguments,
 * defaults (capacity 100, error rate 0.01, expansion 2, each new
 * sub-filter's error halved, NONSCALING), replies and error messages, so
 * client code written for RedisBloom runs unchanged. Replies are RESP3
 * booleans and maps where RedisBloom gives them; the server turns them into
 * integers and flat arrays for RESP2 clients.
 *
 * Handlers parse, look the key up, call the library and reply; the filter
 * logic is all in the library, what BF and CBF share in items.c and
 * args.c. Differences from RedisBloom (documented in docs/REDIS.md):
 * unknown arguments are an error rather than ignored, sizes are limited by
 * MAX_BYTES, SEED and BF.MERGE are additions.
 */
#define _GNU_SOURCE
#include "cmd_bf.h"
#include "args.h"
#include "argv.h"
#include "items.h"
#include "obj.h"
#include "reply.h"
#include "value.h"

#include <stdio.h>
#include <string.h>

/* Whether argv[4..] has an option only bloomkit's BF.RESERVE takes (SEED,
 * TIGHTENING): without one, more than 7 arguments are RedisBloom's "wrong
 * number of arguments", checked before any value. */
static bool own_option(RedisModuleString **argv, int argc)
{
    for (int i = 4; i < argc; i++)
        if (bkr_arg_is(argv[i], "SEED") || bkr_arg_is(argv[i], "TIGHTENING"))
            return true;
    return false;
}

/* BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
 *            [SEED seed] [TIGHTENING ratio]: at most 11 arguments with the
 *            command's name (9 refused SEED and TIGHTENING together with
 *            EXPANSION, a valid call) */
int bkr_cmd_bf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4 || argc > 11 || (argc > 7 && !own_option(argv, argc)))
        return RedisModule_WrongArity(ctx);
    bkr_options_t o = {.p = bkr_defaults(BKR_BF)};
    if (!bkr_rate_capacity_or_reply(ctx, argv, &o.p) ||
        !bkr_parse_options_or_reply(ctx, argv, argc, 4,
                                    BKR_OPT_EXPANSION | BKR_OPT_NONSCALING | BKR_OPT_SEED |
                                        BKR_OPT_TIGHTENING,
                                    &o))
        return REDISMODULE_OK;
    return bkr_reserve(ctx, argv, BKR_BF, &o.p);
}

/* BF.ADD key item */
int bkr_cmd_bf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    bkr_options_t o = {.p = bkr_defaults(BKR_BF), .items = 2};
    return bkr_add_command(ctx, argv, argc, BKR_BF, &o, false);
}

/* BF.MADD key item [item ...] */
int bkr_cmd_bf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    bkr_options_t o = {.p = bkr_defaults(BKR_BF), .items = 2};
    return bkr_add_command(ctx, argv, argc, BKR_BF, &o, true);
}

/* BF.CLAIM key id seconds item [item ...] */
int bkr_cmd_bf_claim(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return bkr_claim(ctx, argv, argc, BKR_BF);
}

/* BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING]
 *           [SEED s] ITEMS item [item ...] */
int bkr_cmd_bf_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    bkr_options_t o = {.p = bkr_defaults(BKR_BF)};
    if (!bkr_parse_options_or_reply(ctx, argv, argc, 2,
                                    BKR_OPT_INSERT | BKR_OPT_EXPANSION | BKR_OPT_NONSCALING |
                                        BKR_OPT_SEED | BKR_OPT_TIGHTENING,
                                    &o))
        return REDISMODULE_OK;
    return bkr_add_command(ctx, argv, argc, BKR_BF, &o, true);
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

/* RedisBloom 2.x's struct sizes on 64-bit servers (sizeof SBChain and
 * SBLink), which its BF.INFO Size adds to the bits. */
#define RB_CHAIN_STRUCT 32u
#define RB_LINK_STRUCT 64u

/* BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION] */
int bkr_cmd_bf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2 && argc != 3)
        return RedisModule_WrongArity(ctx);
    static const char *const fields[] = {"CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"};
    static const char *const labels[] = {"Capacity", "Size", "Number of filters",
                                         "Number of items inserted", "Expansion rate"};
    /* The key first, then the field: a missing key or one of another type
     * answers as it does without a field (RedisBloom's order). */
    RedisModuleKey *key;
    bkr_obj_t *o = bkr_open_or_reply(ctx, argv[1], REDISMODULE_READ, BKR_BF, &key);
    if (!o)
        return REDISMODULE_OK;
    int only = -1;
    if (argc == 3) {
        for (int i = 0; i < 5; i++)
            if (bkr_arg_is(argv[2], fields[i]))
                only = i;
        if (only < 0) {
            RedisModule_ReplyWithError(ctx, "Invalid information value");
            return bkr_done(key);
        }
    }
    bk_filter_shape_t shape; /* O(1): INFO never reads the payload */
    bk_filter_shape(o->f, &shape);
    const bk_filter_shape_t *in = &shape;
    bool scaling = (bk_kind_caps(in->kind) & BK_CAP_GROW) && !in->nonscaling;
    uint64_t values[4] = {in->capacity, in->bytes, in->filters, in->items};
    /* A RedisBloom chain's Size is RedisBloom's figure: its chain struct
     * (32 bytes) and a 64-byte link struct per sub-filter beside the bits,
     * so a key answers BF.INFO as it did under RedisBloom. */
    if (bk_redisbloom_is(o->f))
        values[1] = RB_CHAIN_STRUCT + RB_LINK_STRUCT * in->filters + in->bytes;
    /* One field: a one-element array in RESP2, and in RESP3 a map of its
     * label to its value, as RedisBloom replies. */
    bool resp3 = (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_RESP3) != 0;
    bool labelled = only < 0 || resp3;
    if (only >= 0 && !resp3)
        RedisModule_ReplyWithArray(ctx, 1);
    else
        RedisModule_ReplyWithMap(ctx, only >= 0 ? 1 : 5);
    for (int i = 0; i < 5; i++) {
        if (only >= 0 && i != only)
            continue;
        if (labelled)
            RedisModule_ReplyWithSimpleString(ctx, labels[i]);
        if (i < 4)
            bkr_reply_u64(ctx, values[i]);
        else if (scaling)
            bkr_reply_number(ctx, in->growth);
        else
            RedisModule_ReplyWithNull(ctx);
    }
    return bkr_done(key);
}

/* BF.DEBUG key: as RedisBloom prints it, "size:ITEMS" and then a line per
 * sub-filter, oldest first: "bytes:B bits:b hashes:k hashwidth:64
 * capacity:C size:S ratio:R" (bits = 8 x bytes: every payload bit is
 * used; bloomkit hashes to 64 bits and more). */
int bkr_cmd_bf_debug(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_obj_t *o = bkr_open_or_reply(ctx, argv[1], REDISMODULE_READ, BKR_BF, &key);
    if (!o)
        return REDISMODULE_OK;
    bk_filter_shape_t all;
    bk_filter_shape(o->f, &all);
    RedisModule_ReplyWithArray(ctx, 1 + (long)all.filters);
    char line[256];
    int n = snprintf(line, sizeof line, "size:%llu", (unsigned long long)all.items);
    RedisModule_ReplyWithStringBuffer(ctx, line, (size_t)n);
    for (uint32_t i = 0; i < all.filters; i++) {
        bk_filter_shape_t sub;
        if (bk_filter_sub_shape(o->f, i, &sub) != BK_OK)
            sub = all; /* a single array: itself */
        n = snprintf(line, sizeof line,
                     "bytes:%llu bits:%llu hashes:%u hashwidth:64 capacity:%llu size:%llu "
                     "ratio:%g",
                     (unsigned long long)sub.bytes, (unsigned long long)sub.bytes * 8, sub.k,
                     (unsigned long long)sub.capacity, (unsigned long long)sub.items,
                     sub.fpr_target);
        RedisModule_ReplyWithStringBuffer(ctx, line, (size_t)n);
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
