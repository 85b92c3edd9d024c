/*
 * The value stored under a BF, CBF or WBF key (bkr_obj_t), and everything
 * Redis does with one without a command: the data types' callbacks (RDB
 * save and load, MEMORY USAGE, COPY, free), and finding a key's object for
 * a command (bkr_lookup, bkr_open_or_reply).
 *
 * Persistence stores the library's own serialized bytes (docs/FORMAT.md),
 * so a value saved by one version of the module is read by the validating
 * loader of the next one; RDB load (startup, DEBUG RELOAD, RESTORE, full
 * sync of a replica) refuses bytes the library does not accept instead of
 * trusting them.
 *
 * A save never makes a second copy of a filter: the bytes are read from
 * the filter in pieces of BKR_PIECE_BYTES (bk_filter_serialize_range) and
 * each piece is written as one RDB string, so a BGSAVE child, a full sync
 * or DUMP needs one piece of memory beyond Redis' own, whatever the
 * filter's size. A load feeds the pieces to the library's incremental
 * loader, which copies them into the filter as they come: the filter plus
 * one piece.
 *
 * RDB value layout, encoding version 2 (every data type):
 *   unsigned  tag: 3 = filter, 4 = chunked load in progress
 *   unsigned  total bytes of the serialized form
 *   tag 4:    unsigned bytes received so far
 *   strings   the bytes (total for a filter, those received for a pending
 *             load), in pieces of at most BKR_PIECE_BYTES
 * Encoding version 1 (still loaded): BF and CBF as tag 1 = filter, one
 * string; tag 2 = pending, unsigned total then one string of the bytes
 * received; WBF as one string, no tag.
 */
#define _GNU_SOURCE
#include "obj.h"
#include "stats.h"
#include "config.h"
#include "value.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BKR_TAG_FILTER_V1 1
#define BKR_TAG_PENDING_V1 2
#define BKR_TAG_FILTER 3
#define BKR_TAG_PENDING 4

/* One piece of a save or a rewrite, filled from the filter and handed to
 * Redis (which copies it), then reused: saves and rewrites run one at a
 * time, in the server's thread or in its fork child. */
static uint8_t piece[BKR_PIECE_BYTES];

bool bkr_kind_fits(bkr_family_t family, bk_kind_t kind)
{
    return bkr_family(family)->fits(kind);
}

bk_status_t bkr_obj_feed(bkr_obj_t *o, const void *bytes, size_t len, const char **why)
{
    uint64_t mark = bkr_lib_bytes();
    bk_status_t st = bk_filter_loader_feed(o->load, bytes, len, why);
    o->heap += bkr_lib_bytes() - mark;
    return st;
}

bk_status_t bkr_obj_finish(bkr_obj_t *o, const char **why)
{
    bk_filter_t *f = NULL;
    bk_status_t st = bk_filter_loader_finish(o->load, &f, why);
    if (st == BK_OK && !bkr_kind_fits(o->family, bk_filter_kind(f))) {
        bk_filter_free(f);
        f = NULL;
        st = BK_EKIND;
        if (why)
            *why = bkr_family(o->family)->wrong_kind;
    }
    if (st != BK_OK)
        return st;
    uint64_t mark = bkr_lib_bytes();
    bk_filter_loader_free(o->load);
    o->load = NULL;
    o->heap -= mark - bkr_lib_bytes();
    o->f = f;
    bk_filter_set_max_bytes(f, bkr_config.max_bytes);
    return BK_OK;
}

uint64_t bkr_obj_total(const bkr_obj_t *o)
{
    return o->f ? bk_filter_serialized_size(o->f) : bk_filter_loader_total(o->load);
}

uint64_t bkr_cap(RedisModuleCtx *ctx)
{
    int flags = RedisModule_GetContextFlags(ctx);
    if (flags & (REDISMODULE_CTX_FLAGS_LOADING | REDISMODULE_CTX_FLAGS_REPLICATED))
        return UINT64_MAX;
    return bkr_config.max_bytes;
}

bool bkr_loading(RedisModuleCtx *ctx)
{
    return (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_LOADING) != 0;
}

void bkr_fatal_load(RedisModuleCtx *ctx, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    RedisModule_Log(ctx, "warning",
                    "bloomkit: cannot rebuild a key while loading: %s; stopping rather than "
                    "start with that key missing or wrong",
                    msg);
    exit(1);
}

/* ---- type callbacks --------------------------------------------------------------- */

bool bkr_within_cap(const bk_filter_t *f, uint64_t cap, uint64_t *bytes)
{
    bk_filter_shape_t s;
    bk_filter_shape(f, &s);
    *bytes = s.bytes;
    return s.bytes <= cap;
}

/* Reads `want` bytes stored as strings of at most BKR_PIECE_BYTES into
 * o's loader (encoding version 2). False after a log line, or on an I/O
 * error (Redis reports those). */
static bool load_pieces(RedisModuleIO *io, bkr_obj_t *o, uint64_t want)
{
    uint64_t got = 0;
    do {
        size_t len = 0;
        char *buf = RedisModule_LoadStringBuffer(io, &len);
        if (RedisModule_IsIOError(io) || buf == NULL) {
            if (buf)
                RedisModule_Free(buf);
            return false;
        }
        const char *why = NULL;
        bk_status_t st = len > want - got ? BK_ECORRUPT : bkr_obj_feed(o, buf, len, &why);
        RedisModule_Free(buf);
        if (st != BK_OK) {
            RedisModule_LogIOError(io, "warning", "bloomkit: refusing stored %s value: %s%s%s",
                                   bkr_family_prefix(o->family), bk_strerror(st),
                                   why ? ": " : "", why ? why : "");
            return false;
        }
        got += len;
    } while (got < want);
    return true;
}

/* A stored value whose pieces are in o's loader: a filter of the family,
 * or a pending load (pending: nothing more to check). NULL after a log
 * line. The module's cap does not apply to a key the server already held
 * (startup, a full sync); RESTORE from a client makes a new key, and does. */
static void *finish_load(RedisModuleIO *io, bkr_obj_t *o, bool pending)
{
    if (pending)
        return o;
    const char *why = NULL;
    bk_status_t st = bkr_obj_finish(o, &why);
    if (st != BK_OK) {
        RedisModule_LogIOError(io, "warning", "bloomkit: refusing stored %s value: %s%s%s",
                               bkr_family_prefix(o->family), bk_strerror(st), why ? ": " : "",
                               why ? why : "");
        bkr_obj_free(o);
        return NULL;
    }
    uint64_t bytes;
    if (!bkr_within_cap(o->f, bkr_config.max_bytes, &bytes)) {
        if (!bkr_loading(RedisModule_GetContextFromIO(io))) {
            RedisModule_LogIOError(io, "warning",
                                   "bloomkit: refusing a %s value of %llu bytes, over the limit "
                                   "of %llu bytes (module argument MAX_BYTES)",
                                   bkr_family_prefix(o->family), (unsigned long long)bytes,
                                   (unsigned long long)bkr_config.max_bytes);
            bkr_obj_free(o);
            return NULL;
        }
        RedisModule_LogIOError(io, "notice",
                               "bloomkit: loaded a %s filter of %llu bytes, over the limit of "
                               "%llu bytes (module argument MAX_BYTES): it is kept whole and "
                               "answers as before, but cannot grow",
                               bkr_family_prefix(o->family), (unsigned long long)bytes,
                               (unsigned long long)bkr_config.max_bytes);
    }
    bkr_stats.values_loaded++;
    return bkr_value_pack(o);
}

/* A new pending object for total bytes, or NULL after a log line. */
static bkr_obj_t *new_pending(RedisModuleIO *io, bkr_family_t family, uint64_t total)
{
    bkr_obj_t *o = bkr_obj_new(family, NULL, 0);
    uint64_t mark = bkr_lib_bytes();
    if (bk_filter_loader_new(&o->load, total) != BK_OK) {
        RedisModule_LogIOError(io, "warning", "bloomkit: out of memory loading a %s value",
                               bkr_family_prefix(family));
        bkr_obj_free(o);
        return NULL;
    }
    o->heap = bkr_lib_bytes() - mark;
    return o;
}

static void *rdb_load_family(RedisModuleIO *io, int encver, bkr_family_t family)
{
    if (encver < 1 || encver > BKR_ENCVER) {
        RedisModule_LogIOError(io, "warning", "bloomkit: unknown encoding version %d", encver);
        return NULL;
    }
    uint64_t tag = BKR_TAG_FILTER_V1, total = 0, received = 0;
    if (encver > 1 || family != BKR_WBF) { /* version 1 windows have no tag */
        tag = RedisModule_LoadUnsigned(io);
        if (RedisModule_IsIOError(io))
            return NULL;
    }
    bool v1 = tag == BKR_TAG_FILTER_V1 || tag == BKR_TAG_PENDING_V1;
    bool pending = tag == BKR_TAG_PENDING_V1 || tag == BKR_TAG_PENDING;
    if ((v1 && encver != 1) || (!v1 && encver == 1) ||
        (tag != BKR_TAG_FILTER_V1 && tag != BKR_TAG_PENDING_V1 && tag != BKR_TAG_FILTER &&
         tag != BKR_TAG_PENDING)) {
        RedisModule_LogIOError(io, "warning", "bloomkit: bad value tag %llu",
                               (unsigned long long)tag);
        return NULL;
    }
    if (!v1 || pending) {
        total = RedisModule_LoadUnsigned(io);
        received = pending && !v1 ? RedisModule_LoadUnsigned(io) : total;
        if (RedisModule_IsIOError(io))
            return NULL;
        /* The loader allocates what the header describes, up to total: a
         * client's RESTORE is held to the cap before that, a key the
         * server already held is not (finish_load). */
        if (total > bkr_config.max_bytes + BKR_SERIAL_SLACK &&
            !bkr_loading(RedisModule_GetContextFromIO(io))) {
            RedisModule_LogIOError(io, "warning",
                                   "bloomkit: refusing a %s value of %llu bytes, over the limit "
                                   "of %llu bytes (module argument MAX_BYTES)",
                                   bkr_family_prefix(family), (unsigned long long)total,
                                   (unsigned long long)bkr_config.max_bytes);
            return NULL;
        }
    }
    if (v1) {
        /* One string: its length is the total (or, pending, what came). */
        size_t len = 0;
        char *buf = RedisModule_LoadStringBuffer(io, &len);
        if (RedisModule_IsIOError(io) || buf == NULL) {
            if (buf)
                RedisModule_Free(buf);
            return NULL;
        }
        bkr_obj_t *o = new_pending(io, family, pending ? total : len);
        const char *why = NULL;
        bk_status_t st = !o ? BK_ENOMEM
                         : len > bk_filter_loader_total(o->load)
                             ? BK_ECORRUPT
                             : bkr_obj_feed(o, buf, len, &why);
        RedisModule_Free(buf);
        if (st != BK_OK) {
            if (o)
                RedisModule_LogIOError(io, "warning", "bloomkit: refusing stored %s value: %s%s%s",
                                       bkr_family_prefix(family), bk_strerror(st),
                                       why ? ": " : "", why ? why : "");
            bkr_obj_free(o);
            return NULL;
        }
        return finish_load(io, o, pending);
    }
    if (received > total || total == 0) {
        RedisModule_LogIOError(io, "warning", "bloomkit: bad stored sizes");
        return NULL;
    }
    bkr_obj_t *o = new_pending(io, family, total);
    if (!o)
        return NULL;
    if (received > 0 && !load_pieces(io, o, received)) {
        bkr_obj_free(o);
        return NULL;
    }
    return finish_load(io, o, pending);
}

static void *rdb_load_bf(RedisModuleIO *io, int encver)
{
    return rdb_load_family(io, encver, BKR_BF);
}

static void *rdb_load_cbf(RedisModuleIO *io, int encver)
{
    return rdb_load_family(io, encver, BKR_CBF);
}

static void *rdb_load_wbf(RedisModuleIO *io, int encver)
{
    return rdb_load_family(io, encver, BKR_WBF);
}

bool bkr_obj_read(const bkr_obj_t *o, uint64_t off, void *buf, size_t len)
{
    bk_status_t st = o->f ? bk_filter_serialize_range(o->f, off, buf, len)
                          : bk_filter_loader_read(o->load, off, buf, len);
    return st == BK_OK;
}

void bkr_save_failed(RedisModuleIO *io)
{
    RedisModule_LogIOError(io, "warning",
                           "bloomkit: could not read a filter's bytes while saving; the save "
                           "fails rather than write a value that would not load");
    /* In a fork child (BGSAVE, a full sync, an AOF rewrite) the exit
     * status is how Redis learns the save failed (rdb_last_bgsave_status:
     * err). A foreground SAVE cannot be failed from here: what it wrote
     * fails its checksums at load, with this line in the log. */
    if (RedisModule_GetContextFlags(RedisModule_GetContextFromIO(io)) &
        REDISMODULE_CTX_FLAGS_IS_CHILD)
        _exit(1);
}

static void rdb_save(RedisModuleIO *io, void *value)
{
    bkr_obj_t *o = bkr_resolve(value, NULL);
    if (!o) { /* no memory for a packed value's view: fail, do not write a wrong value */
        bkr_save_failed(io);
        return;
    }
    uint64_t total = bkr_obj_total(o);
    uint64_t have = o->f ? total : bk_filter_loader_received(o->load);
    RedisModule_SaveUnsigned(io, o->f ? BKR_TAG_FILTER : BKR_TAG_PENDING);
    RedisModule_SaveUnsigned(io, total);
    if (!o->f)
        RedisModule_SaveUnsigned(io, have);
    for (uint64_t off = 0; off < have;) {
        size_t n = (size_t)(have - off < sizeof piece ? have - off : sizeof piece);
        /* Cannot fail: the range is within the object (a bug otherwise). */
        if (!bkr_obj_read(o, off, piece, n))
            bkr_save_failed(io);
        RedisModule_SaveStringBuffer(io, (const char *)piece, n);
        off += n;
    }
    bkr_release(o);
}

static void *copy_value(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value)
{
    (void)fromkey;
    (void)tokey;
    const bkr_obj_t *o = value;
    if (o->packed)
        return bkr_value_copy(value);
    bkr_obj_t *c = bkr_obj_new(o->family, NULL, 0);
    uint64_t mark = bkr_lib_bytes();
    if (o->f) {
        if (bk_filter_clone(&c->f, o->f) != BK_OK) {
            bkr_obj_free(c);
            return NULL; /* COPY replies with an error */
        }
        bk_filter_set_max_bytes(c->f, bkr_config.max_bytes);
        c->heap = bkr_lib_bytes() - mark;
        c->rb_pending = o->rb_pending; /* a copy of a half restore is one too */
        return c;
    }
    /* A pending load: the bytes received so far, into a new loader. */
    uint64_t have = bk_filter_loader_received(o->load);
    bool ok = bk_filter_loader_new(&c->load, bk_filter_loader_total(o->load)) == BK_OK;
    for (uint64_t off = 0; ok && off < have;) {
        size_t n = (size_t)(have - off < sizeof piece ? have - off : sizeof piece);
        ok = bkr_obj_read(o, off, piece, n) && bk_filter_loader_feed(c->load, piece, n, NULL) == BK_OK;
        off += n;
    }
    c->heap = bkr_lib_bytes() - mark;
    if (!ok) {
        bkr_obj_free(c);
        return NULL; /* COPY replies with an error */
    }
    return c;
}

void bkr_type_methods(RedisModuleTypeMethods *tm, bkr_family_t family)
{
    memset(tm, 0, sizeof *tm);
    tm->version = REDISMODULE_TYPE_METHOD_VERSION;
    tm->rdb_load = family == BKR_CBF ? rdb_load_cbf : family == BKR_WBF ? rdb_load_wbf : rdb_load_bf;
    tm->rdb_save = rdb_save;
    tm->mem_usage = bkr_value_mem;
    tm->free = bkr_obj_free;
    tm->copy = copy_value;
    tm->defrag = bkr_value_defrag;
}

bkr_lookup_t bkr_lookup(RedisModuleKey *key, bkr_family_t family, bkr_obj_t **out)
{
    *out = NULL;
    int type = RedisModule_KeyType(key);
    if (type == REDISMODULE_KEYTYPE_EMPTY)
        return BKR_EMPTY;
    if (type != REDISMODULE_KEYTYPE_MODULE)
        return BKR_WRONGTYPE;
    /* BF keys taken over from RedisBloom hold the same object. */
    RedisModuleType *t = RedisModule_ModuleTypeGetType(key);
    if (t != bkr_family_type(family) && !(family == BKR_BF && t == bkr_type_rb))
        return BKR_WRONGTYPE;
    bkr_obj_t *o = bkr_resolve(RedisModule_ModuleTypeGetValue(key), key);
    if (!o)
        return BKR_NOMEM;
    if (o->f == NULL || o->rb_pending)
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
    case BKR_NOMEM:
        return RedisModule_ReplyWithError(ctx, "ERR out of memory opening the filter");
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
