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

#include <math.h>
#include <string.h>

#define items_of bki_items
#define set_items bki_set_items

uint64_t bki_scalable_sub_capacity(const bk_filter_t *f, uint32_t i)
{
    /* Iterated rather than n0 * pow(growth, i): the same sequence of IEEE
     * multiplications on every machine, and exact for integer growth. */
    uint64_t cap = f->capacity;
    for (uint32_t j = 0; j < i; j++) {
        double next = ceil((double)cap * f->growth);
        if (!(next < 18446744073709551616.0)) /* 2^64: does not fit */
            return 0;
        cap = (uint64_t)next;
    }
    return cap;
}

double bki_scalable_sub_fpr(const bk_filter_t *f, uint32_t i)
{
    double p = f->fpr;
    if (!f->first_error_as_given && !f->nonscaling)
        p *= 1.0 - f->tightening;
    for (uint32_t j = 0; j < i; j++)
        p *= f->tightening;
    return p;
}

bk_status_t bk_filter_next_growth(const bk_filter_t *f, uint64_t *capacity, double *fpr,
                                  uint64_t *bytes)
{
    if (f->kind != BK_KIND_SCALABLE)
        return BK_EKIND;
    if (f->nonscaling || f->nsubs >= BKI_SCALABLE_MAX_SUBS)
        return BK_EFULL;
    /* The same computation new_sub() makes, so the answer is exact. */
    uint64_t cap = bki_scalable_sub_capacity(f, f->nsubs);
    double p = bki_scalable_sub_fpr(f, f->nsubs);
    if (cap == 0 || !(p > 0.0))
        return BK_EFULL;
    bk_plan_t plan;
    bk_status_t st = bk_plan(f->sub_kind, cap, p, &plan);
    if (st != BK_OK)
        return st;
    if (capacity)
        *capacity = cap;
    if (fpr)
        *fpr = p;
    if (bytes)
        *bytes = plan.bytes;
    return BK_OK;
}

/* Builds sub-filter i (not yet linked into the chain). BK_EFULL when the
 * chain cannot grow further by its own rules (length limit, a capacity past
 * 2^64, an error that underflowed), BK_ENOMEM when it does not fit in memory
 * or an allocation fails. */
static bk_status_t new_sub(const bk_filter_t *f, uint32_t i, bk_filter_t **out)
{
    if (i >= BKI_SCALABLE_MAX_SUBS)
        return BK_EFULL;
    uint64_t cap = bki_scalable_sub_capacity(f, i);
    double p = bki_scalable_sub_fpr(f, i);
    if (cap == 0 || !(p > 0.0))
        return BK_EFULL;
    bk_plan_t plan;
    bk_status_t st = bk_plan(f->sub_kind, cap, p, &plan);
    if (st != BK_OK) /* BK_ENOMEM: n and p are valid here */
        return st;
    bk_filter_t *s;
    st = bki_array_new(&s, f->sub_kind, plan.cells, plan.k, f->hash, f->seed, NULL);
    if (st != BK_OK)
        return st;
    s->capacity = cap;
    s->fpr = p;
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
        if (cap <= f->nsubs)
            return BK_EFULL;
        bk_filter_t **subs = bki_realloc(f->subs, cap * sizeof *subs);
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

bk_status_t bki_scalable_shell(bk_filter_t **out, const bki_chain_t *c, uint32_t subs_cap)
{
    *out = NULL;
    bk_filter_t *f = bki_calloc(1, sizeof *f);
    if (!f)
        return BK_ENOMEM;
    f->kind = BK_KIND_SCALABLE;
    f->hash = c->hash;
    f->seed = c->seed;
    f->capacity = c->capacity;
    f->fpr = c->fpr;
    atomic_init(&f->items, c->items);
    f->sub_kind = c->sub_kind;
    f->growth = c->growth;
    f->tightening = c->tightening;
    f->nonscaling = c->nonscaling;
    f->first_error_as_given = c->first_error_as_given;
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
}

/* Drops the sub-filters from index keep on, newest first. */
static void truncate_chain(bk_filter_t *f, uint32_t keep)
{
    while (f->nsubs > keep) {
        bk_filter_t *s = f->subs[--f->nsubs];
        f->subs_capacity -= s->capacity;
        f->subs_bytes -= s->nbytes;
        bki_array_free(s);
    }
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
    if (sub_kind != BK_KIND_BLOCKED && sub_kind != BK_KIND_CLASSIC)
        return BK_EINVAL;
    if (capacity == 0 || !(fpr > 0.0 && fpr < 1.0))
        return BK_EINVAL;
    bki_chain_t c = {hash, seed, capacity, fpr, 0, sub_kind, growth, tightening,
                     o->nonscaling, o->first_error_as_given};
    bk_filter_t *f;
    bk_status_t st = bki_scalable_shell(&f, &c, 0);
    if (st != BK_OK)
        return st;
    st = grow(f);
    if (st != BK_OK) {
        bki_scalable_free(f);
        /* The first filter is sized by the caller's own numbers. */
        return st == BK_EFULL ? BK_ENOMEM : st;
    }
    *out = f;
    return BK_OK;
}

bool bki_scalable_contains(const bk_filter_t *f, bk_hash_t h)
{
    /* Newest first: it is the largest and holds most of the keys. */
    for (uint32_t i = f->nsubs; i-- > 0;)
        if (bki_array_contains(f->subs[i], h))
            return true;
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
        dst->sub_kind != src->sub_kind || dst->hash != src->hash || dst->seed != src->seed)
        return BK_EINCOMPAT;
    for (uint32_t i = 0; i < dst->nsubs; i++) {
        const bk_filter_t *a = dst->subs[i], *b = src->subs[i];
        if (a->kind != b->kind || a->cells != b->cells || a->k != b->k)
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
                     f->first_error_as_given};
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
    out->growth = f->growth;
    out->tightening = f->tightening;
    out->nonscaling = f->nonscaling;
    out->mapped = f->map_base != NULL;
    out->readonly = f->readonly;
}
