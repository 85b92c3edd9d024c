/*
 * BF.MERGE / CBF.MERGE dest src [src ...]: the union of compatible filters
 * computed in Redis, for "one filter per worker or shard, then merge".
 * As with PFMERGE, dest takes part in the union when it exists, and is
 * created (shaped like the first source) when it does not.
 *
 * Only filters with the same parameters and hash seed can be merged: the
 * same item must set the same bits in each. Every key gets a random seed
 * unless created with SEED, so mergeable filters are made with the same
 * RESERVE arguments and the same SEED. Scaling BF filters must also have
 * grown the same way (the same sub-filters); the error names the first
 * difference found.
 *
 * The union is built in a new filter and stored only when complete: a
 * failure (incompatible, out of memory, over capacity) leaves dest as it
 * was. A union whose estimated item count exceeds the filter's capacity is
 * refused, because its false-positive rate would exceed the one asked for
 * (the tool's merge writes such a union; a shared filter in Redis should
 * not silently degrade). Replicated verbatim: the union is deterministic.
 * Keys must hash to one slot in a cluster (Redis refuses others).
 */
#define _GNU_SOURCE
#include "cmd_merge.h"
#include "config.h"
#include "events.h"
#include "obj.h"
#include "reply.h"
#include "value.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* True if two arguments are the same string (the same key). */
static bool same_name(RedisModuleString *a, RedisModuleString *b)
{
    size_t la, lb;
    const char *sa = RedisModule_StringPtrLen(a, &la), *sb = RedisModule_StringPtrLen(b, &lb);
    return la == lb && memcmp(sa, sb, la) == 0;
}

/* Names the first difference that makes b impossible to merge into a,
 * into msg; false if there is none. */
static bool difference(const bk_filter_info_t *a, const bk_filter_info_t *b, char *msg, size_t cap)
{
    if (a->seed != b->seed || a->hash != b->hash)
        snprintf(msg, cap, "the hash seeds differ (create both with the same SEED)");
    else if (a->capacity != b->capacity && a->filters == b->filters)
        snprintf(msg, cap, "the capacities differ (%llu vs %llu)",
                 (unsigned long long)a->capacity, (unsigned long long)b->capacity);
    else if (a->fpr_target != b->fpr_target)
        snprintf(msg, cap, "the error rates differ (%g vs %g)", a->fpr_target, b->fpr_target);
    else if (a->nonscaling != b->nonscaling)
        snprintf(msg, cap, "one is NONSCALING and the other is not");
    else if (a->growth != b->growth)
        snprintf(msg, cap, "the expansions differ (%g vs %g)", a->growth, b->growth);
    else if (a->filters != b->filters)
        snprintf(msg, cap,
                 "they have grown differently (%u vs %u sub-filters); merge before either "
                 "grows past its capacity",
                 a->filters, b->filters);
    else if (a->kind != b->kind || a->cells != b->cells || a->k != b->k)
        snprintf(msg, cap, "their sizes differ (%llu vs %llu cells)",
                 (unsigned long long)a->cells, (unsigned long long)b->cells);
    else
        return false;
    return true;
}

/* Merges src's filter into acc (shaped like first); false after replying. */
static bool merge_one_or_reply(RedisModuleCtx *ctx, bk_filter_t *acc, const bk_filter_info_t *first,
                               RedisModuleString *firstname, const bkr_obj_t *src,
                               RedisModuleString *srcname)
{
    bk_filter_info_t in;
    bk_filter_info(src->f, &in);
    char why[160];
    if (difference(first, &in, why, sizeof why)) {
        bkr_reply_errorf(ctx, "ERR cannot merge '%s' with '%s': %s",
                         RedisModule_StringPtrLen(srcname, NULL),
                         RedisModule_StringPtrLen(firstname, NULL), why);
        return false;
    }
    bk_status_t st = bk_filter_union(acc, src->f);
    if (st == BK_EINCOMPAT) /* a difference the info does not show */
        bkr_reply_errorf(ctx, "ERR cannot merge '%s' with '%s': the filters differ in shape",
                         RedisModule_StringPtrLen(srcname, NULL),
                         RedisModule_StringPtrLen(firstname, NULL));
    else if (st != BK_OK)
        bkr_reply_status(ctx, st);
    return st == BK_OK;
}

/* The union of the inputs (argv[1] if it holds a filter, then argv[2..]),
 * or NULL after replying. */
static bk_filter_t *union_or_reply(RedisModuleCtx *ctx, RedisModuleString **argv, int argc,
                                   bkr_family_t family, const bkr_obj_t *dest)
{
    int first = dest ? 1 : 2;
    RedisModuleKey *fk = NULL;
    const bkr_obj_t *fo = dest ? dest : bkr_open_or_reply(ctx, argv[2], REDISMODULE_READ, family, &fk);
    if (!fo)
        return NULL;
    bk_filter_t *acc = NULL;
    bk_filter_info_t shape;
    bk_filter_info(fo->f, &shape);
    bk_status_t st = bk_filter_clone(&acc, fo->f);
    bkr_done(fk);
    if (st != BK_OK) {
        bkr_reply_status(ctx, st);
        return NULL;
    }
    for (int i = first + 1; i < argc; i++) {
        if (dest && same_name(argv[i], argv[1]))
            continue; /* dest is in the union once (counters not doubled) */
        RedisModuleKey *sk;
        bkr_obj_t *so = bkr_open_or_reply(ctx, argv[i], REDISMODULE_READ, family, &sk);
        bool ok = so && merge_one_or_reply(ctx, acc, &shape, argv[first], so, argv[i]);
        bkr_done(sk);
        if (!ok) {
            bk_filter_free(acc);
            return NULL;
        }
    }
    return acc;
}

/* False after replying if the union holds more than the filter was sized
 * for. */
static bool within_capacity_or_reply(RedisModuleCtx *ctx, const bk_filter_t *f)
{
    bk_filter_info_t in;
    bk_filter_info(f, &in);
    if (!(in.estimated_items > (double)in.capacity))
        return true;
    bkr_reply_errorf(ctx,
                     "ERR the union holds about %.0f items, over the capacity of %llu: its error "
                     "rate would exceed the one asked for; nothing was changed (merge into a "
                     "larger filter, or merge fewer)",
                     isfinite(in.estimated_items) ? in.estimated_items : (double)in.cells,
                     (unsigned long long)in.capacity);
    return false;
}

static int merge(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bkr_family_t family)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    bkr_obj_t *dest;
    bkr_lookup_t st = bkr_lookup(key, family, &dest);
    if (st != BKR_FOUND && st != BKR_EMPTY) {
        bkr_reply_lookup_error(ctx, st);
        return bkr_done(key);
    }
    uint64_t mark = bkr_lib_bytes();
    bk_filter_t *u = union_or_reply(ctx, argv, argc, family, dest);
    if (!u)
        return bkr_done(key);
    if (!within_capacity_or_reply(ctx, u)) {
        bk_filter_free(u);
        return bkr_done(key);
    }
    /* A union of RedisBloom chains is one (a key taken over, or made under
     * LAYOUT redisbloom): it keeps RedisBloom's type, so RedisBloom can
     * still load it. */
    void *v = bkr_value_pack(bkr_obj_new(family, u, mark));
    RedisModule_ModuleTypeSetValue(key, bkr_value_type(family, v), v);
    RedisModule_ReplicateVerbatim(ctx);
    bkr_notify(ctx, argv[0], argv[1]);
    RedisModule_ReplyWithSimpleString(ctx, "OK");
    return bkr_done(key);
}

/* BF.MERGE dest src [src ...] */
int bkr_cmd_bf_merge(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return merge(ctx, argv, argc, BKR_BF);
}

/* CBF.MERGE dest src [src ...]: counters are added (saturating at 15). */
int bkr_cmd_cbf_merge(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return merge(ctx, argv, argc, BKR_CBF);
}
