/*
 * RedisBloom's CF.* commands over the library's cuckoo filter in
 * RedisBloom's flavour (bk_cuckoo_*): the same arguments, defaults
 * (capacity 1024, bucket size 2, 20 iterations, expansion 1, at most 32
 * sub-filters), replies and error texts (facts from RedisBloom's
 * src/rebloom.c; docs/REDIS.md lists them), and RedisBloom's algorithm bit
 * for bit, so a CF key answers every command sequence as RedisBloom's
 * would, and keys move between the two modules (RDB, AOF, SCANDUMP) both
 * ways. Every CF key has RedisBloom's type, MBbloomCF (redisbloom.c).
 */
#define _GNU_SOURCE
#include "cmd_cf.h"
#include "argv.h"
#include "config.h"
#include "dump.h"
#include "events.h"
#include "obj.h"
#include "redisbloom.h"
#include "reply.h"
#include "stats.h"
#include "value.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define CF_DEFAULT_CAPACITY 1024
#define CF_DEFAULT_BUCKET_SIZE 2
#define CF_DEFAULT_ITERATIONS 20
#define CF_DEFAULT_EXPANSION 1

/* The relocations (kick-loop swaps and their undoing) one command may
 * spend. A key that finds no free slot kicks up to MAXITERATIONS times
 * and undoes them all when no room is found: with MAXITERATIONS 65535, a
 * CF.INSERT of 2,000 keys into a full filter that may not grow is 262
 * million swaps, 5.5 s with the server blocked. 2 million swaps measured
 * 40-60 ms on a 2-core machine; past them the command adds no more keys
 * and says so, item by item. A key that needs the kick loop is never cut
 * short mid-way (its answer is RedisBloom's), so one key always fits:
 * 2 x 65535 is far below this. */
#define CF_COMMAND_KICKS 2000000u

/* RedisBloom's chunk limit for CF.SCANDUMP. */
#define CF_MAX_CHUNK (16u << 20)

typedef enum { CF_FOUND, CF_EMPTY, CF_WRONGTYPE, CF_LOADING, CF_NOMEM } cf_lookup_t;

static cf_lookup_t cf_lookup(RedisModuleKey *key, bkr_cf_t **out)
{
    *out = NULL;
    int type = RedisModule_KeyType(key);
    if (type == REDISMODULE_KEYTYPE_EMPTY)
        return CF_EMPTY;
    if (type != REDISMODULE_KEYTYPE_MODULE || RedisModule_ModuleTypeGetType(key) != bkr_type_rbcf)
        return CF_WRONGTYPE;
    *out = bkr_cf_resolve(RedisModule_ModuleTypeGetValue(key), key);
    if (!*out)
        return CF_NOMEM; /* a compact key's view could not be made */
    return (*out)->pending ? CF_LOADING : CF_FOUND;
}

#define CF_LOADING_TEXT "ERR filter is being restored: LOADCHUNK has not received all chunks"

/* RedisBloom's statusStrerror: a found key is "item exists" (for
 * CF.RESERVE). */
static int reply_lookup(RedisModuleCtx *ctx, cf_lookup_t st)
{
    return RedisModule_ReplyWithError(ctx, st == CF_EMPTY       ? "ERR not found"
                                           : st == CF_WRONGTYPE ? REDISMODULE_ERRORMSG_WRONGTYPE
                                           : st == CF_LOADING   ? CF_LOADING_TEXT
                                           : st == CF_NOMEM     ? "ERR out of memory opening the filter"
                                                                : "ERR item exists");
}

/* The position of an option word in argv[2..], or -1 (RedisBloom looks
 * for each keyword anywhere among the arguments). */
static int arg_index(RedisModuleString **argv, int argc, const char *word)
{
    for (int i = 2; i < argc; i++)
        if (bkr_arg_is(argv[i], word))
            return i;
    return -1;
}

/* A new filter under key; NULL after replying. */
static bkr_cf_t *create(RedisModuleCtx *ctx, RedisModuleKey *key, uint64_t capacity,
                        uint64_t bucket_size, uint64_t iterations, uint64_t expansion)
{
    bk_cuckoo_options_t o = {.flavour = BK_CUCKOO_REDISBLOOM,
                             .bucket_size = (uint32_t)bucket_size,
                             .max_iterations = (uint32_t)iterations,
                             .expansion = (uint32_t)expansion,
                             .expansion_set = true};
    uint64_t buckets = 1;
    while (buckets < capacity / bucket_size && buckets < (UINT64_C(1) << 62))
        buckets <<= 1;
    uint64_t cap = bkr_cap(ctx);
    if (buckets > cap / bucket_size) { /* buckets * bucket_size > cap, without overflow */
        bkr_reply_errorf(ctx,
                         "ERR Insufficient memory to create filter: capacity %llu needs %llu "
                         "bytes, over the limit of %llu bytes (module argument MAX_BYTES)",
                         (unsigned long long)capacity,
                         (unsigned long long)(buckets * bucket_size), (unsigned long long)cap);
        return NULL;
    }
    bk_status_t st;
    void *v = bkr_cf_new_compact(capacity, &o, &st); /* one sub-filter: compact */
    if (!v) {
        RedisModule_ReplyWithError(ctx, st == BK_ENOMEM ? "ERR Insufficient memory to create filter"
                                                        : "Couldn't create Cuckoo Filter");
        return NULL;
    }
    RedisModule_ModuleTypeSetValue(key, bkr_type_rbcf, v);
    bkr_stats.keys_created++;
    bkr_cf_t *o2 = bkr_cf_resolve(v, key);
    if (!o2)
        RedisModule_ReplyWithError(ctx, "ERR out of memory opening the filter");
    return o2;
}

/* CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e] */
static int cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3 || argc % 2 == 0)
        return RedisModule_WrongArity(ctx);
    long long capacity, iterations = CF_DEFAULT_ITERATIONS, bucket = CF_DEFAULT_BUCKET_SIZE,
                        expansion = CF_DEFAULT_EXPANSION;
    if (RedisModule_StringToLongLong(argv[2], &capacity) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, "Bad capacity");
    static const struct {
        const char *word, *parse, *range;
        long long min, max;
    } opts[] = {
        /* RedisBloom 2.8.20's texts */
        {"MAXITERATIONS", "Couldn't parse MAXITERATIONS",
         "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.", 1, 65535},
        {"BUCKETSIZE", "Couldn't parse BUCKETSIZE",
         "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.", 1, 255},
        {"EXPANSION", "Couldn't parse EXPANSION",
         "EXPANSION: value must be an integer between 0 and 32768, inclusive.", 0, 32768},
    };
    long long *values[] = {&iterations, &bucket, &expansion};
    for (int i = 0; i < 3; i++) {
        int at = arg_index(argv, argc, opts[i].word);
        if (at < 0)
            continue;
        if (at + 1 >= argc || RedisModule_StringToLongLong(argv[at + 1], values[i]) != REDISMODULE_OK)
            return RedisModule_ReplyWithError(ctx, opts[i].parse);
        if (*values[i] < opts[i].min || *values[i] > opts[i].max)
            return RedisModule_ReplyWithError(ctx, opts[i].range);
    }
    if (bucket * 2 > capacity)
        return RedisModule_ReplyWithError(ctx, "Capacity must be at least (BucketSize * 2)");
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_cf_t *o;
    cf_lookup_t st = cf_lookup(key, &o);
    if (st != CF_EMPTY) {
        reply_lookup(ctx, st); /* CF_FOUND: "ERR item exists" */
        return bkr_done(key);
    }
    if (create(ctx, key, (uint64_t)capacity, (uint64_t)bucket, (uint64_t)iterations,
               (uint64_t)expansion)) {
        RedisModule_ReplicateVerbatim(ctx);
        bkr_notify(ctx, argv[0], argv[1]);
        RedisModule_ReplyWithSimpleString(ctx, "OK");
    }
    return bkr_done(key);
}

/* The last character of the command's name, lower-cased: 'x' for the NX
 * forms. */
static int name_ends(RedisModuleString *cmd)
{
    size_t n;
    const char *s = RedisModule_StringPtrLen(cmd, &n);
    return n ? tolower((unsigned char)s[n - 1]) : 0;
}

/* Adds items[0..n) to keyname's filter (made with capacity when missing
 * and autocreate), replying one integer (multi false) or an array. */
static int insert(RedisModuleCtx *ctx, RedisModuleString **argv, RedisModuleString **items,
                  int n, uint64_t capacity, bool autocreate, bool multi)
{
    bool nx = name_ends(argv[0]) == 'x';
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_cf_t *o;
    cf_lookup_t st = cf_lookup(key, &o);
    if (st == CF_EMPTY && autocreate) {
        o = create(ctx, key, capacity, CF_DEFAULT_BUCKET_SIZE, CF_DEFAULT_ITERATIONS,
                   CF_DEFAULT_EXPANSION);
        if (!o)
            return bkr_done(key);
    } else if (st != CF_FOUND) {
        reply_lookup(ctx, st);
        return bkr_done(key);
    }
    bk_cuckoo_shape_t shape;
    bk_cuckoo_shape(o->c, &shape);
    if (shape.filters >= bkr_config.cf_max_expansions) {
        RedisModule_ReplyWithError(ctx, "Maximum expansions reached");
        return bkr_done(key);
    }
    if (multi)
        RedisModule_ReplyWithArray(ctx, n);
    bool changed = st == CF_EMPTY;
    bool resp3 = (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_RESP3) != 0;
    uint32_t filters_before = shape.filters;
    uint64_t budget = CF_COMMAND_KICKS;
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *s = RedisModule_StringPtrLen(items[i], &len);
        uint64_t mark = bkr_lib_bytes();
        bool added = false;
        bk_status_t r = bk_cuckoo_add_within(o->c, s, len, nx, &added, &budget);
        o->heap += bkr_lib_bytes() - mark;
        changed |= r == BK_OK && added;
        if (r != BK_OK)
            bkr_stats.adds_refused += r == BK_EBUDGET ? (uint64_t)(multi ? n - i : 1) : 1;
        if (r == BK_EBUDGET) {
            /* This key and the rest are not added (the same on a replica
             * or an AOF replay of the command: the same keys, the same
             * filter, the same budget). */
            for (int j = i; j < (multi ? n : i + 1); j++)
                RedisModule_ReplyWithError(ctx, "ERR not added: this command reached its limit "
                                                "of 2000000 relocations (a full filter with a "
                                                "high MAXITERATIONS); add the rest in another "
                                                "command");
            break;
        }
        /* RedisBloom 2.8's RESP3 replies: booleans for CF.ADD, CF.ADDNX
         * and CF.INSERT (false also for no room), integers for CF.INSERTNX
         * (and in RESP2, where a boolean is an integer anyway). */
        bool booleans = resp3 && (!nx || !multi);
        if (r == BK_OK) {
            if (booleans)
                RedisModule_ReplyWithBool(ctx, added);
            else
                RedisModule_ReplyWithLongLong(ctx, added ? 1 : 0);
        } else if (r == BK_EFULL) {
            if (!multi) {
                RedisModule_ReplyWithError(ctx, "Filter is full");
                break;
            }
            if (booleans)
                RedisModule_ReplyWithBool(ctx, 0);
            else
                RedisModule_ReplyWithLongLong(ctx, -1);
        } else {
            RedisModule_ReplyWithError(ctx, "Memory allocation failure");
        }
    }
    bk_cuckoo_shape(o->c, &shape);
    if (shape.filters > filters_before)
        bkr_stats.filters_grown += shape.filters - filters_before;
    if (changed) {
        RedisModule_ReplicateVerbatim(ctx);
        bkr_notify(ctx, argv[0], argv[1]);
    }
    return bkr_done(key);
}

/* CF.ADD / CF.ADDNX key item */
static int cmd_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    return insert(ctx, argv, argv + 2, 1, CF_DEFAULT_CAPACITY, true, false);
}

/* CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item [item ...] */
static int cmd_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4)
        return RedisModule_WrongArity(ctx);
    long long capacity = CF_DEFAULT_CAPACITY;
    bool autocreate = true;
    int items = -1;
    for (int i = 2; i < argc && items < 0;) {
        size_t n;
        const char *a = RedisModule_StringPtrLen(argv[i], &n);
        switch (tolower((unsigned char)a[0])) {
        case 'c':
            if (++i == argc)
                return RedisModule_WrongArity(ctx);
            if (RedisModule_StringToLongLong(argv[i++], &capacity) != REDISMODULE_OK)
                return RedisModule_ReplyWithError(ctx, "Bad capacity");
            if (2 * CF_DEFAULT_BUCKET_SIZE > capacity)
                return RedisModule_ReplyWithError(ctx,
                                                  "Capacity must be at least (BucketSize * 2)");
            break;
        case 'i':
            items = ++i;
            break;
        case 'n':
            autocreate = false;
            i++;
            break;
        default:
            return RedisModule_ReplyWithError(ctx, "Unknown argument received");
        }
    }
    if (items < 0 || items == argc)
        return RedisModule_WrongArity(ctx);
    return insert(ctx, argv, argv + items, argc - items, (uint64_t)capacity, autocreate, true);
}

/* CF.EXISTS / CF.MEXISTS / CF.COUNT: a missing key (or one of another
 * type) answers 0, as RedisBloom does. */
static int check(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool multi, bool count)
{
    if ((!multi && argc != 3) || (multi && argc < 3))
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ);
    bkr_cf_t *o;
    cf_lookup_t st = cf_lookup(key, &o);
    if (st == CF_LOADING || st == CF_NOMEM) { /* never 0 for an item that was added */
        reply_lookup(ctx, st);
        return bkr_done(key);
    }
    bool found = st == CF_FOUND;
    if (multi)
        RedisModule_ReplyWithArray(ctx, argc - 2);
    for (int i = 2; i < argc; i++) {
        size_t len;
        const char *s = RedisModule_StringPtrLen(argv[i], &len);
        /* booleans in RESP3 (integers in RESP2), counts always integers,
         * as RedisBloom 2.8 replies */
        if (count)
            RedisModule_ReplyWithLongLong(ctx, found ? (long long)bk_cuckoo_count(o->c, s, len) : 0);
        else
            RedisModule_ReplyWithBool(ctx, found && bk_cuckoo_contains(o->c, s, len));
    }
    return bkr_done(key);
}

static int cmd_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return check(ctx, argv, argc, false, false);
}

static int cmd_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return check(ctx, argv, argc, true, false);
}

static int cmd_count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return check(ctx, argv, argc, false, true);
}

/* A key's filter for a command that reads it, or NULL after replying with
 * RedisBloom's lookup error (the key is closed then). */
static bkr_cf_t *open_read(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey **key)
{
    *key = RedisModule_OpenKey(ctx, name, REDISMODULE_READ);
    bkr_cf_t *o;
    cf_lookup_t st = cf_lookup(*key, &o);
    if (st == CF_FOUND)
        return o;
    reply_lookup(ctx, st);
    bkr_done(*key);
    *key = NULL;
    return NULL;
}

/* A key's filter for CF.DEL / CF.COMPACT, or NULL after replying
 * `missing`. */
static bkr_cf_t *open_write(RedisModuleCtx *ctx, RedisModuleString *name, const char *missing,
                            RedisModuleKey **key)
{
    *key = RedisModule_OpenKey(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_cf_t *o;
    cf_lookup_t st = cf_lookup(*key, &o);
    if (st == CF_FOUND)
        return o;
    /* RedisBloom answers CF.DEL and CF.COMPACT so for a missing key and
     * for a key of another type alike. */
    if (st == CF_LOADING || st == CF_NOMEM)
        reply_lookup(ctx, st);
    else
        RedisModule_ReplyWithError(ctx, missing);
    bkr_done(*key);
    *key = NULL;
    return NULL;
}

/* CF.DEL key item */
static int cmd_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_cf_t *o = open_write(ctx, argv[1], "Not found", &key);
    if (!o)
        return REDISMODULE_OK;
    size_t len;
    const char *s = RedisModule_StringPtrLen(argv[2], &len);
    uint64_t mark = bkr_lib_bytes();
    bool removed = bk_cuckoo_remove(o->c, s, len);
    o->heap -= mark - bkr_lib_bytes(); /* a compaction may free a sub-filter */
    if (removed) {
        RedisModule_ReplicateVerbatim(ctx);
        bkr_notify(ctx, argv[0], argv[1]);
    }
    RedisModule_ReplyWithBool(ctx, removed); /* an integer in RESP2 */
    return bkr_done(key);
}

/* CF.COMPACT key */
static int cmd_compact(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_cf_t *o = open_write(ctx, argv[1], "Cuckoo filter was not found", &key);
    if (!o)
        return REDISMODULE_OK;
    uint64_t mark = bkr_lib_bytes();
    bk_cuckoo_compact(o->c);
    o->heap -= mark - bkr_lib_bytes();
    RedisModule_ReplicateVerbatim(ctx);
    bkr_notify(ctx, argv[0], argv[1]);
    RedisModule_ReplyWithSimpleString(ctx, "OK");
    return bkr_done(key);
}

/* RedisBloom's "Size": its structs (40 bytes, and 16 per sub-filter) and
 * one byte per slot. */
static uint64_t redisbloom_size(const bk_cuckoo_shape_t *s)
{
    return 40 + 16 * (uint64_t)s->filters + s->bytes;
}

/* CF.INFO key */
static int cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_cf_t *o = open_read(ctx, argv[1], &key);
    if (!o)
        return REDISMODULE_OK;
    bk_cuckoo_shape_t s;
    bk_cuckoo_shape(o->c, &s);
    static const char *const labels[] = {"Size",           "Number of buckets",
                                         "Number of filters", "Number of items inserted",
                                         "Number of items deleted", "Bucket size",
                                         "Expansion rate", "Max iterations"};
    uint64_t values[] = {redisbloom_size(&s), s.buckets,     s.filters,   s.items,
                         s.deletes,           s.bucket_size, s.expansion, s.max_iterations};
    RedisModule_ReplyWithMap(ctx, 8);
    for (int i = 0; i < 8; i++) {
        RedisModule_ReplyWithSimpleString(ctx, labels[i]);
        RedisModule_ReplyWithLongLong(ctx, (long long)values[i]);
    }
    return bkr_done(key);
}

/* CF.DEBUG key, as RedisBloom prints it. */
static int cmd_debug(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_cf_t *o = open_read(ctx, argv[1], &key);
    if (!o)
        return REDISMODULE_OK;
    bk_cuckoo_shape_t s;
    bk_cuckoo_shape(o->c, &s);
    char line[256];
    snprintf(line, sizeof line,
             "bktsize:%u buckets:%llu items:%llu deletes:%llu filters:%u max_iterations:%u "
             "expansion:%u",
             s.bucket_size, (unsigned long long)s.buckets, (unsigned long long)s.items,
             (unsigned long long)s.deletes, s.filters, s.max_iterations, s.expansion);
    RedisModule_ReplyWithStringBuffer(ctx, line, strlen(line));
    return bkr_done(key);
}

/* CF.SCANDUMP key iterator: RedisBloom's header, then each sub-filter's
 * bytes (whole when at most 16 MiB, else in 16 MiB pieces); [0, nil] at
 * the end, and at once for an empty filter. */
static int cmd_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    long long pos;
    if (RedisModule_StringToLongLong(argv[2], &pos) != REDISMODULE_OK || pos < 0)
        return RedisModule_ReplyWithError(ctx, "Invalid position");
    RedisModuleKey *key;
    bkr_cf_t *o = open_read(ctx, argv[1], &key);
    if (!o)
        return REDISMODULE_OK;
    bk_cuckoo_shape_t s;
    bk_cuckoo_shape(o->c, &s);
    RedisModule_ReplyWithArray(ctx, 2);
    const void *bytes = NULL;
    uint64_t n = 0;
    if (s.items && pos == 0) {
        uint8_t h[BKR_CF_HEADER];
        bkr_cf_header(o->c, h);
        RedisModule_ReplyWithLongLong(ctx, 1);
        RedisModule_ReplyWithStringBuffer(ctx, (const char *)h, sizeof h);
        return bkr_done(key);
    }
    if (s.items && pos > 0)
        bk_cuckoo_read(o->c, (uint64_t)pos - 1, CF_MAX_CHUNK, &bytes, &n);
    if (n == 0) {
        RedisModule_ReplyWithLongLong(ctx, 0);
        RedisModule_ReplyWithNull(ctx);
        return bkr_done(key);
    }
    RedisModule_ReplyWithLongLong(ctx, pos + (long long)n);
    RedisModule_ReplyWithStringBuffer(ctx, bytes, (size_t)n);
    return bkr_done(key);
}

/* A restore that has all its bytes: a filter of one sub-filter takes the
 * compact form, as a key made by CF.RESERVE or loaded from an RDB has (an
 * AOF rewrites every CF key as LOADCHUNKs, so a replay would otherwise
 * leave them all full). */
static void compact_restored(RedisModuleKey *key, bkr_cf_t *o)
{
    void *v = bkr_cf_compact_of(&o->c); /* o->c NULL once taken */
    if (!v)
        return;
    void *old = NULL;
    RedisModule_ModuleTypeReplaceValue(key, bkr_type_rbcf, v, &old);
    bkr_cf_free(old); /* o, holding nothing now */
}

/* A client's CF.LOADCHUNK that fails gets the error; one replayed from
 * the AOF stops the server rather than start without the key. */
static int refuse(RedisModuleCtx *ctx, const char *msg)
{
    if (bkr_loading(ctx))
        bkr_fatal_load(ctx, "CF.LOADCHUNK: %s", msg);
    return RedisModule_ReplyWithError(ctx, msg);
}

/* No fingerprint is held (the header's or the filter's item count). */
static bool holds_nothing(const bk_cuckoo_t *c)
{
    bk_cuckoo_shape_t sh;
    bk_cuckoo_shape(c, &sh);
    return sh.items == 0;
}

/* Whether writing `in` over `now` (len bytes of 8-bit fingerprint slots)
 * leaves every fingerprint in place: each slot empty or the same. */
static bool keeps_every_slot(const void *now, const char *in, size_t len)
{
    const uint8_t *a = now, *b = (const uint8_t *)in;
    for (size_t i = 0; i < len; i++)
        if (a[i] && a[i] != b[i])
            return false;
    return true;
}

/* The header chunk (iterator 1): a new key, or a key still being
 * restored started over, as a BF one is. An error text, or NULL. */
static const char *load_cf_header(RedisModuleCtx *ctx, RedisModuleKey *key, cf_lookup_t st,
                                  const char *buf, size_t len)
{
    if (st != CF_EMPTY && st != CF_LOADING)
        return st == CF_FOUND   ? "ERR item exists"
               : st == CF_NOMEM ? "ERR out of memory opening the filter"
                                : REDISMODULE_ERRORMSG_WRONGTYPE;
    bk_cuckoo_t *c = NULL;
    uint64_t mark = bkr_lib_bytes();
    const char *err = bkr_cf_from_header(buf, len, bkr_cap(ctx), &c);
    if (err)
        return err;
    /* A header that counts no items describes a filter with nothing
     * added: the key is whole and serves commands now, as RedisBloom's
     * does, and its dump's chunks are still taken (load_cf_into_whole:
     * each may fill slots, none replace one). */
    if (holds_nothing(c)) {
        RedisModule_ModuleTypeSetValue(key, bkr_type_rbcf, bkr_cf_value(&c, mark));
    } else {
        bkr_cf_t *fresh = bkr_cf_new(c, mark);
        fresh->pending = bk_cuckoo_bytes(c);
        RedisModule_ModuleTypeSetValue(key, bkr_type_rbcf, fresh);
    }
    return NULL;
}

/* A data chunk for a whole key. RedisBloom's checks (its
 * CF_LoadEncodedChunk): the chunk must lie in one sub-filter. It then
 * writes the chunk over the buckets and answers OK. So does bloomkit where
 * the write loses no fingerprint: every slot (a byte: RedisBloom's
 * fingerprints are 8 bits) holding one gets the same one (a dump sent
 * again, the rest of an empty filter's dump). One that would replace or
 * clear a fingerprint, an item added, is refused, changing nothing, in
 * RedisBloom's words for a chunk it does not take. */
static const char *load_cf_into_whole(bkr_cf_t *o, long long pos, const char *buf, size_t len)
{
    uint64_t bytes = bk_cuckoo_bytes(o->c), off = (uint64_t)pos - len - 1, n = 0;
    const void *have = NULL;
    if (len > 0 && (uint64_t)pos >= len + 1 && off < bytes &&
        bk_cuckoo_read(o->c, off, len, &have, &n) == BK_OK && n == len &&
        keeps_every_slot(have, buf, len) && bk_cuckoo_write(o->c, off, buf, len) == BK_OK)
        return NULL;
    return "Couldn't load chunk!";
}

/* The next data chunk of a key being restored, in order. RedisBloom takes
 * any chunk anywhere: one left out, cut short or sent empty leaves zeroed
 * buckets that answer "absent" for added items. The sizes are known:
 * chunks must arrive whole, in order, else the restore is abandoned (the
 * key removed, *abandoned set and the reply sent). An error text, or NULL. */
static const char *load_cf_into_restore(RedisModuleCtx *ctx, RedisModuleKey *key,
                                        RedisModuleString *keyname, bkr_cf_t *o, long long pos,
                                        const char *buf, size_t len, bool *abandoned)
{
    *abandoned = false;
    if (pos < 0 || (uint64_t)pos < len + 1)
        return "Couldn't load chunk!";
    uint64_t have = bkr_cf_received(o);
    const char *broken = NULL;
    if (o->pending == BKR_RB_RESTART)
        broken = "the restore was cut short by a restart";
    else if (len == 0 || (uint64_t)pos - len - 1 != have)
        broken = "chunk out of order (one missing, short or empty)";
    else if (len > o->pending)
        broken = "chunk runs past the end of the dump";
    else if (bk_cuckoo_write(o->c, have, buf, len) != BK_OK)
        broken = "chunk does not fit the filter";
    if (broken) {
        bkr_restore_abandon(ctx, key, keyname, broken, have);
        *abandoned = true;
        return NULL;
    }
    o->pending -= len;
    if (o->pending == 0)
        compact_restored(key, o);
    return NULL;
}

/* CF.LOADCHUNK key iterator data */
static int cmd_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 4)
        return RedisModule_WrongArity(ctx);
    long long pos;
    if (RedisModule_StringToLongLong(argv[2], &pos) != REDISMODULE_OK || pos == 0)
        return refuse(ctx, "Invalid position");
    size_t len;
    const char *buf = RedisModule_StringPtrLen(argv[3], &len);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_cf_t *o;
    cf_lookup_t st = cf_lookup(key, &o);
    const char *err;
    bool abandoned = false;
    if (pos == 1)
        err = load_cf_header(ctx, key, st, buf, len);
    else if (st == CF_FOUND)
        err = load_cf_into_whole(o, pos, buf, len);
    else if (st != CF_LOADING)
        err = st == CF_EMPTY   ? "ERR not found"
              : st == CF_NOMEM ? "ERR out of memory opening the filter"
                               : REDISMODULE_ERRORMSG_WRONGTYPE;
    else
        err = load_cf_into_restore(ctx, key, argv[1], o, pos, buf, len, &abandoned);
    if (abandoned)
        return bkr_done(key);
    if (err) {
        refuse(ctx, err);
        return bkr_done(key);
    }
    RedisModule_ReplicateVerbatim(ctx);
    bkr_notify(ctx, argv[0], argv[1]);
    RedisModule_ReplyWithSimpleString(ctx, "OK");
    return bkr_done(key);
}

static const bkr_command_t cf_commands[] = {
    {"cf.reserve", cmd_reserve, "write deny-oom", 1},
    {"cf.add", cmd_add, "write deny-oom", 1},
    {"cf.addnx", cmd_add, "write deny-oom", 1},
    {"cf.insert", cmd_insert, "write deny-oom", 1},
    {"cf.insertnx", cmd_insert, "write deny-oom", 1},
    {"cf.exists", cmd_exists, "readonly fast", 1},
    {"cf.mexists", cmd_mexists, "readonly fast", 1},
    {"cf.count", cmd_count, "readonly fast", 1},
    {"cf.del", cmd_del, "write fast", 1},
    {"cf.compact", cmd_compact, "write", 1},
    {"cf.info", cmd_info, "readonly fast", 1},
    {"cf.debug", cmd_debug, "readonly fast", 1},
    {"cf.scandump", cmd_scandump, "readonly fast", 1},
    {"cf.loadchunk", cmd_loadchunk, "write deny-oom", 1},
};

int bkr_cf_register(RedisModuleCtx *ctx)
{
    return bkr_create_commands(ctx, cf_commands, sizeof cf_commands / sizeof cf_commands[0]);
}
