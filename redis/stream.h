/*
 * Whether anything reads what the module propagates (stream.c): the AOF or
 * a replica. A new key's random seed must reach them; when nothing reads,
 * the creation need not spell it out.
 */
#ifndef BLOOMKIT_REDIS_STREAM_H
#define BLOOMKIT_REDIS_STREAM_H

#include "module_api.h"

#include <stdbool.h>

/* Subscribes to the server events after which replicas or a replication
 * backlog may exist. REDISMODULE_OK; on REDISMODULE_ERR the module still
 * loads and treats the stream as always read. From RedisModule_OnLoad. */
int bkr_stream_register(RedisModuleCtx *ctx);

/* Whether what a command propagates now can reach the AOF or a replica
 * (ctx_flags: RedisModule_GetContextFlags(ctx)). Errs towards true: false
 * only when appendonly is off and the server has had no replica and no
 * replication backlog since the module was loaded. */
bool bkr_stream_read(RedisModuleCtx *ctx, int ctx_flags);

#endif
