/*
 * Who reads the replication stream.
 *
 * A new BF or CBF key gets a random seed, which replicas and the AOF must
 * get too: its creation propagates as BKI.CREATE with the seed (create.c).
 * Formatting that command costs the server over a quarter of a new key's
 * time (RedisModule_Replicate looks the command up by name and builds its
 * arguments: 1.12-1.38 us a key against 0.81-0.94 us without, in
 * bench/redis_create_time.py), and on a server with no AOF and no replica
 * Redis drops it unread: its propagation goes on only while appendonly is
 * on, or while this server is a master with replicas or a replication
 * backlog (Redis 7.0's shouldPropagate). There the creation is replicated
 * verbatim instead, as RedisBloom does, which costs nothing to format and
 * still counts the change for the RDB save points (server.dirty, which a
 * module's commands advance only by replicating).
 *
 * How this knows, erring towards "read":
 *  - appendonly: the context's flags, at each creation;
 *  - replicas and the backlog: INFO replication (connected_slaves,
 *    repl_backlog_active), asked at the first creation after the module is
 *    loaded and again at the first after any event that can bring them: a
 *    fork (a full sync's RDB starts with one; the keys made before it reach
 *    the replica inside that RDB, seeds and all, and the stream it reads
 *    starts at the fork), a replica coming online, a change of role, the end
 *    of a load (a master restarting from an RDB with replication
 *    information keeps a backlog for its old replicas). INFO is asked at
 *    the next creation, not in the event, because a load ends before the
 *    server decides whether to keep its backlog.
 *  - Once replicas or a backlog have been seen, every creation carries its
 *    seed until the module is unloaded: a backlog outlives its replicas
 *    (repl-backlog-ttl), and a replica may come back for a partial resync.
 * A replica that somehow read a verbatim creation would still hold every
 * item it was sent (its filter has a seed of its own): no false negative,
 * only other bits.
 */
#include "stream.h"

/* Replicas or a backlog were seen: creations carry their seeds. */
static bool stream_read;
/* Ask INFO at the next creation. */
static bool stream_unsure = true;

static void recheck(RedisModuleCtx *ctx, RedisModuleEvent e, uint64_t sub, void *data)
{
    (void)ctx;
    (void)e;
    (void)sub;
    (void)data;
    stream_unsure = true;
}

int bkr_stream_register(RedisModuleCtx *ctx)
{
    static const RedisModuleEvent events[] = {
        {REDISMODULE_EVENT_FORK_CHILD, 1},
        {REDISMODULE_EVENT_REPLICA_CHANGE, 1},
        {REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED, 1},
        {REDISMODULE_EVENT_LOADING, 1},
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        if (RedisModule_SubscribeToServerEvent(ctx, events[i], recheck) != REDISMODULE_OK) {
            /* a server without the event: never sure, always the seed */
            stream_read = true;
            return REDISMODULE_ERR;
        }
    return REDISMODULE_OK;
}

/* INFO replication: whether this server has replicas or a backlog (true
 * also when INFO cannot say). */
static bool replicas_or_backlog(RedisModuleCtx *ctx)
{
    RedisModuleServerInfoData *info = RedisModule_GetServerInfo(ctx, "replication");
    if (!info)
        return true;
    int err_replicas = 0, err_backlog = 0;
    unsigned long long replicas =
        RedisModule_ServerInfoGetFieldUnsigned(info, "connected_slaves", &err_replicas);
    unsigned long long backlog =
        RedisModule_ServerInfoGetFieldUnsigned(info, "repl_backlog_active", &err_backlog);
    RedisModule_FreeServerInfo(ctx, info);
    return err_replicas || err_backlog || replicas > 0 || backlog > 0;
}

bool bkr_stream_read(RedisModuleCtx *ctx, int ctx_flags)
{
    if ((ctx_flags & REDISMODULE_CTX_FLAGS_AOF) || stream_read)
        return true;
    if (stream_unsure) {
        if (replicas_or_backlog(ctx)) {
            stream_read = true;
            RedisModule_Log(ctx, "notice",
                            "bloomkit: this server has replicas or a replication backlog: new "
                            "keys' seeds are propagated from now on (BKI.CREATE)");
            return true;
        }
        stream_unsure = false;
    }
    return false;
}
