/*
 * dump.c: SCANDUMP / LOADCHUNK and the AOF rewrite (the ladder is in bkr.h).
 */
#ifndef BKR_DUMP_H
#define BKR_DUMP_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* Emits the AOF commands that rebuild the key (chunked LOADCHUNK). */
void bkr_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value);


int bkr_cmd_bf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_wbf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_wbf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#pragma GCC visibility pop

#endif /* BKR_DUMP_H */
