/*
 * The options of the commands that create filters: BF.RESERVE, BF.INSERT
 * and CBF.RESERVE, parsed in one place with RedisBloom's error messages
 * (docs/REDIS.md lists them), so the BF and CBF commands cannot drift
 * apart. Each parser replies with the error itself and returns false, so a
 * handler's error path is one line.
 *
 * RedisBloom words BF.INSERT's errors differently from BF.RESERVE's: a
 * value that does not parse is "Bad error rate", "Bad capacity" or "Bad
 * expansion", one out of range is "Bad argument received" (checked once
 * every option is read), an unknown word "Unknown argument received"; the
 * same texts here, so client code matching them keeps working.
 */
#define _GNU_SOURCE
#include "args.h"
#include "argv.h"
#include "reply.h"

#include <string.h>

/* RedisBloom's reply to a BF.INSERT value out of range. */
#define INSERT_RANGE_ERROR "Bad argument received"

/* The parsers below take `insert` for BF.INSERT's wording: there a value
 * out of range is not checked here but once all options are read. */
static bool error_arg_or_reply(RedisModuleCtx *ctx, RedisModuleString *arg, double *out,
                               bool insert)
{
    if (!bkr_arg_double(arg, out)) {
        RedisModule_ReplyWithError(ctx, insert ? "Bad error rate" : "ERR bad error rate");
        return false;
    }
    if (!insert && !(*out > 0 && *out < 1)) {
        /* RedisBloom's text, its trailing space included. */
        RedisModule_ReplyWithError(ctx, "ERR (0 < error rate range < 1) ");
        return false;
    }
    return true;
}

/* BF.INSERT keeps a capacity below 1 as 0 for the range check. */
static bool capacity_arg_or_reply(RedisModuleCtx *ctx, RedisModuleString *arg, uint64_t *out,
                                  bool insert)
{
    long long v;
    if (RedisModule_StringToLongLong(arg, &v) != REDISMODULE_OK) {
        RedisModule_ReplyWithError(ctx, insert ? "Bad capacity" : "ERR bad capacity");
        return false;
    }
    if (v <= 0 && !insert) {
        RedisModule_ReplyWithError(ctx, "ERR (capacity should be larger than 0)");
        return false;
    }
    *out = v <= 0 ? 0 : (uint64_t)v;
    return true;
}

static bool expansion_arg_or_reply(RedisModuleCtx *ctx, RedisModuleString *arg, uint64_t *out,
                                   bool insert)
{
    long long v;
    if (RedisModule_StringToLongLong(arg, &v) != REDISMODULE_OK) {
        RedisModule_ReplyWithError(ctx, insert ? "Bad expansion" : "ERR bad expansion");
        return false;
    }
    if (v < 1) {
        if (insert) {
            *out = 0; /* out of range: "Bad argument received" once all are read */
            return true;
        }
        RedisModule_ReplyWithError(ctx, "ERR expansion should be greater or equal to 1");
        return false;
    }
    if (v > BKR_MAX_EXPANSION) {
        RedisModule_ReplyWithError(ctx, "ERR expansion should be at most 32768");
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

/* TIGHTENING r: a ratio in (0, 1) that a float holds exactly would do;
 * any in (0, 1) is taken (a packed key keeps a float's, as the library's
 * chains do). */
static bool tightening_arg_or_reply(RedisModuleCtx *ctx, RedisModuleString *arg, bkr_params_t *p)
{
    double r;
    if (!bkr_arg_double(arg, &r) || !(r > 0.0 && r < 1.0)) {
        RedisModule_ReplyWithError(ctx, "ERR bad tightening ratio (a number between 0 and 1)");
        return false;
    }
    p->tightening = r;
    return true;
}

static bool seed_arg_or_reply(RedisModuleCtx *ctx, RedisModuleString *arg, bkr_params_t *p)
{
    if (!bkr_arg_u64(arg, &p->seed)) {
        RedisModule_ReplyWithError(ctx, "ERR bad seed (an integer from 0 to 2^64 - 1)");
        return false;
    }
    p->seed_set = true;
    return true;
}

bool bkr_rate_capacity_or_reply(RedisModuleCtx *ctx, RedisModuleString **argv, bkr_params_t *p)
{
    return error_arg_or_reply(ctx, argv[2], &p->error, false) &&
           capacity_arg_or_reply(ctx, argv[3], &p->capacity, false);
}

static bool unknown_arg(RedisModuleCtx *ctx, RedisModuleString *arg, unsigned allowed)
{
    if (allowed & BKR_OPT_INSERT) {
        RedisModule_ReplyWithError(ctx, "Unknown argument received");
        return false;
    }
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    bkr_reply_errorf(ctx, "ERR unknown argument '%.*s'", (int)(len > 64 ? 64 : len), s);
    return false;
}

/* An option's value is missing: BF.INSERT answers with an arity error,
 * BF.RESERVE with "ERR no expansion", as RedisBloom does. */
static bool missing_value(RedisModuleCtx *ctx, unsigned allowed, const char *what)
{
    if (allowed & BKR_OPT_INSERT)
        RedisModule_WrongArity(ctx);
    else
        bkr_reply_errorf(ctx, "ERR no %s", what);
    return false;
}

/* One option taking a value at argv[i + 1]; false after replying. */
static bool valued_option(RedisModuleCtx *ctx, RedisModuleString **argv, int i, unsigned kind,
                          unsigned allowed, bkr_options_t *o)
{
    bool insert = (allowed & BKR_OPT_INSERT) != 0;
    switch (kind) {
    case BKR_OPT_EXPANSION:
        return expansion_arg_or_reply(ctx, argv[i + 1], &o->p.expansion, insert);
    case BKR_OPT_SEED:
        return seed_arg_or_reply(ctx, argv[i + 1], &o->p);
    case BKR_OPT_TIGHTENING:
        return tightening_arg_or_reply(ctx, argv[i + 1], &o->p);
    default: /* BKR_OPT_INSERT: CAPACITY or ERROR */
        return bkr_arg_is(argv[i], "CAPACITY")
                   ? capacity_arg_or_reply(ctx, argv[i + 1], &o->p.capacity, true)
                   : error_arg_or_reply(ctx, argv[i + 1], &o->p.error, true);
    }
}

/* The kind of an option word, 0 if unknown; *valued if it takes a value. */
static unsigned option_kind(const RedisModuleString *arg, bool *valued)
{
    *valued = true;
    if (bkr_arg_is(arg, "EXPANSION"))
        return BKR_OPT_EXPANSION;
    if (bkr_arg_is(arg, "SEED"))
        return BKR_OPT_SEED;
    if (bkr_arg_is(arg, "TIGHTENING"))
        return BKR_OPT_TIGHTENING;
    if (bkr_arg_is(arg, "CAPACITY") || bkr_arg_is(arg, "ERROR"))
        return BKR_OPT_INSERT;
    *valued = false;
    if (bkr_arg_is(arg, "NONSCALING"))
        return BKR_OPT_NONSCALING;
    if (bkr_arg_is(arg, "NOCREATE") || bkr_arg_is(arg, "ITEMS"))
        return BKR_OPT_INSERT;
    return 0;
}

bool bkr_parse_options_or_reply(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int from,
                                unsigned allowed, bkr_options_t *o)
{
    bool expansion_given = false;
    o->items = -1;
    /* RedisBloom's BF.RESERVE looks for NONSCALING and EXPANSION before it
     * reads EXPANSION's value: with both, that is the error, whatever the
     * value (EXPANSION last is "no expansion", below). */
    if (!(allowed & BKR_OPT_INSERT) && (allowed & BKR_OPT_NONSCALING)) {
        int ns = -1, ex = -1;
        for (int i = from; i < argc; i++) {
            if (ns < 0 && bkr_arg_is(argv[i], "NONSCALING"))
                ns = i;
            if (ex < 0 && bkr_arg_is(argv[i], "EXPANSION"))
                ex = i;
        }
        if (ns >= 0 && ex >= 0 && ex + 1 < argc) {
            RedisModule_ReplyWithError(ctx, "Nonscaling filters cannot expand");
            return false;
        }
    }
    for (int i = from; i < argc; i++) {
        bool valued;
        unsigned kind = option_kind(argv[i], &valued);
        if (!(kind & allowed))
            return unknown_arg(ctx, argv[i], allowed);
        if (kind == BKR_OPT_NONSCALING) {
            o->p.nonscaling = true;
        } else if (bkr_arg_is(argv[i], "NOCREATE")) {
            o->nocreate = true;
        } else if (bkr_arg_is(argv[i], "ITEMS")) {
            o->items = i + 1;
            break;
        } else if (i + 1 == argc) {
            char what[16];
            size_t len;
            const char *s = RedisModule_StringPtrLen(argv[i], &len);
            for (size_t j = 0; j < len && j + 1 < sizeof what; j++)
                what[j] = (char)(s[j] | 0x20), what[j + 1] = '\0';
            return missing_value(ctx, allowed, what);
        } else {
            if (!valued_option(ctx, argv, i, kind, allowed, o))
                return false;
            expansion_given |= kind == BKR_OPT_EXPANSION;
            i++;
        }
    }
    if ((allowed & BKR_OPT_INSERT) && (o->items < 0 || o->items >= argc)) {
        RedisModule_WrongArity(ctx);
        return false;
    }
    if ((allowed & BKR_OPT_INSERT) &&
        (!(o->p.error > 0 && o->p.error < 1) || o->p.capacity < 1 || o->p.expansion < 1)) {
        RedisModule_ReplyWithError(ctx, INSERT_RANGE_ERROR);
        return false;
    }
    if (!(allowed & BKR_OPT_INSERT) && o->p.nonscaling && expansion_given) {
        RedisModule_ReplyWithError(ctx, "Nonscaling filters cannot expand");
        return false;
    }
    if (o->p.nonscaling && o->p.tightening > 0) {
        RedisModule_ReplyWithError(ctx, "ERR TIGHTENING is for scaling filters (not with "
                                        "NONSCALING)");
        return false;
    }
    return true;
}
