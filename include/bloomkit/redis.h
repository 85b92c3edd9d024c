/*
 * bloomkit/redis.h: libbloomkit-redis, the client side of a seen-set kept in
 * Redis or a Redis Cluster by the bloomkit.so module.
 *
 * A separate library (libbloomkit-redis.a, on Debian's libhiredis), so that
 * libbloomkit itself keeps no network dependency. Link a program with
 *   -lbloomkit-redis -lbloomkit -lhiredis -lm
 *
 * The filter is the one Python's bloomkit.redis.ShardedFilter and the
 * Scrapy BloomRedisDupeFilter use, so that C programs, `bloomkit dedup
 * --redis` and Python workers share it:
 *  - NAME:meta, a hash of shards, capacity and error_rate, written once;
 *  - shard i is the BF.* key "NAME:i{TAG}", TAG the smallest decimal string
 *    whose cluster slot lies in the i-th of `shards` equal ranges of the
 *    16384 slots;
 *  - an item goes to shard XXH3(item, BK_REDIS_ROUTE_SEED) mod shards;
 *  - each shard is reserved for capacity/shards plus four standard
 *    deviations of the binomial spread, at the error rate (by this library,
 *    on bloomkit.so, with TIGHTENING 0.5: the first sub-filter at the rate
 *    itself, so that at capacity the rate is the one asked for; a shard
 *    grown past its capacity may reach twice the rate).
 * Items are sent as given: normalize them first (bk_key_normalize) where
 * other workers do.
 *
 * Each call's items are grouped into one command per shard and
 * BK_REDIS_COMMAND_ITEMS items, and the commands for every node are
 * written before any answer is read (one round trip per node, all nodes at
 * once). On a cluster the slot map is read with CLUSTER SLOTS; MOVED and
 * ASK answers are followed; a node that stops answering (killed, failed
 * over, restarting) is retried with backoff until `retry_for` seconds pass.
 *
 * Claims (bk_redis_claim) are safe to repeat: each command carries an id
 * whose answers bloomkit.so keeps for `claim_seconds` (BF.CLAIM), so a
 * command resent after a lost reply gets the first answers, and each item
 * is reported new to exactly one caller. A server without BF.CLAIM (a
 * RedisBloom server) gets BF.MADD instead, which is never resent (a lost
 * reply is an error: its items may be recorded and reported to nobody);
 * bk_redis_has_claims() says which, for a warning.
 *
 * A bk_redis_t is for one thread at a time. The library never prints;
 * every call that can fail returns a status and leaves a message in
 * bk_redis_error().
 */
#ifndef BLOOMKIT_REDIS_H
#define BLOOMKIT_REDIS_H

#include "bloomkit/bloomkit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The routing seed ("SHARDROU"): shard of an item = XXH3 with this seed,
 * modulo the shard count (the same in Python's bloomkit.shard_of). */
#define BK_REDIS_ROUTE_SEED UINT64_C(0x5348415244524f55)
/* Items per BF.CLAIM / BF.MADD / BF.MEXISTS command. */
#define BK_REDIS_COMMAND_ITEMS 2000
#define BK_REDIS_SLOTS 16384

typedef struct bk_redis bk_redis_t;

typedef struct bk_redis_opts {
    uint64_t capacity;      /* > 0: create the filter when it does not exist
                               (an existing one keeps its layout); 0: open only */
    double error_rate;      /* with capacity; 0 for 0.01 */
    unsigned shards;        /* at creation; 0: 1 on a server, 8 per master on a
                               cluster; on open, 0 or the filter's own count */
    double timeout;         /* seconds to connect or for a reply; 0 for 10 */
    double retry_for;       /* seconds a node that stopped answering is retried;
                               0 for 15 */
    unsigned claim_seconds; /* how long a claim's answers are kept; 0 for 3600 */
} bk_redis_opts_t;

/* Opens the filter named by url, "redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME"
 * (PORT 6379; on a cluster any node), creating it when it does not exist and
 * o->capacity > 0 (o may be NULL: open only). *out is set in every case but
 * BK_ENOMEM: on failure read bk_redis_error(*out), then bk_redis_close() it.
 * BK_EINVAL: a bad URL or option; BK_EIO: no server answered, or it refused;
 * BK_ENOTFOUND: no such filter and no capacity; BK_EINCOMPAT: the filter
 * exists with another shard count, or NAME:meta is not a filter's layout. */
bk_status_t bk_redis_open(bk_redis_t **out, const char *url, const bk_redis_opts_t *o);

/* Closes the connections and frees r (NULL is fine). */
void bk_redis_close(bk_redis_t *r);

/* The last failure's message (an empty string if none); valid until the
 * next call on r. */
const char *bk_redis_error(const bk_redis_t *r);

/* True when the server has BF.CLAIM (bloomkit.so); false for RedisBloom,
 * where bk_redis_claim adds with BF.MADD. */
bool bk_redis_has_claims(const bk_redis_t *r);

/* Adds items[0..n) and sets answer[i] to 1 when this call added item i (no
 * caller was told of it before), 0 when it was there, -1 when a failure
 * stopped it (then the call fails: every item with an answer of 0 or 1 was
 * recorded, those with -1 may or may not be). BK_OK; BK_EIO: a node did
 * not answer within retry_for, or the server refused (the message says
 * why: out of memory, a full non-scaling filter, MAX_BYTES, a key of
 * another type); BK_ENOMEM. */
bk_status_t bk_redis_claim(bk_redis_t *r, const bk_key_t *items, size_t n, int8_t *answer);

/* Checks items[0..n): answer[i] 1 when item i may have been added, 0 when it
 * certainly was not, -1 when a failure stopped it (the call fails). */
bk_status_t bk_redis_contains(bk_redis_t *r, const bk_key_t *items, size_t n, int8_t *answer);

/* The same calls in two steps, so that a caller can prepare its next
 * batch while the servers work on this one: *_send writes the call's
 * commands to every node and returns at once (*out set on BK_OK), and
 * bk_redis_wait reads the answers (with every retry bk_redis_claim makes),
 * sets answer[] as above, frees p and returns the call's status. At most
 * two calls may be in flight on a handle (a third is BK_EINVAL), each on
 * its own connections; items[] must stay valid until its wait. Two calls
 * in flight may run in either order on the servers: an item in both may be
 * answered new in either of them, so a caller that cares (the tool's
 * dedup) leaves out of the second the items of the first. Every call sent
 * must be waited for before bk_redis_close. BK_ENOMEM from *_send: nothing
 * was sent. */
typedef struct bk_redis_pending bk_redis_pending_t;
bk_status_t bk_redis_claim_send(bk_redis_t *r, const bk_key_t *items, size_t n,
                                bk_redis_pending_t **out);
bk_status_t bk_redis_contains_send(bk_redis_t *r, const bk_key_t *items, size_t n,
                                   bk_redis_pending_t **out);
bk_status_t bk_redis_wait(bk_redis_t *r, bk_redis_pending_t *p, int8_t *answer);

/* bk_redis_claim_send with the call's id chosen by the caller (1 to
 * BK_REDIS_MAX_ID bytes) instead of a random one: a call made again with
 * the same id and the same items, within claim_seconds, gets the first
 * one's answers and adds nothing (a worker killed before it used the
 * answers, run again); the same id with other items is refused by the
 * server ("the claim id was used with other items"). Against a server
 * without claims, as bk_redis_claim_send. */
#define BK_REDIS_MAX_ID 200
bk_status_t bk_redis_claim_send_as(bk_redis_t *r, const char *id, const bk_key_t *items,
                                   size_t n, bk_redis_pending_t **out);

typedef struct bk_redis_info {
    unsigned shards;
    uint64_t capacity;  /* asked for at creation */
    double error_rate;
    uint64_t items;     /* items added, over every shard (BF.CARD) */
    uint64_t bytes;     /* the shards' payload bytes (BF.INFO's Size) */
    unsigned nodes;     /* masters holding the filter's shards */
    bool cluster;
} bk_redis_info_t;

/* The filter's layout and its shards' numbers, summed. */
bk_status_t bk_redis_info(bk_redis_t *r, bk_redis_info_t *info);

/* Deletes every shard key and NAME:meta. */
bk_status_t bk_redis_delete(bk_redis_t *r);

/* The shard of an item (0 <= shard < shards), and the cluster slot of a
 * key (with its {hash tag}): what every client computes the same way. */
unsigned bk_redis_shard_of(const void *item, size_t len, unsigned shards);
unsigned bk_redis_key_slot(const void *key, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* BLOOMKIT_REDIS_H */
