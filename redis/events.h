/*
 * events.c: command registration and keyspace events (the ladder is in bkr.h).
 */
#ifndef BKR_EVENTS_H
#define BKR_EVENTS_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* Fires the keyspace event of a write (class "module", 'd' in
 * notify-keyspace-events) named after the command in lower case
 * ("bf.add"), on key. */
void bkr_notify(RedisModuleCtx *ctx, RedisModuleString *cmd, RedisModuleString *key);

/* A command to register: its name (lower case, as RedisBloom's), handler,
 * flags, and last key argument (1; -1 when every argument after the
 * command is a key, so a cluster routes it and checks the slots). */
typedef struct bkr_command {
    const char *name;
    RedisModuleCmdFunc fn;
    const char *flags;
    int lastkey;
} bkr_command_t;
/* Registers n commands, each in the ACL category @cuckoo (CF.*) or
 * @bloom (the rest) when bkr_acl_categories; REDISMODULE_ERR if Redis
 * refuses one. */
int bkr_create_commands(RedisModuleCtx *ctx, const bkr_command_t *cmds, size_t n);
/* Whether the server took the module's ACL categories (module.c). */
extern bool bkr_acl_categories;

#pragma GCC visibility pop

#endif /* BKR_EVENTS_H */
