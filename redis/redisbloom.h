/*
 * redisbloom.c: RedisBloom's data taken over: its types' callbacks, its SCANDUMP chunks (the ladder is in bkr.h).
 */
#ifndef BKR_REDISBLOOM_H
#define BKR_REDISBLOOM_H

#include "bkr.h"

#pragma GCC visibility push(hidden)

/* RedisBloom's CF.SCANDUMP header (38 bytes) of c; and a filter of zeroed
 * sub-filters from one, or the error to reply: RedisBloom's text for a bad
 * header, the cap's for one whose sub-filters would pass `cap` bytes
 * (checked before anything is allocated). */
#define BKR_CF_HEADER 38u
size_t bkr_cf_header(const bk_cuckoo_t *c, uint8_t out[BKR_CF_HEADER]);
const char *bkr_cf_from_header(const char *buf, size_t len, uint64_t cap, bk_cuckoo_t **out);

/* Registers RedisBloom's data types (MBbloom--, MBbloomCF), so an RDB
 * written by RedisBloom 2.x loads. */
int bkr_rb_register(RedisModuleCtx *ctx);
/* BF.SCANDUMP of a key taken over from RedisBloom (o->f a RedisBloom
 * chain): RedisBloom's header and chunks; replies. */
int bkr_rb_scandump(RedisModuleCtx *ctx, const bkr_obj_t *o, long long it);
/* Whether a LOADCHUNK header chunk has the shape of RedisBloom's. */
bool bkr_rb_is_header(const char *buf, size_t len);
/* BF.LOADCHUNK's header chunk from RedisBloom on an empty key: makes the
 * key (type MBbloom--) and returns NULL, or returns the error to reply
 * (RedisBloom's text for what it refuses). */
const char *bkr_rb_load_header(RedisModuleCtx *ctx, RedisModuleKey *key, const char *buf,
                               size_t len);
/* A data chunk into a key a RedisBloom header chunk made: NULL, or the
 * error (RedisBloom's texts for what RedisBloom refuses). *broken: the
 * chunk is not the next one (missing, short, empty or past the end), so
 * the restore cannot go on; the error is then a reason, without "ERR",
 * and the caller abandons the key. */
const char *bkr_rb_load_chunk(bkr_obj_t *o, long long it, const char *buf, size_t len,
                              bool *broken);
/* The bytes of a RedisBloom chain restore received so far (all of them
 * once whole). */
uint64_t bkr_rb_received(const bkr_obj_t *o);
/* The same for a CF key made by CF.LOADCHUNK's header. */
uint64_t bkr_cf_received(const bkr_cf_t *o);

#pragma GCC visibility pop

#endif /* BKR_REDISBLOOM_H */
