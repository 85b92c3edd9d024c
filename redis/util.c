/*
 * The leaf of the Redis module's files: the module's settings, replying
 * with the right error and returning, strict argument parsing, and
 * propagation and keyspace events of writes. They exist so
 * that every command handler reads top to bottom as "parse, look up, call
 * the library, reply", with each error path one line long.
 */
#define _GNU_SOURCE
#include "module.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bkr_config_t bkr_config = {
    .max_bytes = UINT64_C(4) << 30,
    .bf_error = 0.01,
    .bf_capacity = 100,
    .bf_expansion = 2,
    .cbf_error = 0.01,
    .cbf_capacity = 100,
    .chunk_bytes = UINT64_C(16) << 20,
};

/* Bytes of Redis memory the library holds, as Redis' allocator counts
 * them (its size classes included): what used_memory grows by. */
static uint64_t lib_bytes;

static void *lib_alloc(size_t n)
{
    void *p = RedisModule_TryAlloc(n);
    if (p)
        lib_bytes += RedisModule_MallocSize(p);
    return p;
}

static void *lib_calloc(size_t count, size_t size)
{
    void *p = RedisModule_TryCalloc(count, size);
    if (p)
        lib_bytes += RedisModule_MallocSize(p);
    return p;
}

static void lib_free(void *p)
{
    lib_bytes -= RedisModule_MallocSize(p);
    RedisModule_Free(p);
}

bk_allocator_t bkr_library_allocator(void)
{
    bk_allocator_t a = {lib_alloc, RedisModule_TryCalloc ? lib_calloc : NULL, lib_free};
    return a;
}

uint64_t bkr_lib_bytes(void)
{
    return lib_bytes;
}

int bkr_reply_status(RedisModuleCtx *ctx, bk_status_t st)
{
    switch (st) {
    case BK_EFULL:
        return RedisModule_ReplyWithError(ctx, "ERR non scaling filter is full");
    case BK_ENOMEM:
        return RedisModule_ReplyWithError(ctx, "ERR out of memory");
    default:
        return bkr_reply_errorf(ctx, "ERR %s", bk_strerror(st));
    }
}

int bkr_reply_errorf(RedisModuleCtx *ctx, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* An error reply is one line: a newline in it would break RESP. */
    for (char *p = buf; *p; p++)
        if (*p == '\r' || *p == '\n')
            *p = ' ';
    return RedisModule_ReplyWithError(ctx, buf);
}

bool bkr_arg_is(const RedisModuleString *arg, const char *word)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

bool bkr_arg_u64(const RedisModuleString *arg, uint64_t *out)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (buf[0] < '0' || buf[0] > '9')
        return false; /* no sign, no spaces */
    errno = 0;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

bool bkr_arg_double(const RedisModuleString *arg, double *out)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len);
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    char *end;
    double v = strtod(buf, &end);
    if (end == buf || *end != '\0' || isnan(v))
        return false;
    *out = v;
    return true;
}

int bkr_create_commands(RedisModuleCtx *ctx, const bkr_command_t *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (RedisModule_CreateCommand(ctx, cmds[i].name, cmds[i].fn, cmds[i].flags, 1,
                                      cmds[i].lastkey, 1) != REDISMODULE_OK)
            return REDISMODULE_ERR;
    return REDISMODULE_OK;
}

void bkr_notify(RedisModuleCtx *ctx, RedisModuleString *cmd, RedisModuleString *key)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(cmd, &len);
    char event[32];
    if (len >= sizeof event)
        len = sizeof event - 1;
    for (size_t i = 0; i < len; i++)
        event[i] = (char)tolower((unsigned char)s[i]);
    event[len] = '\0';
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_MODULE, event, key);
}

void bkr_propagate(RedisModuleCtx *ctx, bool created, RedisModuleString **argv, int argc)
{
    if (created)
        RedisModule_Replicate(ctx, RedisModule_StringPtrLen(argv[0], NULL), "v", argv + 1,
                              (size_t)(argc - 1));
    else
        RedisModule_ReplicateVerbatim(ctx);
}

int bkr_reply_u64(RedisModuleCtx *ctx, uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return RedisModule_ReplyWithLongLong(ctx, (long long)v);
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return RedisModule_ReplyWithSimpleString(ctx, buf);
}

int bkr_reply_number(RedisModuleCtx *ctx, double v)
{
    if (v >= 0 && v < 9007199254740992.0 && v == (double)(uint64_t)v)
        return RedisModule_ReplyWithLongLong(ctx, (long long)v);
    return RedisModule_ReplyWithDouble(ctx, v);
}
