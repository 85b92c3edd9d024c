/*
 * dump.c: SCANDUMP / LOADCHUNK and the AOF rewrite (the ladder is in bkr.h).
 */
#ifndef BKR_DUMP_H
#define BKR_DUMP_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* A chunk that cannot be used ends a restore (of any family, and of
 * RedisBloom's CF dumps): the half-restored key is deleted, on replicas
 * too, and the client told why (after `received` bytes) and to start again
 * with the header chunk; replayed from the AOF, it stops the server.
 * Returns the reply's status. */
int bkr_restore_abandon(RedisModuleCtx *ctx, RedisModuleKey *key, RedisModuleString *keyname,
                        const char *why, uint64_t received);
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
