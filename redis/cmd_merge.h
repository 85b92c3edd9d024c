/*
 * cmd_merge.c: BF.MERGE and CBF.MERGE (the ladder is in bkr.h).
 */
#ifndef BKR_CMD_MERGE_H
#define BKR_CMD_MERGE_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

int bkr_cmd_bf_merge(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_merge(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#pragma GCC visibility pop

#endif /* BKR_CMD_MERGE_H */
