/*
 * RedisBloom's data, taken over unchanged: its Bloom filter type
 * (MBbloom--, RDB encoding versions 0 to 4), its SCANDUMP chunks in
 * BF.SCANDUMP / BF.LOADCHUNK and the AOF, and its cuckoo filter type
 * (MBbloomCF), which is kept as stored until bloomkit serves CF commands.
 *
 * A key of type MBbloom-- holds a BF object whose filter is a RedisBloom
 * chain (the library's bk_redisbloom_*: RedisBloom's bits, probes, hash
 * and growth), so it answers every key as RedisBloom did, false positives
 * included, and every BF command works on it. It stays in RedisBloom's
 * encodings: RDB values as RedisBloom 2.x writes them (encoding version
 * 4), AOF rewrites and SCANDUMP as RedisBloom's chunks, so a server can go
 * back to RedisBloom with these keys (bloomkit's own keys do not load
 * there). New keys are always bloomkit's own type.
 *
 * The encodings (facts from RedisBloom's source; docs/FORMAT.md,
 * "RedisBloom chains", is the spec):
 *   RDB value: unsigned items, links, options (version >= 2), growth
 *     (version >= 4, else 2); per link: unsigned entries, double error,
 *     unsigned hashes, double bpe, then (version >= 1) unsigned bits and
 *     unsigned n2, a string of the link's bytes, unsigned items.
 *   SCANDUMP header (iterator 1): packed little-endian u64 items, u32
 *     links, u32 options, u32 growth, then per link u64 bytes, u64 bits,
 *     u64 items, f64 error, f64 bpe, u32 hashes, u64 entries, u8 n2.
 *   Data chunks: the links' bytes, oldest first, never crossing a link;
 *     the iterator after a chunk is 1 + the offset of its end.
 *   MBbloomCF value: unsigned filters, buckets, items, deletes,
 *     bucket size, max iterations, expansion (the last four from version
 *     4); per filter: unsigned buckets (version 4), a string of its bytes.
 */
#define _GNU_SOURCE
#include "module.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

RedisModuleType *bkr_type_rb;
RedisModuleType *bkr_type_rbcf;

/* RedisBloom's encoding versions: options from 2, growth from 4; 4 is
 * what it writes, and what we write for its keys. */
#define RB_ENCVER 4
#define RB_HDR 20u
#define RB_LINK 53u
/* RedisBloom loads at most this many links from an RDB (its own check). */
#define RB_MAX_LINKS 1000u

/* ---- little-endian packing of the SCANDUMP header ---- */

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static double get_f64(const uint8_t *p)
{
    uint64_t v = get_le(p, 8);
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

static void put_f64(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_le(p, v, 8);
}

/* RedisBloom's own check of a link (its bloom_validate_integrity): the
 * hash count follows from bpe with its rounded ln 2. */
static bool link_as_redisbloom_checks(const bk_redisbloom_link_t *l)
{
    return l->hashes == (uint32_t)ceil(0.693147180559945 * l->bpe);
}

/* A header chunk as a new chain: NULL with *why set (RedisBloom's reply
 * text for what it refuses) */
static bk_filter_t *chain_from_header(const uint8_t *h, size_t len, const char **why)
{
    *why = "ERR received bad data";
    if (len < RB_HDR)
        return NULL;
    bk_redisbloom_chain_t c = {get_le(h, 8), (uint32_t)get_le(h + 8, 4),
                               (uint32_t)get_le(h + 12, 4), (uint32_t)get_le(h + 16, 4)};
    if (c.links == 0 || len != RB_HDR + (uint64_t)RB_LINK * c.links)
        return NULL;
    bk_redisbloom_link_t *links = RedisModule_Alloc(c.links * sizeof *links);
    bool ok = true;
    for (uint32_t i = 0; i < c.links && ok; i++) {
        const uint8_t *e = h + RB_HDR + (size_t)RB_LINK * i;
        bk_redisbloom_link_t *l = &links[i];
        l->bits = get_le(e + 8, 8);
        l->items = get_le(e + 16, 8);
        l->error = get_f64(e + 24);
        l->bpe = get_f64(e + 32);
        l->hashes = (uint32_t)get_le(e + 40, 4);
        l->entries = get_le(e + 44, 8);
        l->n2 = e[52];
        ok = get_le(e, 8) <= UINT64_MAX / 8 && get_le(e, 8) * 8 == l->bits &&
             link_as_redisbloom_checks(l);
    }
    bk_filter_t *f = NULL;
    const char *lib_why = NULL;
    if (ok && bk_redisbloom_new(&f, &c, links, &lib_why) != BK_OK)
        f = NULL;
    RedisModule_Free(links);
    return f;
}

/* The SCANDUMP header of a chain, in a buffer the caller frees. */
static uint8_t *header_of(const bk_filter_t *f, size_t *len)
{
    bk_redisbloom_chain_t c;
    if (bk_redisbloom_chain(f, &c) != BK_OK)
        return NULL;
    *len = RB_HDR + (size_t)RB_LINK * c.links;
    uint8_t *h = RedisModule_Alloc(*len);
    put_le(h, c.items, 8);
    put_le(h + 8, c.links, 4);
    put_le(h + 12, c.options, 4);
    put_le(h + 16, c.growth, 4);
    for (uint32_t i = 0; i < c.links; i++) {
        bk_redisbloom_link_t l;
        bk_redisbloom_link(f, i, &l);
        uint8_t *e = h + RB_HDR + (size_t)RB_LINK * i;
        put_le(e, l.bits / 8, 8);
        put_le(e + 8, l.bits, 8);
        put_le(e + 16, l.items, 8);
        put_f64(e + 24, l.error);
        put_f64(e + 32, l.bpe);
        put_le(e + 40, l.hashes, 4);
        put_le(e + 44, l.entries, 8);
        e[52] = (uint8_t)l.n2;
    }
    return h;
}

/* ---- BF.SCANDUMP / BF.LOADCHUNK on RedisBloom chains ---- */

int bkr_rb_scandump(RedisModuleCtx *ctx, const bkr_obj_t *o, long long it)
{
    if (it == 0) {
        size_t len;
        uint8_t *h = header_of(o->f, &len);
        if (!h)
            return RedisModule_ReplyWithError(ctx, "ERR could not read the filter");
        RedisModule_ReplyWithArray(ctx, 2);
        RedisModule_ReplyWithLongLong(ctx, 1);
        RedisModule_ReplyWithStringBuffer(ctx, (const char *)h, len);
        RedisModule_Free(h);
        return REDISMODULE_OK;
    }
    const void *bytes = NULL;
    uint64_t n = 0;
    bk_redisbloom_read(o->f, (uint64_t)it - 1, bkr_config.chunk_bytes, &bytes, &n);
    RedisModule_ReplyWithArray(ctx, 2);
    RedisModule_ReplyWithLongLong(ctx, n ? it + (long long)n : 0);
    return RedisModule_ReplyWithStringBuffer(ctx, n ? bytes : "", (size_t)n);
}

bool bkr_rb_is_header(const char *buf, size_t len)
{
    return len >= RB_HDR && (len - RB_HDR) % RB_LINK == 0 &&
           (len - RB_HDR) / RB_LINK == get_le((const uint8_t *)buf + 8, 4);
}

const char *bkr_rb_load_header(RedisModuleCtx *ctx, RedisModuleKey *key, const char *buf,
                               size_t len)
{
    const char *why;
    uint64_t mark = bkr_lib_bytes();
    bk_filter_t *f = chain_from_header((const uint8_t *)buf, len, &why);
    if (!f)
        return why;
    uint64_t bytes, cap = bkr_cap(ctx);
    if (!bkr_within_cap(f, cap, &bytes)) {
        bk_filter_free(f);
        return "ERR the dumped filter is over the limit of the module argument MAX_BYTES";
    }
    bkr_obj_t *o = bkr_obj_new(BKR_BF, f, mark);
    RedisModule_ModuleTypeSetValue(key, bkr_type_rb, o);
    return NULL;
}

const char *bkr_rb_load_chunk(bkr_obj_t *o, long long it, const char *buf, size_t len)
{
    /* RedisBloom's checks and replies (its SBChain_LoadEncodedChunk). */
    if ((uint64_t)it < len + 1)
        return "ERR received bad data";
    uint64_t off = (uint64_t)it - len - 1;
    if (off >= bk_redisbloom_bytes(o->f))
        return "ERR invalid offset - no link found";
    if (bk_redisbloom_write(o->f, off, buf, len, NULL) != BK_OK)
        return "ERR invalid chunk - Too big for current filter";
    return NULL;
}

/* ---- MBbloom-- type callbacks ---- */

/* A load that cannot go on: logged, and NULL (Redis then stops loading). */
static void *refuse_load(RedisModuleIO *io, const char *what)
{
    RedisModule_LogIOError(io, "warning", "bloomkit: refusing a RedisBloom Bloom filter: %s",
                           what);
    return NULL;
}

static void free_buffers(char **bufs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (bufs[i])
            RedisModule_Free(bufs[i]);
    RedisModule_Free(bufs);
}

static void *rb_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver < 0 || encver > RB_ENCVER)
        return refuse_load(io, "unknown encoding version (RedisBloom newer than 2.x?)");
    bk_redisbloom_chain_t c = {0};
    c.items = RedisModule_LoadUnsigned(io);
    uint64_t links = RedisModule_LoadUnsigned(io);
    c.options = encver >= 2 ? (uint32_t)RedisModule_LoadUnsigned(io) : 0;
    uint64_t growth = encver >= 4 ? RedisModule_LoadUnsigned(io) : 2;
    if (RedisModule_IsIOError(io))
        return NULL;
    if (links == 0 || links > RB_MAX_LINKS || growth == 0 || growth > UINT32_MAX)
        return refuse_load(io, "its link count or growth is out of range");
    c.links = (uint32_t)links;
    c.growth = (uint32_t)growth;
    bk_redisbloom_link_t *l = RedisModule_Alloc(c.links * sizeof *l);
    char **bufs = RedisModule_Alloc(c.links * sizeof *bufs);
    memset(bufs, 0, c.links * sizeof *bufs);
    /* The links' bytes are read first, then copied into the chain: its
     * links can only be made once every one is known. */
    bool ok = true;
    for (uint32_t i = 0; i < c.links && ok; i++) {
        l[i].entries = RedisModule_LoadUnsigned(io);
        l[i].error = RedisModule_LoadDouble(io);
        l[i].hashes = (uint32_t)RedisModule_LoadUnsigned(io);
        l[i].bpe = RedisModule_LoadDouble(io);
        if (encver == 0) {
            l[i].bits = (uint64_t)((double)l[i].entries * l[i].bpe);
            l[i].n2 = 0;
        } else {
            l[i].bits = RedisModule_LoadUnsigned(io);
            l[i].n2 = (uint32_t)RedisModule_LoadUnsigned(io);
        }
        size_t len = 0;
        bufs[i] = RedisModule_LoadStringBuffer(io, &len);
        l[i].items = RedisModule_LoadUnsigned(io);
        ok = !RedisModule_IsIOError(io) && bufs[i] != NULL;
        if (ok && len * 8 != l[i].bits) {
            free_buffers(bufs, c.links);
            RedisModule_Free(l);
            return refuse_load(io, "a link's bytes disagree with its bit count");
        }
    }
    if (!ok) {
        free_buffers(bufs, c.links);
        RedisModule_Free(l);
        return NULL;
    }
    uint64_t mark = bkr_lib_bytes();
    bk_filter_t *f = NULL;
    const char *why = NULL;
    bk_status_t st = bk_redisbloom_new(&f, &c, l, &why);
    uint64_t off = 0;
    for (uint32_t i = 0; i < c.links && st == BK_OK; i++) {
        st = bk_redisbloom_write(f, off, bufs[i], l[i].bits / 8, &why);
        off += l[i].bits / 8;
    }
    free_buffers(bufs, c.links);
    RedisModule_Free(l);
    if (st != BK_OK) {
        bk_filter_free(f);
        char msg[200];
        snprintf(msg, sizeof msg, "%s%s%s", bk_strerror(st), why ? ": " : "", why ? why : "");
        return refuse_load(io, msg);
    }
    uint64_t bytes;
    if (!bkr_within_cap(f, bkr_config.max_bytes, &bytes)) {
        if (!bkr_loading(RedisModule_GetContextFromIO(io))) {
            bk_filter_free(f);
            return refuse_load(io, "over the limit of the module argument MAX_BYTES");
        }
        RedisModule_LogIOError(io, "notice",
                               "bloomkit: loaded a RedisBloom filter of %llu bytes, over the "
                               "limit of %llu bytes (module argument MAX_BYTES): it is kept "
                               "whole and answers as before, but cannot grow",
                               (unsigned long long)bytes,
                               (unsigned long long)bkr_config.max_bytes);
    }
    return bkr_obj_new(BKR_BF, f, mark);
}

static void rb_rdb_save(RedisModuleIO *io, void *value)
{
    const bkr_obj_t *o = value;
    bk_redisbloom_chain_t c;
    if (!o->f || bk_redisbloom_chain(o->f, &c) != BK_OK) {
        bkr_save_failed(io); /* cannot happen: only chains get this type */
        return;
    }
    RedisModule_SaveUnsigned(io, c.items);
    RedisModule_SaveUnsigned(io, c.links);
    RedisModule_SaveUnsigned(io, c.options);
    RedisModule_SaveUnsigned(io, c.growth);
    uint64_t off = 0;
    for (uint32_t i = 0; i < c.links; i++) {
        bk_redisbloom_link_t l;
        const void *bytes = NULL;
        uint64_t n = 0;
        bk_redisbloom_link(o->f, i, &l);
        bk_redisbloom_read(o->f, off, UINT64_MAX, &bytes, &n);
        if (n != l.bits / 8)
            bkr_save_failed(io);
        RedisModule_SaveUnsigned(io, l.entries);
        RedisModule_SaveDouble(io, l.error);
        RedisModule_SaveUnsigned(io, l.hashes);
        RedisModule_SaveDouble(io, l.bpe);
        RedisModule_SaveUnsigned(io, l.bits);
        RedisModule_SaveUnsigned(io, l.n2);
        /* The link's bytes straight from the filter: no copy. */
        RedisModule_SaveStringBuffer(io, bytes, (size_t)n);
        RedisModule_SaveUnsigned(io, l.items);
        off += n;
    }
}

static void rb_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    const bkr_obj_t *o = value;
    size_t len;
    uint8_t *h = header_of(o->f, &len);
    if (!h) {
        bkr_save_failed(aof);
        return;
    }
    RedisModule_EmitAOF(aof, "BF.LOADCHUNK", "slb", key, 1LL, (const char *)h, len);
    RedisModule_Free(h);
    const void *bytes;
    uint64_t n, off = 0;
    while (bk_redisbloom_read(o->f, off, BKR_PIECE_BYTES, &bytes, &n) == BK_OK && n) {
        RedisModule_EmitAOF(aof, "BF.LOADCHUNK", "slb", key, (long long)(off + n + 1),
                            (const char *)bytes, (size_t)n);
        off += n;
    }
}

/* ---- MBbloomCF: kept as stored ---- */

/* A RedisBloom cuckoo filter as its RDB value holds it: the fields and
 * each filter's bytes, saved back exactly. */
typedef struct rb_cuckoo {
    uint64_t fields[7]; /* filters, buckets, items, deletes, bucket size,
                           max iterations, expansion */
    uint64_t *buckets;  /* per filter */
    char **data;        /* per filter, from RedisModule_LoadStringBuffer */
    size_t *len;
    size_t bytes;
} rb_cuckoo_t;

static void rbcf_free(void *value)
{
    rb_cuckoo_t *cf = value;
    if (!cf)
        return;
    for (uint64_t i = 0; cf->data && i < cf->fields[0]; i++)
        if (cf->data[i])
            RedisModule_Free(cf->data[i]);
    RedisModule_Free(cf->data);
    RedisModule_Free(cf->buckets);
    RedisModule_Free(cf->len);
    RedisModule_Free(cf);
}

static void *rbcf_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver < 0 || encver > RB_ENCVER) {
        RedisModule_LogIOError(io, "warning",
                               "bloomkit: refusing a RedisBloom cuckoo filter: unknown encoding "
                               "version %d",
                               encver);
        return NULL;
    }
    static bool told;
    if (!told)
        RedisModule_LogIOError(io, "notice",
                               "bloomkit: RedisBloom cuckoo filters (CF keys) are kept exactly "
                               "as stored and saved back unchanged, but bloomkit does not "
                               "answer CF commands yet");
    told = true;
    rb_cuckoo_t *cf = RedisModule_Alloc(sizeof *cf);
    memset(cf, 0, sizeof *cf);
    int nfields = encver >= 4 ? 7 : 3;
    for (int i = 0; i < nfields; i++)
        cf->fields[i] = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io) || cf->fields[0] == 0 || cf->fields[0] > 65536) {
        RedisModule_Free(cf);
        RedisModule_LogIOError(io, "warning", "bloomkit: refusing a RedisBloom cuckoo filter");
        return NULL;
    }
    uint64_t n = cf->fields[0];
    cf->buckets = RedisModule_Alloc(n * sizeof *cf->buckets);
    cf->data = RedisModule_Alloc(n * sizeof *cf->data);
    cf->len = RedisModule_Alloc(n * sizeof *cf->len);
    memset(cf->data, 0, n * sizeof *cf->data);
    for (uint64_t i = 0; i < n; i++) {
        cf->buckets[i] = encver >= 4 ? RedisModule_LoadUnsigned(io) : cf->fields[1];
        cf->data[i] = RedisModule_LoadStringBuffer(io, &cf->len[i]);
        if (RedisModule_IsIOError(io) || !cf->data[i]) {
            rbcf_free(cf);
            return NULL;
        }
        cf->bytes += cf->len[i];
    }
    cf->fields[0] = n;
    /* Older versions lacked the last four fields: written back as 4. */
    if (encver < 4) {
        cf->fields[3] = 0;
        cf->fields[4] = 2;
        cf->fields[5] = 20;
        cf->fields[6] = 1;
    }
    return cf;
}

static void rbcf_rdb_save(RedisModuleIO *io, void *value)
{
    const rb_cuckoo_t *cf = value;
    for (int i = 0; i < 7; i++)
        RedisModule_SaveUnsigned(io, cf->fields[i]);
    for (uint64_t i = 0; i < cf->fields[0]; i++) {
        RedisModule_SaveUnsigned(io, cf->buckets[i]);
        RedisModule_SaveStringBuffer(io, cf->data[i], cf->len[i]);
    }
}

static size_t rbcf_mem_usage(const void *value)
{
    const rb_cuckoo_t *cf = value;
    return sizeof *cf + cf->bytes + cf->fields[0] * (sizeof(char *) + 2 * sizeof(uint64_t));
}

int bkr_rb_register(RedisModuleCtx *ctx)
{
    RedisModuleTypeMethods tm;
    bkr_type_methods(&tm, BKR_BF); /* free, MEMORY USAGE, COPY: a BF object's */
    tm.rdb_load = rb_rdb_load;
    tm.rdb_save = rb_rdb_save;
    tm.aof_rewrite = rb_aof_rewrite;
    /* RedisBloom's type names: an RDB names the type of each value. */
    bkr_type_rb = RedisModule_CreateDataType(ctx, "MBbloom--", RB_ENCVER, &tm);
    memset(&tm, 0, sizeof tm);
    tm.version = REDISMODULE_TYPE_METHOD_VERSION;
    tm.rdb_load = rbcf_rdb_load;
    tm.rdb_save = rbcf_rdb_save;
    tm.free = rbcf_free;
    tm.mem_usage = rbcf_mem_usage;
    bkr_type_rbcf = RedisModule_CreateDataType(ctx, "MBbloomCF", RB_ENCVER, &tm);
    return bkr_type_rb && bkr_type_rbcf ? REDISMODULE_OK : REDISMODULE_ERR;
}
