/*
 * What the module tells the server about its commands: registering them,
 * and its keyspace event.
 */
#define _GNU_SOURCE
#include "events.h"

#include <ctype.h>
#include <string.h>

bool bkr_acl_categories;

int bkr_create_commands(RedisModuleCtx *ctx, const bkr_command_t *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (RedisModule_CreateCommand(ctx, cmds[i].name, cmds[i].fn, cmds[i].flags, 1,
                                      cmds[i].lastkey, 1) != REDISMODULE_OK)
            return REDISMODULE_ERR;
        RedisModuleCommand *c =
            bkr_acl_categories ? RedisModule_GetCommand(ctx, cmds[i].name) : NULL;
        if (c && RedisModule_SetCommandACLCategories(
                     c, strncmp(cmds[i].name, "cf.", 3) == 0 ? "cuckoo" : "bloom") !=
                     REDISMODULE_OK)
            return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}

void bkr_notify(RedisModuleCtx *ctx, RedisModuleString *cmd, RedisModuleString *key)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(cmd, &len);
    char event[32];
    if (len >= sizeof event)
        len = sizeof event - 1;
    for (size_t i = 0; i < len; i++)
        event[i] = (char)tolower((unsigned char)s[i]);
    event[len] = '\0';
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_MODULE, event, key);
}
