/*
 * Scalable Bloom filter (Almeida, Baquero, Preguica, Hutchison, "Scalable
 * Bloom Filters", 2007): for sets whose final size nobody knows, such as a
 * crawler's frontier. A plain filter sized for n items degrades past n; this
 * one is a chain of plain (blocked or classic) filters. When the newest is
 * at capacity a new one is appended, `growth` times larger and with its
 * error multiplied by `tightening` (r, 0 < r < 1):
 *
 *   capacity_i = ceil(capacity_{i-1} * growth),  capacity_0 = n0
 *   error_i    = error_{i-1} * r,                error_0    = p (1 - r)
 *
 * A key is reported present if any sub-filter reports it, so the chain's
 * false-positive rate is at most sum_i error_i = error_0 / (1 - r) = p,
 * however many sub-filters there are. Capacities grow geometrically, so the
 * chain stays short (log_growth of the growth in items) and each new
 * sub-filter's extra bits per key for its tighter error stay a constant
 * -log2(r) / ln 2 per step.
 *
 * Deep chains. With growth 1 (or a small first capacity and a long run of
 * keys) a chain reaches hundreds or thousands of sub-filters, and the
 * geometric rule breaks down: error_i = error_0 r^i needs -log2(r) more
 * bits per key at every step (sub-filter 5000 of a capacity-1 chain would
 * need ~7,200 bits for its one key), it underflows a double near i = 1060
 * (r = 1/2), a blocked sub-filter, whose k is capped by its 16 lanes, needs
 * steeply more than the classic optimum below about 1e-7 (bk_plan: 1.5x at
 * 1e-7, 2x at 1e-9, 3.6x at 1e-12, 60x at 1e-20), and neither blocked nor
 * classic filters deliver errors that small (precise.c, blocked.c: only 32
 * bits of a key's hash pick its bits within a line). So:
 *  - from sub-filter BKI_GEOMETRIC_SUBS (32) on, the tightening is bounded:
 *    the geometric tail's whole budget T = error_0 r^32 / (1 - r) is
 *    shared out as
 *
 *      error_{32+j} = min(T / ((j + 1)(j + 2)), error_0 r^32),   j >= 0,
 *
 *    whose sum is at most T (the fractions 1/((j+1)(j+2)) sum to 1), so the
 *    chain's bound stays sum_i error_i <= error_0 / (1 - r) = p, while the
 *    bits per key grow with 2 log2(j) instead of j;
 *  - every sub-filter after the first whose error is below 1e-7 is of the
 *    precise kind (classic layout, independently hashed probes), which
 *    needs the classic optimum's bits (k is capped at 64: enough down to
 *    about 2^-64 at the optimum, ~3% more bits at 2^-87) and delivers its
 *    error however small the sub-filter.
 * The first sub-filter is always the kind asked for, as bk_plan() reports
 * it. Chains shorter than 32 sub-filters with errors >= 1e-7, and every
 * file written before, are exactly as they were; older chains that grow
 * further continue by these rules (an old chain with more than 33
 * geometric sub-filters may then exceed the budget by at most T / 12,
 * under 2^-35 p, which the 0.9 p aim of every plan covers). A capacity-1,
 * growth-1 chain at p = 0.0001 holding 5,000 keys takes about 80 KB of
 * payload, where the geometric rule's classic optimum for the same chain
 * is about 2.3 MB (tests/unit/lib/test_scalable.c measures it).
 *
 * Size cap: a chain with max_bytes set (bk_filter_set_max_bytes) checks,
 * before every growth, that the new sub-filter's payload fits under the cap
 * with the existing ones; if not, the key that needed it gets BK_EFULL and
 * the chain is unchanged. Every add path (single, batch) grows here.
 *
 * RedisBloom compatibility (facts from its src/sb.c, SB_NewChain and
 * SBChain_Add): tightening ratio 0.5 fixed, growth an integer (default 2),
 * next link's capacity = previous capacity * growth, next link's error =
 * previous error * 0.5. The first link gets error_rate * 0.5 when the
 * filter scales (our default rule with r = 0.5) and error_rate itself when
 * it is NONSCALING; releases before 2.x gave the first link error_rate
 * itself in both cases, which first_error_as_given reproduces. A
 * non-scaling filter never grows, so its only filter may use p itself: we
 * do that too.
 *
 * Every sub-filter uses the parent's hash id and seed, so one hash of a key
 * serves the whole chain. Growth is lazy, as in RedisBloom: a sub-filter
 * accepts exactly its capacity of new keys, and the sub-filter for the next
 * new key is created when that key arrives, so a non-scaling filter holds
 * exactly its capacity and a failed growth (BK_ENOMEM, BK_EFULL) leaves the
 * filter as it was.
 *
 * The chain sits on the single-array layer (array.c) and reaches its
 * sub-filters only through bki_array_*; its outer struct is assembled in
 * one place, bki_scalable_shell(), whether the chain is created, cloned or
 * loaded, and sub-filters join it only through bki_scalable_append(), which
 * keeps the running totals that bk_filter_shape() reports without a scan.
 */
#include "internal.h"
#include "keyhash.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define items_of bki_items
#define set_items bki_set_items

/* Sub-filters with plain geometric tightening; the tail after them shares
 * out the rest of the error budget (see above). */
#define BKI_GEOMETRIC_SUBS 32u
/* Sub-filters (after the first) with a smaller error are precise: below it
 * a blocked one needs over 1.5x the classic optimum's bits (bk_plan, n =
 * 10^3 and 10^5: 1.53x and 1.52x at 1e-7), and a classic one delivers
 * less than its model promises (precise.c). */
#define BKI_PRECISE_BELOW_FPR 1e-7

uint32_t bki_scalable_max_subs = BKI_SCALABLE_MAX_SUBS;

static uint64_t next_capacity(uint64_t cap, double growth)
{
    double next = ceil((double)cap * growth);
    if (!(next < 18446744073709551616.0)) /* 2^64: does not fit */
        return 0;
    return (uint64_t)next;
}

uint64_t bki_scalable_sub_capacity(const bk_filter_t *f, uint32_t i)
{
    /* Iterated rather than n0 * pow(growth, i): the same sequence of IEEE
     * multiplications on every machine, and exact for integer growth. The
     * chain's own sub-filters hold the sequence so far, so the next one is
     * one step from the newest. */
    if (i > 0 && i <= f->nsubs)
        return f->subs[i - 1]->capacity ? next_capacity(f->subs[i - 1]->capacity, f->growth) : 0;
    uint64_t cap = f->capacity;
    for (uint32_t j = 0; j < i && cap; j++)
        cap = next_capacity(cap, f->growth);
    return cap;
}

double bki_scalable_sub_fpr(const bk_filter_t *f, uint32_t i)
{
    double p = f->fpr;
    if (!f->first_error_as_given && !f->nonscaling)
        p *= 1.0 - f->tightening;
    uint32_t geometric = i < BKI_GEOMETRIC_SUBS ? i : BKI_GEOMETRIC_SUBS;
    for (uint32_t j = 0; j < geometric; j++)
        p *= f->tightening;
    if (i < BKI_GEOMETRIC_SUBS)
        return p;
    /* p = error_0 r^32 here; the tail shares T = p / (1 - r). */
    double j = (double)(i - BKI_GEOMETRIC_SUBS);
    double share = p / (1.0 - f->tightening) / ((j + 1.0) * (j + 2.0));
    return share < p ? share : p;
}

/* The next link of a chain taken over from RedisBloom, by RedisBloom's own
 * rule (its SBChain_Add): the newest link's entries times the growth (an
 * integer), its error halved, sized as RedisBloom sizes links (rbloom.c),
 * so the chain stays a RedisBloom filter. */
static bk_status_t plan_redisbloom_sub(const bk_filter_t *f, uint32_t i, uint64_t *cap,
                                       double *p, bk_plan_t *plan, uint32_t *n2, double *bpe)
{
    if (i == 0 || i > f->nsubs)
        return BK_EFULL; /* such chains are built whole, never from nothing */
    const bk_filter_t *newest = f->subs[i - 1];
    uint64_t growth = (uint64_t)f->growth;
    if (growth != 0 && newest->capacity > UINT64_MAX / growth)
        return BK_EFULL;
    *cap = newest->capacity * growth;
    *p = newest->fpr * 0.5;
    memset(plan, 0, sizeof *plan);
    bk_status_t st = bki_rb_geometry(cap, *p, f->rb_options, &plan->cells, &plan->k, n2, bpe);
    if (st != BK_OK)
        return st;
    plan->kind = BK_KIND_REDISBLOOM;
    plan->bits = plan->cells;
    plan->bytes = plan->cells / 8;
    plan->capacity = *cap;
    plan->fpr_target = *p;
    return BK_OK;
}

/* The kind, capacity, error and plan of sub-filter i. BK_EFULL when the
 * chain cannot grow further by its own rules (length limit, a capacity past
 * 2^64, an error that underflowed), BK_ENOMEM when it does not fit. */
static bk_status_t plan_sub(const bk_filter_t *f, uint32_t i, bk_kind_t *kind, uint64_t *cap,
                            double *p, bk_plan_t *plan)
{
    if (i >= bki_scalable_max_subs || i >= BKI_SCALABLE_MAX_SUBS)
        return BK_EFULL;
    if (f->sub_kind == BK_KIND_REDISBLOOM) {
        uint32_t n2;
        double bpe;
        *kind = BK_KIND_REDISBLOOM;
        return plan_redisbloom_sub(f, i, cap, p, plan, &n2, &bpe);
    }
    *cap = bki_scalable_sub_capacity(f, i);
    *p = bki_scalable_sub_fpr(f, i);
    if (*cap == 0 || !(*p > 0.0))
        return BK_EFULL;
    *kind = i > 0 && *p < BKI_PRECISE_BELOW_FPR ? BK_KIND_PRECISE : f->sub_kind;
    return bk_plan(*kind, *cap, *p, plan); /* BK_ENOMEM: n and p are valid */
}

/* Whether a sub-filter of `bytes` payload bytes fits under the cap. */
static bool under_cap(const bk_filter_t *f, uint64_t bytes)
{
    return f->max_bytes == 0 ||
           (f->subs_bytes <= f->max_bytes && bytes <= f->max_bytes - f->subs_bytes);
}

bk_status_t bk_filter_next_growth(const bk_filter_t *f, uint64_t *capacity, double *fpr,
                                  uint64_t *bytes)
{
    if (f->kind != BK_KIND_SCALABLE)
        return BK_EKIND;
    if (f->nonscaling)
        return BK_EFULL;
    /* The same computation new_sub() makes, so the answer is exact. */
    bk_kind_t kind;
    uint64_t cap;
    double p;
    bk_plan_t plan;
    bk_status_t st = plan_sub(f, f->nsubs, &kind, &cap, &p, &plan);
    if (st != BK_OK)
        return st;
    if (capacity)
        *capacity = cap;
    if (fpr)
        *fpr = p;
    if (bytes)
        *bytes = plan.bytes;
    return under_cap(f, plan.bytes) ? BK_OK : BK_EFULL;
}

size_t bk_filter_full_reason(const bk_filter_t *f, char *buf, size_t len)
{
    if (buf && len)
        buf[0] = '\0';
    if (!f || !buf || len == 0 || f->kind != BK_KIND_SCALABLE || f->nsubs == 0)
        return 0;
    const bk_filter_t *newest = f->subs[f->nsubs - 1];
    if (items_of(newest) < newest->capacity)
        return 0; /* the next new key goes to the newest sub-filter */
    int n;
    uint64_t bytes = 0;
    bk_status_t st = f->nonscaling ? BK_EFULL : bk_filter_next_growth(f, NULL, NULL, &bytes);
    if (f->nonscaling)
        n = snprintf(buf, len, "it is non-scaling and holds its capacity of %llu items",
                     (unsigned long long)f->capacity);
    else if (f->map_base || f->readonly)
        n = snprintf(buf, len, "it is mapped from its file, which cannot grow");
    else if (st == BK_OK)
        return 0;
    else if (st == BK_ENOMEM)
        n = snprintf(buf, len,
                     "its next sub-filter would need more memory than can be addressed");
    else if (bytes > 0 && !under_cap(f, bytes))
        n = snprintf(buf, len,
                     "its next sub-filter of %llu bytes would bring it to %llu bytes, over its "
                     "size cap of %llu bytes",
                     (unsigned long long)bytes, (unsigned long long)(f->subs_bytes + bytes),
                     (unsigned long long)f->max_bytes);
    else if (f->nsubs >= bki_scalable_max_subs || f->nsubs >= BKI_SCALABLE_MAX_SUBS)
        n = snprintf(buf, len, "it has as many sub-filters as a chain may have (%u)",
                     f->nsubs);
    else
        n = snprintf(buf, len,
                     "its next sub-filter's capacity or error rate is past what can be "
                     "represented");
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

/* Builds sub-filter i (not yet linked into the chain): plan_sub's
 * statuses, BK_EFULL if it would cross the size cap, BK_ENOMEM if an
 * allocation fails. */
static bk_status_t new_sub(const bk_filter_t *f, uint32_t i, bk_filter_t **out)
{
    bk_kind_t kind;
    uint64_t cap;
    double p;
    bk_plan_t plan;
    bk_status_t st = plan_sub(f, i, &kind, &cap, &p, &plan);
    if (st != BK_OK)
        return st;
    if (!under_cap(f, plan.bytes))
        return BK_EFULL;
    uint32_t n2 = 0;
    double bpe = 0.0;
    if (kind == BK_KIND_REDISBLOOM)
        (void)plan_redisbloom_sub(f, i, &cap, &p, &plan, &n2, &bpe); /* succeeded above */
    bk_filter_t *s;
    st = bki_array_new(&s, kind, plan.cells, plan.k, f->hash, f->seed, NULL);
    if (st != BK_OK)
        return st;
    s->capacity = cap;
    s->fpr = p;
    s->rb_n2 = n2;
    s->rb_bpe = bpe;
    *out = s;
    return BK_OK;
}

/* Appends sub-filter number nsubs; on failure the chain is unchanged. */
static bk_status_t grow(bk_filter_t *f)
{
    if (f->nsubs == f->subs_cap) {
        uint32_t cap = f->subs_cap ? f->subs_cap * 2 : 4;
        if (cap > BKI_SCALABLE_MAX_SUBS)
            cap = BKI_SCALABLE_MAX_SUBS;
        if (cap <= f->nsubs || f->nsubs >= bki_scalable_max_subs)
            return BK_EFULL;
        bk_filter_t **subs = bki_realloc(f->subs, f->subs_cap * sizeof *subs, cap * sizeof *subs);
        if (!subs)
            return BK_ENOMEM;
        f->subs = subs;
        f->subs_cap = cap;
    }
    bk_filter_t *s;
    bk_status_t st = new_sub(f, f->nsubs, &s);
    if (st != BK_OK)
        return st;
    bki_scalable_append(f, s);
    return BK_OK;
}

static bk_status_t chain_add_key(bk_filter_t *f, const void *key, size_t len, bool *was_new)
{
    if (BKI_UNLIKELY(f->readonly)) {
        if (was_new)
            *was_new = false;
        return BK_EREADONLY;
    }
    return bki_scalable_add(f, bki_key_hash(f->hash, f->seed, key, len), was_new);
}

static bool chain_contains_key(const bk_filter_t *f, const void *key, size_t len)
{
    return bki_scalable_contains(f, bki_key_hash(f->hash, f->seed, key, len));
}

bk_status_t bki_scalable_shell(bk_filter_t **out, const bki_chain_t *c, uint32_t subs_cap)
{
    *out = NULL;
    bk_filter_t *f = bki_calloc(1, sizeof *f);
    if (!f)
        return BK_ENOMEM;
    f->kind = BK_KIND_SCALABLE;
    f->add_key = chain_add_key;
    f->contains_key = chain_contains_key;
    f->u64 = NULL; /* 64-bit keys as their bytes */
    f->contains_hash = bki_scalable_contains;
    f->hash = c->hash;
    f->seed = c->seed;
    f->capacity = c->capacity;
    f->fpr = c->fpr;
    bki_set_items(f, c->items);
    f->sub_kind = c->sub_kind;
    f->growth = c->growth;
    f->tightening = c->tightening;
    f->nonscaling = c->nonscaling;
    f->first_error_as_given = c->first_error_as_given;
    f->max_bytes = c->max_bytes;
    f->rb_options = c->rb_options;
    f->map_fd = -1;
    if (subs_cap) {
        f->subs = bki_calloc(subs_cap, sizeof *f->subs);
        if (!f->subs) {
            bki_free(f);
            return BK_ENOMEM;
        }
        f->subs_cap = subs_cap;
    }
    *out = f;
    return BK_OK;
}

void bki_scalable_append(bk_filter_t *f, bk_filter_t *s)
{
    f->subs[f->nsubs++] = s;
    f->subs_capacity += s->capacity;
    f->subs_bytes += s->nbytes;
    f->subs_precise += s->kind == BK_KIND_PRECISE;
}

/* Drops the sub-filters from index keep on, newest first. */
static void truncate_chain(bk_filter_t *f, uint32_t keep)
{
    while (f->nsubs > keep) {
        bk_filter_t *s = f->subs[--f->nsubs];
        f->subs_capacity -= s->capacity;
        f->subs_bytes -= s->nbytes;
        f->subs_precise -= s->kind == BK_KIND_PRECISE;
        bki_array_free(s);
    }
}

bk_filter_t *bki_scalable_defrag(bk_filter_t *f, bki_mover_t *mv)
{
    f = bki_move_block(f, mv);
    f->subs = bki_move_block(f->subs, mv);
    for (uint32_t i = 0; i < f->nsubs; i++)
        f->subs[i] = bki_array_defrag(f->subs[i], mv);
    return f;
}

void bki_scalable_free(bk_filter_t *f)
{
    truncate_chain(f, 0);
    bki_free(f->subs);
    bki_free(f);
}

bk_status_t bki_scalable_create(bk_filter_t **out, uint64_t capacity, double fpr,
                                const bk_options_t *opts, bk_hash_id_t hash, uint64_t seed)
{
    static const bk_options_t defaults = {0};
    const bk_options_t *o = opts ? opts : &defaults;
    double growth = o->growth == 0.0 ? 2.0 : o->growth;
    double tightening = o->tightening == 0.0 ? 0.5 : o->tightening;
    bk_kind_t sub_kind = o->sub_kind == BK_KIND_DEFAULT ? BK_KIND_BLOCKED : o->sub_kind;
    *out = NULL;
    /* Written so that NaN fails every test. */
    if (!(growth >= 1.0) || isinf(growth) || !(tightening > 0.0 && tightening < 1.0))
        return BK_EINVAL;
    if (!bki_kind_is(sub_kind, BKI_KIND_SUB_CREATE))
        return BK_EINVAL;
    if (capacity == 0 || !(fpr > 0.0 && fpr < 1.0))
        return BK_EINVAL;
    bki_chain_t c = {hash,       seed,          capacity,
                     fpr,        0,             sub_kind,
                     growth,     tightening,    o->nonscaling,
                     o->first_error_as_given, o->max_bytes, 0};
    bk_filter_t *f;
    bk_status_t st = bki_scalable_shell(&f, &c, 0);
    if (st != BK_OK)
        return st;
    st = grow(f);
    if (st != BK_OK) {
        bool over_cap = o->max_bytes && st == BK_EFULL;
        bki_scalable_free(f);
        /* The first filter is sized by the caller's own numbers: past the
         * cap it is BK_EFULL, else it did not fit in memory. */
        return st == BK_EFULL && !over_cap ? BK_ENOMEM : st;
    }
    *out = f;
    return BK_OK;
}

bool bki_scalable_contains(const bk_filter_t *f, bk_hash_t h)
{
    /* Newest first: it is the largest and holds most of the keys. Deep
     * chains are mostly precise sub-filters, which share the key's first
     * probe values. */
    uint64_t u[BKI_PRECISE_VALUES];
    bool have_values = false;
    for (uint32_t i = f->nsubs; i-- > 0;) {
        const bk_filter_t *s = f->subs[i];
        if (s->kind == BK_KIND_PRECISE) {
            if (!have_values)
                bki_precise_values(h, u);
            have_values = true;
            if (bki_precise_contains_values(s, h, u))
                return true;
        } else if (bki_array_contains(s, h)) {
            return true;
        }
    }
    return false;
}

bk_status_t bki_scalable_add(bk_filter_t *f, bk_hash_t h, bool *was_new)
{
    if (was_new)
        *was_new = false;
    if (bki_scalable_contains(f, h))
        return BK_OK;
    bk_filter_t *cur = f->subs[f->nsubs - 1];
    if (items_of(cur) >= cur->capacity) {
        /* A mapped chain borrows its file's memory and cannot grow. */
        if (f->nonscaling || f->map_base || f->readonly)
            return BK_EFULL;
        bk_status_t st = grow(f);
        if (st != BK_OK)
            return st;
        cur = f->subs[f->nsubs - 1];
    }
    if (cur->readonly)
        return BK_EREADONLY;
    bki_array_add(cur, h);
    set_items(f, items_of(f) + 1);
    if (was_new)
        *was_new = true;
    return BK_OK;
}

bk_status_t bki_scalable_clear(bk_filter_t *f)
{
    if (f->map_base) {
        /* A mapped chain lives in the file, whose shape cannot shrink:
         * empty every sub-filter in place and keep them all. */
        for (uint32_t i = 0; i < f->nsubs; i++)
            bki_array_clear(f->subs[i]);
        set_items(f, 0);
        return BK_OK;
    }
    truncate_chain(f, 1);
    set_items(f, 0);
    bki_array_clear(f->subs[0]);
    return BK_OK;
}

bk_status_t bki_scalable_union(bk_filter_t *dst, const bk_filter_t *src)
{
    if (src->kind != BK_KIND_SCALABLE || dst->nsubs != src->nsubs ||
        dst->sub_kind != src->sub_kind || dst->hash != src->hash || dst->seed != src->seed ||
        dst->rb_options != src->rb_options)
        return BK_EINCOMPAT;
    for (uint32_t i = 0; i < dst->nsubs; i++) {
        const bk_filter_t *a = dst->subs[i], *b = src->subs[i];
        if (a->kind != b->kind || a->cells != b->cells || a->k != b->k || a->rb_n2 != b->rb_n2)
            return BK_EINCOMPAT;
    }
    uint64_t items = 0;
    for (uint32_t i = 0; i < dst->nsubs; i++) {
        bk_status_t st = bki_array_union(dst->subs[i], src->subs[i]);
        if (st != BK_OK) /* not reached: shapes were checked above */
            return st;
        items += items_of(dst->subs[i]);
    }
    set_items(dst, items);
    return BK_OK;
}

bk_status_t bki_scalable_clone(bk_filter_t **out, const bk_filter_t *f)
{
    bki_chain_t c = {f->hash,       f->seed,       f->capacity,
                     f->fpr,        items_of(f),   f->sub_kind,
                     f->growth,     f->tightening, f->nonscaling,
                     f->first_error_as_given, f->max_bytes, f->rb_options};
    bk_filter_t *copy;
    bk_status_t st = bki_scalable_shell(&copy, &c, f->nsubs);
    if (st != BK_OK)
        return st;
    for (uint32_t i = 0; i < f->nsubs; i++) {
        bk_filter_t *s;
        st = bki_array_clone(&s, f->subs[i]);
        if (st != BK_OK) {
            bki_scalable_free(copy); /* frees the clones made so far */
            return st;
        }
        bki_scalable_append(copy, s);
    }
    *out = copy;
    return BK_OK;
}

void bki_scalable_info(const bk_filter_t *f, bk_filter_info_t *out)
{
    double fpr_none = 1.0; /* probability that no sub-filter answers yes */
    memset(out, 0, sizeof *out);
    out->kind = BK_KIND_SCALABLE;
    out->sub_kind = f->sub_kind;
    out->hash = f->hash;
    out->seed = f->seed;
    out->fpr_target = f->fpr;
    out->items = items_of(f);
    for (uint32_t i = 0; i < f->nsubs; i++) {
        bk_filter_info_t s;
        bki_array_info(f->subs[i], &s);
        out->capacity += s.capacity;
        out->cells += s.cells;
        out->bytes += s.bytes;
        out->cells_set += s.cells_set;
        out->estimated_items += s.estimated_items;
        out->k = s.k;
        fpr_none *= 1.0 - s.expected_fpr;
    }
    out->fill = out->cells ? (double)out->cells_set / (double)out->cells : 0.0;
    out->expected_fpr = 1.0 - fpr_none;
    out->filters = f->nsubs;
    out->precise_filters = f->subs_precise;
    out->growth = f->growth;
    out->tightening = f->tightening;
    out->nonscaling = f->nonscaling;
    out->mapped = f->map_base != NULL;
    out->readonly = f->readonly;
}

void bki_scalable_shape(const bk_filter_t *f, bk_filter_shape_t *out)
{
    bki_array_shape(f, out); /* the fields every kind's shape has */
    const bk_filter_t *newest = f->subs[f->nsubs - 1];
    out->sub_kind = f->sub_kind;
    out->capacity = f->subs_capacity;
    out->k = newest->k;
    out->bytes = f->subs_bytes;
    out->filters = f->nsubs;
    out->precise_filters = f->subs_precise;
    out->growth = f->growth;
    out->tightening = f->tightening;
    out->nonscaling = f->nonscaling;
    out->newest_capacity = newest->capacity;
    out->newest_items = bki_items(newest);
}
