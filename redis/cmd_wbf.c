/*
 * WBF.*: window filters in Redis, "seen in the last N adds or the last T
 * seconds?" (the library's window kind, docs/REDIS.md). A key of its own
 * data type holds one window filter; the bytes it persists are the file
 * format's.
 *
 * The generation clock must not diverge between a master and its replicas
 * (or an AOF replayed later), so nothing a replica applies reads a clock:
 * WBF.ADD and WBF.MADD on a time window read the master's wall clock once
 * and propagate as WBF.ADDAT key TIME item..., and a key is created with
 * its seed spelled out (WBF.RESERVE ... SEED s). Lookups read the local
 * clock (bk_filter_contains_at) and change nothing.
 */
#define _GNU_SOURCE
#include "module.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define WBF_ENCVER 1

RedisModuleType *bkr_type_wbf;

/* ---- the data type ---- */

static void *wbf_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver != WBF_ENCVER)
        return NULL;
    size_t len = 0;
    char *buf = RedisModule_LoadStringBuffer(io, &len);
    if (RedisModule_IsIOError(io) || !buf) {
        if (buf)
            RedisModule_Free(buf);
        return NULL;
    }
    bk_filter_t *f = NULL;
    bk_status_t st = bk_filter_deserialize(&f, buf, len, NULL);
    RedisModule_Free(buf);
    if (st != BK_OK || bk_filter_kind(f) != BK_KIND_WINDOW) {
        bk_filter_free(f);
        RedisModule_LogIOError(io, "warning", "bloomkit: refusing a stored window filter");
        return NULL;
    }
    return f;
}

static void wbf_rdb_save(RedisModuleIO *io, void *value)
{
    size_t len = 0;
    uint8_t *buf = bkr_serialize(value, &len);
    RedisModule_SaveStringBuffer(io, buf ? (const char *)buf : "", buf ? len : 0);
    if (buf)
        RedisModule_Free(buf);
}

/* One WBF.RESTORE with the whole serialized window. */
static void wbf_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    size_t len = 0;
    uint8_t *buf = bkr_serialize(value, &len);
    if (!buf)
        return;
    RedisModule_EmitAOF(aof, "WBF.RESTORE", "sb", key, (const char *)buf, len);
    RedisModule_Free(buf);
}

static size_t wbf_mem_usage(const void *value)
{
    return (size_t)bk_filter_serialized_size(value);
}

static void wbf_free(void *value)
{
    bk_filter_free(value);
}

static void *wbf_copy(RedisModuleString *from, RedisModuleString *to, const void *value)
{
    (void)from;
    (void)to;
    bk_filter_t *c = NULL;
    return bk_filter_clone(&c, value) == BK_OK ? c : NULL;
}

/* ---- helpers ---- */

/* The key's window filter, or NULL after replying (missing, wrong type). */
static bk_filter_t *open_or_reply(RedisModuleCtx *ctx, RedisModuleString *name, int mode,
                                  RedisModuleKey **key)
{
    *key = RedisModule_OpenKey(ctx, name, mode);
    int type = RedisModule_KeyType(*key);
    if (type == REDISMODULE_KEYTYPE_MODULE && RedisModule_ModuleTypeGetType(*key) == bkr_type_wbf)
        return RedisModule_ModuleTypeGetValue(*key);
    RedisModule_ReplyWithError(ctx, type == REDISMODULE_KEYTYPE_EMPTY
                                        ? "ERR not found"
                                        : REDISMODULE_ERRORMSG_WRONGTYPE);
    bkr_done(*key);
    *key = NULL;
    return NULL;
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
    bk_status_t st = bk_filter_create(&f, capacity, error, &o);
    if (st == BK_OK && bk_filter_serialized_size(f) > bkr_config.max_bytes + 4096) {
        bk_filter_free(f);
        RedisModule_ReplyWithError(ctx, "ERR filter larger than the module's MAX_BYTES");
        return bkr_done(key);
    }
    if (st != BK_OK) {
        bkr_reply_status(ctx, st);
        return bkr_done(key);
    }
    RedisModule_ModuleTypeSetValue(key, bkr_type_wbf, f);
    bk_filter_info_t in;
    bk_filter_info(f, &in);
    char s_span[24], s_gens[24], s_seed[24];
    snprintf(s_span, sizeof s_span, "%llu", (unsigned long long)span);
    snprintf(s_gens, sizeof s_gens, "%u", in.filters);
    snprintf(s_seed, sizeof s_seed, "%llu", (unsigned long long)in.seed);
    /* The seed spelled out: replicas and the AOF build the same bits. */
    RedisModule_Replicate(ctx, "WBF.RESERVE", "ssscccccc", argv[1], argv[2], argv[3], "SECONDS",
                          s_span, "GENERATIONS", s_gens, "SEED", s_seed);
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
    bk_filter_t *f = open_or_reply(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key);
    if (!f)
        return REDISMODULE_OK;
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
    bk_filter_t *f = open_or_reply(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key);
    if (!f)
        return REDISMODULE_OK;
    bk_filter_advance(f, now);
    RedisModule_ReplicateVerbatim(ctx);
    add_and_reply(ctx, f, argv + 3, argc - 3, true);
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
    if (type == REDISMODULE_KEYTYPE_MODULE && RedisModule_ModuleTypeGetType(key) == bkr_type_wbf)
        f = RedisModule_ModuleTypeGetValue(key);
    else if (type != REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
        return bkr_done(key);
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
    bk_filter_t *f = open_or_reply(ctx, argv[1], REDISMODULE_READ, &key);
    if (f)
        RedisModule_ReplyWithLongLong(ctx, (long long)bk_filter_items(f));
    return f ? bkr_done(key) : REDISMODULE_OK;
}

/* WBF.INFO key: name/value pairs. */
static int cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bk_filter_t *f = open_or_reply(ctx, argv[1], REDISMODULE_READ, &key);
    if (!f)
        return REDISMODULE_OK;
    bk_filter_info_t in;
    bk_filter_info(f, &in);
    const struct {
        const char *name;
        long long value;
    } rows[] = {{"Capacity", (long long)in.capacity},
                {"Size", (long long)in.bytes},
                {"Window seconds", (long long)in.window_span},
                {"Generations", (long long)in.filters},
                {"Generation", (long long)in.window_generation},
                {"Number of items inserted", (long long)in.items},
                {"Adds", (long long)in.window_adds},
                {"Clock", (long long)in.window_now}};
    size_t n = sizeof rows / sizeof rows[0];
    RedisModule_ReplyWithArray(ctx, (long)(2 * n + 4));
    for (size_t i = 0; i < n; i++) {
        RedisModule_ReplyWithSimpleString(ctx, rows[i].name);
        RedisModule_ReplyWithLongLong(ctx, rows[i].value);
    }
    RedisModule_ReplyWithSimpleString(ctx, "Error rate");
    RedisModule_ReplyWithDouble(ctx, in.fpr_target);
    RedisModule_ReplyWithSimpleString(ctx, "Expected error rate");
    RedisModule_ReplyWithDouble(ctx, in.expected_fpr);
    return bkr_done(key);
}

/* WBF.RESTORE key bytes: a whole serialized window (the AOF rewrite's
 * command), validated by the library; replaces the key. */
static int cmd_restore(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    size_t len;
    const char *buf = RedisModule_StringPtrLen(argv[2], &len);
    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st = bk_filter_deserialize(&f, buf, len, &why);
    if (st == BK_OK && bk_filter_kind(f) != BK_KIND_WINDOW) {
        bk_filter_free(f);
        return RedisModule_ReplyWithError(ctx, "ERR not a window filter");
    }
    if (st != BK_OK)
        return bkr_reply_errorf(ctx, "ERR %s%s%s", bk_strerror(st), why ? ": " : "",
                                why ? why : "");
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    RedisModule_ModuleTypeSetValue(key, bkr_type_wbf, f);
    RedisModule_ReplicateVerbatim(ctx);
    RedisModule_ReplyWithSimpleString(ctx, "OK");
    return bkr_done(key);
}

static const struct {
    const char *name;
    RedisModuleCmdFunc fn;
    const char *flags;
} wbf_commands[] = {
    {"WBF.RESERVE", cmd_reserve, "write deny-oom"},
    {"WBF.ADD", cmd_add, "write deny-oom"},
    {"WBF.MADD", cmd_madd, "write deny-oom"},
    {"WBF.ADDAT", cmd_addat, "write deny-oom"},
    {"WBF.EXISTS", cmd_exists, "readonly fast"},
    {"WBF.MEXISTS", cmd_mexists, "readonly fast"},
    {"WBF.CARD", cmd_card, "readonly fast"},
    {"WBF.INFO", cmd_info, "readonly"},
    {"WBF.RESTORE", cmd_restore, "write deny-oom"},
};

int bkr_wbf_register(RedisModuleCtx *ctx)
{
    RedisModuleTypeMethods tm;
    memset(&tm, 0, sizeof tm);
    tm.version = REDISMODULE_TYPE_METHOD_VERSION;
    tm.rdb_load = wbf_rdb_load;
    tm.rdb_save = wbf_rdb_save;
    tm.aof_rewrite = wbf_aof_rewrite;
    tm.mem_usage = wbf_mem_usage;
    tm.free = wbf_free;
    tm.copy = wbf_copy;
    bkr_type_wbf = RedisModule_CreateDataType(ctx, "bkwindw-1", WBF_ENCVER, &tm);
    if (!bkr_type_wbf)
        return REDISMODULE_ERR;
    for (size_t i = 0; i < sizeof wbf_commands / sizeof wbf_commands[0]; i++)
        if (RedisModule_CreateCommand(ctx, wbf_commands[i].name, wbf_commands[i].fn,
                                      wbf_commands[i].flags, 1, 1, 1) != REDISMODULE_OK)
            return REDISMODULE_ERR;
    return REDISMODULE_OK;
}
