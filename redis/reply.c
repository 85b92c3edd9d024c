/*
 * Replies: a library status as an error, an error line built printf-style
 * (kept to one line), and numbers as RedisBloom's clients expect them. So
 * that each error path of a command handler is one line.
 */
#define _GNU_SOURCE
#include "reply.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

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
