/*
 * WBF.*: window filters in Redis, "seen in the last N adds or the last T
 * seconds?" (the library's window kind, docs/REDIS.md). A key of its own
 * data type holds one window filter in the module's object (obj.c), saved,
 * loaded, dumped and restored as every family's is.
 *
 * The generation clock must not diverge between a master and its replicas
 * (or an AOF replayed later), so nothing a replica applies reads a clock:
 * WBF.ADD and WBF.MADD on a time window read the master's wall clock once
 * and propagate as WBF.ADDAT key TIME item..., and a key is created with
 * its seed spelled out (WBF.RESERVE ... SEED s). Lookups read the local
 * clock (bk_filter_contains_at) and change nothing.
 */
#define _GNU_SOURCE
#include "cmd_wbf.h"
#include "stats.h"
#include "argv.h"
#include "config.h"
#include "dump.h"
#include "events.h"
#include "obj.h"
#include "reply.h"
#include "value.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* The furthest a client may move a time window's clock past this server's
 * wall clock (WBF.ADDAT): a hundred years, in seconds. A time beyond it is
 * a mistake or an attack (2^64 - 1 would stop the window from ever
 * forgetting again). */
/* How far a client's WBF.ADDAT may lead this server's clock: one window
 * plus a minute of clock skew. Further, the key's clock would sit in the
 * future and the window would stop forgetting until the server's clock
 * caught up with it (99 years ahead: never). */
#define WBF_SKEW UINT64_C(60)

/* The key's window object, or NULL after replying (missing, wrong type,
 * still being restored). */
static bkr_obj_t *open_or_reply(RedisModuleCtx *ctx, RedisModuleString *name, int mode,
                                RedisModuleKey **key)
{
    return bkr_open_or_reply(ctx, name, mode, BKR_WBF, key);
}

/* O(1): an add must not scan the payload. */
static bool is_time_window(const bk_filter_t *f)
{
    bk_filter_shape_t sh;
    bk_filter_shape(f, &sh);
    return sh.window_span != 0;
}

static uint64_t wall_clock(void)
{
    time_t t = time(NULL);
    return t > 0 ? (uint64_t)t : 0;
}

/* Adds items at the window's clock; one integer or an array. */
static void add_and_reply(RedisModuleCtx *ctx, bk_filter_t *f, RedisModuleString **items, int n,
                          bool multi)
{
    if (multi)
        RedisModule_ReplyWithArray(ctx, n);
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(items[i], &len);
        bool fresh = false;
        (void)bk_filter_add(f, p, len, &fresh); /* a window in memory cannot fail */
        RedisModule_ReplyWithLongLong(ctx, fresh);
    }
}

/* ---- commands ---- */

/* WBF.RESERVE key error capacity [SECONDS t] [GENERATIONS g] [SEED s] */
static int cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4 || argc % 2)
        return RedisModule_WrongArity(ctx);
    double error;
    uint64_t capacity, span = 0, gens = 0, seed = 0, *dst;
    bool seed_set = false;
    if (!bkr_arg_double(argv[2], &error) || !(error > 0 && error < 1))
        return RedisModule_ReplyWithError(ctx, "ERR bad error rate");
    if (!bkr_arg_u64(argv[3], &capacity) || capacity == 0)
        return RedisModule_ReplyWithError(ctx, "ERR bad capacity");
    for (int i = 4; i < argc; i += 2) {
        if (bkr_arg_is(argv[i], "SECONDS"))
            dst = &span;
        else if (bkr_arg_is(argv[i], "GENERATIONS"))
            dst = &gens;
        else if (bkr_arg_is(argv[i], "SEED"))
            dst = &seed, seed_set = true;
        else
            return RedisModule_ReplyWithError(ctx, "ERR unknown argument");
        if (!bkr_arg_u64(argv[i + 1], dst))
            return RedisModule_ReplyWithError(ctx, "ERR bad number");
    }
    if (gens != 0 && (gens < 2 || gens > 16))
        return RedisModule_ReplyWithError(ctx, "ERR GENERATIONS must be 2..16");
    bk_options_t o = {.kind = BK_KIND_WINDOW, .seed_set = seed_set, .seed = seed,
                      .window_span = span, .window_generations = (uint32_t)gens};
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    if (RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_ReplyWithError(ctx, "ERR item exists");
        return bkr_done(key);
    }
    bk_filter_t *f = NULL;
    uint64_t mark = bkr_lib_bytes();
    bk_status_t st = bk_filter_create(&f, capacity, error, &o);
    uint64_t bytes = 0;
    if (st == BK_OK && !bkr_within_cap(f, bkr_cap(ctx), &bytes)) {
        bk_filter_free(f);
        bkr_reply_errorf(ctx,
                         "ERR capacity %llu at error rate %g needs %llu bytes, over the limit "
                         "of %llu bytes (module argument MAX_BYTES)",
                         (unsigned long long)capacity, error, (unsigned long long)bytes,
                         (unsigned long long)bkr_config.max_bytes);
        return bkr_done(key);
    }
    if (st != BK_OK) {
        if (bkr_loading(ctx))
            bkr_fatal_load(ctx, "WBF capacity %llu error %g: %s", (unsigned long long)capacity,
                           error, bk_strerror(st));
        bkr_reply_status(ctx, st);
        return bkr_done(key);
    }
    RedisModule_ModuleTypeSetValue(key, bkr_family_type(BKR_WBF), bkr_obj_new(BKR_WBF, f, mark));
    bkr_stats.keys_created++;
    bk_filter_info_t in;
    bk_filter_info(f, &in);
    char s_span[24], s_gens[24], s_seed[24];
    snprintf(s_span, sizeof s_span, "%llu", (unsigned long long)span);
    snprintf(s_gens, sizeof s_gens, "%u", in.filters);
    snprintf(s_seed, sizeof s_seed, "%llu", (unsigned long long)in.seed);
    /* The seed spelled out: replicas and the AOF build the same bits. */
    RedisModule_Replicate(ctx, "WBF.RESERVE", "ssscccccc", argv[1], argv[2], argv[3], "SECONDS",
                          s_span, "GENERATIONS", s_gens, "SEED", s_seed);
    bkr_notify(ctx, argv[0], argv[1]);
    RedisModule_ReplyWithSimpleString(ctx, "OK");
    return bkr_done(key);
}

/* WBF.ADD key item / WBF.MADD key item...: a time window is moved to the
 * master's clock, and the adds propagate with that time. */
static int add_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool multi)
{
    if (argc < 3 || (!multi && argc != 3))
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_obj_t *o = open_or_reply(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key);
    if (!o)
        return REDISMODULE_OK;
    bk_filter_t *f = o->f;
    if (is_time_window(f)) {
        uint64_t now = wall_clock();
        char s_now[24];
        snprintf(s_now, sizeof s_now, "%llu", (unsigned long long)now);
        bk_filter_advance(f, now);
        RedisModule_Replicate(ctx, "WBF.ADDAT", "scv", argv[1], s_now, argv + 2,
                              (size_t)(argc - 2));
    } else {
        RedisModule_ReplicateVerbatim(ctx);
    }
    add_and_reply(ctx, f, argv + 2, argc - 2, multi);
    bkr_notify(ctx, argv[0], argv[1]); /* every add moves a window, repeats too */
    return bkr_done(key);
}

static int cmd_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return add_command(ctx, argv, argc, false);
}

static int cmd_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return add_command(ctx, argv, argc, true);
}

/* WBF.ADDAT key time item [item...]: adds as of `time` (seconds; a time
 * earlier than the window's clock counts as its clock). How time-window
 * adds reach replicas; also for callers with their own clock. */
static int cmd_addat(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    uint64_t now;
    if (!bkr_arg_u64(argv[2], &now))
        return RedisModule_ReplyWithError(ctx, "ERR bad time");
    RedisModuleKey *key;
    bkr_obj_t *o = open_or_reply(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key);
    if (!o)
        return REDISMODULE_OK;
    bk_filter_t *f = o->f;
    /* A client's time must be sane: not past the wall clock by more than
     * the window's span and WBF_SKEW, not before what the window still
     * holds. A replayed or replicated ADDAT was accepted once and is
     * applied as it was. */
    bk_filter_info_t in;
    bk_filter_info(f, &in);
    bool own = bkr_cap(ctx) != UINT64_MAX; /* a client's command, not a replay */
    uint64_t wall = wall_clock();
    if (own && in.window_span && now > wall && now - wall > in.window_span + WBF_SKEW) {
        bkr_reply_errorf(ctx,
                         "ERR time is %llu s past this server's clock: a window's clock may "
                         "lead it by its span (%llu s) and 60 s at most, or it would stop "
                         "forgetting",
                         (unsigned long long)(now - wall), (unsigned long long)in.window_span);
        return bkr_done(key);
    }
    /* kept while now - t <= span (window.c), so only older is refused */
    if (own && in.window_span && now < in.window_now && in.window_now - now > in.window_span) {
        RedisModule_ReplyWithError(ctx, "ERR time is before the window: items that old are "
                                        "already forgotten");
        return bkr_done(key);
    }
    bk_filter_advance(f, now);
    RedisModule_ReplicateVerbatim(ctx);
    add_and_reply(ctx, f, argv + 3, argc - 3, true);
    bkr_notify(ctx, argv[0], argv[1]);
    return bkr_done(key);
}

/* WBF.EXISTS key item / WBF.MEXISTS key item...: as of this server's
 * clock, changing nothing. A missing key holds nothing. */
static int exists_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool multi)
{
    if (argc < 3 || (!multi && argc != 3))
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ);
    int type = RedisModule_KeyType(key);
    const bk_filter_t *f = NULL;
    if (type != REDISMODULE_KEYTYPE_EMPTY) {
        bkr_obj_t *o;
        bkr_lookup_t st = bkr_lookup(key, BKR_WBF, &o);
        if (st != BKR_FOUND) {
            bkr_reply_lookup_error(ctx, st);
            return bkr_done(key);
        }
        f = o->f;
    }
    uint64_t now = wall_clock();
    if (multi)
        RedisModule_ReplyWithArray(ctx, argc - 2);
    for (int i = 2; i < argc; i++) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(argv[i], &len);
        RedisModule_ReplyWithLongLong(ctx, f && bk_filter_contains_at(f, p, len, now));
    }
    return bkr_done(key);
}

static int cmd_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return exists_command(ctx, argv, argc, false);
}

static int cmd_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return exists_command(ctx, argv, argc, true);
}

static int cmd_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_obj_t *o = open_or_reply(ctx, argv[1], REDISMODULE_READ, &key);
    if (o)
        bkr_reply_u64(ctx, bk_filter_items(o->f));
    return o ? bkr_done(key) : REDISMODULE_OK;
}

/* WBF.INFO key: name/value pairs. */
static int cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_obj_t *o = open_or_reply(ctx, argv[1], REDISMODULE_READ, &key);
    if (!o)
        return REDISMODULE_OK;
    bk_filter_info_t in;
    bk_filter_info(o->f, &in);
    const struct {
        const char *name;
        uint64_t value;
    } rows[] = {{"Capacity", in.capacity},
                {"Size", in.bytes},
                {"Window seconds", in.window_span},
                {"Generations", in.filters},
                {"Slots", in.window_slots},
                {"Generation", in.window_generation},
                {"Number of items inserted", in.items},
                {"Adds", in.window_adds},
                {"Clock", in.window_now}};
    size_t n = sizeof rows / sizeof rows[0];
    RedisModule_ReplyWithArray(ctx, (long)(2 * n + 4));
    for (size_t i = 0; i < n; i++) {
        RedisModule_ReplyWithSimpleString(ctx, rows[i].name);
        bkr_reply_u64(ctx, rows[i].value);
    }
    RedisModule_ReplyWithSimpleString(ctx, "Error rate");
    RedisModule_ReplyWithDouble(ctx, in.fpr_target);
    RedisModule_ReplyWithSimpleString(ctx, "Expected error rate");
    RedisModule_ReplyWithDouble(ctx, in.expected_fpr);
    return bkr_done(key);
}

/* WBF.RESTORE key bytes: a whole serialized window, validated by the
 * library; replaces the key. How earlier releases rewrote the AOF (now
 * WBF.LOADCHUNK, in pieces), so those AOFs still load. */
static int cmd_restore(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    size_t len;
    const char *buf = RedisModule_StringPtrLen(argv[2], &len);
    bk_filter_t *f = NULL;
    const char *why = NULL;
    uint64_t mark = bkr_lib_bytes();
    bk_status_t st = bk_filter_deserialize(&f, buf, len, &why);
    if (st == BK_OK && !(bk_kind_caps(bk_filter_kind(f)) & BK_CAP_WINDOW)) {
        bk_filter_free(f);
        st = BK_EKIND;
        why = "not a window filter";
    }
    if (st != BK_OK) {
        if (bkr_loading(ctx))
            bkr_fatal_load(ctx, "WBF.RESTORE: %s%s%s", bk_strerror(st), why ? ": " : "",
                           why ? why : "");
        return bkr_reply_errorf(ctx, "ERR %s%s%s", bk_strerror(st), why ? ": " : "",
                                why ? why : "");
    }
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    RedisModule_ModuleTypeSetValue(key, bkr_family_type(BKR_WBF), bkr_obj_new(BKR_WBF, f, mark));
    RedisModule_ReplicateVerbatim(ctx);
    RedisModule_ReplyWithSimpleString(ctx, "OK");
    return bkr_done(key);
}

static const bkr_command_t wbf_commands[] = {
    {"wbf.reserve", cmd_reserve, "write deny-oom", 1},
    {"wbf.add", cmd_add, "write deny-oom", 1},
    {"wbf.madd", cmd_madd, "write deny-oom", 1},
    {"wbf.addat", cmd_addat, "write deny-oom", 1},
    {"wbf.exists", cmd_exists, "readonly fast", 1},
    {"wbf.mexists", cmd_mexists, "readonly fast", 1},
    {"wbf.card", cmd_card, "readonly fast", 1},
    {"wbf.info", cmd_info, "readonly", 1},
    {"wbf.restore", cmd_restore, "write deny-oom", 1},
    {"wbf.scandump", bkr_cmd_wbf_scandump, "readonly", 1},
    {"wbf.loadchunk", bkr_cmd_wbf_loadchunk, "write deny-oom", 1},
};

int bkr_wbf_register(RedisModuleCtx *ctx)
{
    return bkr_create_commands(ctx, wbf_commands, sizeof wbf_commands / sizeof wbf_commands[0]);
}
