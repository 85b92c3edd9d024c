/*
 * cmd_cbf.c: the CBF.* command handlers (the ladder is in bkr.h).
 */
#ifndef BKR_CMD_CBF_H
#define BKR_CMD_CBF_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

int bkr_cmd_cbf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#pragma GCC visibility pop

#endif /* BKR_CMD_CBF_H */
