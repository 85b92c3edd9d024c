/*
 * RedisBloom's data, taken over unchanged: its Bloom filter type
 * (MBbloom--, RDB encoding versions 0 to 4), its SCANDUMP chunks in
 * BF.SCANDUMP / BF.LOADCHUNK and the AOF, and its cuckoo filter type
 * (MBbloomCF), which every CF key has (cmd_cf.c: the library's cuckoo
 * filter in RedisBloom's flavour, so CF keys move both ways).
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
 *   CF.SCANDUMP header (iterator 1): packed little-endian u64 items,
 *     buckets, deletes, filters, u16 bucket size, max iterations,
 *     expansion (38 bytes); then the sub-filters' bytes as for BF.
 */
#define _GNU_SOURCE
#include "redisbloom.h"
#include "stats.h"
#include "config.h"
#include "obj.h"
#include "value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* RedisBloom's encoding versions: options from 2, growth from 4; 4 is
 * what it writes, and what we write for its keys. */
#define RB_ENCVER 4
#define RB_HDR 20u
#define RB_LINK 53u
/* The most links an RDB may give a chain: more than either module can
 * make (each link's error is half the one before, RedisBloom's
 * tightening, and a double below 1 halves to 0 within 1,075 steps: a
 * capacity of 1 at 0.0001 with EXPANSION 1 stops at 1,010 links here,
 * 1,061 in RedisBloom), while bounding what a hostile RESTORE payload
 * makes us allocate before its links are read. RedisBloom 2.8.20's own
 * load has no bound. */
#define RB_MAX_LINKS 2048u

/* A key restored by LOADCHUNK whose last chunk had not arrived when it was
 * saved: bit 32 of the BF options and of the CF max-iterations, fields
 * RedisBloom keeps in 32 and 16 bits (so it drops the bit and loads the
 * key as RedisBloom would have). Loaded here, the key refuses queries
 * until a header chunk starts its restore over: its missing bits would
 * answer "absent" for items that were added. */
#define RB_HALF_RESTORED (UINT64_C(1) << 32)

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
 * text for what it refuses, or the cap's). The links' bytes are summed
 * and held to `cap` before anything is allocated: a hostile header cannot
 * make the server allocate what the cap refuses. */
static bk_filter_t *chain_from_header(const uint8_t *h, size_t len, uint64_t cap,
                                      const char **why)
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
    uint64_t total = 0;
    for (uint32_t i = 0; i < c.links && ok; i++) {
        ok = links[i].bits / 8 <= UINT64_MAX - total;
        total += ok ? links[i].bits / 8 : 0;
    }
    if (ok && total > cap) {
        *why = "ERR the dumped filter is over the limit of the module argument MAX_BYTES";
        ok = false;
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
    bk_filter_t *f = chain_from_header((const uint8_t *)buf, len, bkr_cap(ctx), &why);
    if (!f)
        return why;
    bkr_obj_t *o = bkr_obj_new(BKR_BF, f, mark);
    /* A header that counts no items describes a filter with nothing
     * added: the key is whole and serves commands now, as RedisBloom's
     * does, and its dump's chunks are still taken (bkr_rb_load_chunk:
     * each may set bits, none clear one). */
    o->rb_pending = bk_filter_items(f) ? bk_redisbloom_bytes(f) : 0;
    RedisModule_ModuleTypeSetValue(key, bkr_type_rb, o);
    return NULL;
}

const char *bkr_rb_load_chunk(bkr_obj_t *o, long long it, const char *buf, size_t len,
                              bool *broken)
{
    *broken = false;
    /* RedisBloom's checks and replies, in its order (its
     * SBChain_LoadEncodedChunk): the chunk's end is it - 1, its start
     * it - len - 1. */
    if ((uint64_t)it < len)
        return "ERR received bad data";
    uint64_t total = bk_redisbloom_bytes(o->f), off = (uint64_t)it - len - 1;
    if ((uint64_t)it == len || off >= total)
        return "ERR invalid offset - no link found";
    if (!o->rb_pending) {
        const void *have = NULL;
        uint64_t n = 0;
        if (len > 0 && (bk_redisbloom_read(o->f, off, len, &have, &n) != BK_OK || n < len))
            return "ERR invalid chunk - Too big for current filter";
        /* RedisBloom writes it over the filter's bits and answers OK. So
         * does bloomkit where the chunk holds every bit set there (a dump
         * sent again, the rest of an empty filter's dump, a newer copy):
         * the write loses nothing. One that would clear a set bit, an item
         * added, is refused, changing nothing, in RedisBloom's words for
         * data it does not take (the key is RedisBloom's, byte for byte). */
        const uint8_t *now = have, *in = (const uint8_t *)buf;
        for (size_t i = 0; i < len; i++)
            if (now[i] & ~in[i])
                return "ERR received bad data";
        return len == 0 || bk_redisbloom_write(o->f, off, buf, len, NULL) == BK_OK
                   ? NULL
                   : "ERR invalid chunk - Too big for current filter";
    }
    /* RedisBloom takes any chunk anywhere and answers OK; a chunk left
     * out, cut short or sent empty then leaves zeroed bits that answer
     * "absent" for added items. The sizes are known: chunks must arrive
     * whole and in order. */
    if (o->rb_pending == BKR_RB_RESTART) {
        *broken = true;
        return "the restore was cut short by a restart";
    }
    if (len == 0 || off != total - o->rb_pending) {
        *broken = true;
        return "chunk out of order (one missing, short or empty)";
    }
    /* writes nothing when it fails; the chunk never runs past the end */
    if (bk_redisbloom_write(o->f, off, buf, len, NULL) != BK_OK)
        return "ERR invalid chunk - Too big for current filter";
    o->rb_pending -= len;
    return NULL;
}

uint64_t bkr_rb_received(const bkr_obj_t *o)
{
    return o->rb_pending == BKR_RB_RESTART ? 0 : bk_redisbloom_bytes(o->f) - o->rb_pending;
}

uint64_t bkr_cf_received(const bkr_cf_t *o)
{
    return o->pending == BKR_RB_RESTART ? 0 : bk_cuckoo_bytes(o->c) - o->pending;
}

/* ---- MBbloom-- type callbacks ---- */

/* A load that cannot go on: logged, and NULL (Redis then stops loading). */
static void *refuse_load(RedisModuleIO *io, const char *what)
{
    RedisModule_LogIOError(io, "warning", "bloomkit: refusing a RedisBloom Bloom filter: %s",
                           what);
    return NULL;
}

/* Frees the first n strings of bufs (NULL ones skipped) and bufs. */
static void free_buffers(char **bufs, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (bufs[i])
            RedisModule_Free(bufs[i]);
    RedisModule_Free(bufs);
}

/* Reads n links' fields and bytes (bufs[i]: the caller frees). 0; -1 on
 * an I/O error (Redis reports it); -2 when a link's bytes disagree with
 * its bit count. */
static int load_links(RedisModuleIO *io, int encver, uint32_t n, bk_redisbloom_link_t *l,
                      char **bufs)
{
    for (uint32_t i = 0; i < n; i++) {
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
        if (RedisModule_IsIOError(io) || bufs[i] == NULL)
            return -1;
        if (len * 8 != l[i].bits)
            return -2;
    }
    return 0;
}

static void *rb_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver < 0 || encver > RB_ENCVER)
        return refuse_load(io, "unknown encoding version (RedisBloom newer than 2.x?)");
    bk_redisbloom_chain_t c = {0};
    c.items = RedisModule_LoadUnsigned(io);
    uint64_t links = RedisModule_LoadUnsigned(io);
    uint64_t options = encver >= 2 ? RedisModule_LoadUnsigned(io) : 0;
    c.options = (uint32_t)options;
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
    int got = load_links(io, encver, c.links, l, bufs);
    if (got != 0) {
        free_buffers(bufs, c.links);
        RedisModule_Free(l);
        return got == -2 ? refuse_load(io, "a link's bytes disagree with its bit count") : NULL;
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
    bkr_stats.values_loaded++;
    bkr_obj_t *o = bkr_obj_new(BKR_BF, f, mark);
    if (options & RB_HALF_RESTORED)
        o->rb_pending = BKR_RB_RESTART; /* only a header chunk starts it over */
    return o;
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
    RedisModule_SaveUnsigned(io, c.options | (o->rb_pending ? RB_HALF_RESTORED : 0));
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
    uint64_t n, off = 0, have = bkr_rb_received(o); /* a half restore stays half */
    while (off < have && bk_redisbloom_read(o->f, off, BKR_PIECE_BYTES, &bytes, &n) == BK_OK && n) {
        if (n > have - off)
            n = have - off;
        RedisModule_EmitAOF(aof, "BF.LOADCHUNK", "slb", key, (long long)(off + n + 1),
                            (const char *)bytes, (size_t)n);
        off += n;
    }
}

/* ---- MBbloomCF: cuckoo filters ---- */


static void *rbcf_refuse(RedisModuleIO *io, const char *what)
{
    RedisModule_LogIOError(io, "warning", "bloomkit: refusing a RedisBloom cuckoo filter: %s",
                           what);
    return NULL;
}

static void *rbcf_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver < 0 || encver > RB_ENCVER)
        return rbcf_refuse(io, "unknown encoding version (RedisBloom newer than 2.x?)");
    bk_cuckoo_fields_t f = {0};
    uint64_t filters = RedisModule_LoadUnsigned(io);
    f.buckets = RedisModule_LoadUnsigned(io);
    f.items = RedisModule_LoadUnsigned(io);
    /* Before version 4: no deletes, bucket size 2, 20 iterations,
     * expansion 1, and every sub-filter of the first's size. */
    f.bucket_size = 2;
    f.max_iterations = 20;
    f.expansion = 1;
    uint64_t max_iterations = 20;
    if (encver >= 4) {
        f.deletes = RedisModule_LoadUnsigned(io);
        f.bucket_size = (uint32_t)RedisModule_LoadUnsigned(io);
        max_iterations = RedisModule_LoadUnsigned(io);
        f.max_iterations = (uint32_t)max_iterations;
        f.expansion = (uint32_t)RedisModule_LoadUnsigned(io);
    }
    if (RedisModule_IsIOError(io))
        return NULL;
    if (filters == 0 || filters > 65535) /* RedisBloom's count is 16 bits */
        return rbcf_refuse(io, "its sub-filter count is out of range");
    f.filters = (uint32_t)filters;
    uint64_t *sub_buckets = RedisModule_Alloc(filters * sizeof *sub_buckets);
    char **bufs = RedisModule_Alloc(filters * sizeof *bufs);
    size_t *lens = RedisModule_Alloc(filters * sizeof *lens);
    memset(bufs, 0, filters * sizeof *bufs);
    bool ok = true;
    for (uint64_t i = 0; i < filters && ok; i++) {
        sub_buckets[i] = encver >= 4 ? RedisModule_LoadUnsigned(io) : f.buckets;
        bufs[i] = RedisModule_LoadStringBuffer(io, &lens[i]);
        ok = !RedisModule_IsIOError(io) && bufs[i] != NULL;
    }
    /* Each string must be its sub-filter's size before any is allocated:
     * the strings are what the input really holds. */
    bk_status_t st = ok ? BK_OK : BK_EIO;
    const char *why = NULL;
    for (uint64_t i = 0; i < filters && st == BK_OK; i++)
        if (f.bucket_size == 0 || lens[i] / f.bucket_size != sub_buckets[i] ||
            lens[i] % f.bucket_size) {
            st = BK_ECORRUPT;
            why = "a sub-filter's bytes disagree with its bucket count";
        }
    uint64_t mark = bkr_lib_bytes();
    bk_cuckoo_t *c = NULL;
    if (st == BK_OK)
        st = bk_cuckoo_restore(&c, &f, sub_buckets, &why);
    uint64_t off = 0;
    for (uint64_t i = 0; i < filters && st == BK_OK; i++) {
        st = bk_cuckoo_write(c, off, bufs[i], lens[i]);
        off += lens[i];
    }
    free_buffers(bufs, filters);
    RedisModule_Free(lens);
    RedisModule_Free(sub_buckets);
    if (st != BK_OK) {
        bk_cuckoo_free(c);
        if (st == BK_EIO)
            return NULL; /* Redis reports its I/O error */
        char msg[200];
        snprintf(msg, sizeof msg, "%s%s%s", bk_strerror(st), why ? ": " : "", why ? why : "");
        return rbcf_refuse(io, msg);
    }
    bkr_stats.values_loaded++;
    if (!(max_iterations & RB_HALF_RESTORED))
        return bkr_cf_value(&c, mark); /* compact when it can be */
    bkr_cf_t *o = bkr_cf_new(c, mark);
    o->pending = BKR_RB_RESTART; /* only a header chunk starts it over */
    return o;
}

static void rbcf_rdb_save(RedisModuleIO *io, void *value)
{
    const bkr_cf_t *o = bkr_cf_resolve(value, NULL);
    if (!o) {
        bkr_save_failed(io);
        return;
    }
    bk_cuckoo_fields_t f;
    bk_cuckoo_fields(o->c, &f);
    RedisModule_SaveUnsigned(io, f.filters);
    RedisModule_SaveUnsigned(io, f.buckets);
    RedisModule_SaveUnsigned(io, f.items);
    RedisModule_SaveUnsigned(io, f.deletes);
    RedisModule_SaveUnsigned(io, f.bucket_size);
    RedisModule_SaveUnsigned(io, f.max_iterations | (o->pending ? RB_HALF_RESTORED : 0));
    RedisModule_SaveUnsigned(io, f.expansion);
    uint64_t off = 0;
    for (uint32_t i = 0; i < f.filters; i++) {
        const void *bytes = NULL;
        uint64_t n = 0;
        bk_cuckoo_read(o->c, off, UINT64_MAX, &bytes, &n);
        RedisModule_SaveUnsigned(io, bk_cuckoo_sub_buckets(o->c, i));
        RedisModule_SaveStringBuffer(io, bytes, (size_t)n);
        off += n;
    }
    bkr_cf_release(o);
}

size_t bkr_cf_header(const bk_cuckoo_t *c, uint8_t out[BKR_CF_HEADER])
{
    bk_cuckoo_fields_t f;
    bk_cuckoo_fields(c, &f);
    put_le(out, f.items, 8);
    put_le(out + 8, f.buckets, 8);
    put_le(out + 16, f.deletes, 8);
    put_le(out + 24, f.filters, 8);
    put_le(out + 32, f.bucket_size, 2);
    put_le(out + 34, f.max_iterations, 2);
    put_le(out + 36, f.expansion, 2);
    return BKR_CF_HEADER;
}

const char *bkr_cf_from_header(const char *buf, size_t len, uint64_t cap, bk_cuckoo_t **out)
{
    const uint8_t *h = (const uint8_t *)buf;
    *out = NULL;
    if (len != BKR_CF_HEADER)
        return "Invalid header";
    uint64_t filters = get_le(h + 24, 8);
    bk_cuckoo_fields_t f = {get_le(h + 8, 8),
                            get_le(h, 8),
                            get_le(h + 16, 8),
                            filters > 65535 ? 0 : (uint32_t)filters,
                            (uint32_t)get_le(h + 32, 2),
                            (uint32_t)get_le(h + 34, 2),
                            (uint32_t)get_le(h + 36, 2)};
    /* The sub-filters' bytes, held to the cap before anything is made. */
    uint64_t total = 0, nb = f.buckets;
    for (uint32_t i = 0; i < f.filters; i++) {
        if (f.bucket_size && nb > (cap - total) / f.bucket_size)
            return "ERR the dumped filter is over the limit of the module argument MAX_BYTES";
        total += nb * f.bucket_size;
        if (f.expansion > 1)
            nb = nb > UINT64_MAX / f.expansion ? UINT64_MAX : nb * f.expansion;
    }
    return bk_cuckoo_restore(out, &f, NULL, NULL) == BK_OK ? NULL : "Couldn't create filter!";
}

static void rbcf_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    const bkr_cf_t *o = bkr_cf_resolve(value, NULL);
    if (!o) {
        bkr_save_failed(aof);
        return;
    }
    uint8_t h[BKR_CF_HEADER];
    bkr_cf_header(o->c, h);
    RedisModule_EmitAOF(aof, "CF.LOADCHUNK", "slb", key, 1LL, (const char *)h, sizeof h);
    const void *bytes;
    uint64_t n, off = 0, have = bkr_cf_received(o); /* a half restore stays half */
    while (off < have && bk_cuckoo_read(o->c, off, BKR_PIECE_BYTES, &bytes, &n) == BK_OK && n) {
        if (n > have - off)
            n = have - off;
        RedisModule_EmitAOF(aof, "CF.LOADCHUNK", "slb", key, (long long)(off + n + 1),
                            (const char *)bytes, (size_t)n);
        off += n;
    }
    bkr_cf_release(o);
}

/* Active defragmentation of a CF value: its object, then the library's
 * blocks of the filter (bk_cuckoo_defrag). */
static int rbcf_defrag(RedisModuleDefragCtx *ctx, RedisModuleString *key, void **value)
{
    (void)key;
    if (bkr_cf_is_compact(*value)) {
        bkr_cf_compact_defrag(ctx, value);
        return 0;
    }
    bkr_cf_t *o = *value, *moved = bkr_defrag_move(ctx, o);
    if (moved)
        *value = o = moved;
    if (o->c)
        (void)bk_cuckoo_defrag(&o->c, bkr_defrag_move, ctx);
    return 0;
}

static size_t rbcf_mem_usage(const void *value)
{
    if (bkr_cf_is_compact(value))
        return bkr_cf_compact_mem(value);
    const bkr_cf_t *o = value;
    return sizeof *o + (size_t)o->heap;
}

static void *rbcf_copy(RedisModuleString *from, RedisModuleString *to, const void *value)
{
    (void)from;
    (void)to;
    if (bkr_cf_is_compact(value))
        return bkr_cf_compact_copy(value);
    const bkr_cf_t *o = value;
    uint8_t h[BKR_CF_HEADER];
    bkr_cf_header(o->c, h);
    uint64_t mark = bkr_lib_bytes();
    bk_cuckoo_t *c;
    if (bkr_cf_from_header((const char *)h, sizeof h, UINT64_MAX, &c))
        return NULL;
    const void *bytes;
    uint64_t n, off = 0;
    while (bk_cuckoo_read(o->c, off, UINT64_MAX, &bytes, &n) == BK_OK && n) {
        bk_cuckoo_write(c, off, bytes, n);
        off += n;
    }
    bkr_cf_t *copy = bkr_cf_new(c, mark);
    copy->pending = o->pending; /* a copy of a half restore is one too */
    return copy;
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
    tm.aof_rewrite = rbcf_aof_rewrite;
    tm.free = bkr_cf_free;
    tm.mem_usage = rbcf_mem_usage;
    tm.copy = rbcf_copy;
    tm.defrag = rbcf_defrag;
    bkr_type_rbcf = RedisModule_CreateDataType(ctx, "MBbloomCF", RB_ENCVER, &tm);
    return bkr_type_rb && bkr_type_rbcf ? REDISMODULE_OK : REDISMODULE_ERR;
}
