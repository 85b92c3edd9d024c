/*
 * Small helpers of the Redis module: finding a key's filter, replying with
 * the right error and returning, and strict argument parsing. They exist so
 * that every command handler reads top to bottom as "parse, look up, call
 * the library, reply", with each error path one line long.
 */
#define _GNU_SOURCE
#include "module.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bkr_lookup_t bkr_lookup(RedisModuleKey *key, bkr_family_t family, bkr_obj_t **out)
{
    *out = NULL;
    int type = RedisModule_KeyType(key);
    if (type == REDISMODULE_KEYTYPE_EMPTY)
        return BKR_EMPTY;
    if (type != REDISMODULE_KEYTYPE_MODULE ||
        RedisModule_ModuleTypeGetType(key) != bkr_family_type(family))
        return BKR_WRONGTYPE;
    bkr_obj_t *o = RedisModule_ModuleTypeGetValue(key);
    if (o->f == NULL)
        return BKR_LOADING;
    *out = o;
    return BKR_FOUND;
}

int bkr_reply_lookup_error(RedisModuleCtx *ctx, bkr_lookup_t st)
{
    switch (st) {
    case BKR_EMPTY:
        return RedisModule_ReplyWithError(ctx, "ERR not found");
    case BKR_WRONGTYPE:
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    case BKR_LOADING:
        return RedisModule_ReplyWithError(
            ctx, "ERR filter is being restored: LOADCHUNK has not received all chunks");
    case BKR_FOUND:
        break;
    }
    return RedisModule_ReplyWithError(ctx, "ERR item exists");
}

bkr_obj_t *bkr_open_or_reply(RedisModuleCtx *ctx, RedisModuleString *keyname, int mode,
                             bkr_family_t family, RedisModuleKey **key)
{
    *key = RedisModule_OpenKey(ctx, keyname, mode);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(*key, family, &o);
    if (st != BKR_FOUND) {
        bkr_reply_lookup_error(ctx, st);
        bkr_done(*key);
        *key = NULL;
        return NULL;
    }
    return o;
}

int bkr_reply_card(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family)
{
    RedisModuleKey *key = RedisModule_OpenKey(ctx, keyname, REDISMODULE_READ);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, family, &o);
    if (st == BKR_EMPTY)
        RedisModule_ReplyWithLongLong(ctx, 0);
    else if (st != BKR_FOUND)
        bkr_reply_lookup_error(ctx, st);
    else
        RedisModule_ReplyWithLongLong(ctx, (long long)bk_filter_items(o->f));
    return bkr_done(key);
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

int bkr_done(RedisModuleKey *key)
{
    if (key)
        RedisModule_CloseKey(key);
    return REDISMODULE_OK;
}

void bkr_propagate(RedisModuleCtx *ctx, bool created, RedisModuleString **argv, int argc)
{
    if (created)
        RedisModule_Replicate(ctx, RedisModule_StringPtrLen(argv[0], NULL), "v", argv + 1,
                              (size_t)(argc - 1));
    else
        RedisModule_ReplicateVerbatim(ctx);
}
