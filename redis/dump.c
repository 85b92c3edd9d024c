/*
 * Moving a filter in pieces: BF.SCANDUMP / BF.LOADCHUNK (and the CBF.*
 * twins), and the AOF rewrite, which is written as the same LOADCHUNK
 * commands. A dump is the library's serialized bytes (docs/FORMAT.md)
 * behind a 16-byte header, cut into chunks of at most CHUNK_BYTES (16 MiB
 * by default) so a multi-GB filter never needs one giant reply or bulk
 * string.
 *
 * Iterator protocol (the shape of RedisBloom's, so its client loops work):
 *   SCANDUMP key 0   -> [1, header]
 *   SCANDUMP key it  -> [it + n, the n bytes at offset it - 1], n >= 1
 *   SCANDUMP key it  -> [0, ""] once offset it - 1 reaches the end
 * and LOADCHUNK key it data is given back each pair (it, data) in order:
 * it == 1 is the header (the key must not exist), any other it carries the
 * bytes ending at offset it - 1. The header announces the total size
 * (checked against MAX_BYTES); bytes are appended in order into a pending
 * key, and only when all have arrived does the library validate them and
 * the key become a filter. A bad or inconsistent dump deletes the pending
 * key and is refused; a dump taken while the filter changed fails the
 * checksum and is refused the same way.
 *
 * Header: "BKSD", format 1 (u8), family (u8: 1 BF, 2 CBF), 2 zero bytes,
 * total length of the serialized bytes (u64 little-endian).
 */
#define _GNU_SOURCE
#include "module.h"

#include <string.h>

#define HDR_LEN 16
#define HDR_VERSION 1

static void put_header(uint8_t h[HDR_LEN], bkr_family_t family, uint64_t total)
{
    memcpy(h, "BKSD", 4);
    h[4] = HDR_VERSION;
    h[5] = (uint8_t)family;
    h[6] = h[7] = 0;
    for (int i = 0; i < 8; i++)
        h[8 + i] = (uint8_t)(total >> (8 * i));
}

/* Parses a header; false if it is not one of ours for this family. */
static bool get_header(const char *p, size_t len, bkr_family_t family, uint64_t *total)
{
    const uint8_t *h = (const uint8_t *)p;
    if (len != HDR_LEN || memcmp(h, "BKSD", 4) != 0 || h[4] != HDR_VERSION ||
        h[5] != (uint8_t)family || h[6] != 0 || h[7] != 0)
        return false;
    uint64_t t = 0;
    for (int i = 0; i < 8; i++)
        t |= (uint64_t)h[8 + i] << (8 * i);
    *total = t;
    return true;
}

/* ---- SCANDUMP ---- */

static int scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bkr_family_t family)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    long long it;
    if (RedisModule_StringToLongLong(argv[2], &it) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, "ERR Second argument must be numeric");
    if (it < 0)
        return RedisModule_ReplyWithError(ctx, "ERR invalid iterator");
    RedisModuleKey *key;
    bkr_obj_t *o = bkr_open_or_reply(ctx, argv[1], REDISMODULE_READ, family, &key);
    if (!o)
        return REDISMODULE_OK;
    /* The serialized form is kept between calls of one dump (a write
     * drops it), so a dump in n chunks costs one serialization, not n. */
    if (o->dump == NULL || it == 0) {
        if (o->dump)
            RedisModule_Free(o->dump);
        o->dump = bkr_serialize(o->f, &o->dump_len);
        if (o->dump == NULL) {
            RedisModule_ReplyWithError(ctx, "ERR out of memory");
            return bkr_done(key);
        }
    }
    RedisModule_ReplyWithArray(ctx, 2);
    if (it == 0) {
        uint8_t h[HDR_LEN];
        put_header(h, family, o->dump_len);
        RedisModule_ReplyWithLongLong(ctx, 1);
        RedisModule_ReplyWithStringBuffer(ctx, (const char *)h, HDR_LEN);
        return bkr_done(key);
    }
    uint64_t off = (uint64_t)it - 1;
    if (off >= o->dump_len) {
        RedisModule_ReplyWithLongLong(ctx, 0);
        RedisModule_ReplyWithStringBuffer(ctx, "", 0);
        RedisModule_Free(o->dump);
        o->dump = NULL;
        o->dump_len = 0;
        return bkr_done(key);
    }
    uint64_t n = o->dump_len - off;
    if (n > bkr_config.chunk_bytes)
        n = bkr_config.chunk_bytes;
    RedisModule_ReplyWithLongLong(ctx, it + (long long)n);
    RedisModule_ReplyWithStringBuffer(ctx, (const char *)o->dump + off, (size_t)n);
    return bkr_done(key);
}

int bkr_cmd_bf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return scandump(ctx, argv, argc, BKR_BF);
}

int bkr_cmd_cbf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return scandump(ctx, argv, argc, BKR_CBF);
}

/* ---- LOADCHUNK ---- */

/* Serialized bytes may exceed the payload by their header and checksums;
 * this much slack over MAX_BYTES covers that for any filter. */
#define DUMP_SLACK (UINT64_C(1) << 20)

static int load_header(RedisModuleCtx *ctx, RedisModuleKey *key, RedisModuleString *cmd,
                       RedisModuleString *keyname, bkr_family_t family, const char *buf,
                       size_t len)
{
    /* A key still being restored is restarted: that is how a client
     * recovers from a sequence it could not finish. */
    bkr_obj_t *old;
    bkr_lookup_t st = bkr_lookup(key, family, &old);
    if (st == BKR_FOUND)
        return RedisModule_ReplyWithError(ctx, "ERR item exists");
    if (st == BKR_WRONGTYPE)
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    uint64_t total;
    if (!get_header(buf, len, family, &total) || total == 0)
        return bkr_reply_errorf(ctx, "ERR invalid dump header (not from %s.SCANDUMP)",
                                bkr_family_prefix(family));
    if (total > bkr_config.max_bytes + DUMP_SLACK)
        return bkr_reply_errorf(ctx,
                                "ERR dump of %llu bytes is over the limit of %llu bytes "
                                "(module argument MAX_BYTES)",
                                (unsigned long long)total,
                                (unsigned long long)bkr_config.max_bytes);
    bkr_obj_t *o = bkr_obj_new(family, NULL, 0);
    o->pend_total = total;
    RedisModule_ModuleTypeSetValue(key, bkr_family_type(family), o);
    RedisModule_ReplicateVerbatim(ctx);
    bkr_notify(ctx, cmd, keyname);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* Appends a chunk to a pending key's bytes; false if memory cannot be
 * had. The buffer grows with the bytes actually received, never to the
 * size a header merely claims. */
static bool append_pending(bkr_obj_t *o, const char *buf, size_t len)
{
    uint64_t need = o->pend_len + len;
    if (need > o->pend_cap) {
        uint64_t cap = o->pend_cap * 2 > need ? o->pend_cap * 2 : need;
        if (cap > o->pend_total)
            cap = o->pend_total;
        uint8_t *p = RedisModule_TryAlloc((size_t)cap);
        if (!p)
            return false;
        if (o->pend_len)
            memcpy(p, o->pend, (size_t)o->pend_len);
        if (o->pend)
            RedisModule_Free(o->pend);
        o->pend = p;
        o->pend_cap = cap;
    }
    memcpy(o->pend + o->pend_len, buf, len);
    o->pend_len = need;
    return true;
}

/* A chunk that cannot be used ends the restore: the half-restored key is
 * deleted (never left refusing every command) and the client is told to
 * start again. */
static int abandon(RedisModuleCtx *ctx, RedisModuleKey *key, RedisModuleString *keyname,
                   const char *why, uint64_t received)
{
    RedisModule_DeleteKey(key);
    /* Replicas drop their half key too, whatever made this one fail. */
    RedisModule_Replicate(ctx, "DEL", "s", keyname);
    return bkr_reply_errorf(ctx,
                            "ERR %s (after byte %llu): the restore was abandoned and the key "
                            "removed; start again with the header chunk (iterator 1)",
                            why, (unsigned long long)received);
}

static int load_data(RedisModuleCtx *ctx, RedisModuleKey *key, RedisModuleString *cmd,
                     RedisModuleString *keyname, bkr_family_t family, long long it,
                     const char *buf, size_t len)
{
    int type = RedisModule_KeyType(key);
    if (type == REDISMODULE_KEYTYPE_EMPTY)
        return RedisModule_ReplyWithError(ctx, "ERR not found");
    if (type != REDISMODULE_KEYTYPE_MODULE ||
        RedisModule_ModuleTypeGetType(key) != bkr_family_type(family))
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    bkr_obj_t *o = RedisModule_ModuleTypeGetValue(key);
    if (o->f != NULL)
        return RedisModule_ReplyWithError(
            ctx, "ERR the filter is complete; a restore starts with the header chunk (iterator "
                 "1) on a new key");
    const char *bad = NULL;
    if (len == 0 || (uint64_t)it - 1 < len || (uint64_t)it - 1 - len != o->pend_len)
        bad = "chunk out of order";
    else if (len > o->pend_total - o->pend_len)
        bad = "chunk runs past the end of the dump";
    else if (!append_pending(o, buf, len))
        bad = "out of memory";
    if (bad)
        return abandon(ctx, key, keyname, bad, o->pend_len);
    RedisModule_ReplicateVerbatim(ctx);
    bkr_notify(ctx, cmd, keyname);
    if (o->pend_len < o->pend_total)
        return RedisModule_ReplyWithSimpleString(ctx, "OK");

    /* Complete: validate, then the key becomes the filter (or goes). */
    bk_filter_t *f = NULL;
    const char *why = NULL;
    uint64_t mark = bkr_lib_bytes();
    bk_status_t st = bk_filter_deserialize(&f, o->pend, (size_t)o->pend_len, &why);
    if (st == BK_OK && !bkr_kind_fits(family, bk_filter_kind(f))) {
        bk_filter_free(f);
        f = NULL;
        st = BK_EKIND;
        why = family == BKR_CBF ? "not a counting filter" : "not a Bloom filter";
    }
    if (st != BK_OK) {
        RedisModule_DeleteKey(key);
        return bkr_reply_errorf(ctx, "ERR invalid dump: %s%s%s", bk_strerror(st),
                                why ? ": " : "", why ? why : "");
    }
    uint64_t bytes;
    if (!bkr_within_cap(f, &bytes)) {
        bk_filter_free(f);
        RedisModule_DeleteKey(key);
        return bkr_reply_errorf(ctx,
                                "ERR the dumped filter of %llu bytes is over the limit of %llu "
                                "bytes (module argument MAX_BYTES); the key was removed",
                                (unsigned long long)bytes,
                                (unsigned long long)bkr_config.max_bytes);
    }
    bkr_obj_t *done = bkr_obj_new(family, f, mark);
    RedisModule_ModuleTypeSetValue(key, bkr_family_type(family), done);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
                     bkr_family_t family)
{
    if (argc != 4)
        return RedisModule_WrongArity(ctx);
    long long it;
    if (RedisModule_StringToLongLong(argv[2], &it) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, "ERR Second argument must be numeric");
    if (it < 1)
        return RedisModule_ReplyWithError(ctx, "ERR invalid iterator");
    size_t len;
    const char *buf = RedisModule_StringPtrLen(argv[3], &len);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    if (it == 1)
        load_header(ctx, key, argv[0], argv[1], family, buf, len);
    else
        load_data(ctx, key, argv[0], argv[1], family, it, buf, len);
    return bkr_done(key);
}

int bkr_cmd_bf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return loadchunk(ctx, argv, argc, BKR_BF);
}

int bkr_cmd_cbf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return loadchunk(ctx, argv, argc, BKR_CBF);
}

/* ---- AOF rewrite ---- */

static void emit_chunks(RedisModuleIO *aof, RedisModuleString *key, bkr_family_t family,
                        const uint8_t *bytes, uint64_t len, uint64_t total)
{
    const char *cmd = family == BKR_CBF ? "CBF.LOADCHUNK" : "BF.LOADCHUNK";
    uint8_t h[HDR_LEN];
    put_header(h, family, total);
    RedisModule_EmitAOF(aof, cmd, "slb", key, 1LL, (const char *)h, (size_t)HDR_LEN);
    for (uint64_t off = 0; off < len;) {
        uint64_t n = len - off;
        if (n > bkr_config.chunk_bytes)
            n = bkr_config.chunk_bytes;
        RedisModule_EmitAOF(aof, cmd, "slb", key, (long long)(off + n + 1),
                            (const char *)bytes + off, (size_t)n);
        off += n;
    }
}

void bkr_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    bkr_obj_t *o = value;
    if (o->f == NULL) {
        emit_chunks(aof, key, o->family, o->pend, o->pend_len, o->pend_total);
        return;
    }
    size_t len = 0;
    uint8_t *buf = bkr_serialize(o->f, &len);
    if (buf == NULL) {
        RedisModule_LogIOError(aof, "warning", "bloomkit: could not serialize a filter");
        return;
    }
    emit_chunks(aof, key, o->family, buf, len, len);
    RedisModule_Free(buf);
}
