/*
 * Shared definitions of the Redis module's files: the value stored under a
 * key, the module's settings, and the reply-and-return helpers that keep the
 * command handlers short (parse, call the library, reply).
 *
 * One value type per command family: BF.* keys hold a scalable (or
 * non-scaling) Bloom filter, CBF.* keys a counting filter. Two Redis data
 * types (not one with a tag) so that TYPE, WRONGTYPE and a key's encoding
 * say which family a key belongs to.
 *
 * A key may also hold a chunked load in progress (BF.LOADCHUNK /
 * CBF.LOADCHUNK): the dump's bytes are collected first and turned into a
 * filter only once all of them have arrived and the library has validated
 * them, so a key never holds a half-trusted filter.
 */
#ifndef BLOOMKIT_REDIS_MODULE_H
#define BLOOMKIT_REDIS_MODULE_H

#include "bloomkit/bloomkit.h"
#include "module_api.h"

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

typedef enum bkr_family {
    BKR_BF = 1, /* BF.*: scalable Bloom filter (RedisBloom's semantics) */
    BKR_CBF = 2 /* CBF.*: counting Bloom filter with delete */
} bkr_family_t;

typedef struct bkr_obj {
    bkr_family_t family;
    bk_filter_t *f; /* NULL while a chunked load is in progress */

    /* Below grow_check_at items no add can create a sub-filter or find
     * the filter full, so the size limit needs no check and a batch add is
     * safe. Learned from bk_filter_info() (which scans the payload) only
     * when crossed; limit_known is false after a load until first needed. */
    uint64_t grow_check_at;
    bool limit_known;
    bool nonscaling; /* never grows: non-scaling BF, and every CBF */
    /* The filter's shape (capacity, sizes, sub-filters) as of the last
     * bk_filter_info() scan, valid while info_fresh: the shape changes only
     * when a scalable filter grows, and every point where it may grow
     * clears info_fresh. Lets BF.INFO answer without scanning the payload;
     * the item count is always read live. */
    bk_filter_info_t info;
    bool info_fresh;
    /* Growth refused at blocked_items items (0 bytes: not refused). */
    uint64_t blocked_items;
    uint64_t blocked_bytes;

    /* Serialized bytes kept while a SCANDUMP is in progress; any write
     * drops them (bkr_obj_touch). */
    uint8_t *dump;
    size_t dump_len;

    /* Chunked load in progress (f == NULL): pend_len of pend_total bytes
     * received so far. */
    uint8_t *pend;
    uint64_t pend_len;
    uint64_t pend_cap;
    uint64_t pend_total;
} bkr_obj_t;

/* Settings from module arguments (see docs/REDIS.md). */
typedef struct bkr_config {
    uint64_t max_bytes;      /* largest filter (payload bytes) we create */
    double bf_error;         /* defaults for BF.ADD/BF.INSERT auto-create */
    uint64_t bf_capacity;
    uint64_t bf_expansion;
    double cbf_error;        /* defaults for CBF.ADD auto-create */
    uint64_t cbf_capacity;
    uint64_t chunk_bytes;    /* SCANDUMP / AOF rewrite chunk size */
} bkr_config_t;

extern bkr_config_t bkr_config;
extern RedisModuleType *bkr_type_bf;
extern RedisModuleType *bkr_type_cbf;

/* ---- objects (module.c) ---- */

bkr_obj_t *bkr_obj_new(bkr_family_t family, bk_filter_t *f);
void bkr_obj_free(void *value);
/* Called before every change to o->f: drops the cached dump. */
void bkr_obj_touch(bkr_obj_t *o);
RedisModuleType *bkr_family_type(bkr_family_t family);
const char *bkr_family_prefix(bkr_family_t family); /* "BF" or "CBF" */
/* True if the filter kind belongs in a key of this family. */
bool bkr_kind_fits(bkr_family_t family, bk_kind_t kind);

/* ---- creation with limits (create.c) ---- */

typedef struct bkr_params {
    uint64_t capacity;
    double error;
    uint64_t expansion; /* BF only */
    bool nonscaling;    /* BF only */
    uint64_t seed;
} bkr_params_t;

/* Checks the parameters against the size limit and creates the filter.
 * On failure replies with a clear error and returns NULL. */
bk_filter_t *bkr_create_or_reply(RedisModuleCtx *ctx, bkr_family_t family,
                                 const bkr_params_t *p);
/* Creates a key's filter with a fresh seed and propagates the creation
 * (BKI.CREATE with that seed) followed by the command itself, so replicas
 * and the AOF build a filter with the same bits. On failure replies with
 * an error and returns NULL (nothing created). */
bkr_obj_t *bkr_create_key_or_reply(RedisModuleCtx *ctx, RedisModuleKey *key,
                                   RedisModuleString *keyname, bkr_family_t family,
                                   const bkr_params_t *p);
/* Before adding to a scalable BF: NULL, or the error to reply if the next
 * sub-filter would take the filter over the size limit. */
const char *bkr_growth_check(bkr_obj_t *o);
/* Sets the growth checkpoint of a filter just created with p. */
void bkr_limit_init(bkr_obj_t *o, const bkr_params_t *p);
/* The filter's info (shape cached, items live); scans only when stale. */
const bk_filter_info_t *bkr_info(bkr_obj_t *o);
/* After adding: refresh the growth checkpoint if the chain may have grown. */
void bkr_growth_note(bkr_obj_t *o);

/* ---- lookup and reply helpers (util.c) ---- */

typedef enum bkr_lookup {
    BKR_FOUND = 0,
    BKR_EMPTY,     /* no such key */
    BKR_WRONGTYPE, /* another type (including the other family) */
    BKR_LOADING    /* a chunked load is in progress */
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
/* Replies with the number of items added to keyname's filter of the
 * family, 0 for a missing key (BF.CARD, CBF.CARD). */
int bkr_reply_card(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family);
/* Replies with an error for a library status (bk_strerror text). */
int bkr_reply_status(RedisModuleCtx *ctx, bk_status_t st);
/* Replies with a printf-formatted error ("ERR ..."). */
int bkr_reply_errorf(RedisModuleCtx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Case-insensitive comparison of an argument with an ASCII word. */
bool bkr_arg_is(const RedisModuleString *arg, const char *word);
/* Strict number parsing: the whole argument must be the number. */
bool bkr_arg_u64(const RedisModuleString *arg, uint64_t *out);
bool bkr_arg_double(const RedisModuleString *arg, double *out);

/* Propagates a write to replicas and the AOF: verbatim, or, when the
 * command created the key (and BKI.CREATE went first), re-sent explicitly
 * so both land in one MULTI/EXEC in order. */
void bkr_propagate(RedisModuleCtx *ctx, bool created, RedisModuleString **argv, int argc);

/* Adds items and replies: one boolean (multi false) or an array of them;
 * an error ends the array early, as RedisBloom does. */
void bkr_add_items(RedisModuleCtx *ctx, bkr_obj_t *o, RedisModuleString **items, int n,
                   bool multi);
/* Checks items against a key's filter (absent key: all false) and replies. */
int bkr_exists_items(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family,
                     RedisModuleString **items, int n, bool multi);

/* Closes the key and returns REDISMODULE_OK: `return bkr_done(key);`. */
int bkr_done(RedisModuleKey *key);

/* ---- dumps (dump.c) ---- */

/* Serializes a filter into a new RedisModule_Alloc'ed buffer. */
uint8_t *bkr_serialize(const bk_filter_t *f, size_t *len);
/* Emits the AOF commands that rebuild the key (chunked LOADCHUNK). */
void bkr_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value);

/* Command handlers registered in module.c. */
int bkr_cmd_bf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_create(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
/* The WBF.* window filters (cmd_wbf.c): their data type and commands. */
int bkr_wbf_register(RedisModuleCtx *ctx);

int bkr_cmd_bf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_bf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

int bkr_cmd_cbf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bkr_cmd_cbf_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#pragma GCC visibility pop

#endif /* BLOOMKIT_REDIS_MODULE_H */
