/*
 * obj.c: the Redis type callbacks, loading and lookup (the ladder is in bkr.h).
 */
#ifndef BKR_OBJ_H
#define BKR_OBJ_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* True if the filter kind belongs in a key of this family. */
bool bkr_kind_fits(bkr_family_t family, bk_kind_t kind);
/* The size cap that applies to what the command in ctx creates or grows:
 * MAX_BYTES for a client's command; none (UINT64_MAX) while the server
 * replays its AOF or loads an RDB, or for a command from its master, since
 * those rebuild keys that exist already: a cap limits growth, never data
 * (docs/REDIS.md). */
uint64_t bkr_cap(RedisModuleCtx *ctx);
/* True while the server is loading (its AOF or an RDB, at start or from a
 * master). */
bool bkr_loading(RedisModuleCtx *ctx);
/* Stops the server with a log line: an AOF replay that cannot rebuild a
 * key must not go on with a key missing or made up (Redis then refuses to
 * start, and nothing is half-loaded). Only called while loading. */
void bkr_fatal_load(RedisModuleCtx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* True if f's payload is within cap; *bytes receives its size. */
bool bkr_within_cap(const bk_filter_t *f, uint64_t cap, uint64_t *bytes);
/* A save that cannot read a filter's bytes (a bug, never memory: saves
 * allocate nothing): logs, and in a fork child exits so that Redis reports
 * the save failed. */
void bkr_save_failed(RedisModuleIO *io);
/* The data type callbacks of a family but aof_rewrite (dump.c's). */
void bkr_type_methods(RedisModuleTypeMethods *tm, bkr_family_t family);
/* Loads a chunk into a pending key's loader, keeping o->heap. */
bk_status_t bkr_obj_feed(bkr_obj_t *o, const void *bytes, size_t len, const char **why);
/* A pending key whose bytes are all in: its filter, validated (loader
 * gone), or the status and reason. */
bk_status_t bkr_obj_finish(bkr_obj_t *o, const char **why);
/* Bytes of the serialized form of o: a filter's, or a pending load's
 * total. */
uint64_t bkr_obj_total(const bkr_obj_t *o);
/* Bytes [off, off + len) of o's serialized form (a pending load: of those
 * received), read from it without a copy of the whole; false if the range
 * is not there. */
bool bkr_obj_read(const bkr_obj_t *o, uint64_t off, void *buf, size_t len);

typedef enum bkr_lookup {
    BKR_FOUND = 0,
    BKR_EMPTY,     /* no such key */
    BKR_WRONGTYPE, /* another type (including the other family) */
    BKR_LOADING,   /* a chunked load is in progress */
    BKR_NOMEM      /* a packed value could not be opened (memory) */
} bkr_lookup_t;

/* Finds a key's object of the given family. */
bkr_lookup_t bkr_lookup(RedisModuleKey *key, bkr_family_t family, bkr_obj_t **out);
/* Replies with the error for a lookup status other than BKR_FOUND. */
int bkr_reply_lookup_error(RedisModuleCtx *ctx, bkr_lookup_t st);
/* Opens keyname (mode REDISMODULE_READ and/or _WRITE) and returns its
 * filter of the family with *key open (close it with bkr_done); or, when
 * the key is missing, of another type or still loading, replies with the
 * lookup error, closes the key and returns NULL: the command then returns
 * REDISMODULE_OK. */
bkr_obj_t *bkr_open_or_reply(RedisModuleCtx *ctx, RedisModuleString *keyname, int mode,
                             bkr_family_t family, RedisModuleKey **key);

#pragma GCC visibility pop

#endif /* BKR_OBJ_H */
