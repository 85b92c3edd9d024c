/*
 * Tests for src/scalable.c: growth 100x past the initial capacity with zero
 * false negatives, measured FPR <= p and memory equal to the sum of the
 * sub-filters' plans; the capacity and error sequences; lazy growth exactly
 * at capacity; the non-scaling mode; the overflow and length guards; union,
 * clone and clear; and allocation failures injected at every allocation of
 * create, growth and clone, each of which must leave the filter unchanged.
 */
#include "harness.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bk_options_t sopts(uint64_t seed)
{
    bk_options_t o;
    memset(&o, 0, sizeof o);
    o.kind = BK_KIND_SCALABLE;
    o.seed_set = true;
    o.seed = seed;
    return o;
}

static size_t make_key(uint64_t i, char *buf)
{
    return (size_t)snprintf(buf, 32, "url-%llu/%llx", (unsigned long long)i,
                            (unsigned long long)(i * 0x9E3779B1u));
}

/* Adds keys [from, to); returns how many were reported new. */
static uint64_t add_range(bk_filter_t *f, uint64_t from, uint64_t to)
{
    char key[32];
    uint64_t fresh = 0;
    for (uint64_t i = from; i < to; i++) {
        bool was_new = false;
        bk_status_t st = bk_filter_add(f, key, make_key(i, key), &was_new);
        if (st != BK_OK) {
            CHECK_MSG(0, "add %llu: %s", (unsigned long long)i, bk_strerror(st));
            break;
        }
        fresh += was_new;
    }
    return fresh;
}

/* Adds keys from `from` on until `want` new ones were accepted; returns the
 * next unused key number. */
static uint64_t add_new(bk_filter_t *f, uint64_t from, uint64_t want)
{
    char key[32];
    uint64_t got = 0, i = from;
    while (got < want) {
        bool was_new = false;
        bk_status_t st = bk_filter_add(f, key, make_key(i++, key), &was_new);
        if (st != BK_OK) {
            CHECK_MSG(0, "add: %s", bk_strerror(st));
            break;
        }
        got += was_new;
    }
    return i;
}

/* Adds keys until one is new and returns the status of that add (the
 * filter is full or cannot grow exactly when a new key arrives). */
static bk_status_t add_one_new(bk_filter_t *f, uint64_t *next)
{
    char key[32];
    for (;;) {
        size_t len = make_key(*next, key);
        if (bk_filter_contains(f, key, len)) {
            (*next)++;
            continue;
        }
        bool was_new = false;
        bk_status_t st = bk_filter_add(f, key, len, &was_new);
        if (st == BK_OK) {
            CHECK(was_new);
            (*next)++;
        }
        return st;
    }
}

static void test_defaults_and_sequences(void)
{
    bk_filter_t *f = NULL;
    bk_options_t o = sopts(1);
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, &o));
    if (!f)
        return;
    bk_filter_info_t info;
    bk_filter_info(f, &info);
    CHECK_EQ_U64(info.kind, BK_KIND_SCALABLE);
    CHECK_EQ_U64(info.sub_kind, BK_KIND_BLOCKED);
    CHECK_EQ_U64(info.filters, 1);
    CHECK(info.growth == 2.0);
    CHECK(info.tightening == 0.5);
    CHECK(!info.nonscaling);
    CHECK_EQ_U64(info.capacity, 1000);
    /* capacity_i = 1000 * 2^i, error_i = 0.01 * (1 - 0.5) * 0.5^i */
    for (uint32_t i = 0; i < 10; i++) {
        CHECK_EQ_U64(bki_scalable_sub_capacity(f, i), UINT64_C(1000) << i);
        CHECK(fabs(bki_scalable_sub_fpr(f, i) - 0.005 * ldexp(1.0, -(int)i)) < 1e-18);
    }
    /* The first sub-filter is exactly the plan for (1000, 0.005). */
    bk_plan_t plan;
    CHECK_OK(bk_plan(BK_KIND_BLOCKED, 1000, 0.005, &plan));
    CHECK_EQ_U64(f->subs[0]->cells, plan.cells);
    CHECK_EQ_U64(f->subs[0]->k, plan.k);
    CHECK_EQ_U64(info.bytes, plan.bytes);
    bk_filter_free(f);

    /* Non-integer growth: capacities rounded up at each step. */
    o.growth = 1.5;
    o.tightening = 0.8;
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, &o));
    if (!f)
        return;
    const uint64_t want[] = {1000, 1500, 2250, 3375, 5063, 7595};
    for (uint32_t i = 0; i < 6; i++)
        CHECK_EQ_U64(bki_scalable_sub_capacity(f, i), want[i]);
    CHECK(fabs(bki_scalable_sub_fpr(f, 0) - 0.01 * 0.2) < 1e-15);
    CHECK(fabs(bki_scalable_sub_fpr(f, 2) - 0.01 * 0.2 * 0.64) < 1e-15);
    bk_filter_free(f);

    /* RedisBloom's older rule: the first filter gets p itself. */
    o = sopts(1);
    o.first_error_as_given = true;
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, &o));
    if (!f)
        return;
    CHECK(bki_scalable_sub_fpr(f, 0) == 0.01);
    CHECK(bki_scalable_sub_fpr(f, 1) == 0.005);
    bk_filter_free(f);
}

/* Exactly capacity_0 new keys fit before the second sub-filter appears, and
 * it appears with the next new key, not before. */
static void test_lazy_growth_at_capacity(void)
{
    bk_filter_t *f = NULL;
    bk_options_t o = sopts(2);
    CHECK_OK(bk_filter_create(&f, 500, 0.01, &o));
    if (!f)
        return;
    uint64_t next = add_new(f, 0, 500);
    CHECK_EQ_U64(f->nsubs, 1);
    CHECK_EQ_U64(bk_filter_items(f), 500);
    CHECK_EQ_U64(bk_filter_items(f->subs[0]), 500);
    CHECK_OK(add_one_new(f, &next));
    CHECK_EQ_U64(f->nsubs, 2);
    if (f->nsubs != 2) {
        bk_filter_free(f);
        return;
    }
    CHECK_EQ_U64(f->subs[1]->capacity, 1000);
    CHECK_EQ_U64(bk_filter_items(f->subs[1]), 1);
    next = add_new(f, next, 999);
    CHECK_EQ_U64(f->nsubs, 2);
    CHECK_OK(add_one_new(f, &next));
    CHECK_EQ_U64(f->nsubs, 3);
    CHECK_EQ_U64(bk_filter_items(f), 1501);
    /* Re-adding any earlier key is not new and adds nothing. */
    uint64_t again = add_range(f, 0, next);
    CHECK_EQ_U64(again, 0);
    CHECK_EQ_U64(bk_filter_items(f), 1501);
    bk_filter_free(f);
}

/* The test: 100x the initial capacity. */
static void grow_100x(bk_kind_t sub_kind, double growth, double tightening, double p)
{
    uint64_t n0 = bkt_scaled(2000), total = 100 * n0, q = bkt_scaled(1000000);
    bk_filter_t *f = NULL;
    bk_options_t o = sopts(1000 + (uint64_t)(growth * 10));
    o.sub_kind = sub_kind;
    o.growth = growth;
    o.tightening = tightening;
    CHECK_OK(bk_filter_create(&f, n0, p, &o));
    if (!f)
        return;
    uint64_t fresh = add_range(f, 0, total);
    /* Keys are distinct, so each "not new" answer was a false positive. */
    CHECK_EQ_U64(bk_filter_items(f), fresh);
    CHECK_MSG((double)(total - fresh) <= p * (double)total + 10, "%llu of %llu not new",
              (unsigned long long)(total - fresh), (unsigned long long)total);

    char key[32];
    uint64_t fn = 0, fp = 0;
    for (uint64_t i = 0; i < total; i++)
        fn += !bk_filter_contains(f, key, make_key(i, key));
    for (uint64_t i = total; i < total + q; i++)
        fp += bk_filter_contains(f, key, make_key(i, key));
    CHECK_EQ_U64(fn, 0);
    double fpr = (double)fp / (double)q;
    CHECK_MSG(fpr <= p, "growth %g r %g p %g: measured FPR %g", growth, tightening, p, fpr);

    /* The chain is as long as the capacities say: the fewest sub-filters
     * whose capacities add up to the new keys. */
    uint32_t want_subs = 0;
    uint64_t room = 0;
    while (room < fresh)
        room += bki_scalable_sub_capacity(f, want_subs++);
    CHECK_EQ_U64(f->nsubs, want_subs);
    /* Memory is exactly the sum of each sub-filter's plan. */
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < f->nsubs; i++) {
        bk_plan_t plan;
        CHECK_OK(bk_plan(sub_kind, bki_scalable_sub_capacity(f, i), bki_scalable_sub_fpr(f, i),
                         &plan));
        CHECK_EQ_U64(f->subs[i]->nbytes, plan.bytes);
        CHECK_EQ_U64(f->subs[i]->k, plan.k);
        bytes += plan.bytes;
    }
    bk_filter_info_t info;
    bk_filter_info(f, &info);
    CHECK_EQ_U64(info.bytes, bytes);
    CHECK_EQ_U64(info.filters, f->nsubs);
    CHECK(info.expected_fpr <= p);
    CHECK(info.estimated_items > 0.9 * (double)fresh && info.estimated_items < 1.1 * (double)fresh);
    bk_filter_free(f);
}

static void test_grow_100x_default(void)
{
    grow_100x(BK_KIND_BLOCKED, 2.0, 0.5, 0.01);
}

static void test_grow_100x_variants(void)
{
    grow_100x(BK_KIND_CLASSIC, 2.0, 0.5, 0.01);
    grow_100x(BK_KIND_BLOCKED, 4.0, 0.8, 0.001);
    grow_100x(BK_KIND_BLOCKED, 1.5, 0.7, 0.02);
}

static void test_nonscaling(void)
{
    bk_filter_t *f = NULL;
    bk_options_t o = sopts(3);
    o.nonscaling = true;
    CHECK_OK(bk_filter_create(&f, 300, 0.01, &o));
    if (!f)
        return;
    CHECK(bki_scalable_sub_fpr(f, 0) == 0.01); /* never grows: p itself */
    uint64_t next = add_new(f, 0, 300);
    CHECK_EQ_U64(bk_filter_items(f), 300);
    uint8_t *snap = malloc(f->subs[0]->nbytes);
    memcpy(snap, f->subs[0]->data, f->subs[0]->nbytes);
    CHECK_STATUS(add_one_new(f, &next), BK_EFULL);
    CHECK_STATUS(add_one_new(f, &next), BK_EFULL);
    CHECK_EQ_U64(f->nsubs, 1);
    CHECK_EQ_U64(bk_filter_items(f), 300);
    CHECK(memcmp(snap, f->subs[0]->data, f->subs[0]->nbytes) == 0);
    /* Keys already in are still fine to add. */
    bool was_new = true;
    CHECK_OK(bk_filter_add(f, "url-0/0", 7, &was_new));
    CHECK(!was_new);
    bk_filter_info_t info;
    bk_filter_info(f, &info);
    CHECK(info.nonscaling);
    free(snap);
    bk_filter_free(f);
}

static void test_invalid_options(void)
{
    bk_filter_t *f = (bk_filter_t *)&f;
    bk_options_t o = sopts(4);
    const double bad_growth[] = {0.5, -1, NAN, INFINITY};
    for (int i = 0; i < 4; i++) {
        o.growth = bad_growth[i];
        CHECK_STATUS(bk_filter_create(&f, 100, 0.01, &o), BK_EINVAL);
        CHECK(f == NULL);
    }
    o.growth = 0;
    const double bad_r[] = {1.0, -0.1, 1.5, NAN};
    for (int i = 0; i < 4; i++) {
        o.tightening = bad_r[i];
        CHECK_STATUS(bk_filter_create(&f, 100, 0.01, &o), BK_EINVAL);
    }
    o.tightening = 0;
    o.sub_kind = BK_KIND_COUNTING;
    CHECK_STATUS(bk_filter_create(&f, 100, 0.01, &o), BK_EINVAL);
    o.sub_kind = BK_KIND_SCALABLE;
    CHECK_STATUS(bk_filter_create(&f, 100, 0.01, &o), BK_EINVAL);
    o.sub_kind = BK_KIND_DEFAULT;
    CHECK_STATUS(bk_filter_create(&f, 0, 0.01, &o), BK_EINVAL);
    CHECK_STATUS(bk_filter_create(&f, 100, 0.0, &o), BK_EINVAL);
    CHECK_STATUS(bk_filter_create(&f, 100, NAN, &o), BK_EINVAL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_SCALABLE, 1024, 4, &o), BK_EINVAL);
    CHECK(f == NULL);
    /* growth exactly 1 is allowed: every sub-filter the same size */
    o.growth = 1.0;
    CHECK_OK(bk_filter_create(&f, 100, 0.01, &o));
    if (f)
        CHECK_EQ_U64(bki_scalable_sub_capacity(f, 5), 100);
    bk_filter_free(f);
}

/* A growth that cannot happen fails cleanly and changes nothing. */
static void test_growth_limits(void)
{
    bk_options_t o = sopts(5);
    bk_filter_t *f = NULL;
    uint64_t next;

    /* Capacity past 2^64: the chain cannot grow by its own rules. */
    o.growth = 1e30;
    CHECK_OK(bk_filter_create(&f, 10, 0.01, &o));
    if (f) {
        CHECK_EQ_U64(bki_scalable_sub_capacity(f, 1), 0);
        next = add_new(f, 0, 10);
        CHECK_STATUS(add_one_new(f, &next), BK_EFULL);
        CHECK_EQ_U64(f->nsubs, 1);
        CHECK_EQ_U64(bk_filter_items(f), 10);
        bk_filter_free(f);
    }

    /* A next sub-filter too large for memory (10^15 keys). */
    f = NULL;
    o.growth = 1e14;
    CHECK_OK(bk_filter_create(&f, 10, 0.01, &o));
    if (f) {
        next = add_new(f, 0, 10);
        CHECK_STATUS(add_one_new(f, &next), BK_ENOMEM);
        CHECK_EQ_U64(f->nsubs, 1);
        CHECK_EQ_U64(bk_filter_items(f), 10);
        bk_filter_free(f);
    }

    /* Chain length: one key per classic sub-filter, each with half the
     * error of the one before, up to the limit. */
    f = NULL;
    o.growth = 1.0;
    o.sub_kind = BK_KIND_CLASSIC;
    CHECK_OK(bk_filter_create(&f, 1, 0.01, &o));
    if (f) {
        next = 0;
        for (uint32_t i = 0; i < BKI_SCALABLE_MAX_SUBS; i++)
            CHECK_OK(add_one_new(f, &next));
        CHECK_EQ_U64(f->nsubs, BKI_SCALABLE_MAX_SUBS);
        CHECK_STATUS(add_one_new(f, &next), BK_EFULL);
        CHECK_EQ_U64(f->nsubs, BKI_SCALABLE_MAX_SUBS);
        CHECK_EQ_U64(bk_filter_items(f), BKI_SCALABLE_MAX_SUBS);
        char key[32];
        for (uint64_t i = 0; i < next; i++)
            CHECK(bk_filter_contains(f, key, make_key(i, key)));
        bk_filter_free(f);
    }
}

/* bk_filter_next_growth predicts exactly the sub-filter the chain adds. */
static void test_next_growth_predicts(void)
{
    bk_options_t o = sopts(41);
    o.growth = 3;
    o.tightening = 0.6;
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 200, 0.01, &o));
    if (!f)
        return;
    uint64_t next_key = 0;
    for (int round = 0; round < 4; round++) {
        uint64_t cap = 0, bytes = 0;
        double fpr = 0;
        uint32_t before = f->nsubs;
        CHECK_OK(bk_filter_next_growth(f, &cap, &fpr, &bytes));
        CHECK_OK(bk_filter_next_growth(f, NULL, NULL, NULL));
        /* Fill until the chain grows. */
        while (f->nsubs == before && next_key < 200000)
            add_range(f, next_key, next_key + 1), next_key++;
        if (f->nsubs != before + 1) {
            CHECK_MSG(0, "round %d: no growth", round);
            break;
        }
        const bk_filter_t *added = f->subs[before];
        CHECK_EQ_U64(added->capacity, cap);
        CHECK_EQ_U64(added->nbytes, bytes);
        CHECK_MSG(added->fpr == fpr, "round %d: fpr %g vs predicted %g", round, added->fpr, fpr);
        CHECK_EQ_U64(cap, bki_scalable_sub_capacity(f, before));
    }
    bk_filter_free(f);

    /* Not scalable, or not allowed to grow. */
    bk_filter_t *b = NULL;
    CHECK_OK(bk_filter_create(&b, 100, 0.01, NULL));
    CHECK_STATUS(bk_filter_next_growth(b, NULL, NULL, NULL), BK_EKIND);
    bk_filter_free(b);
    o = sopts(42);
    o.nonscaling = true;
    CHECK_OK(bk_filter_create(&b, 100, 0.01, &o));
    CHECK_STATUS(bk_filter_next_growth(b, NULL, NULL, NULL), BK_EFULL);
    bk_filter_free(b);
}

static void test_union_clone_clear(void)
{
    bk_options_t o = sopts(6);
    bk_filter_t *a = NULL, *b = NULL, *c = NULL, *short_chain = NULL;
    CHECK_OK(bk_filter_create(&a, 200, 0.01, &o));
    CHECK_OK(bk_filter_create(&b, 200, 0.01, &o));
    CHECK_OK(bk_filter_create(&short_chain, 200, 0.01, &o));
    if (!a || !b || !short_chain)
        goto out;
    /* Same number of new keys per chain, so both have the same shape. */
    uint64_t na = add_new(a, 0, 1000);
    uint64_t nb = add_new(b, 1000000, 1000);
    CHECK_EQ_U64(a->nsubs, 3);
    CHECK_EQ_U64(b->nsubs, 3);
    CHECK_STATUS(bk_filter_union(a, short_chain), BK_EINCOMPAT);

    CHECK_OK(bk_filter_clone(&c, a));
    if (!c)
        goto out;
    CHECK_EQ_U64(c->nsubs, a->nsubs);
    CHECK_EQ_U64(bk_filter_items(c), 1000);
    for (uint32_t i = 0; i < a->nsubs; i++)
        CHECK(memcmp(c->subs[i]->data, a->subs[i]->data, a->subs[i]->nbytes) == 0);
    /* The clone is independent of the original. */
    uint64_t nc = add_new(c, 2000000, 500);
    CHECK_EQ_U64(bk_filter_items(a), 1000);
    CHECK_EQ_U64(a->nsubs, 3);
    char key[32];
    uint64_t leaked = 0;
    for (uint64_t i = 2000000; i < nc; i++)
        leaked += bk_filter_contains(a, key, make_key(i, key));
    CHECK(leaked < 25); /* only false positives */

    CHECK_OK(bk_filter_union(a, b));
    uint64_t fn = 0;
    for (uint64_t i = 0; i < na; i++)
        fn += !bk_filter_contains(a, key, make_key(i, key));
    for (uint64_t i = 1000000; i < nb; i++)
        fn += !bk_filter_contains(a, key, make_key(i, key));
    CHECK_EQ_U64(fn, 0);
    /* items: the sum of the sub-filters' estimates, about 2000 */
    CHECK(bk_filter_items(a) > 1800 && bk_filter_items(a) < 2200);

    CHECK_OK(bk_filter_clear(c));
    CHECK_EQ_U64(c->nsubs, 1);
    CHECK_EQ_U64(bk_filter_items(c), 0);
    uint64_t present = 0;
    for (uint64_t i = 0; i < na; i++)
        present += bk_filter_contains(c, key, make_key(i, key));
    CHECK_EQ_U64(present, 0);
    /* and it grows again from the start */
    add_new(c, 0, 201);
    CHECK_EQ_U64(c->nsubs, 2);
out:
    bk_filter_free(a);
    bk_filter_free(b);
    bk_filter_free(c);
    bk_filter_free(short_chain);
}

static void test_prehashed_and_batch(void)
{
    bk_options_t o = sopts(7);
    bk_filter_t *f = NULL, *g = NULL;
    CHECK_OK(bk_filter_create(&f, 100, 0.01, &o));
    CHECK_OK(bk_filter_create(&g, 100, 0.01, &o));
    enum { N = 1000 };
    static char keys[2 * N][32];
    static bk_key_t kv[2 * N];
    static bool flags[2 * N];
    if (!f || !g)
        goto out;
    for (int i = 0; i < 2 * N; i++) {
        kv[i].ptr = keys[i];
        kv[i].len = make_key((uint64_t)(i % 1500), keys[i]);
    }
    uint64_t n_new = 0;
    CHECK_OK(bk_filter_add_batch(f, kv, N, flags, &n_new));
    uint64_t single = 0;
    for (int i = 0; i < N; i++) {
        bool w;
        CHECK_OK(bk_filter_add_hash(g, bk_filter_hash(g, kv[i].ptr, kv[i].len), &w));
        CHECK(w == flags[i]);
        single += w;
    }
    CHECK_EQ_U64(n_new, single);
    CHECK_EQ_U64(f->nsubs, g->nsubs);
    CHECK(f->nsubs >= 4);
    size_t hits = bk_filter_contains_batch(f, kv, 2 * N, flags);
    size_t hits2 = 0;
    for (int i = 0; i < 2 * N; i++) {
        bool in = bk_filter_contains_hash(g, bk_filter_hash(g, kv[i].ptr, kv[i].len));
        CHECK(in == flags[i]);
        hits2 += in;
    }
    CHECK_EQ_U64(hits, hits2);
    CHECK_STATUS(bk_filter_remove(f, keys[0], kv[0].len), BK_EKIND);
    CHECK_STATUS(bk_filter_add_atomic(f, keys[0], kv[0].len, NULL), BK_EKIND);
out:
    bk_filter_free(f);
    bk_filter_free(g);
}

/* Growth where every allocation fails in turn: BK_ENOMEM, and the filter
 * is exactly as before (chain, items, payloads); then growth succeeds. */
static void grow_with_failures(bk_filter_t *f, uint64_t *next)
{
    uint32_t nsubs = f->nsubs;
    uint64_t items = bk_filter_items(f);
    bool grown = false;
    for (long fail_at = 1; fail_at < 10 && !grown; fail_at++) {
        bki_fail_countdown = fail_at;
        bk_status_t st = add_one_new(f, next);
        bki_fail_countdown = 0;
        if (st == BK_OK) {
            grown = true;
            CHECK(fail_at > 1);
            CHECK_EQ_U64(f->nsubs, nsubs + 1);
            CHECK_EQ_U64(bk_filter_items(f), items + 1);
        } else {
            CHECK_STATUS(st, BK_ENOMEM);
            CHECK_EQ_U64(f->nsubs, nsubs);
            CHECK_EQ_U64(bk_filter_items(f), items);
        }
    }
    CHECK(grown);
}

static void test_alloc_failures(void)
{
    bk_options_t o = sopts(8);
    bool created = false;
    for (long fail_at = 1; fail_at < 20 && !created; fail_at++) {
        bk_filter_t *f = NULL;
        bki_fail_countdown = fail_at;
        bk_status_t st = bk_filter_create(&f, 50, 0.01, &o);
        bki_fail_countdown = 0;
        if (st != BK_OK) {
            CHECK_STATUS(st, BK_ENOMEM);
            CHECK(f == NULL);
            continue;
        }
        created = true;
        CHECK(fail_at > 3); /* struct, chain array, sub struct, payload */
        uint64_t next = add_new(f, 0, 50);
        /* growths 1..3 fit the initial chain array; growth 4 reallocates it */
        for (int g = 0; g < 5; g++) {
            grow_with_failures(f, &next);
            next = add_new(f, next, bki_scalable_sub_capacity(f, f->nsubs - 1) - 1);
        }
        CHECK_EQ_U64(f->nsubs, 6);
        char key[32];
        uint64_t fn = 0;
        for (uint64_t i = 0; i < next; i++) {
            size_t len = make_key(i, key);
            fn += !bk_filter_contains(f, key, len);
        }
        /* Every key whose add succeeded is in; the ones that failed were
         * retried as the next key, so all of [0, next) went in. */
        CHECK_EQ_U64(fn, 0);

        bool cloned = false;
        for (long c_at = 1; c_at < 40 && !cloned; c_at++) {
            bk_filter_t *c = NULL;
            bki_fail_countdown = c_at;
            bk_status_t cs = bk_filter_clone(&c, f);
            bki_fail_countdown = 0;
            if (cs == BK_OK) {
                cloned = true;
                CHECK(c_at > 2 * 6 + 2);
                CHECK_EQ_U64(c->nsubs, 6);
                CHECK_EQ_U64(bk_filter_items(c), bk_filter_items(f));
            } else {
                CHECK_STATUS(cs, BK_ENOMEM);
                CHECK(c == NULL);
            }
            bk_filter_free(c);
        }
        CHECK(cloned);
        bk_filter_free(f);
    }
    CHECK(created);
}

int main(void)
{
    bkt_run("defaults_and_sequences", test_defaults_and_sequences);
    bkt_run("lazy_growth_at_capacity", test_lazy_growth_at_capacity);
    bkt_run("grow_100x_default", test_grow_100x_default);
    bkt_run("grow_100x_variants", test_grow_100x_variants);
    bkt_run("nonscaling", test_nonscaling);
    bkt_run("invalid_options", test_invalid_options);
    bkt_run("growth_limits", test_growth_limits);
    bkt_run("next_growth_predicts", test_next_growth_predicts);
    bkt_run("union_clone_clear", test_union_clone_clear);
    bkt_run("prehashed_and_batch", test_prehashed_and_batch);
    bkt_run("alloc_failures", test_alloc_failures);
    return bkt_finish();
}
