/*
 * Creating filters for keys, within limits, and making the creation
 * reproducible on replicas.
 *
 * Limits: a request such as capacity 10^15 or error 1e-300 would make the
 * server allocate terabytes (or fail deep inside malloc). Every creation is
 * sized first with bk_plan() and refused with a clear error when the
 * payload would exceed MAX_BYTES (module argument, default 4 GiB); a
 * scalable filter is checked again each time it is about to add a
 * sub-filter (an O(1) look at its shape), so growth cannot cross the
 * limit either.
 *
 * Replication: a new filter gets a fresh random seed (so keys cannot be
 * crafted against it) unless the user gave one with SEED (to make
 * mergeable filters), which a replica replaying the same BF.ADD would not
 * pick. So when a command creates a key, the master propagates
 * "BKI.CREATE key FAMILY:capacity:error:expansion:nonscaling:seed item..."
 * (the items the command added with it; items.c), and replicas and the
 * AOF build bit-identical filters. On a server with no AOF and no
 * replica (stream.c says) the command goes verbatim instead: nothing
 * reads it. The creation's numbers travel as one argument: a server
 * replaying an AOF of new keys spends most of its time reading and
 * allocating each argument (ten of them a key in the form earlier
 * releases wrote, which still replays: items.c).
 */
#define _GNU_SOURCE
#include "create.h"
#include "stats.h"
#include "argv.h"
#include "config.h"
#include "obj.h"
#include "reply.h"
#include "stream.h"
#include "value.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Tightening of the error per sub-filter, as in RedisBloom. */
#define BKR_TIGHTENING 0.5

/* A BF's sub-filters are classic Bloom filters, as RedisBloom's are: the
 * classic optimum's bits, where blocked needs 1.2-1.4x them and blocked2 up
 * to 1.1x. Memory is what a Redis operator pays for; a classic lookup's k
 * cache lines cost nanoseconds against a command's round trip of
 * microseconds (and batches prefetch them). Only where the classic layout
 * itself needs more (a few items at a tiny error: 100 items at 5e-7 need
 * 3 KB, its k probes kept sparse) does the smallest of blocked2 and blocked
 * serve instead, decided by the first sub-filter's size and kept by the
 * chain. Filters stored before keep the kind they were made with. */
static bk_kind_t bf_sub_kind_planned(uint64_t capacity, double sub_error, bk_plan_t *out,
                                     bk_status_t *st)
{
    /* The last answer, per thread: a creation asks twice (the limit, then
     * the options), and per-user keys come in runs of one size (an AOF
     * replay of them asks 100,000 times in a row). */
    static _Thread_local struct {
        bool valid;
        uint64_t capacity;
        double sub_error;
        bk_kind_t kind;
        bk_plan_t plan;
        bk_status_t st;
    } memo;
    if (!memo.valid || memo.capacity != capacity || memo.sub_error != sub_error) {
        static const bk_kind_t kinds[] = {BK_KIND_CLASSIC, BK_KIND_BLOCKED2, BK_KIND_BLOCKED};
        bk_kind_t best = BK_KIND_CLASSIC;
        uint64_t best_bytes = UINT64_MAX;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            bk_plan_t plan;
            if (bk_plan(kinds[i], capacity, sub_error, &plan) == BK_OK && plan.bytes < best_bytes) {
                best = kinds[i];
                best_bytes = plan.bytes;
            }
        }
        memo.valid = true;
        memo.capacity = capacity;
        memo.sub_error = sub_error;
        memo.kind = best;
        memo.st = bk_plan(best, capacity, sub_error, &memo.plan);
    }
    if (out)
        *out = memo.plan;
    if (st)
        *st = memo.st;
    return memo.kind;
}

static bk_kind_t bf_sub_kind(uint64_t capacity, double sub_error)
{
    return bf_sub_kind_planned(capacity, sub_error, NULL, NULL);
}

/* Sizes one array: a CBF's counters, or the first sub-filter of a BF at
 * the error that sub-filter gets. */
static bk_status_t plan_for(bkr_family_t family, uint64_t capacity, double error, double sub_error,
                            bk_plan_t *plan)
{
    if (family == BKR_CBF)
        return bk_plan(BK_KIND_COUNTING, capacity, error, plan);
    bk_status_t st;
    (void)bf_sub_kind_planned(capacity, sub_error, plan, &st);
    return st;
}

/* The error of a BF's first sub-filter, as RedisBloom sets it: a scaling
 * chain starts at error * 0.5 and halves it per new sub-filter, so the sum
 * over the chain stays below the error asked for; a non-scaling filter's
 * only sub-filter gets the error itself. The library applies the same rule
 * (bk_options_t: tightening 0.5, first_error_as_given false); later
 * sub-filters are sized by bk_filter_next_growth(). */
static double first_sub_error(const bkr_params_t *p)
{
    /* valkey-bloom's TIGHTENING: the first sub-filter at the error itself */
    return p->nonscaling || p->tightening > 0 ? p->error : p->error * (1 - BKR_TIGHTENING);
}

static bool within_limit_or_reply(RedisModuleCtx *ctx, bkr_family_t family, const bkr_params_t *p)
{
    bk_plan_t plan;
    uint64_t cap = bkr_cap(ctx), capacity = p->capacity;
    double error = p->error;
    bk_status_t st = plan_for(family, capacity, error, first_sub_error(p), &plan);
    if (st == BK_OK && plan.bytes <= cap) {
        if (plan.bytes > bkr_config.max_bytes) /* rebuilt whole: see bkr_cap */
            RedisModule_Log(ctx, "notice",
                            "bloomkit: rebuilding a %s filter of %llu bytes, over the limit of "
                            "%llu bytes (module argument MAX_BYTES): it is kept whole, but a "
                            "client cannot grow it",
                            bkr_family_prefix(family), (unsigned long long)plan.bytes,
                            (unsigned long long)bkr_config.max_bytes);
        return true;
    }
    if (st != BK_OK && st != BK_ENOMEM) {
        bkr_reply_errorf(ctx, "ERR capacity %llu at error rate %g: %s",
                         (unsigned long long)capacity, error, bk_strerror(st));
        return false;
    }
    /* RedisBloom's words first, for clients that match them; then why. */
    if (st == BK_ENOMEM) {
        bkr_reply_errorf(ctx,
                         "ERR Insufficient memory to create filter: capacity %llu at error "
                         "rate %g needs more memory than can be addressed; the limit is %llu "
                         "bytes (module argument MAX_BYTES)",
                         (unsigned long long)capacity, error, (unsigned long long)cap);
        return false;
    }
    bkr_reply_errorf(ctx,
                     "ERR Insufficient memory to create filter: capacity %llu at error rate "
                     "%g needs %llu bytes, over the limit of %llu bytes (module argument "
                     "MAX_BYTES)",
                     (unsigned long long)capacity, error, (unsigned long long)plan.bytes,
                     (unsigned long long)cap);
    return false;
}

/* The options of a new filter of the family. */
static bk_options_t options_for(RedisModuleCtx *ctx, bkr_family_t family, const bkr_params_t *p)
{
    bk_options_t opts;
    memset(&opts, 0, sizeof opts);
    opts.seed_set = true;
    opts.seed = p->seed;
    uint64_t cap = bkr_cap(ctx);
    opts.max_bytes = cap == UINT64_MAX ? 0 : cap;
    if (family == BKR_CBF) {
        opts.kind = BK_KIND_COUNTING;
    } else {
        opts.kind = BK_KIND_SCALABLE;
        opts.sub_kind = bf_sub_kind(p->capacity, first_sub_error(p));
        opts.growth = (double)p->expansion;
        opts.tightening = p->tightening > 0 ? p->tightening : BKR_TIGHTENING;
        opts.first_error_as_given = p->tightening > 0;
        opts.nonscaling = p->nonscaling;
    }
    return opts;
}

/* Replies with (or, loading, stops on) a creation that failed. */
static void creation_failed(RedisModuleCtx *ctx, bkr_family_t family, const bkr_params_t *p,
                            bk_status_t st)
{
    if (bkr_loading(ctx))
        bkr_fatal_load(ctx, "%s capacity %llu error %g: %s", bkr_family_prefix(family),
                       (unsigned long long)p->capacity, p->error, bk_strerror(st));
    bkr_reply_status(ctx, st);
}

/* A BF key's RedisBloom chain (LAYOUT redisbloom): made as RedisBloom's
 * BF.RESERVE makes one, within the cap in ctx (checked before anything is
 * allocated). NULL after replying. */
static void *new_rb_chain_or_reply(RedisModuleCtx *ctx, const bkr_params_t *p)
{
    uint64_t mark = bkr_lib_bytes(), cap = bkr_cap(ctx), bytes = 0;
    bk_status_t st = bk_redisbloom_plan(p->capacity, p->error, p->nonscaling, &bytes);
    if (st == BK_OK && bytes > cap) {
        bkr_reply_errorf(ctx,
                         "ERR Insufficient memory to create filter: capacity %llu at error rate "
                         "%g needs %llu bytes, over the limit of %llu bytes (module argument "
                         "MAX_BYTES)",
                         (unsigned long long)p->capacity, p->error, (unsigned long long)bytes,
                         (unsigned long long)cap);
        return NULL;
    }
    bk_filter_t *f = NULL;
    if (st == BK_OK)
        st = bk_redisbloom_create(&f, p->capacity, p->error, (uint32_t)p->expansion,
                                  p->nonscaling);
    if (st != BK_OK) {
        creation_failed(ctx, BKR_BF, p, st);
        return NULL;
    }
    return bkr_obj_new(BKR_BF, f, mark);
}

/* A new key's value: a BF packed (one block, value.c) when its filter can
 * be, which a new one always can but for an expansion past 65535; else
 * the full form. NULL after replying. A packed BF's first sub-filter is
 * classic, or precise where that needs fewer bits (packed.c). */
void *bkr_new_value_or_reply(RedisModuleCtx *ctx, bkr_family_t family, const bkr_params_t *p)
{
    if (family == BKR_BF && p->rb_layout)
        return new_rb_chain_or_reply(ctx, p);
    if (!within_limit_or_reply(ctx, family, p)) {
        if (bkr_loading(ctx)) /* the AOF's key would be missing, or made up later */
            bkr_fatal_load(ctx, "%s capacity %llu error %g cannot be created",
                           bkr_family_prefix(family), (unsigned long long)p->capacity, p->error);
        return NULL;
    }
    bk_options_t opts = options_for(ctx, family, p);
    bk_status_t st = BK_EKIND;
    if (bkr_family(family)->packs) {
        bk_options_t packed = opts;
        packed.sub_kind = BK_KIND_CLASSIC;
        void *b = NULL;
        st = bkr_packed_new(family, p->capacity, p->error, &packed, &b);
        if (st == BK_OK)
            return b;
    }
    uint64_t mark = bkr_lib_bytes();
    bk_filter_t *f = NULL;
    if (st == BK_EKIND) /* not packable: the full form */
        st = bk_filter_create(&f, p->capacity, p->error, &opts);
    if (st != BK_OK) {
        creation_failed(ctx, family, p, st);
        return NULL;
    }
    return bkr_obj_new(family, f, mark);
}

bkr_obj_t *bkr_create_key_quietly(RedisModuleCtx *ctx, RedisModuleKey *key, bkr_family_t family,
                                  const bkr_params_t *p, bkr_made_t *made)
{
    bkr_params_t q = *p;
    /* LAYOUT redisbloom: a new BF key is RedisBloom's chain, unless it
     * asks for what only bloomkit's has (SEED, TIGHTENING). A replayed
     * BKI.CREATE (seed_set) says itself which it is. */
    if (family == BKR_BF && bkr_config.rb_layout && !q.seed_set && q.tightening == 0)
        q.rb_layout = true;
    if (!q.seed_set)
        q.seed = q.rb_layout ? 0 : bk_random_seed();
    void *v = bkr_new_value_or_reply(ctx, family, &q);
    if (!v)
        return NULL;
    if (RedisModule_ModuleTypeSetValue(key, bkr_value_type(family, v), v) != REDISMODULE_OK) {
        bkr_obj_free(v);
        RedisModule_ReplyWithError(ctx, "ERR could not store the filter");
        return NULL;
    }
    bkr_obj_t *o = bkr_resolve(v, key);
    if (!o) {
        RedisModule_ReplyWithError(ctx, "ERR out of memory opening the filter");
        return NULL;
    }
    bkr_stats.keys_created++;
    made->family = family;
    made->p = q;
    return o;
}

/* Appends v in decimal at p; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = digits[--n];
    return p;
}

/* A double as %.17g writes it (which gives it back exactly, and 0.01 as
 * "0.01"), remembered for the last value asked: keys are made with the
 * same error over and over, and printf's exact conversion of a double
 * was a tenth of a BF.RESERVE's server time. One memo per thread (the
 * module's commands run on the main thread; a module thread would keep
 * its own). */
typedef struct num_memo {
    bool set;
    double v;
    char text[32];
} num_memo_t;

static char *put_double(char *p, double v, num_memo_t *m)
{
    if (!m->set || memcmp(&m->v, &v, sizeof v) != 0) {
        snprintf(m->text, sizeof m->text, "%.17g", v);
        m->v = v;
        m->set = true;
    }
    size_t n = strlen(m->text);
    memcpy(p, m->text, n);
    return p + n;
}

void bkr_replicate_made(RedisModuleCtx *ctx, RedisModuleString *keyname, const bkr_made_t *made,
                        RedisModuleString **items, int n)
{
    /* Formatted here, not when the key is made: an AOF replay or a replica
     * makes keys without propagating them. */
    int flags = RedisModule_GetContextFlags(ctx);
    if (flags & REDISMODULE_CTX_FLAGS_LOADING)
        return;
    /* Nothing reads the stream (no AOF, no replica: stream.c): the command
     * as it came, which Redis drops unread but counts as a change. */
    if (!bkr_stream_read(ctx, flags)) {
        RedisModule_ReplicateVerbatim(ctx);
        return;
    }
    bkr_stats.creations_propagated++;
    static _Thread_local num_memo_t error_memo, tightening_memo;
    const bkr_params_t *q = &made->p;
    /* prefix (a few letters) + 5 numbers of at most 20 digits + 2 doubles
     * of at most 24 characters + 6 colons: under 180 */
    char spec[192], *e = spec;
    const char *prefix = q->rb_layout ? "RB" : bkr_family_prefix(made->family);
    size_t plen = strlen(prefix);
    memcpy(e, prefix, plen);
    e += plen;
    *e++ = ':';
    e = put_u64(e, q->capacity);
    *e++ = ':';
    e = put_double(e, q->error, &error_memo);
    *e++ = ':';
    e = put_u64(e, q->expansion);
    *e++ = ':';
    *e++ = q->nonscaling ? '1' : '0';
    *e++ = ':';
    e = put_u64(e, q->seed);
    if (q->tightening > 0) { /* a 7th field when set */
        *e++ = ':';
        e = put_double(e, q->tightening, &tightening_memo);
    }
    *e = '\0';
    if (n > 0)
        RedisModule_Replicate(ctx, "BKI.CREATE", "scv", keyname, spec, items, (size_t)n);
    else
        RedisModule_Replicate(ctx, "BKI.CREATE", "sc", keyname, spec);
}

bkr_obj_t *bkr_create_key_or_reply(RedisModuleCtx *ctx, RedisModuleKey *key,
                                   RedisModuleString *keyname, bkr_family_t family,
                                   const bkr_params_t *p)
{
    bkr_made_t made;
    bkr_obj_t *o = bkr_create_key_quietly(ctx, key, family, p, &made);
    if (o)
        bkr_replicate_made(ctx, keyname, &made, NULL, 0);
    return o;
}

/* ---- growth of scalable filters ---- */

bool bkr_batch_safe_shape(const bk_filter_shape_t *s, int m)
{
    if (s->kind != BK_KIND_SCALABLE)
        return true; /* a single array never grows nor refuses */
    return s->newest_items + (uint64_t)m < s->newest_capacity;
}

bool bkr_batch_safe(const bkr_obj_t *o, int m)
{
    bk_filter_shape_t s;
    bk_filter_shape(o->f, &s);
    return bkr_batch_safe_shape(&s, m);
}

const char *bkr_growth_check(RedisModuleCtx *ctx, const bkr_obj_t *o)
{
    bk_filter_shape_t s;
    bk_filter_shape(o->f, &s);
    if (s.nonscaling || s.newest_items < s.newest_capacity)
        return NULL; /* the next new item does not grow the chain */
    /* The library holds the cap that applies here (add_items set it from
     * bkr_cap) and says why it refuses; the module only words it. A
     * rebuild (AOF, replica) is never capped, but is worth a log line when
     * it takes a key past MAX_BYTES. */
    uint64_t next_bytes = 0;
    bk_status_t st = bk_filter_next_growth(o->f, NULL, NULL, &next_bytes);
    if (st == BK_OK && s.bytes + next_bytes > bkr_config.max_bytes)
        RedisModule_Log(ctx, "notice",
                        "bloomkit: rebuilding a filter's growth to %llu bytes, over the limit of "
                        "%llu bytes (module argument MAX_BYTES): it is kept whole, but a client "
                        "cannot grow it",
                        (unsigned long long)(s.bytes + next_bytes),
                        (unsigned long long)bkr_config.max_bytes);
    char reason[200];
    if (bk_filter_full_reason(o->f, reason, sizeof reason) == 0)
        return NULL;
    /* Over the cap (the library's own test: the growth is refused though
     * it has a size) is the module argument's doing: say which. */
    bool capped =
        st == BK_EFULL && next_bytes > 0 && s.max_bytes != 0 && s.bytes + next_bytes > s.max_bytes;
    static char msg[300];
    snprintf(msg, sizeof msg, "ERR the filter %s: %s%s",
             capped ? "is at its memory limit" : "cannot grow any further", reason,
             capped ? " (module argument MAX_BYTES)" : "");
    return msg;
}
