/*
 * cmd_bf.c: the BF.* command handlers (the ladder is in bkr.h).
 */
#ifndef BKR_CMD_BF_H
#define BKR_CMD_BF_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

int bkr_cmd_bf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_claim(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_debug(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#pragma GCC visibility pop

#endif /* BKR_CMD_BF_H */
