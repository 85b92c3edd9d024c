/*
 * bloomkit.so: the Redis module. This file is its entry point
 * (RedisModule_OnLoad), the Redis API lookup, the module arguments, the two
 * data types (BF and CBF keys) with their persistence callbacks, and the
 * command table.
 *
 * Persistence stores the library's own serialized bytes (docs/FORMAT.md),
 * so a value saved by one version of the module is read by the validating
 * loader of the next one; RDB load (startup, DEBUG RELOAD, RESTORE, full
 * sync of a replica) refuses bytes the library does not accept instead of
 * trusting them. RDB value layout, encoding version 1:
 *   unsigned  tag: 1 = filter, 2 = chunked load in progress
 *   tag 1:    string  serialized filter
 *   tag 2:    unsigned total bytes expected, string bytes received so far
 */
#define _GNU_SOURCE
#define BKR_API_DEFINE
#include "module.h"

#include <string.h>
#include <strings.h>

#define BKR_MODULE_NAME "bloomkit"
#define BKR_MODULE_VERSION 100 /* 0.1.0 */
#define BKR_ENCVER 1

#define BKR_TAG_FILTER 1
#define BKR_TAG_PENDING 2

bkr_config_t bkr_config = {
    .max_bytes = UINT64_C(1) << 30,
    .bf_error = 0.01,
    .bf_capacity = 100,
    .bf_expansion = 2,
    .cbf_error = 0.01,
    .cbf_capacity = 100,
    .chunk_bytes = UINT64_C(16) << 20,
};

RedisModuleType *bkr_type_bf;
RedisModuleType *bkr_type_cbf;

/* ---- API lookup ------------------------------------------------------------ */

#define BKR_FN(name) {#name, (void *)&name}

static const struct {
    const char *name;
    void *slot;
} api_table[] = {
    BKR_FN(RedisModule_SetModuleAttribs),  BKR_FN(RedisModule_SetModuleOptions),
    BKR_FN(RedisModule_CreateCommand),     BKR_FN(RedisModule_CreateDataType),
    BKR_FN(RedisModule_GetContextFlags),   BKR_FN(RedisModule_Alloc),
    BKR_FN(RedisModule_Realloc),           BKR_FN(RedisModule_Free),
    BKR_FN(RedisModule_OpenKey),           BKR_FN(RedisModule_CloseKey),
    BKR_FN(RedisModule_KeyType),           BKR_FN(RedisModule_DeleteKey),
    BKR_FN(RedisModule_ModuleTypeSetValue), BKR_FN(RedisModule_ModuleTypeGetType),
    BKR_FN(RedisModule_ModuleTypeGetValue), BKR_FN(RedisModule_StringPtrLen),
    BKR_FN(RedisModule_StringToLongLong),  BKR_FN(RedisModule_StringToDouble),
    BKR_FN(RedisModule_CreateString),      BKR_FN(RedisModule_FreeString),
    BKR_FN(RedisModule_WrongArity),        BKR_FN(RedisModule_ReplyWithError),
    BKR_FN(RedisModule_ReplyWithSimpleString), BKR_FN(RedisModule_ReplyWithLongLong),
    BKR_FN(RedisModule_ReplyWithDouble),   BKR_FN(RedisModule_ReplyWithStringBuffer),
    BKR_FN(RedisModule_ReplyWithCString),  BKR_FN(RedisModule_ReplyWithNull),
    BKR_FN(RedisModule_ReplyWithArray),    BKR_FN(RedisModule_ReplySetArrayLength),
    BKR_FN(RedisModule_ReplyWithBool),     BKR_FN(RedisModule_ReplyWithMap),
    BKR_FN(RedisModule_ReplicateVerbatim), BKR_FN(RedisModule_Replicate),
    BKR_FN(RedisModule_EmitAOF),           BKR_FN(RedisModule_SaveUnsigned),
    BKR_FN(RedisModule_LoadUnsigned),      BKR_FN(RedisModule_SaveStringBuffer),
    BKR_FN(RedisModule_LoadStringBuffer),  BKR_FN(RedisModule_IsIOError),
    BKR_FN(RedisModule_Log),               BKR_FN(RedisModule_LogIOError),
};

/* Fills every function pointer; returns the name of the first one the
 * server does not have, or NULL. */
static const char *api_init(RedisModuleCtx *ctx)
{
    /* The context's first field is the GetApi function's address; copied
     * bytewise because ISO C has no cast from object to function pointer. */
    memcpy(&RedisModule_GetApi, (const void *)ctx, sizeof RedisModule_GetApi);
    for (size_t i = 0; i < sizeof api_table / sizeof api_table[0]; i++)
        if (RedisModule_GetApi(api_table[i].name, api_table[i].slot) != REDISMODULE_OK)
            return api_table[i].name;
    /* Optional: absent on old servers, where names cannot clash anyway. */
    if (RedisModule_GetApi("RedisModule_IsModuleNameBusy", (void *)&RedisModule_IsModuleNameBusy) !=
        REDISMODULE_OK)
        RedisModule_IsModuleNameBusy = NULL;
    return NULL;
}

/* ---- objects ------------------------------------------------------------------ */

bkr_obj_t *bkr_obj_new(bkr_family_t family, bk_filter_t *f)
{
    bkr_obj_t *o = RedisModule_Alloc(sizeof *o);
    memset(o, 0, sizeof *o);
    o->family = family;
    o->f = f;
    return o;
}

void bkr_obj_free(void *value)
{
    bkr_obj_t *o = value;
    if (!o)
        return;
    bk_filter_free(o->f);
    bkr_obj_touch(o);
    if (o->pend)
        RedisModule_Free(o->pend);
    RedisModule_Free(o);
}

void bkr_obj_touch(bkr_obj_t *o)
{
    if (o->dump) {
        RedisModule_Free(o->dump);
        o->dump = NULL;
        o->dump_len = 0;
    }
}

RedisModuleType *bkr_family_type(bkr_family_t family)
{
    return family == BKR_CBF ? bkr_type_cbf : bkr_type_bf;
}

const char *bkr_family_prefix(bkr_family_t family)
{
    return family == BKR_CBF ? "CBF" : "BF";
}

bool bkr_kind_fits(bkr_family_t family, bk_kind_t kind)
{
    if (family == BKR_CBF)
        return kind == BK_KIND_COUNTING;
    return kind == BK_KIND_SCALABLE || kind == BK_KIND_BLOCKED || kind == BK_KIND_CLASSIC;
}

/* ---- type callbacks --------------------------------------------------------------- */

static void *rdb_load_family(RedisModuleIO *io, int encver, bkr_family_t family)
{
    if (encver < 1 || encver > BKR_ENCVER) {
        RedisModule_LogIOError(io, "warning", "bloomkit: unknown encoding version %d", encver);
        return NULL;
    }
    uint64_t tag = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io))
        return NULL;
    uint64_t total = 0;
    if (tag == BKR_TAG_PENDING) {
        total = RedisModule_LoadUnsigned(io);
        if (RedisModule_IsIOError(io))
            return NULL;
    } else if (tag != BKR_TAG_FILTER) {
        RedisModule_LogIOError(io, "warning", "bloomkit: bad value tag %llu",
                               (unsigned long long)tag);
        return NULL;
    }
    size_t len = 0;
    char *buf = RedisModule_LoadStringBuffer(io, &len);
    if (RedisModule_IsIOError(io) || buf == NULL) {
        if (buf)
            RedisModule_Free(buf);
        return NULL;
    }

    if (tag == BKR_TAG_PENDING) {
        if (len > total || total > bkr_config.max_bytes + (UINT64_C(1) << 20)) {
            RedisModule_Free(buf);
            RedisModule_LogIOError(io, "warning", "bloomkit: bad partial load state");
            return NULL;
        }
        bkr_obj_t *o = bkr_obj_new(family, NULL);
        o->pend = (uint8_t *)buf;
        o->pend_len = o->pend_cap = len;
        o->pend_total = total;
        return o;
    }

    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st = bk_filter_deserialize(&f, buf, len, &why);
    RedisModule_Free(buf);
    if (st != BK_OK) {
        RedisModule_LogIOError(io, "warning", "bloomkit: refusing stored filter: %s%s%s",
                               bk_strerror(st), why ? ": " : "", why ? why : "");
        return NULL;
    }
    if (!bkr_kind_fits(family, bk_filter_kind(f))) {
        bk_filter_free(f);
        RedisModule_LogIOError(io, "warning", "bloomkit: stored filter of the wrong kind");
        return NULL;
    }
    return bkr_obj_new(family, f);
}

static void *rdb_load_bf(RedisModuleIO *io, int encver)
{
    return rdb_load_family(io, encver, BKR_BF);
}

static void *rdb_load_cbf(RedisModuleIO *io, int encver)
{
    return rdb_load_family(io, encver, BKR_CBF);
}

static void rdb_save(RedisModuleIO *io, void *value)
{
    bkr_obj_t *o = value;
    if (o->f == NULL) {
        RedisModule_SaveUnsigned(io, BKR_TAG_PENDING);
        RedisModule_SaveUnsigned(io, o->pend_total);
        RedisModule_SaveStringBuffer(io, (const char *)(o->pend ? o->pend : (uint8_t *)""),
                                     o->pend_len);
        return;
    }
    size_t len = 0;
    uint8_t *buf = bkr_serialize(o->f, &len);
    RedisModule_SaveUnsigned(io, BKR_TAG_FILTER);
    if (buf == NULL) {
        /* Cannot happen short of memory exhaustion; an empty string makes
         * the load fail loudly rather than restore something else. */
        RedisModule_LogIOError(io, "warning", "bloomkit: could not serialize a filter");
        RedisModule_SaveStringBuffer(io, "", 0);
        return;
    }
    RedisModule_SaveStringBuffer(io, (const char *)buf, len);
    RedisModule_Free(buf);
}

static size_t mem_usage(const void *value)
{
    const bkr_obj_t *o = value;
    size_t n = sizeof *o + (size_t)o->pend_cap + o->dump_len;
    if (o->f)
        n += (size_t)bk_filter_serialized_size(o->f);
    return n;
}

static void *copy_value(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value)
{
    (void)fromkey;
    (void)tokey;
    const bkr_obj_t *o = value;
    bkr_obj_t *c = bkr_obj_new(o->family, NULL);
    if (o->f) {
        if (bk_filter_clone(&c->f, o->f) != BK_OK) {
            bkr_obj_free(c);
            return NULL; /* COPY replies with an error */
        }
        c->grow_check_at = o->grow_check_at;
        c->limit_known = o->limit_known;
        c->nonscaling = o->nonscaling;
        return c;
    }
    if (o->pend_len) {
        c->pend = RedisModule_Alloc((size_t)o->pend_len);
        memcpy(c->pend, o->pend, (size_t)o->pend_len);
    }
    c->pend_len = c->pend_cap = o->pend_len;
    c->pend_total = o->pend_total;
    return c;
}

/* ---- module arguments ----------------------------------------------------------------- */

static int parse_args(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    for (int i = 0; i < argc; i += 2) {
        if (i + 1 >= argc) {
            RedisModule_Log(ctx, "warning", "bloomkit: module argument %s needs a value",
                            RedisModule_StringPtrLen(argv[i], NULL));
            return REDISMODULE_ERR;
        }
        const RedisModuleString *v = argv[i + 1];
        uint64_t u = 0;
        double d = 0;
        bool ok;
        if (bkr_arg_is(argv[i], "MAX_BYTES")) {
            ok = bkr_arg_u64(v, &u) && u > 0;
            bkr_config.max_bytes = u;
        } else if (bkr_arg_is(argv[i], "ERROR_RATE")) {
            ok = bkr_arg_double(v, &d) && d > 0 && d < 1;
            bkr_config.bf_error = bkr_config.cbf_error = d;
        } else if (bkr_arg_is(argv[i], "INITIAL_SIZE")) {
            ok = bkr_arg_u64(v, &u) && u > 0;
            bkr_config.bf_capacity = bkr_config.cbf_capacity = u;
        } else if (bkr_arg_is(argv[i], "EXPANSION")) {
            ok = bkr_arg_u64(v, &u) && u >= 1 && u <= 1024;
            bkr_config.bf_expansion = u;
        } else if (bkr_arg_is(argv[i], "CHUNK_BYTES")) {
            ok = bkr_arg_u64(v, &u) && u >= 64 && u <= (UINT64_C(256) << 20);
            bkr_config.chunk_bytes = u;
        } else {
            RedisModule_Log(ctx, "warning", "bloomkit: unknown module argument %s",
                            RedisModule_StringPtrLen(argv[i], NULL));
            return REDISMODULE_ERR;
        }
        if (!ok) {
            RedisModule_Log(ctx, "warning", "bloomkit: bad value for module argument %s",
                            RedisModule_StringPtrLen(argv[i], NULL));
            return REDISMODULE_ERR;
        }
    }
    return REDISMODULE_OK;
}

/* ---- commands ------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    RedisModuleCmdFunc fn;
    const char *flags;
} commands[] = {
    {"BF.RESERVE", bkr_cmd_bf_reserve, "write deny-oom"},
    {"BF.ADD", bkr_cmd_bf_add, "write deny-oom"},
    {"BF.MADD", bkr_cmd_bf_madd, "write deny-oom"},
    {"BF.INSERT", bkr_cmd_bf_insert, "write deny-oom"},
    {"BF.EXISTS", bkr_cmd_bf_exists, "readonly fast"},
    {"BF.MEXISTS", bkr_cmd_bf_mexists, "readonly fast"},
    {"BF.INFO", bkr_cmd_bf_info, "readonly"},
    {"BF.CARD", bkr_cmd_bf_card, "readonly fast"},
    {"BF.SCANDUMP", bkr_cmd_bf_scandump, "readonly"},
    {"BF.LOADCHUNK", bkr_cmd_bf_loadchunk, "write deny-oom"},
    {"CBF.RESERVE", bkr_cmd_cbf_reserve, "write deny-oom"},
    {"CBF.ADD", bkr_cmd_cbf_add, "write deny-oom"},
    {"CBF.MADD", bkr_cmd_cbf_madd, "write deny-oom"},
    {"CBF.DEL", bkr_cmd_cbf_del, "write"},
    {"CBF.EXISTS", bkr_cmd_cbf_exists, "readonly fast"},
    {"CBF.MEXISTS", bkr_cmd_cbf_mexists, "readonly fast"},
    {"CBF.COUNT", bkr_cmd_cbf_count, "readonly fast"},
    {"CBF.INFO", bkr_cmd_cbf_info, "readonly"},
    {"CBF.CARD", bkr_cmd_cbf_card, "readonly fast"},
    {"CBF.SCANDUMP", bkr_cmd_cbf_scandump, "readonly"},
    {"CBF.LOADCHUNK", bkr_cmd_cbf_loadchunk, "write deny-oom"},
    /* Internal: how a key's creation (with its random seed) reaches
     * replicas and the AOF. */
    {"BKI.CREATE", bkr_cmd_create, "write deny-oom"},
};

__attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx *ctx,
                                                              RedisModuleString **argv,
                                                              int argc);

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    const char *missing = api_init(ctx);
    if (missing) {
        if (RedisModule_Log)
            RedisModule_Log(ctx, "warning",
                            "bloomkit: this redis-server lacks %s (7.0 or newer is needed)",
                            missing);
        return REDISMODULE_ERR;
    }
    if (RedisModule_IsModuleNameBusy && RedisModule_IsModuleNameBusy(BKR_MODULE_NAME))
        return REDISMODULE_ERR;
    RedisModule_SetModuleAttribs(ctx, BKR_MODULE_NAME, BKR_MODULE_VERSION, REDISMODULE_APIVER_1);
    RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTIONS_HANDLE_IO_ERRORS);

    if (parse_args(ctx, argv, argc) != REDISMODULE_OK)
        return REDISMODULE_ERR;

    RedisModuleTypeMethods tm;
    memset(&tm, 0, sizeof tm);
    tm.version = REDISMODULE_TYPE_METHOD_VERSION;
    tm.rdb_save = rdb_save;
    tm.aof_rewrite = bkr_aof_rewrite;
    tm.mem_usage = mem_usage;
    tm.free = bkr_obj_free;
    tm.copy = copy_value;

    /* Type names are exactly 9 characters and stored in RDB files. */
    tm.rdb_load = rdb_load_bf;
    bkr_type_bf = RedisModule_CreateDataType(ctx, "bkbloom-1", BKR_ENCVER, &tm);
    tm.rdb_load = rdb_load_cbf;
    bkr_type_cbf = RedisModule_CreateDataType(ctx, "bkcount-1", BKR_ENCVER, &tm);
    if (bkr_type_bf == NULL || bkr_type_cbf == NULL || bkr_wbf_register(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;

    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (RedisModule_CreateCommand(ctx, commands[i].name, commands[i].fn, commands[i].flags, 1,
                                      1, 1) != REDISMODULE_OK)
            return REDISMODULE_ERR;
    return REDISMODULE_OK;
}
