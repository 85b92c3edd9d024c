/*
 * What the BF and CBF command families share: reserving a key, adding
 * items (one, or many in batches), checking items and counting them. The
 * families differ only in their defaults and their data type, which the
 * bkr_family_t argument carries, so each command handler is a few lines.
 *
 * Adds go through the library's batch call (hash a group, prefetch every
 * target line, then probe) except near the point where a scalable filter
 * grows or a fixed one is full: there items go one at a time, so the
 * MAX_BYTES check and the "full" error land on the right item.
 */
#define _GNU_SOURCE
#include "items.h"
#include "stats.h"
#include "args.h"
#include "argv.h"
#include "config.h"
#include "create.h"
#include "events.h"
#include "obj.h"
#include "reply.h"
#include "value.h"

#include <stdlib.h>
#include <string.h>

/* Items per batch call: a stack array, no allocation per command. */
#define BKR_BATCH 128

int bkr_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, bkr_family_t family,
                const bkr_params_t *p)
{
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, family, &o);
    if (st != BKR_EMPTY) {
        bkr_reply_lookup_error(ctx, st == BKR_LOADING ? BKR_FOUND : st);
        return bkr_done(key);
    }
    if (bkr_create_key_or_reply(ctx, key, argv[1], family, p)) {
        bkr_notify(ctx, argv[0], argv[1]);
        RedisModule_ReplyWithSimpleString(ctx, "OK");
    }
    return bkr_done(key);
}

/* Replies with the error of a failed add. A scaling chain that may not
 * grow says why (the cap, or its length limit), not "non scaling filter
 * is full", RedisBloom's text for a NONSCALING filter. */
static void reply_add_error(RedisModuleCtx *ctx, const bkr_obj_t *o, bk_status_t st)
{
    bk_filter_shape_t s;
    bk_filter_shape(o->f, &s);
    if (st != BK_EFULL || !(bk_kind_caps(s.kind) & BK_CAP_GROW) || s.nonscaling) {
        bkr_reply_status(ctx, st);
        return;
    }
    const char *limit = bkr_growth_check(ctx, o);
    RedisModule_ReplyWithError(ctx, limit ? limit
                                          : "ERR the filter cannot grow any further (it has "
                                            "as many sub-filters as a chain may have)");
}

/* Adds one item and replies with its boolean; false after replying with
 * an error (the size limit, a full filter, memory). known: o's shape as
 * the caller just read it, or NULL: a new item that fits in the newest
 * sub-filter cannot be refused, so the growth check (a second read of the
 * shape) is skipped for it. */
static bool add_one_or_reply(RedisModuleCtx *ctx, bkr_obj_t *o, RedisModuleString *item,
                             bool *was_new, const bk_filter_shape_t *known)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(item, &len);
    *was_new = false;
    bool fits = known && (known->nonscaling || known->newest_items < known->newest_capacity);
    const char *limit = fits ? NULL : bkr_growth_check(ctx, o);
    if (limit) {
        /* An item already present needs no room: answer as usual. */
        if (bk_filter_contains(o->f, s, len)) {
            RedisModule_ReplyWithBool(ctx, 0);
            return true;
        }
        RedisModule_ReplyWithError(ctx, limit);
        return false;
    }
    bk_status_t st = bk_filter_add(o->f, s, len, was_new);
    if (st != BK_OK) {
        reply_add_error(ctx, o, st);
        return false;
    }
    RedisModule_ReplyWithBool(ctx, *was_new);
    return true;
}

/* Adds m (<= BKR_BATCH) items in one library call and replies with their
 * booleans; returns how many were new, or -1 after replying with an
 * error. Called only when bkr_batch_safe() says no item can fail. */
static long add_batch_or_reply(RedisModuleCtx *ctx, bkr_obj_t *o, RedisModuleString **items, int m,
                               bool *answers)
{
    bk_key_t keys[BKR_BATCH] = {{0}};
    bool buf[BKR_BATCH], *was_new = answers ? answers : buf;
    uint64_t n_new = 0;
    for (int j = 0; j < m; j++)
        keys[j].ptr = RedisModule_StringPtrLen(items[j], &keys[j].len);
    bk_status_t st = bk_filter_add_batch(o->f, keys, (size_t)m, was_new, &n_new);
    if (st != BK_OK) { /* not reached: a batch runs only where nothing can fail */
        reply_add_error(ctx, o, st);
        return -1;
    }
    for (int j = 0; j < m; j++)
        RedisModule_ReplyWithBool(ctx, was_new[j]);
    return (long)n_new;
}

/* Adds items and replies (one boolean, or an array ended early by an
 * error); returns how many items were new, and in *done how many were
 * taken before an error (all n without one). */
static long add_items(RedisModuleCtx *ctx, bkr_obj_t *o, RedisModuleString **items, int n,
                      bool multi, int *done, bool *answers, const bk_filter_shape_t *known)
{
    bool was_new;
    /* One item that fits the newest sub-filter (the common BF.ADD): the
     * filter cannot grow, so neither the cap nor the bytes it holds can
     * change; the context's flags (a dozen of the server's states read)
     * are not needed. */
    if (!multi && known && (known->nonscaling || known->newest_items < known->newest_capacity)) {
        bool ok = add_one_or_reply(ctx, o, items[0], &was_new, known);
        *done = ok ? 1 : 0;
        return ok && was_new;
    }
    /* The library holds the cap on growth too: MAX_BYTES for a client,
     * none for a replayed or replicated add, which must rebuild what the
     * filter held (bkr_cap). */
    uint64_t cap = bkr_cap(ctx);
    bk_filter_set_max_bytes(o->f, cap == UINT64_MAX ? 0 : cap);
    uint64_t mark = bkr_lib_bytes(); /* a scalable filter may grow */
    if (!multi) {
        bool ok = add_one_or_reply(ctx, o, items[0], &was_new, known);
        *done = ok ? 1 : 0;
        o->heap += bkr_lib_bytes() - mark;
        return ok && was_new;
    }
    RedisModule_ReplyWithArray(ctx, REDISMODULE_POSTPONED_LEN);
    long replied = 0, added = 0;
    int i = 0;
    while (i < n) {
        int m = n - i < BKR_BATCH ? n - i : BKR_BATCH;
        /* known: o's shape before the first batch (the caller's) */
        if (i == 0 && known ? bkr_batch_safe_shape(known, m) : bkr_batch_safe(o, m)) {
            long got = add_batch_or_reply(ctx, o, items + i, m, answers ? answers + i : NULL);
            replied += got < 0 ? 1 : m;
            if (got < 0)
                break;
            added += got;
            i += m;
            continue;
        }
        replied++;
        if (!add_one_or_reply(ctx, o, items[i], &was_new, NULL))
            break;
        if (answers)
            answers[i] = was_new;
        added += was_new;
        i++;
    }
    RedisModule_ReplySetArrayLength(ctx, replied);
    o->heap += bkr_lib_bytes() - mark;
    *done = i;
    return added;
}

int bkr_add_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bkr_family_t family,
                    const bkr_options_t *o, bool multi)
{
    int first = o->items >= 0 ? o->items : 2;
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_obj_t *obj;
    bkr_lookup_t st = bkr_lookup(key, family, &obj);
    bool created = false;
    bkr_made_t made;
    if (st != BKR_EMPTY && o->create_only) {
        RedisModule_ReplyWithError(ctx, "ERR item exists");
        return bkr_done(key);
    }
    if (st == BKR_EMPTY && !o->nocreate) {
        obj = bkr_create_key_quietly(ctx, key, family, &o->p, &made);
        if (!obj)
            return bkr_done(key);
        created = true;
    } else if (st != BKR_FOUND) {
        bkr_reply_lookup_error(ctx, st);
        return bkr_done(key);
    }
    /* A packed key takes its full form before it may grow (value.c): the
     * chain grows on a new item that finds its newest sub-filter full. */
    bk_filter_shape_t shape;
    bk_filter_shape(obj->f, &shape);
    bool promoted = false;
    if (bkr_is_packed(obj) && !shape.nonscaling &&
        shape.newest_items + (uint64_t)(argc - first) > shape.newest_capacity) {
        promoted = true;
        obj = bkr_promote(key, obj);
        if (!obj) {
            RedisModule_ReplyWithError(ctx, "ERR out of memory growing the filter");
            return bkr_done(key);
        }
    }
    int done = 0;
    long added = add_items(ctx, obj, argv + first, argc - first, multi, &done, o->answers,
                           promoted ? NULL : &shape);
    /* a chain grows only on items past its newest sub-filter's room */
    if (!shape.nonscaling &&
        shape.newest_items + (uint64_t)(argc - first) > shape.newest_capacity) {
        bk_filter_shape_t after;
        bk_filter_shape(obj->f, &after);
        if (after.filters > shape.filters)
            bkr_stats.filters_grown += after.filters - shape.filters;
    }
    bkr_stats.adds_refused += (uint64_t)(argc - first - done);
    /* Replicas and the AOF get the items that were taken, and only those:
     * a replay (which no cap stops, bkr_cap) must not add what the master
     * refused. A key made here goes as one BKI.CREATE with those items
     * (none: the creation alone); otherwise a command that took none is
     * not propagated. */
    if (created && o->create_only && done == argc - first)
        RedisModule_ReplicateVerbatim(ctx); /* a BKI.CREATE with its seed, whole */
    else if (created)
        bkr_replicate_made(ctx, argv[1], &made, argv + first, done);
    else if (o->as_madd && done > 0) /* a claim's adds; its record goes on its own */
        RedisModule_Replicate(ctx, "BF.MADD", "sv", argv[1], argv + first, (size_t)done);
    else if (done == argc - first)
        RedisModule_ReplicateVerbatim(ctx);
    else if (done > 0)
        RedisModule_Replicate(ctx, RedisModule_StringPtrLen(argv[0], NULL), "v", argv + 1,
                              (size_t)(first - 1 + done));
    if (o->done)
        *o->done = done;
    if (created || added > 0)
        bkr_notify(ctx, argv[0], argv[1]);
    return bkr_done(key);
}

int bkr_exists_items(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family,
                     RedisModuleString **items, int n, bool multi)
{
    RedisModuleKey *key = RedisModule_OpenKey(ctx, keyname, REDISMODULE_READ);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, family, &o);
    if (st == BKR_LOADING || st == BKR_NOMEM) {
        /* A key still being restored holds only part of its bits: 0 would
         * say "certainly not added" of items that were. */
        bkr_reply_lookup_error(ctx, st);
        return bkr_done(key);
    }
    if (st != BKR_FOUND)
        o = NULL; /* missing or another type: all false, as RedisBloom answers */
    if (multi)
        RedisModule_ReplyWithArray(ctx, n);
    for (int i = 0; i < n;) {
        int m = n - i < BKR_BATCH ? n - i : BKR_BATCH;
        bk_key_t keys[BKR_BATCH];
        bool found[BKR_BATCH];
        if (o) {
            for (int j = 0; j < m; j++)
                keys[j].ptr = RedisModule_StringPtrLen(items[i + j], &keys[j].len);
            bk_filter_contains_batch(o->f, keys, (size_t)m, found);
        } else {
            memset(found, 0, sizeof found);
        }
        for (int j = 0; j < m; j++)
            RedisModule_ReplyWithBool(ctx, found[j]);
        i += m;
    }
    return bkr_done(key);
}

int bkr_reply_card(RedisModuleCtx *ctx, RedisModuleString *keyname, bkr_family_t family)
{
    RedisModuleKey *key = RedisModule_OpenKey(ctx, keyname, REDISMODULE_READ);
    bkr_obj_t *o;
    bkr_lookup_t st = bkr_lookup(key, family, &o);
    if (st == BKR_EMPTY)
        RedisModule_ReplyWithLongLong(ctx, 0);
    else if (st != BKR_FOUND)
        bkr_reply_lookup_error(ctx, st);
    else
        bkr_reply_u64(ctx, bk_filter_items(o->f));
    return bkr_done(key);
}

/* ---- claims (XX.CLAIM) ---- */

/* The longest a claim's answers are kept: a week. */
#define BKR_CLAIM_MAX_SECONDS 604800
#define BKR_CLAIM_MAX_ID 256
#define CLAIM_MAGIC "BKC1"
/* A claim record: magic, u32 item count, u64 digest of the items, then
 * one bit per item (its answer), little-endian. */
#define CLAIM_HEAD 16

/* The key that keeps a claim's answers: "KEY:claim:ID" when KEY has a
 * hash tag, else "{KEY}:claim:ID", so that it lies in the filter key's
 * cluster slot either way (a key with a '}' but no tag has no such name:
 * *why). NULL without memory or name. */
static RedisModuleString *claim_key(RedisModuleCtx *ctx, RedisModuleString *key,
                                    RedisModuleString *id, const char **why)
{
    size_t kl, il;
    const char *k = RedisModule_StringPtrLen(key, &kl), *i = RedisModule_StringPtrLen(id, &il);
    /* Redis Cluster's rule: the bytes between the first '{' and the first
     * '}' after it, when there are some */
    const char *open = memchr(k, '{', kl);
    const char *close = open ? memchr(open + 1, '}', kl - (size_t)(open + 1 - k)) : NULL;
    bool tagged = close && close > open + 1;
    *why = "ERR out of memory";
    if (!tagged && memchr(k, '}', kl)) {
        *why = "ERR a claim needs a key with a hash tag ({...}) or without '}'";
        return NULL;
    }
    size_t n = kl + il + 7 + (tagged ? 0 : 2);
    char *buf = RedisModule_TryAlloc(n);
    if (!buf)
        return NULL;
    size_t at = 0;
    if (!tagged)
        buf[at++] = '{';
    memcpy(buf + at, k, kl);
    at += kl;
    if (!tagged)
        buf[at++] = '}';
    memcpy(buf + at, ":claim:", 7);
    at += 7;
    memcpy(buf + at, i, il);
    RedisModuleString *out = RedisModule_CreateString(ctx, buf, n);
    RedisModule_Free(buf);
    return out;
}

/* The items' digest: XXH3-64 of each item's length and bytes in turn
 * (the library's key hash over an encoding that keeps items apart). */
static uint64_t claim_digest(RedisModuleString **items, int n)
{
    uint64_t d = (uint64_t)n;
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(items[i], &len);
        bk_hash_t h = bk_hash_key(BK_HASH_XXH3, d ^ (uint64_t)len, p, len);
        d = h.lo ^ (h.hi * UINT64_C(0x9E3779B97F4A7C15));
    }
    return d;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Replies a kept claim's answers; false if the record is not this claim's
 * (another item list under the same id, or not a record at all). */
static bool reply_kept(RedisModuleCtx *ctx, const uint8_t *rec, size_t len, int n,
                       uint64_t digest)
{
    if (len != CLAIM_HEAD + ((size_t)n + 7) / 8 || memcmp(rec, CLAIM_MAGIC, 4) != 0 ||
        (rec[4] | rec[5] << 8 | rec[6] << 16 | (uint32_t)rec[7] << 24) != (uint32_t)n ||
        get64(rec + 8) != digest)
        return false;
    RedisModule_ReplyWithArray(ctx, n);
    for (int i = 0; i < n; i++)
        RedisModule_ReplyWithBool(ctx, (rec[CLAIM_HEAD + i / 8] >> (i % 8)) & 1);
    return true;
}

int bkr_claim(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bkr_family_t family)
{
    if (argc < 5)
        return RedisModule_WrongArity(ctx);
    size_t idlen;
    (void)RedisModule_StringPtrLen(argv[2], &idlen);
    long long secs;
    if (idlen == 0 || idlen > BKR_CLAIM_MAX_ID)
        return RedisModule_ReplyWithError(ctx, "ERR bad claim id (1 to 256 bytes)");
    if (RedisModule_StringToLongLong(argv[3], &secs) != REDISMODULE_OK || secs < 1 ||
        secs > BKR_CLAIM_MAX_SECONDS)
        return RedisModule_ReplyWithError(
            ctx, "ERR bad claim lifetime (seconds, 1 to 604800: a week)");
    int n = argc - 4;
    const char *why;
    RedisModuleString *ck = claim_key(ctx, argv[1], argv[2], &why);
    if (!ck)
        return RedisModule_ReplyWithError(ctx, why);
    uint64_t digest = claim_digest(argv + 4, n);
    RedisModuleKey *rk = RedisModule_OpenKey(ctx, ck, REDISMODULE_READ | REDISMODULE_WRITE);
    int type = RedisModule_KeyType(rk);
    if (type != REDISMODULE_KEYTYPE_EMPTY) {
        /* Claimed before: the answers it got, nothing added again. */
        size_t len = 0;
        const uint8_t *rec = type == REDISMODULE_KEYTYPE_STRING
                                 ? (const uint8_t *)RedisModule_StringDMA(rk, &len, REDISMODULE_READ)
                                 : NULL;
        if (!rec || !reply_kept(ctx, rec, len, n, digest))
            RedisModule_ReplyWithError(ctx, "ERR the claim id was used with other items");
        RedisModule_CloseKey(rk);
        RedisModule_FreeString(ctx, ck);
        return REDISMODULE_OK;
    }
    size_t reclen = CLAIM_HEAD + ((size_t)n + 7) / 8;
    bool *answers = RedisModule_TryAlloc((size_t)n * sizeof *answers);
    uint8_t *rec = RedisModule_TryAlloc(reclen);
    if (!answers || !rec) {
        RedisModule_Free(answers);
        RedisModule_Free(rec);
        RedisModule_CloseKey(rk);
        RedisModule_FreeString(ctx, ck);
        return RedisModule_ReplyWithError(ctx, "ERR out of memory");
    }
    /* The adds, replied and propagated as XX.MADD's; then the answers kept,
     * and propagated as a SET, when every item was taken (a claim ended by
     * an error keeps nothing: its reply said so). */
    int done = 0;
    bkr_options_t o;
    memset(&o, 0, sizeof o);
    o.p = bkr_defaults(family);
    o.items = 4;
    o.as_madd = true;
    o.answers = answers;
    o.done = &done;
    int rc = bkr_add_command(ctx, argv, argc, family, &o, true);
    if (done == n) {
        memcpy(rec, CLAIM_MAGIC, 4);
        put32(rec + 4, (uint32_t)n);
        put64(rec + 8, digest);
        memset(rec + CLAIM_HEAD, 0, reclen - CLAIM_HEAD);
        for (int i = 0; i < n; i++)
            rec[CLAIM_HEAD + i / 8] |= (uint8_t)((answers[i] ? 1u : 0u) << (i % 8));
        RedisModuleString *v = RedisModule_CreateString(ctx, (const char *)rec, reclen);
        RedisModule_StringSet(rk, v);
        RedisModule_SetExpire(rk, secs * 1000);
        RedisModule_Replicate(ctx, "SET", "sscl", ck, v, "PX", secs * 1000);
        RedisModule_FreeString(ctx, v);
    }
    RedisModule_Free(answers);
    RedisModule_Free(rec);
    RedisModule_CloseKey(rk);
    RedisModule_FreeString(ctx, ck);
    return rc;
}

/* A decimal u64 field of a creation's spec: [*s, end) up to the next ':'
 * or the end. False unless it is digits that fit. */
static bool spec_u64(const char **s, const char *end, uint64_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (p == end || *p < '0' || *p > '9')
        return false;
    for (; p < end && *p != ':'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        /* 2^64 - 1 = 18446744073709551615: past it (no division a digit) */
        if (*p < '0' || *p > '9' || v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > 5))
            return false;
        v = v * 10 + d;
    }
    *out = v;
    *s = p;
    return true;
}

/* Steps over the ':' that ends a field; false at the end or elsewhere. */
static bool spec_colon(const char **s, const char *end)
{
    if (*s == end || **s != ':')
        return false;
    (*s)++;
    return true;
}

/* "BF|CBF|RB:capacity:error:expansion:nonscaling:seed[:tightening]"
 * (bkr_replicate_made)
 * into *family and *p; false if it is not one. */
static bool parse_spec(RedisModuleString *arg, bkr_family_t *family, bkr_params_t *p)
{
    size_t len;
    const char *s = RedisModule_StringPtrLen(arg, &len), *end = s + len;
    if (len > 3 && memcmp(s, "BF:", 3) == 0) {
        *family = BKR_BF;
        s += 3;
    } else if (len > 3 && memcmp(s, "RB:", 3) == 0) { /* a RedisBloom chain */
        *family = BKR_BF;
        p->rb_layout = true;
        s += 3;
    } else if (len > 4 && memcmp(s, "CBF:", 4) == 0) {
        *family = BKR_CBF;
        s += 4;
    } else {
        return false;
    }
    if (!spec_u64(&s, end, &p->capacity) || !spec_colon(&s, end))
        return false;
    const char *colon = memchr(s, ':', (size_t)(end - s));
    char num[40];
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof num)
        return false;
    memcpy(num, s, (size_t)(colon - s));
    num[colon - s] = '\0';
    char *stop;
    /* An AOF of key creations repeats one error text over and over, and
     * strtod's exact conversion was a tenth of the module's replay time:
     * the last text's value is remembered (the main thread's alone). */
    static _Thread_local struct {
        char text[40];
        double value;
    } last;
    if (strcmp(num, last.text) == 0 && last.text[0]) {
        p->error = last.value;
    } else {
        p->error = strtod(num, &stop);
        if (*stop != '\0')
            return false;
        memcpy(last.text, num, sizeof num);
        last.value = p->error;
    }
    s = colon + 1;
    uint64_t ns;
    if (!spec_u64(&s, end, &p->expansion) || !spec_colon(&s, end) || !spec_u64(&s, end, &ns) ||
        ns > 1 || !spec_colon(&s, end) || !spec_u64(&s, end, &p->seed))
        return false;
    p->nonscaling = ns == 1;
    if (s == end)
        return true;
    /* ":tightening", when the key was made with TIGHTENING */
    if (*s != ':' || (size_t)(end - s) >= sizeof num)
        return false;
    memcpy(num, s + 1, (size_t)(end - s - 1));
    num[end - s - 1] = '\0';
    p->tightening = strtod(num, &stop);
    return *stop == '\0' && p->tightening > 0 && p->tightening < 1 && !p->nonscaling;
}

/* The older form: BKI.CREATE key BF|CBF capacity error expansion
 * nonscaling seed [ITEMS item...]; *items: where the items start (argc for
 * none). False if argv is not one. */
static bool parse_long_form(RedisModuleString **argv, int argc, bkr_family_t *family,
                            bkr_params_t *p, int *items)
{
    if (argc != 8 && (argc < 10 || !bkr_arg_is(argv[8], "ITEMS")))
        return false;
    if (bkr_arg_is(argv[2], "BF"))
        *family = BKR_BF;
    else if (bkr_arg_is(argv[2], "CBF"))
        *family = BKR_CBF;
    else
        return false;
    uint64_t ns = 0;
    if (!bkr_arg_u64(argv[3], &p->capacity) || !bkr_arg_double(argv[4], &p->error) ||
        !bkr_arg_u64(argv[5], &p->expansion) || !bkr_arg_u64(argv[6], &ns) || ns > 1 ||
        !bkr_arg_u64(argv[7], &p->seed))
        return false;
    p->nonscaling = ns == 1;
    *items = argc == 8 ? argc : 9;
    return true;
}

/* BKI.CREATE key FAMILY:capacity:error:expansion:nonscaling:seed [item...]
 * (create.c), or the older long form (parse_long_form), which AOF files
 * and masters of earlier releases still send. */
int bkr_cmd_create(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    bkr_family_t family;
    bkr_params_t p;
    memset(&p, 0, sizeof p);
    int items = 3;
    if (!parse_spec(argv[2], &family, &p) &&
        !parse_long_form(argv, argc, &family, &p, &items))
        return RedisModule_ReplyWithError(ctx, "ERR bad BKI.CREATE arguments");
    if (p.capacity == 0 || !(p.error > 0 && p.error < 1) || p.expansion < 1 ||
        p.expansion > BKR_MAX_EXPANSION)
        return RedisModule_ReplyWithError(ctx, "ERR bad BKI.CREATE arguments");

    if (items < argc) {
        /* The items a command that made the key took with it (BF.ADD, MADD
         * or INSERT of a new key: one command in the AOF and to replicas):
         * the key made and the items added as BF.MADD adds them, with one
         * look-up of the key, and propagated as this command. */
        bkr_options_t o;
        memset(&o, 0, sizeof o);
        o.p = p;
        o.p.seed_set = true;
        o.create_only = true;
        o.items = items;
        return bkr_add_command(ctx, argv, argc, family, &o, true);
    }
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    if (RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_ReplyWithError(ctx, "ERR item exists");
        return bkr_done(key);
    }
    void *v = bkr_new_value_or_reply(ctx, family, &p);
    if (!v)
        return bkr_done(key);
    RedisModule_ModuleTypeSetValue(key, bkr_value_type(family, v), v);
    bkr_stats.keys_created++; /* as a key made with items counts (create.c) */
    RedisModule_ReplicateVerbatim(ctx);
    RedisModule_ReplyWithSimpleString(ctx, "OK");
    return bkr_done(key);
}
