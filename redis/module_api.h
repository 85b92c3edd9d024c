/*
 * The part of the Redis module API that bloomkit.so uses, declared from the
 * Redis modules API reference (redis.io, "Modules API reference"), so the
 * module builds without Redis' own header.
 *
 * How the API reaches a module: redis-server calls RedisModule_OnLoad(ctx,
 * argv, argc); the first pointer-sized field of that context is the address
 * of RedisModule_GetApi(name, &fnptr), which fills a function pointer by its
 * exported name ("RedisModule_OpenKey", ...). bkr_api_init() walks a table
 * of the functions below and asks for each one; a missing required function
 * means a server too old for this module (7.0 is the floor), and loading
 * stops with a log line instead of a crash on first use.
 *
 * Only what the module calls is declared. Every function pointer is defined
 * once, in api.c (BKR_API_DEFINE), and declared extern everywhere else.
 */
#ifndef BLOOMKIT_REDIS_MODULE_API_H
#define BLOOMKIT_REDIS_MODULE_API_H

#include <stddef.h>
#include <stdint.h>

/* Nothing of the module but RedisModule_OnLoad is exported. */
#pragma GCC visibility push(hidden)

/* ---- constants ---------------------------------------------------------- */

#define REDISMODULE_OK 0
#define REDISMODULE_ERR 1
#define REDISMODULE_APIVER_1 1

/* OpenKey modes */
#define REDISMODULE_READ (1 << 0)
#define REDISMODULE_WRITE (1 << 1)

/* KeyType results */
#define REDISMODULE_KEYTYPE_EMPTY 0
#define REDISMODULE_KEYTYPE_STRING 1
#define REDISMODULE_KEYTYPE_MODULE 6

/* ReplyWithArray/Map with a length given later by ReplySet*Length */
#define REDISMODULE_POSTPONED_LEN -1

/* SetModuleOptions: rdb_load callbacks check IsIOError instead of the server
 * aborting on a short read, so a truncated RESTORE payload is refused. */
#define REDISMODULE_OPTIONS_HANDLE_IO_ERRORS (1 << 0)

/* Type methods struct version that includes the copy callback. */
#define REDISMODULE_TYPE_METHOD_VERSION 3

/* NotifyKeyspaceEvent class of module events ('d' in
 * notify-keyspace-events). */
#define REDISMODULE_NOTIFY_MODULE (1 << 13)

/* GetContextFlags bits */
#define REDISMODULE_CTX_FLAGS_AOF (1 << 6)         /* appendonly is on */
#define REDISMODULE_CTX_FLAGS_REPLICATED (1 << 12) /* the command came from the master */
#define REDISMODULE_CTX_FLAGS_LOADING (1 << 13)    /* loading the AOF or an RDB */
#define REDISMODULE_CTX_FLAGS_IS_CHILD (1 << 20)   /* in a fork child (BGSAVE, rewrite) */
#define REDISMODULE_CTX_FLAGS_RESP3 (1 << 22)      /* the client speaks RESP3 */

#define REDISMODULE_ERRORMSG_WRONGTYPE \
    "WRONGTYPE Operation against a key holding the wrong kind of value"

/* ---- opaque types --------------------------------------------------------- */

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleType RedisModuleType;
typedef struct RedisModuleCommand RedisModuleCommand;
typedef struct RedisModuleIO RedisModuleIO;
typedef struct RedisModuleInfoCtx RedisModuleInfoCtx;
typedef void (*RedisModuleInfoFunc)(RedisModuleInfoCtx *ctx, int for_crash_report);
typedef struct RedisModuleDigest RedisModuleDigest;
typedef struct RedisModuleDefragCtx RedisModuleDefragCtx;

typedef int (*RedisModuleCmdFunc)(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

/* Server events (SubscribeToServerEvent): an event's id and the version of
 * the data it passes; the callback gets the event and its subevent. */
typedef struct RedisModuleEvent {
    uint64_t id;
    uint64_t dataver;
} RedisModuleEvent;
typedef void (*RedisModuleEventCallback)(RedisModuleCtx *ctx, RedisModuleEvent eid,
                                         uint64_t subevent, void *data);
#define REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED 0
#define REDISMODULE_EVENT_LOADING 3
#define REDISMODULE_EVENT_REPLICA_CHANGE 6
#define REDISMODULE_EVENT_FORK_CHILD 13

/* GetServerInfo's answer: one INFO section, read by field name. */
typedef struct RedisModuleServerInfoData RedisModuleServerInfoData;

/* ---- data type callbacks -------------------------------------------------- */

typedef void *(*RedisModuleTypeLoadFunc)(RedisModuleIO *rdb, int encver);
typedef void (*RedisModuleTypeSaveFunc)(RedisModuleIO *rdb, void *value);
typedef void (*RedisModuleTypeRewriteFunc)(RedisModuleIO *aof, RedisModuleString *key,
                                           void *value);
typedef size_t (*RedisModuleTypeMemUsageFunc)(const void *value);
typedef void (*RedisModuleTypeDigestFunc)(RedisModuleDigest *digest, void *value);
typedef void (*RedisModuleTypeFreeFunc)(void *value);
typedef int (*RedisModuleTypeAuxLoadFunc)(RedisModuleIO *rdb, int encver, int when);
typedef void (*RedisModuleTypeAuxSaveFunc)(RedisModuleIO *rdb, int when);
typedef size_t (*RedisModuleTypeFreeEffortFunc)(RedisModuleString *key, const void *value);
typedef void (*RedisModuleTypeUnlinkFunc)(RedisModuleString *key, const void *value);
typedef void *(*RedisModuleTypeCopyFunc)(RedisModuleString *fromkey, RedisModuleString *tokey,
                                         const void *value);
typedef int (*RedisModuleTypeDefragFunc)(RedisModuleDefragCtx *ctx, RedisModuleString *key,
                                         void **value);

/* Field order is the ABI; `version` says how many fields the server reads
 * (3: up to and including defrag). */
typedef struct RedisModuleTypeMethods {
    uint64_t version;
    RedisModuleTypeLoadFunc rdb_load;
    RedisModuleTypeSaveFunc rdb_save;
    RedisModuleTypeRewriteFunc aof_rewrite;
    RedisModuleTypeMemUsageFunc mem_usage;
    RedisModuleTypeDigestFunc digest;
    RedisModuleTypeFreeFunc free;
    RedisModuleTypeAuxLoadFunc aux_load;
    RedisModuleTypeAuxSaveFunc aux_save;
    int aux_save_triggers;
    RedisModuleTypeFreeEffortFunc free_effort;
    RedisModuleTypeUnlinkFunc unlink;
    RedisModuleTypeCopyFunc copy;
    RedisModuleTypeDefragFunc defrag;
} RedisModuleTypeMethods;

/* ---- functions ------------------------------------------------------------ */

#ifdef BKR_API_DEFINE
#define BKR_API(ret, name, args) ret(*name) args = NULL
#else
#define BKR_API(ret, name, args) extern ret(*name) args
#endif

BKR_API(int, RedisModule_GetApi, (const char *name, void *funcptr));
BKR_API(void, RedisModule_SetModuleAttribs, (RedisModuleCtx *ctx, const char *name, int ver,
                                             int apiver));
BKR_API(int, RedisModule_IsModuleNameBusy, (const char *name));
/* ACL categories of a module's own (optional: AddACLCategory since Redis
 * 7.4 and Valkey 8, SetCommandACLCategories since 7.2, GetCommand 7.0;
 * NULL where the server lacks them). AddACLCategory only inside OnLoad. */
BKR_API(int, RedisModule_AddACLCategory, (RedisModuleCtx *ctx, const char *name));
BKR_API(int, RedisModule_SetCommandACLCategories, (RedisModuleCommand *cmd,
                                                   const char *categories));
BKR_API(RedisModuleCommand *, RedisModule_GetCommand, (RedisModuleCtx *ctx, const char *name));
BKR_API(void, RedisModule_SetModuleOptions, (RedisModuleCtx *ctx, int options));
BKR_API(int, RedisModule_CreateCommand, (RedisModuleCtx *ctx, const char *name,
                                         RedisModuleCmdFunc cmdfunc, const char *strflags,
                                         int firstkey, int lastkey, int keystep));
BKR_API(RedisModuleType *, RedisModule_CreateDataType, (RedisModuleCtx *ctx, const char *name,
                                                        int encver,
                                                        RedisModuleTypeMethods *typemethods));
BKR_API(int, RedisModule_GetContextFlags, (RedisModuleCtx *ctx));
/* INFO sections (6.0) */
BKR_API(int, RedisModule_RegisterInfoFunc, (RedisModuleCtx *ctx, RedisModuleInfoFunc cb));
BKR_API(int, RedisModule_InfoAddSection, (RedisModuleInfoCtx *ctx, const char *name));
BKR_API(int, RedisModule_InfoAddFieldULongLong,
        (RedisModuleInfoCtx *ctx, const char *field, unsigned long long value));

BKR_API(void *, RedisModule_Alloc, (size_t bytes));
BKR_API(void, RedisModule_Free, (void *ptr));
/* NULL instead of the server aborting when memory cannot be had: TryAlloc
 * since 7.0, TryCalloc since 7.4 (optional: NULL on older servers). */
BKR_API(void *, RedisModule_TryAlloc, (size_t bytes));
BKR_API(void *, RedisModule_TryCalloc, (size_t nmemb, size_t size));
/* The bytes Redis counts for a block (its allocator's size class). */
BKR_API(size_t, RedisModule_MallocSize, (void *ptr));
/* Active defragmentation (6.2): a block's new address, or NULL when the
 * server leaves it where it is. */
BKR_API(void *, RedisModule_DefragAlloc, (RedisModuleDefragCtx *ctx, void *ptr));

BKR_API(RedisModuleKey *, RedisModule_OpenKey, (RedisModuleCtx *ctx, RedisModuleString *keyname,
                                                int mode));
BKR_API(void, RedisModule_CloseKey, (RedisModuleKey *kp));
BKR_API(int, RedisModule_KeyType, (RedisModuleKey *kp));
BKR_API(int, RedisModule_DeleteKey, (RedisModuleKey *key));
BKR_API(int, RedisModule_StringSet, (RedisModuleKey *key, RedisModuleString *str));
BKR_API(char *, RedisModule_StringDMA, (RedisModuleKey *key, size_t *len, int mode));
/* expire: milliseconds from now */
BKR_API(int, RedisModule_SetExpire, (RedisModuleKey *key, long long expire));
BKR_API(int, RedisModule_ModuleTypeSetValue, (RedisModuleKey *key, RedisModuleType *mt,
                                              void *value));
BKR_API(RedisModuleType *, RedisModule_ModuleTypeGetType, (RedisModuleKey *key));
BKR_API(void *, RedisModule_ModuleTypeGetValue, (RedisModuleKey *key));
BKR_API(int, RedisModule_ModuleTypeReplaceValue,
        (RedisModuleKey *key, RedisModuleType *mt, void *new_value, void **old_value));

BKR_API(const char *, RedisModule_StringPtrLen, (const RedisModuleString *str, size_t *len));
BKR_API(int, RedisModule_StringToLongLong, (const RedisModuleString *str, long long *ll));
BKR_API(int, RedisModule_StringToDouble, (const RedisModuleString *str, double *d));
BKR_API(RedisModuleString *, RedisModule_CreateString, (RedisModuleCtx *ctx, const char *ptr,
                                                       size_t len));
BKR_API(void, RedisModule_FreeString, (RedisModuleCtx *ctx, RedisModuleString *str));

BKR_API(int, RedisModule_WrongArity, (RedisModuleCtx *ctx));
BKR_API(int, RedisModule_ReplyWithError, (RedisModuleCtx *ctx, const char *err));
BKR_API(int, RedisModule_ReplyWithSimpleString, (RedisModuleCtx *ctx, const char *msg));
BKR_API(int, RedisModule_ReplyWithLongLong, (RedisModuleCtx *ctx, long long ll));
BKR_API(int, RedisModule_ReplyWithDouble, (RedisModuleCtx *ctx, double d));
BKR_API(int, RedisModule_ReplyWithStringBuffer, (RedisModuleCtx *ctx, const char *buf,
                                                 size_t len));
BKR_API(int, RedisModule_ReplyWithCString, (RedisModuleCtx *ctx, const char *buf));
BKR_API(int, RedisModule_ReplyWithNull, (RedisModuleCtx *ctx));
BKR_API(int, RedisModule_ReplyWithArray, (RedisModuleCtx *ctx, long len));
BKR_API(void, RedisModule_ReplySetArrayLength, (RedisModuleCtx *ctx, long len));
/* RESP3-aware (Redis 7.0): booleans and maps, sent as integers and flat
 * arrays to RESP2 clients by the server itself. */
BKR_API(int, RedisModule_ReplyWithBool, (RedisModuleCtx *ctx, int b));
BKR_API(int, RedisModule_ReplyWithMap, (RedisModuleCtx *ctx, long len));

BKR_API(int, RedisModule_ReplicateVerbatim, (RedisModuleCtx *ctx));
BKR_API(int, RedisModule_SubscribeToServerEvent, (RedisModuleCtx *ctx, RedisModuleEvent event,
                                                  RedisModuleEventCallback callback));
BKR_API(RedisModuleServerInfoData *, RedisModule_GetServerInfo, (RedisModuleCtx *ctx,
                                                                  const char *section));
BKR_API(void, RedisModule_FreeServerInfo, (RedisModuleCtx *ctx, RedisModuleServerInfoData *data));
BKR_API(unsigned long long, RedisModule_ServerInfoGetFieldUnsigned,
        (RedisModuleServerInfoData *data, const char *field, int *out_err));
BKR_API(int, RedisModule_Replicate, (RedisModuleCtx *ctx, const char *cmdname, const char *fmt,
                                     ...));
BKR_API(void, RedisModule_EmitAOF, (RedisModuleIO *io, const char *cmdname, const char *fmt,
                                    ...));

BKR_API(void, RedisModule_SaveUnsigned, (RedisModuleIO *io, uint64_t value));
BKR_API(uint64_t, RedisModule_LoadUnsigned, (RedisModuleIO *io));
BKR_API(void, RedisModule_SaveStringBuffer, (RedisModuleIO *io, const char *str, size_t len));
BKR_API(char *, RedisModule_LoadStringBuffer, (RedisModuleIO *io, size_t *lenptr));
BKR_API(void, RedisModule_SaveDouble, (RedisModuleIO *io, double value));
BKR_API(double, RedisModule_LoadDouble, (RedisModuleIO *io));
BKR_API(int, RedisModule_IsIOError, (RedisModuleIO *io));
BKR_API(RedisModuleCtx *, RedisModule_GetContextFromIO, (RedisModuleIO *io));

BKR_API(int, RedisModule_NotifyKeyspaceEvent, (RedisModuleCtx *ctx, int type, const char *event,
                                                RedisModuleString *key));

BKR_API(void, RedisModule_Log, (RedisModuleCtx *ctx, const char *level, const char *fmt, ...));
BKR_API(void, RedisModule_LogIOError, (RedisModuleIO *io, const char *levelstr, const char *fmt,
                                       ...));

#pragma GCC visibility pop

#endif /* BLOOMKIT_REDIS_MODULE_API_H */
