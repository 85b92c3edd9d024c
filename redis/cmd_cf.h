/*
 * cmd_cf.c: RedisBloom's CF.* commands (the ladder is in bkr.h).
 */
#ifndef BKR_CMD_CF_H
#define BKR_CMD_CF_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* RedisBloom's CF.* commands (cmd_cf.c). */
int bkr_cf_register(RedisModuleCtx *ctx);

#pragma GCC visibility pop

#endif /* BKR_CMD_CF_H */
