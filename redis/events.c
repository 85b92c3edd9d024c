/*
 * What the module tells the server about its commands: registering them,
 * and its keyspace event.
 */
#define _GNU_SOURCE
#include "events.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

bkr_acl_t bkr_acl;

/* True if the space-separated flags hold word. */
static bool has_flag(const char *flags, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = flags; (p = strstr(p, word)) != NULL; p += n)
        if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* The ACL categories of a command: those the server gives its own commands
 * for the same flags (write, read, fast, else slow), then the family's. A
 * module's categories replace the implied ones (Redis 7.4 sets exactly
 * what it is given), so leaving them out would take BF.ADD out of @write:
 * a user denied -@write could still add. */
static void categories(const bkr_command_t *cmd, char *out, size_t size)
{
    snprintf(out, size, "%s%s%s%s", has_flag(cmd->flags, "write") ? "write " : "",
             has_flag(cmd->flags, "readonly") ? "read " : "",
             has_flag(cmd->flags, "fast") ? "fast" : "slow",
             bkr_acl != BKR_ACL_OWN             ? ""
             : strncmp(cmd->name, "cf.", 3) == 0 ? " cuckoo"
                                                 : " bloom");
}

int bkr_create_commands(RedisModuleCtx *ctx, const bkr_command_t *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (RedisModule_CreateCommand(ctx, cmds[i].name, cmds[i].fn, cmds[i].flags, 1,
                                      cmds[i].lastkey, 1) != REDISMODULE_OK)
            return REDISMODULE_ERR;
        RedisModuleCommand *c =
            bkr_acl != BKR_ACL_NONE ? RedisModule_GetCommand(ctx, cmds[i].name) : NULL;
        char cats[64];
        categories(&cmds[i], cats, sizeof cats);
        if (c && RedisModule_SetCommandACLCategories(c, cats) != REDISMODULE_OK)
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
