/*
 * reply.c: replies (the ladder is in bkr.h).
 */
#ifndef BKR_REPLY_H
#define BKR_REPLY_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* Replies with an error for a library status (bk_strerror text). */
int bkr_reply_status(RedisModuleCtx *ctx, bk_status_t st);
/* Replies with an unsigned number as stored: an integer, or past
 * INT64_MAX (which RESP integers cannot carry) its decimal digits. */
int bkr_reply_u64(RedisModuleCtx *ctx, uint64_t v);
/* Replies with a stored double: an integer when it is a whole number that
 * a double holds exactly, else the double. */
int bkr_reply_number(RedisModuleCtx *ctx, double v);
/* Replies with a printf-formatted error ("ERR ..."). */
int bkr_reply_errorf(RedisModuleCtx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#pragma GCC visibility pop

#endif /* BKR_REPLY_H */
