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
/* Registers n commands; where the server lets a module set a command's
 * ACL categories (bkr_acl), each gets those its flags imply (@write or
 * @read, @fast or @slow) and, with BKR_ACL_OWN, @cuckoo (CF.*) or @bloom
 * (the rest). REDISMODULE_ERR if Redis refuses one. */
int bkr_create_commands(RedisModuleCtx *ctx, const bkr_command_t *cmds, size_t n);

/* What the server lets the module say of its commands' ACL categories
 * (module.c finds out at load). */
typedef enum bkr_acl {
    BKR_ACL_NONE,   /* nothing (Redis 7.0): the commands are in @all only */
    BKR_ACL_SERVER, /* the server's categories (Redis 7.2; or @bloom was taken) */
    BKR_ACL_OWN     /* and @bloom, @cuckoo (Redis 7.4, Valkey 8) */
} bkr_acl_t;
extern bkr_acl_t bkr_acl;

#pragma GCC visibility pop

#endif /* BKR_EVENTS_H */
