/*
 * cmd_wbf.c: the WBF.* window filters' commands (the ladder is in bkr.h).
 */
#ifndef BKR_CMD_WBF_H
#define BKR_CMD_WBF_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* The WBF.* window filters' commands (cmd_wbf.c). */
int bkr_wbf_register(RedisModuleCtx *ctx);

#pragma GCC visibility pop

#endif /* BKR_CMD_WBF_H */
