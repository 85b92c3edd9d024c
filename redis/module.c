/*
 * bloomkit.so: the Redis module's registration. This file is its entry
 * point (RedisModule_OnLoad): the Redis API lookup, the module arguments,
 * the library's allocator set to Redis' own, the two data types (BF and CBF
 * keys; their callbacks live in obj.c and dump.c) and the command table.
 * It is the top of the module's files: it calls into the others, and none
 * calls into it.
 */
#define _GNU_SOURCE
#include "stats.h"
#include "bkr.h"
#include "argv.h"
#include "cmd_bf.h"
#include "cmd_cbf.h"
#include "cmd_cf.h"
#include "cmd_merge.h"
#include "cmd_wbf.h"
#include "config.h"
#include "create.h"
#include "items.h"
#include "dump.h"
#include "events.h"
#include "obj.h"
#include "redisbloom.h"
#include "stream.h"
#include "value.h"

#include <string.h>
#include <strings.h>

#define BKR_MODULE_NAME "bloomkit"
#define BKR_MODULE_VERSION 100 /* 0.1.0 */

/* ---- API lookup ------------------------------------------------------------ */

#define BKR_FN(name) {#name, (void *)&name}

static const struct {
    const char *name;
    void *slot;
} api_table[] = {
    BKR_FN(RedisModule_SetModuleAttribs),  BKR_FN(RedisModule_SetModuleOptions),
    BKR_FN(RedisModule_CreateCommand),     BKR_FN(RedisModule_CreateDataType),
    BKR_FN(RedisModule_GetContextFlags),   BKR_FN(RedisModule_Alloc),
    BKR_FN(RedisModule_Free),
    BKR_FN(RedisModule_OpenKey),           BKR_FN(RedisModule_CloseKey),
    BKR_FN(RedisModule_KeyType),           BKR_FN(RedisModule_DeleteKey),
    BKR_FN(RedisModule_StringSet),         BKR_FN(RedisModule_StringDMA),
    BKR_FN(RedisModule_SetExpire),
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
    BKR_FN(RedisModule_GetContextFromIO),  BKR_FN(RedisModule_SaveDouble),
    BKR_FN(RedisModule_LoadDouble),
    BKR_FN(RedisModule_Log),               BKR_FN(RedisModule_LogIOError),
    BKR_FN(RedisModule_TryAlloc),          BKR_FN(RedisModule_NotifyKeyspaceEvent),
    BKR_FN(RedisModule_MallocSize),        BKR_FN(RedisModule_DefragAlloc),
    BKR_FN(RedisModule_ModuleTypeReplaceValue),
    BKR_FN(RedisModule_RegisterInfoFunc),  BKR_FN(RedisModule_InfoAddSection),
    BKR_FN(RedisModule_InfoAddFieldULongLong),
    BKR_FN(RedisModule_SubscribeToServerEvent), BKR_FN(RedisModule_GetServerInfo),
    BKR_FN(RedisModule_FreeServerInfo),    BKR_FN(RedisModule_ServerInfoGetFieldUnsigned),
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
    /* Optional (7.4): without it payloads are zeroed by the library. */
    if (RedisModule_GetApi("RedisModule_TryCalloc", (void *)&RedisModule_TryCalloc) !=
        REDISMODULE_OK)
        RedisModule_TryCalloc = NULL;
    /* Optional (7.2, 7.4, Valkey 8): @bloom and @cuckoo (acl_categories). */
    static const struct {
        const char *name;
        void *slot;
    } acl_api[] = {BKR_FN(RedisModule_AddACLCategory),
                   BKR_FN(RedisModule_SetCommandACLCategories), BKR_FN(RedisModule_GetCommand)};
    for (size_t i = 0; i < sizeof acl_api / sizeof acl_api[0]; i++)
        if (RedisModule_GetApi(acl_api[i].name, acl_api[i].slot) != REDISMODULE_OK)
            memset(acl_api[i].slot, 0, sizeof(void (*)(void)));
    return NULL;
}

/* The ACL categories operators give users of a filter module, as
 * RedisBloom and valkey-bloom name them: @bloom (BF, CBF, WBF) and @cuckoo
 * (CF), so `ACL SETUSER app +@bloom` grants them all, beside the server's
 * own (@write, @read, @fast, @slow) that the commands' flags imply. Where
 * the server has less, a log line says what the commands are in. */
static void acl_categories(RedisModuleCtx *ctx)
{
    if (!RedisModule_SetCommandACLCategories || !RedisModule_GetCommand) {
        bkr_acl = BKR_ACL_NONE;
        RedisModule_Log(ctx, "notice",
                        "bloomkit: this server has no ACL categories for a module's commands "
                        "(Redis 7.2, 7.4, Valkey 8 have them): they are in @all only, not in "
                        "@read or @write; grant or deny them by name (+bf.exists, -bf.add)");
        return;
    }
    if (RedisModule_AddACLCategory && RedisModule_AddACLCategory(ctx, "bloom") == REDISMODULE_OK &&
        RedisModule_AddACLCategory(ctx, "cuckoo") == REDISMODULE_OK) {
        bkr_acl = BKR_ACL_OWN;
        return;
    }
    bkr_acl = BKR_ACL_SERVER;
    RedisModule_Log(ctx, "notice",
                    RedisModule_AddACLCategory
                        ? "bloomkit: the ACL categories @bloom and @cuckoo are taken (another "
                          "filter module?): the commands are in @read/@write and @fast/@slow only"
                        : "bloomkit: this server has no ACL categories of a module's own (Redis "
                          "7.4, Valkey 8): no @bloom or @cuckoo; the commands are in "
                          "@read/@write and @fast/@slow");
}

/* Every byte a filter holds comes from Redis' allocator, so used_memory,
 * INFO memory, maxmemory and eviction see it; the Try variants make a
 * request the server cannot satisfy an error reply (BK_ENOMEM) instead of
 * the server aborting. */
static int use_redis_allocator(RedisModuleCtx *ctx)
{
    bk_allocator_t a = bkr_library_allocator();
    if (bk_allocator_set(&a) == BK_OK)
        return REDISMODULE_OK;
    RedisModule_Log(ctx, "warning", "bloomkit: the library already holds memory; not loading");
    return REDISMODULE_ERR;
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
        } else if (bkr_arg_is(argv[i], "LAYOUT")) {
            ok = bkr_arg_is(v, "redisbloom") || bkr_arg_is(v, "bloomkit");
            bkr_config.rb_layout = bkr_arg_is(v, "redisbloom");
        } else if (bkr_arg_is(argv[i], "CF_MAX_EXPANSIONS")) {
            /* RedisBloom's argument: any integer >= 1, as there; a CF key
             * holds at most 65535 sub-filters in either module (a 16-bit
             * count in RedisBloom), so more is the same as 65535. */
            ok = bkr_arg_u64(v, &u) && u >= 1;
            bkr_config.cf_max_expansions = u > 65535 ? 65535 : (uint32_t)u;
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

/* Keys are arguments 1 .. lastkey (-1: the last), so a cluster sends each
 * command to the keys' node and refuses keys of different slots. Names in
 * lower case, as RedisBloom registers them: Redis' own errors quote the
 * registered name ("wrong number of arguments for 'bf.add' command"). */
static const bkr_command_t bf_commands[] = {
    {"bf.reserve", bkr_cmd_bf_reserve, "write deny-oom", 1},
    {"bf.add", bkr_cmd_bf_add, "write deny-oom", 1},
    {"bf.madd", bkr_cmd_bf_madd, "write deny-oom", 1},
    {"bf.claim", bkr_cmd_bf_claim, "write deny-oom", 1},
    {"bf.insert", bkr_cmd_bf_insert, "write deny-oom", 1},
    {"bf.exists", bkr_cmd_bf_exists, "readonly fast", 1},
    {"bf.mexists", bkr_cmd_bf_mexists, "readonly fast", 1},
    {"bf.info", bkr_cmd_bf_info, "readonly", 1},
    {"bf.card", bkr_cmd_bf_card, "readonly fast", 1},
    {"bf.debug", bkr_cmd_bf_debug, "readonly fast", 1},
    {"bf.scandump", bkr_cmd_bf_scandump, "readonly", 1},
    {"bf.loadchunk", bkr_cmd_bf_loadchunk, "write deny-oom", 1},
    {"bf.merge", bkr_cmd_bf_merge, "write deny-oom", -1},
};

static const bkr_command_t cbf_commands[] = {
    {"cbf.reserve", bkr_cmd_cbf_reserve, "write deny-oom", 1},
    {"cbf.add", bkr_cmd_cbf_add, "write deny-oom", 1},
    {"cbf.madd", bkr_cmd_cbf_madd, "write deny-oom", 1},
    {"cbf.del", bkr_cmd_cbf_del, "write", 1},
    {"cbf.exists", bkr_cmd_cbf_exists, "readonly fast", 1},
    {"cbf.mexists", bkr_cmd_cbf_mexists, "readonly fast", 1},
    {"cbf.count", bkr_cmd_cbf_count, "readonly fast", 1},
    {"cbf.info", bkr_cmd_cbf_info, "readonly", 1},
    {"cbf.card", bkr_cmd_cbf_card, "readonly fast", 1},
    {"cbf.scandump", bkr_cmd_cbf_scandump, "readonly", 1},
    {"cbf.loadchunk", bkr_cmd_cbf_loadchunk, "write deny-oom", 1},
    {"cbf.merge", bkr_cmd_cbf_merge, "write deny-oom", -1},
};

/* Internal: how a key's creation (with its random seed) reaches replicas
 * and the AOF. */
static const bkr_command_t internal_commands[] = {
    {"bki.create", bkr_cmd_create, "write deny-oom", 1},
};

#define COMMANDS(t) {t, sizeof t / sizeof t[0]}
/* Each family's commands (WBF's are cmd_wbf.c's, RedisBloom's CF.*
 * cmd_cf.c's), registered in this order. */
static const struct {
    const bkr_command_t *cmds;
    size_t n;
} command_tables[] = {COMMANDS(bf_commands), COMMANDS(cbf_commands),
                      COMMANDS(internal_commands)};

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

    if (parse_args(ctx, argv, argc) != REDISMODULE_OK || use_redis_allocator(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;

    /* One data type per family, from its row (value.c). */
    static const bkr_family_t families[] = {BKR_BF, BKR_CBF, BKR_WBF};
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        RedisModuleTypeMethods tm;
        bkr_type_methods(&tm, families[i]);
        tm.aof_rewrite = bkr_aof_rewrite;
        RedisModuleType *t = RedisModule_CreateDataType(ctx, bkr_family(families[i])->type_name,
                                                        BKR_ENCVER, &tm);
        if (!t)
            return REDISMODULE_ERR;
        bkr_family_set_type(families[i], t);
    }
    acl_categories(ctx); /* before any command, each of which names its category */
    if (bkr_rb_register(ctx) != REDISMODULE_OK || bkr_wbf_register(ctx) != REDISMODULE_OK ||
        bkr_cf_register(ctx) != REDISMODULE_OK || bkr_stats_register(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    if (bkr_stream_register(ctx) != REDISMODULE_OK)
        RedisModule_Log(ctx, "notice",
                        "bloomkit: this server lacks an event the module watches for replicas: "
                        "every new key's creation is propagated with its seed");

    for (size_t i = 0; i < sizeof command_tables / sizeof command_tables[0]; i++)
        if (bkr_create_commands(ctx, command_tables[i].cmds, command_tables[i].n) !=
            REDISMODULE_OK)
            return REDISMODULE_ERR;
    return REDISMODULE_OK;
}
