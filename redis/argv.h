/*
 * argv.c: argument primitives (the ladder is in bkr.h).
 */
#ifndef BKR_ARGV_H
#define BKR_ARGV_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* Case-insensitive comparison of an argument with an ASCII word. */
bool bkr_arg_is(const RedisModuleString *arg, const char *word);
/* Strict number parsing: the whole argument must be the number. */
bool bkr_arg_u64(const RedisModuleString *arg, uint64_t *out);
bool bkr_arg_double(const RedisModuleString *arg, double *out);

#pragma GCC visibility pop

#endif /* BKR_ARGV_H */
