/*
 * The value stored under a BF or CBF key (bkr_obj_t), and everything Redis
 * does with one without a command: the two data types' callbacks (RDB save
 * and load, MEMORY USAGE, COPY, free), serialization, and finding a key's
 * object for a command (bkr_lookup, bkr_open_or_reply).
 *
 * Persistence stores the library's own serialized bytes (docs/FORMAT.md),
 * so a value saved by one version of the module is read by the validating
 * loader of the next one; RDB load (startup, DEBUG RELOAD, RESTORE, full
 * sync of a replica) refuses bytes the library does not accept instead of
 * trusting them. RDB value layout, encoding version 1:
 *   unsigned  tag: 1 = filter, 2 = chunked load in progress
 *   tag 1:    string  serialized filter
 *   tag 2:    unsigned total bytes expected, string bytes received so far
 */
#define _GNU_SOURCE
#include "module.h"

#include <string.h>

#define BKR_TAG_FILTER 1
#define BKR_TAG_PENDING 2

RedisModuleType *bkr_type_bf;
RedisModuleType *bkr_type_cbf;

/* ---- objects ------------------------------------------------------------------ */

bkr_obj_t *bkr_obj_new(bkr_family_t family, bk_filter_t *f, uint64_t since)
{
    bkr_obj_t *o = RedisModule_Alloc(sizeof *o);
    memset(o, 0, sizeof *o);
    o->family = family;
    o->f = f;
    if (f) {
        o->heap = bkr_lib_bytes() - since;
        /* The library holds MAX_BYTES too, on every growth, whatever made
         * f (created, loaded, copied, merged): the cap is not stored with
         * a filter, so it is set on each one a key takes. */
        bk_filter_set_max_bytes(f, bkr_config.max_bytes);
    }
    return o;
}

void bkr_obj_free(void *value)
{
    bkr_obj_t *o = value;
    if (!o)
        return;
    bk_filter_free(o->f);
    bkr_obj_touch(o);
    if (o->pend)
        RedisModule_Free(o->pend);
    RedisModule_Free(o);
}

void bkr_obj_touch(bkr_obj_t *o)
{
    if (o->dump) {
        RedisModule_Free(o->dump);
        o->dump = NULL;
        o->dump_len = 0;
    }
}

RedisModuleType *bkr_family_type(bkr_family_t family)
{
    return family == BKR_CBF ? bkr_type_cbf : bkr_type_bf;
}

const char *bkr_family_prefix(bkr_family_t family)
{
    return family == BKR_CBF ? "CBF" : "BF";
}

bool bkr_kind_fits(bkr_family_t family, bk_kind_t kind)
{
    if (family == BKR_CBF)
        return kind == BK_KIND_COUNTING;
    return kind == BK_KIND_SCALABLE || kind == BK_KIND_BLOCKED || kind == BK_KIND_CLASSIC;
}

/* ---- type callbacks --------------------------------------------------------------- */

bool bkr_within_cap(const bk_filter_t *f, uint64_t *bytes)
{
    bk_filter_shape_t s;
    bk_filter_shape(f, &s);
    *bytes = s.bytes;
    return s.bytes <= bkr_config.max_bytes;
}

/* A stored chunked load in progress: the bytes received so far (buf,
 * owned from here on). */
static void *load_pending(RedisModuleIO *io, bkr_family_t family, char *buf, size_t len,
                          uint64_t total)
{
    if (len > total || total > bkr_config.max_bytes + (UINT64_C(1) << 20)) {
        RedisModule_Free(buf);
        RedisModule_LogIOError(io, "warning", "bloomkit: bad partial load state");
        return NULL;
    }
    bkr_obj_t *o = bkr_obj_new(family, NULL, 0);
    o->pend = (uint8_t *)buf;
    o->pend_len = o->pend_cap = len;
    o->pend_total = total;
    return o;
}

/* A stored filter: validated by the library, of the family's kind and
 * within MAX_BYTES, or refused with a log line. */
static void *load_filter(RedisModuleIO *io, bkr_family_t family, const char *buf, size_t len)
{
    bk_filter_t *f = NULL;
    const char *why = NULL;
    uint64_t mark = bkr_lib_bytes();
    bk_status_t st = bk_filter_deserialize(&f, buf, len, &why);
    if (st != BK_OK) {
        RedisModule_LogIOError(io, "warning", "bloomkit: refusing stored filter: %s%s%s",
                               bk_strerror(st), why ? ": " : "", why ? why : "");
        return NULL;
    }
    uint64_t bytes;
    if (!bkr_kind_fits(family, bk_filter_kind(f))) {
        RedisModule_LogIOError(io, "warning", "bloomkit: stored filter of the wrong kind");
    } else if (!bkr_within_cap(f, &bytes)) {
        RedisModule_LogIOError(io, "warning",
                               "bloomkit: stored filter of %llu bytes is over the limit of %llu "
                               "bytes (module argument MAX_BYTES): raise MAX_BYTES to load it",
                               (unsigned long long)bytes,
                               (unsigned long long)bkr_config.max_bytes);
    } else {
        return bkr_obj_new(family, f, mark);
    }
    bk_filter_free(f);
    return NULL;
}

static void *rdb_load_family(RedisModuleIO *io, int encver, bkr_family_t family)
{
    if (encver < 1 || encver > BKR_ENCVER) {
        RedisModule_LogIOError(io, "warning", "bloomkit: unknown encoding version %d", encver);
        return NULL;
    }
    uint64_t tag = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io))
        return NULL;
    uint64_t total = 0;
    if (tag == BKR_TAG_PENDING) {
        total = RedisModule_LoadUnsigned(io);
        if (RedisModule_IsIOError(io))
            return NULL;
    } else if (tag != BKR_TAG_FILTER) {
        RedisModule_LogIOError(io, "warning", "bloomkit: bad value tag %llu",
                               (unsigned long long)tag);
        return NULL;
    }
    size_t len = 0;
    char *buf = RedisModule_LoadStringBuffer(io, &len);
    if (RedisModule_IsIOError(io) || buf == NULL) {
        if (buf)
            RedisModule_Free(buf);
        return NULL;
    }
    if (tag == BKR_TAG_PENDING)
        return load_pending(io, family, buf, len, total);
    void *value = load_filter(io, family, buf, len);
    RedisModule_Free(buf);
    return value;
}

static void *rdb_load_bf(RedisModuleIO *io, int encver)
{
    return rdb_load_family(io, encver, BKR_BF);
}

static void *rdb_load_cbf(RedisModuleIO *io, int encver)
{
    return rdb_load_family(io, encver, BKR_CBF);
}

static void rdb_save(RedisModuleIO *io, void *value)
{
    bkr_obj_t *o = value;
    if (o->f == NULL) {
        RedisModule_SaveUnsigned(io, BKR_TAG_PENDING);
        RedisModule_SaveUnsigned(io, o->pend_total);
        RedisModule_SaveStringBuffer(io, (const char *)(o->pend ? o->pend : (uint8_t *)""),
                                     o->pend_len);
        return;
    }
    size_t len = 0;
    uint8_t *buf = bkr_serialize(o->f, &len);
    RedisModule_SaveUnsigned(io, BKR_TAG_FILTER);
    if (buf == NULL) {
        /* Cannot happen short of memory exhaustion; an empty string makes
         * the load fail loudly rather than restore something else. */
        RedisModule_LogIOError(io, "warning", "bloomkit: could not serialize a filter");
        RedisModule_SaveStringBuffer(io, "", 0);
        return;
    }
    RedisModule_SaveStringBuffer(io, (const char *)buf, len);
    RedisModule_Free(buf);
}

static size_t mem_usage(const void *value)
{
    const bkr_obj_t *o = value;
    /* What used_memory grew by for this key, as near as the module can
     * tell: the filter's blocks as Redis' allocator sized them. */
    return sizeof *o + (size_t)o->pend_cap + o->dump_len + (size_t)o->heap;
}

static void *copy_value(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value)
{
    (void)fromkey;
    (void)tokey;
    const bkr_obj_t *o = value;
    bkr_obj_t *c = bkr_obj_new(o->family, NULL, 0);
    if (o->f) {
        uint64_t mark = bkr_lib_bytes();
        if (bk_filter_clone(&c->f, o->f) != BK_OK) {
            bkr_obj_free(c);
            return NULL; /* COPY replies with an error */
        }
        c->heap = bkr_lib_bytes() - mark;
        return c;
    }
    if (o->pend_len) {
        c->pend = RedisModule_TryAlloc((size_t)o->pend_len);
        if (!c->pend) {
            bkr_obj_free(c);
            return NULL; /* COPY replies with an error */
        }
        memcpy(c->pend, o->pend, (size_t)o->pend_len);
    }
    c->pend_len = c->pend_cap = o->pend_len;
    c->pend_total = o->pend_total;
    return c;
}

void bkr_type_methods(RedisModuleTypeMethods *tm, bkr_family_t family)
{
    memset(tm, 0, sizeof *tm);
    tm->version = REDISMODULE_TYPE_METHOD_VERSION;
    tm->rdb_load = family == BKR_CBF ? rdb_load_cbf : rdb_load_bf;
    tm->rdb_save = rdb_save;
    tm->mem_usage = mem_usage;
    tm->free = bkr_obj_free;
    tm->copy = copy_value;
}

uint8_t *bkr_serialize(const bk_filter_t *f, size_t *len)
{
    uint64_t n = bk_filter_serialized_size(f);
    if (n == 0 || n > SIZE_MAX)
        return NULL;
    uint8_t *buf = RedisModule_TryAlloc((size_t)n);
    if (!buf)
        return NULL;
    size_t written = 0;
    if (bk_filter_serialize(f, buf, (size_t)n, &written) != BK_OK) {
        RedisModule_Free(buf);
        return NULL;
    }
    *len = written;
    return buf;
}

bkr_lookup_t bkr_lookup(RedisModuleKey *key, bkr_family_t family, bkr_obj_t **out)
{
    *out = NULL;
    int type = RedisModule_KeyType(key);
    if (type == REDISMODULE_KEYTYPE_EMPTY)
        return BKR_EMPTY;
    if (type != REDISMODULE_KEYTYPE_MODULE ||
        RedisModule_ModuleTypeGetType(key) != bkr_family_type(family))
        return BKR_WRONGTYPE;
    bkr_obj_t *o = RedisModule_ModuleTypeGetValue(key);
    if (o->f == NULL)
        return BKR_LOADING;
    *out = o;
    return BKR_FOUND;
}

int bkr_reply_lookup_error(RedisModuleCtx *ctx, bkr_lookup_t st)
{
    switch (st) {
    case BKR_EMPTY:
        return RedisModule_ReplyWithError(ctx, "ERR not found");
    case BKR_WRONGTYPE:
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    case BKR_LOADING:
        return RedisModule_ReplyWithError(
            ctx, "ERR filter is being restored: LOADCHUNK has not received all chunks");
    case BKR_FOUND:
        break;
    }
    return RedisModule_ReplyWithError(ctx, "ERR item exists");
}

bkr_obj_t *bkr_open_or_reply(RedisModuleCtx *ctx, RedisModuleString *keyname, int mode,
                             bkr_family_t family, RedisModuleKey **key)
{
    *key = RedisModule_OpenKey(ctx, keyname, mode);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(*key, family, &o);
    if (st != BKR_FOUND) {
        bkr_reply_lookup_error(ctx, st);
        bkr_done(*key);
        *key = NULL;
        return NULL;
    }
    return o;
}
