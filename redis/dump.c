/*
 * Moving a filter in pieces: BF.SCANDUMP / BF.LOADCHUNK (and the CBF.*
 * and WBF.* twins), and the AOF rewrite, which is written as the same
 * LOADCHUNK commands. A dump is the library's serialized bytes
 * (docs/FORMAT.md) behind a 16-byte header, cut into chunks of at most
 * CHUNK_BYTES (16 MiB by default) for SCANDUMP and BKR_PIECE_BYTES (1 MiB)
 * for the AOF, so a multi-GB filter never needs one giant reply or bulk
 * string. No copy of a filter is ever held: each chunk is read from the
 * filter when it is asked for (bk_filter_serialize_range), and a restore
 * copies each chunk into the filter it is building as it arrives
 * (bk_filter_loader_*).
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
 * MAX_BYTES limits a client's restore; an AOF being replayed or a master's
 * stream restores keys the server already held, whatever their size. A
 * replayed LOADCHUNK that cannot be used stops the server with a log line
 * (bkr_fatal_load) rather than start with the key missing.
 *
 * Header: "BKSD", format 1 (u8), family (u8: 1 BF, 2 CBF, 3 WBF), 2 zero bytes,
 * total length of the serialized bytes (u64 little-endian).
 */
#define _GNU_SOURCE
#include "dump.h"
#include "config.h"
#include "events.h"
#include "obj.h"
#include "redisbloom.h"
#include "reply.h"
#include "value.h"

#include <stdio.h>
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
    /* RedisBloom 2.8's order: the key, then the iterator; one before the
     * start is past the end, [0, ""], as any other past the end. */
    RedisModuleKey *key;
    bkr_obj_t *o = bkr_open_or_reply(ctx, argv[1], REDISMODULE_READ, family, &key);
    if (!o)
        return REDISMODULE_OK;
    long long it;
    if (RedisModule_StringToLongLong(argv[2], &it) != REDISMODULE_OK) {
        RedisModule_ReplyWithError(ctx, "Second argument must be numeric");
        return bkr_done(key);
    }
    if (it < 0) {
        RedisModule_ReplyWithArray(ctx, 2);
        RedisModule_ReplyWithLongLong(ctx, 0);
        RedisModule_ReplyWithStringBuffer(ctx, "", 0);
        return bkr_done(key);
    }
    if (bk_redisbloom_is(o->f)) { /* kept in RedisBloom's chunks */
        bkr_rb_scandump(ctx, o, it);
        return bkr_done(key);
    }
    uint64_t total = bk_filter_serialized_size(o->f);
    if (it == 0) {
        uint8_t h[HDR_LEN];
        put_header(h, family, total);
        RedisModule_ReplyWithArray(ctx, 2);
        RedisModule_ReplyWithLongLong(ctx, 1);
        RedisModule_ReplyWithStringBuffer(ctx, (const char *)h, HDR_LEN);
        return bkr_done(key);
    }
    uint64_t off = (uint64_t)it - 1;
    if (off >= total) {
        RedisModule_ReplyWithArray(ctx, 2);
        RedisModule_ReplyWithLongLong(ctx, 0);
        RedisModule_ReplyWithStringBuffer(ctx, "", 0);
        return bkr_done(key);
    }
    uint64_t n = total - off;
    if (n > bkr_config.chunk_bytes)
        n = bkr_config.chunk_bytes;
    /* Read from the filter now, held only until the reply has it. */
    uint8_t *buf = RedisModule_TryAlloc((size_t)n);
    if (!buf) {
        RedisModule_ReplyWithError(ctx, "ERR out of memory");
        return bkr_done(key);
    }
    if (bk_filter_serialize_range(o->f, off, buf, (size_t)n) != BK_OK) {
        RedisModule_Free(buf);
        RedisModule_ReplyWithError(ctx, "ERR could not read the filter");
        return bkr_done(key);
    }
    RedisModule_ReplyWithArray(ctx, 2);
    RedisModule_ReplyWithLongLong(ctx, it + (long long)n);
    RedisModule_ReplyWithStringBuffer(ctx, (const char *)buf, (size_t)n);
    RedisModule_Free(buf);
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

int bkr_cmd_wbf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return scandump(ctx, argv, argc, BKR_WBF);
}

/* ---- LOADCHUNK ---- */

/* A client's LOADCHUNK that fails gets an error; one replayed from the AOF
 * stops the server (the key would be missing, or later adds would make a
 * default filter in its place). */
static int refuse(RedisModuleCtx *ctx, const char *msg)
{
    if (bkr_loading(ctx))
        bkr_fatal_load(ctx, "%s", msg);
    return RedisModule_ReplyWithError(ctx, msg);
}

static int load_header(RedisModuleCtx *ctx, RedisModuleKey *key, RedisModuleString *cmd,
                       RedisModuleString *keyname, bkr_family_t family, const char *buf,
                       size_t len)
{
    /* A key still being restored is restarted: that is how a client
     * recovers from a sequence it could not finish. */
    bkr_obj_t *old;
    bkr_lookup_t st = bkr_lookup(key, family, &old);
    if (st == BKR_FOUND)
        return refuse(ctx, "ERR item exists");
    if (st == BKR_WRONGTYPE)
        return refuse(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    uint64_t total;
    char msg[200];
    if (family == BKR_BF && (st == BKR_EMPTY || st == BKR_LOADING) &&
        !get_header(buf, len, family, &total) && bkr_rb_is_header(buf, len)) {
        /* RedisBloom's own dump: the key is RedisBloom's chain at once,
         * as in RedisBloom (its chunks carry no checksum to wait for). */
        const char *err = bkr_rb_load_header(ctx, key, buf, len);
        if (err)
            return refuse(ctx, err);
        RedisModule_ReplicateVerbatim(ctx);
        bkr_notify(ctx, cmd, keyname);
        return RedisModule_ReplyWithSimpleString(ctx, "OK");
    }
    if (!get_header(buf, len, family, &total) || total == 0) {
        /* Under LAYOUT redisbloom a BF dump is RedisBloom's, and this is
         * RedisBloom's answer to a header it cannot read. */
        if (family == BKR_BF && bkr_config.rb_layout)
            return refuse(ctx, "ERR received bad data");
        snprintf(msg, sizeof msg, "ERR invalid dump header (not from %s.SCANDUMP)",
                 bkr_family_prefix(family));
        return refuse(ctx, msg);
    }
    uint64_t cap = bkr_cap(ctx);
    if (cap != UINT64_MAX && total > cap + BKR_SERIAL_SLACK) {
        snprintf(msg, sizeof msg,
                 "ERR dump of %llu bytes is over the limit of %llu bytes (module argument "
                 "MAX_BYTES)",
                 (unsigned long long)total, (unsigned long long)cap);
        return refuse(ctx, msg);
    }
    bkr_obj_t *o = bkr_obj_new(family, NULL, 0);
    uint64_t mark = bkr_lib_bytes();
    if (bk_filter_loader_new(&o->load, total) != BK_OK) {
        bkr_obj_free(o);
        return refuse(ctx, "ERR out of memory");
    }
    o->heap = bkr_lib_bytes() - mark;
    RedisModule_ModuleTypeSetValue(key, bkr_family_type(family), o);
    RedisModule_ReplicateVerbatim(ctx);
    bkr_notify(ctx, cmd, keyname);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* A chunk that cannot be used ends the restore: the half-restored key is
 * deleted (never left refusing every command) and the client is told to
 * start again. */
int bkr_restore_abandon(RedisModuleCtx *ctx, RedisModuleKey *key, RedisModuleString *keyname,
                        const char *why, uint64_t received)
{
    char msg[400];
    snprintf(msg, sizeof msg,
             "ERR %s (after byte %llu): the restore was abandoned and the key removed; start "
             "again with the header chunk (iterator 1)",
             why, (unsigned long long)received);
    if (bkr_loading(ctx))
        bkr_fatal_load(ctx, "%s", msg);
    RedisModule_DeleteKey(key);
    /* Replicas drop their half key too, whatever made this one fail. */
    RedisModule_Replicate(ctx, "DEL", "s", keyname);
    return RedisModule_ReplyWithError(ctx, msg);
}

static int load_data(RedisModuleCtx *ctx, RedisModuleKey *key, RedisModuleString *cmd,
                     RedisModuleString *keyname, bkr_family_t family, long long it,
                     const char *buf, size_t len)
{
    int type = RedisModule_KeyType(key);
    if (type == REDISMODULE_KEYTYPE_EMPTY)
        return refuse(ctx, "ERR not found");
    if (family == BKR_BF && type == REDISMODULE_KEYTYPE_MODULE &&
        RedisModule_ModuleTypeGetType(key) == bkr_type_rb) {
        bkr_obj_t *ro = RedisModule_ModuleTypeGetValue(key);
        bool broken;
        uint64_t have = ro->rb_pending ? bkr_rb_received(ro) : 0;
        const char *err = bkr_rb_load_chunk(ro, it, buf, len, &broken);
        if (err && broken)
            return bkr_restore_abandon(ctx, key, keyname, err, have);
        if (err)
            return refuse(ctx, err);
        RedisModule_ReplicateVerbatim(ctx);
        bkr_notify(ctx, cmd, keyname);
        return RedisModule_ReplyWithSimpleString(ctx, "OK");
    }
    if (type != REDISMODULE_KEYTYPE_MODULE ||
        RedisModule_ModuleTypeGetType(key) != bkr_family_type(family))
        return refuse(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    bkr_obj_t *o = RedisModule_ModuleTypeGetValue(key);
    if (o->packed || o->f != NULL)
        return refuse(ctx, "ERR the filter is complete; a restore starts with the header chunk "
                           "(iterator 1) on a new key");
    uint64_t have = bk_filter_loader_received(o->load);
    uint64_t total = bk_filter_loader_total(o->load);
    const char *bad = NULL, *why = NULL;
    bk_status_t st = BK_OK;
    if (len == 0 || (uint64_t)it - 1 < len || (uint64_t)it - 1 - len != have)
        bad = "chunk out of order";
    else if (len > total - have)
        bad = "chunk runs past the end of the dump";
    else if ((st = bkr_obj_feed(o, buf, len, &why)) != BK_OK)
        bad = st == BK_ENOMEM ? "out of memory" : why ? why : bk_strerror(st);
    if (bad) {
        char what[200];
        snprintf(what, sizeof what, "%s%s", st != BK_OK && st != BK_ENOMEM ? "invalid dump: " : "",
                 bad);
        return bkr_restore_abandon(ctx, key, keyname, what, have);
    }
    RedisModule_ReplicateVerbatim(ctx);
    bkr_notify(ctx, cmd, keyname);
    if (have + len < total)
        return RedisModule_ReplyWithSimpleString(ctx, "OK");

    /* Complete: validated by the loader; the key becomes the filter (or goes). */
    st = bkr_obj_finish(o, &why);
    if (st != BK_OK) {
        char msg[300];
        snprintf(msg, sizeof msg, "ERR invalid dump: %s%s%s", bk_strerror(st), why ? ": " : "",
                 why ? why : "");
        if (bkr_loading(ctx))
            bkr_fatal_load(ctx, "%s", msg);
        RedisModule_DeleteKey(key);
        return RedisModule_ReplyWithError(ctx, msg);
    }
    uint64_t bytes, cap = bkr_cap(ctx);
    if (!bkr_within_cap(o->f, cap, &bytes)) {
        RedisModule_DeleteKey(key);
        return bkr_reply_errorf(ctx,
                                "ERR the dumped filter of %llu bytes is over the limit of %llu "
                                "bytes (module argument MAX_BYTES); the key was removed",
                                (unsigned long long)bytes, (unsigned long long)cap);
    }
    if (!bkr_within_cap(o->f, bkr_config.max_bytes, &bytes))
        RedisModule_Log(ctx, "notice",
                        "bloomkit: restored a %s filter of %llu bytes, over the limit of %llu "
                        "bytes (module argument MAX_BYTES): it is kept whole and answers as "
                        "before, but cannot grow",
                        bkr_family_prefix(family), (unsigned long long)bytes,
                        (unsigned long long)bkr_config.max_bytes);
    bkr_key_pack(key, o);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* A whole RedisBloom chain: RedisBloom takes a chunk with iterator 1 for it
 * as data at offset it - len - 1, as any other (so only an empty one
 * fits), not as a header; bloomkit's own keys answer "item exists". */
static bool rb_whole(RedisModuleKey *key, bkr_family_t family)
{
    if (family != BKR_BF || RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_MODULE ||
        RedisModule_ModuleTypeGetType(key) != bkr_type_rb)
        return false;
    const bkr_obj_t *o = RedisModule_ModuleTypeGetValue(key);
    return o->f && !o->rb_pending;
}

static int loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
                     bkr_family_t family)
{
    if (argc != 4)
        return RedisModule_WrongArity(ctx);
    long long it;
    if (RedisModule_StringToLongLong(argv[2], &it) != REDISMODULE_OK)
        return refuse(ctx, "ERR Second argument must be numeric");
    size_t len;
    const char *buf = RedisModule_StringPtrLen(argv[3], &len);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_obj_t *found;
    if (it < 1) /* RedisBloom 2.8's answers: the key first, then the data */
        refuse(ctx, RedisModule_KeyType(key) == REDISMODULE_KEYTYPE_EMPTY ? "ERR not found"
                    : bkr_lookup(key, family, &found) == BKR_WRONGTYPE
                        ? REDISMODULE_ERRORMSG_WRONGTYPE
                        : "ERR received bad data");
    else if (it == 1 && !rb_whole(key, family))
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

int bkr_cmd_wbf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return loadchunk(ctx, argv, argc, BKR_WBF);
}

/* ---- AOF rewrite ---- */

/* One piece of the rewrite, read from the object and emitted (Redis copies
 * it into the AOF): the rewrite child needs this much memory beyond Redis'
 * own, whatever the filter's size. */
static uint8_t rewrite_piece[BKR_PIECE_BYTES];

void bkr_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    bkr_obj_t *o = bkr_resolve(value, NULL);
    if (!o) { /* no memory for a packed value's view */
        bkr_save_failed(aof);
        return;
    }
    const char *cmd = bkr_family(o->family)->loadchunk;
    uint64_t total = bkr_obj_total(o);
    uint64_t have = o->f ? total : bk_filter_loader_received(o->load);
    uint8_t h[HDR_LEN];
    put_header(h, o->family, total);
    RedisModule_EmitAOF(aof, cmd, "slb", key, 1LL, (const char *)h, (size_t)HDR_LEN);
    for (uint64_t off = 0; off < have;) {
        size_t n = (size_t)(have - off < sizeof rewrite_piece ? have - off : sizeof rewrite_piece);
        if (!bkr_obj_read(o, off, rewrite_piece, n)) /* cannot happen short of a bug */
            bkr_save_failed(aof);
        RedisModule_EmitAOF(aof, cmd, "slb", key, (long long)(off + n + 1),
                            (const char *)rewrite_piece, n);
        off += n;
    }
    bkr_release(o);
}
