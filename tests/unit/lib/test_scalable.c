/*
 * Tests for src/scalable.c: growth 100x past the initial capacity with zero
 * false negatives, measured FPR <= p and memory equal to the sum of the
 * sub-filters' plans; the capacity and error sequences; lazy growth exactly
 * at capacity; the non-scaling mode; the overflow and length guards; union,
 * clone and clear; and allocation failures injected at every allocation of
 * create, growth and clone, each of which must leave the filter unchanged.
 * Deep chains (growth 1, capacity 1, thousands of sub-filters) stay near
 * the classic optimum and keep the FPR promise; the size cap holds on the
 * single and batch add paths.
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
    /* Blocked2 sub-filters, the Redis module's below 1e-3. */
    grow_100x(BK_KIND_BLOCKED2, 2.0, 0.5, 1e-4);
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
    char why[128] = "x";
    uint64_t next = add_new(f, 0, 299);
    CHECK(bk_filter_full_reason(f, why, sizeof why) == 0 && why[0] == '\0'); /* room left */
    next = add_new(f, next, 1);
    CHECK(bk_filter_full_reason(f, why, sizeof why) > 0);
    CHECK_MSG(strcmp(why, "it is non-scaling and holds its capacity of 300 items") == 0,
              "got '%s'", why);
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
    /* The real limit (65536 sub-filters) takes 2^31 sub-filter probes to
     * reach one key at a time; the test limit exercises the same check. */
    uint32_t limit = 300, was_limit = bki_scalable_max_subs;
    bki_scalable_max_subs = limit;
    CHECK_OK(bk_filter_create(&f, 1, 0.01, &o));
    if (f) {
        next = 0;
        for (uint32_t i = 0; i < limit; i++)
            CHECK_OK(add_one_new(f, &next));
        CHECK_EQ_U64(f->nsubs, limit);
        char why[128];
        CHECK(bk_filter_full_reason(f, why, sizeof why) > 0);
        CHECK_MSG(strcmp(why, "it has as many sub-filters as a chain may have (300)") == 0,
                  "got '%s'", why);
        CHECK_STATUS(add_one_new(f, &next), BK_EFULL);
        CHECK_EQ_U64(f->nsubs, limit);
        CHECK_EQ_U64(bk_filter_items(f), limit);
        char key[32];
        for (uint64_t i = 0; i < next; i++)
            CHECK(bk_filter_contains(f, key, make_key(i, key)));
        bk_filter_free(f);
    }
    bki_scalable_max_subs = was_limit;
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
        /* struct, chain array, then the sub-filter: one block when its
         * payload is small enough to share its struct's allocation */
        CHECK_EQ_U64(fail_at, 3 + (f->subs[0]->nbytes > BKI_INLINE_PAYLOAD_MAX) + 1);
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
                /* struct, chain array, then one or two per sub-filter */
                long allocs = 2;
                for (uint32_t i = 0; i < f->nsubs; i++)
                    allocs += 1 + (f->subs[i]->nbytes > BKI_INLINE_PAYLOAD_MAX);
                CHECK_EQ_U64(c_at, allocs + 1);
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

/* The rule documented in scalable.c and bloomkit.h: sub-filter i's kind. */
static bk_kind_t expected_sub_kind(const bk_filter_t *f, uint32_t i)
{
    if (i == 0)
        return f->sub_kind;
    return bki_scalable_sub_fpr(f, i) < 1e-7 ? BK_KIND_PRECISE : f->sub_kind;
}

/* The error sequence as documented: geometric for 32 sub-filters, then the
 * tail shares T = e_0 r^32 / (1 - r) as min(T / ((j+1)(j+2)), e_0 r^32). */
static void test_error_sequence_bounded(void)
{
    bk_options_t o = sopts(3);
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 10, 0.01, &o));
    if (!f)
        return;
    double e0 = 0.01 * 0.5, geo32 = ldexp(e0, -32), tail = geo32 / 0.5, sum = 0;
    for (uint32_t i = 0; i < 32; i++)
        CHECK(bki_scalable_sub_fpr(f, i) == ldexp(e0, -(int)i));
    for (uint32_t j = 0; j < 100000; j++) {
        double want = tail / ((j + 1.0) * (j + 2.0));
        double e = bki_scalable_sub_fpr(f, 32 + j);
        CHECK_MSG(fabs(e - (want < geo32 ? want : geo32)) <= 1e-12 * e, "j %u: %g", j, e);
        CHECK(e > 0);
        sum += e;
    }
    for (uint32_t i = 0; i < 32; i++)
        sum += bki_scalable_sub_fpr(f, i);
    CHECK_MSG(sum <= 0.01, "errors sum to %.17g > p", sum);
    bk_filter_free(f);

    /* A slow tightening (r = 0.9): the tail never starts looser than the
     * last geometric step, and the sum still stays within p. */
    o.tightening = 0.9;
    CHECK_OK(bk_filter_create(&f, 10, 0.001, &o));
    if (!f)
        return;
    sum = 0;
    for (uint32_t i = 0; i < 70000; i++) {
        double e = bki_scalable_sub_fpr(f, i);
        CHECK(i < 32 || e <= bki_scalable_sub_fpr(f, 31) * 0.9 * (1 + 1e-12));
        sum += e;
    }
    CHECK_MSG(sum <= 0.001, "r 0.9: errors sum to %.17g", sum);
    bk_filter_free(f);
}

/* The repro in the library: a capacity-1, growth-1 chain at 0.0001
 * takes 5,000 keys (one sub-filter each). Today's rule would need sub-filter
 * i to hold error 0.00005 * 2^-i, impossible past a few dozen blocked
 * sub-filters (the old code ran out of memory near 100 keys). */
static void test_deep_chain(void)
{
    const double p = 0.0001, ln2 = 0.69314718055994530942;
    const uint64_t n = bkt_scaled(5000), q = bkt_scaled(20000);
    bk_options_t o = sopts(16);
    o.growth = 1.0;
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 1, p, &o));
    if (!f)
        return;
    uint64_t fresh = add_range(f, 0, n);
    /* Keys are distinct: each "not new" answer was a false positive. */
    CHECK_MSG(n - fresh <= 3, "%llu of %llu keys not new", (unsigned long long)(n - fresh),
              (unsigned long long)n);
    CHECK_EQ_U64(f->nsubs, fresh);
    double sum = 0, optimum_bits = 0;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < f->nsubs; i++) {
        const bk_filter_t *s = f->subs[i];
        double e = bki_scalable_sub_fpr(f, i);
        bk_kind_t want = expected_sub_kind(f, i);
        CHECK_MSG(s->kind == want, "sub %u: kind %d, want %d", i, (int)s->kind, (int)want);
        bk_plan_t plan;
        CHECK_OK(bk_plan(want, 1, e, &plan));
        CHECK_EQ_U64(s->nbytes, plan.bytes);
        CHECK_EQ_U64(s->k, plan.k);
        CHECK(s->fpr == e);
        sum += e;
        bytes += s->nbytes;
        /* Near the classic optimum for its own error, -ln(e) / (ln 2)^2
         * bits, plus at most one 64-byte line of fixed overhead. */
        double own = -log(e) / (ln2 * ln2);
        CHECK_MSG((double)s->nbytes * 8 <= 1.25 * own + 512, "sub %u: %llu bytes for %g", i,
                  (unsigned long long)s->nbytes, own / 8);
        /* The classic optimum for the geometric rule's error p/2 * 2^-i. */
        optimum_bits += (-log2(p) + 1 + i) / ln2;
    }
    CHECK(sum <= p);
    bk_filter_shape_t sh;
    bk_filter_shape(f, &sh);
    CHECK_EQ_U64(sh.bytes, bytes);
    uint32_t precise = 0;
    for (uint32_t i = 0; i < f->nsubs; i++)
        precise += f->subs[i]->kind == BK_KIND_PRECISE;
    CHECK_EQ_U64(sh.precise_filters, precise);
    CHECK(precise > 0);
    CHECK_MSG((double)bytes <= 1.5 * optimum_bits / 8, "%llu bytes vs optimum %.0f",
              (unsigned long long)bytes, optimum_bits / 8);

    char key[32];
    uint64_t fn = 0, fp = 0;
    for (uint64_t i = 0; i < n; i++)
        fn += !bk_filter_contains(f, key, make_key(i, key));
    CHECK_EQ_U64(fn, 0);
    for (uint64_t i = n; i < n + q; i++)
        fp += bk_filter_contains(f, key, make_key(i, key));
    double bound = p + 3 * sqrt(p / (double)q);
    CHECK_MSG((double)fp / (double)q <= bound, "measured FPR %g", (double)fp / (double)q);

    /* Saved and loaded, it answers exactly the same. */
    uint64_t len = bk_filter_serialized_size(f);
    uint8_t *buf = malloc((size_t)len);
    bk_filter_t *g = NULL;
    CHECK(buf && bk_filter_serialize(f, buf, (size_t)len, NULL) == BK_OK);
    CHECK_OK(bk_filter_deserialize(&g, buf, (size_t)len, NULL));
    if (g) {
        CHECK_EQ_U64(g->nsubs, f->nsubs);
        int differ = 0;
        for (uint64_t i = 0; i < n + q; i += 7) {
            size_t kl = make_key(i, key);
            differ += bk_filter_contains(f, key, kl) != bk_filter_contains(g, key, kl);
        }
        CHECK_EQ_U64(differ, 0);
        /* and keeps growing by the same rule */
        uint64_t next = n + q;
        CHECK_OK(add_one_new(g, &next));
        CHECK(g->subs[g->nsubs - 1]->kind == expected_sub_kind(g, g->nsubs - 1));
    }
    bk_filter_free(g);
    free(buf);
    bk_filter_free(f);
}

/* A chain capped at the bytes of its first three sub-filters, less one. */
static bk_filter_t *capped_chain(uint64_t seed, uint64_t *cap_out)
{
    bk_options_t o = sopts(seed);
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 100, 0.01, &o));
    if (!f)
        return NULL;
    uint64_t b0 = f->subs[0]->nbytes, next_bytes = 0, b1, b2;
    CHECK_OK(bk_filter_next_growth(f, NULL, NULL, &b1));
    bk_plan_t plan;
    CHECK_OK(bk_plan(BK_KIND_BLOCKED, bki_scalable_sub_capacity(f, 2),
                     bki_scalable_sub_fpr(f, 2), &plan));
    b2 = plan.bytes;
    *cap_out = b0 + b1 + b2 - 1;
    bk_filter_set_max_bytes(f, *cap_out);
    bk_filter_shape_t sh;
    bk_filter_shape(f, &sh);
    CHECK_EQ_U64(sh.max_bytes, *cap_out);
    (void)next_bytes;
    return f;
}

/* bk_filter_add: the key that would cross the cap gets BK_EFULL, the keys
 * before it are in, the filter is unchanged by the refusal, keys already in
 * are still answered, and lifting the cap lets the chain grow again. */
static void test_cap_single_adds(void)
{
    uint64_t cap;
    bk_filter_t *f = capped_chain(61, &cap);
    if (!f)
        return;
    uint64_t next = add_new(f, 0, 300); /* fills sub-filters 0 and 1 */
    CHECK_EQ_U64(f->nsubs, 2);
    uint64_t need = 0;
    CHECK_STATUS(bk_filter_next_growth(f, NULL, NULL, &need), BK_EFULL);
    CHECK(need > 0);
    uint64_t items = bk_filter_items(f), bytes = f->subs_bytes;
    CHECK(bytes <= cap);
    /* The reason, with the numbers a caller needs. */
    char why[256], want[256];
    snprintf(want, sizeof want,
             "its next sub-filter of %llu bytes would bring it to %llu bytes, over its size "
             "cap of %llu bytes",
             (unsigned long long)need, (unsigned long long)(bytes + need),
             (unsigned long long)cap);
    CHECK_EQ_U64(bk_filter_full_reason(f, why, sizeof why), strlen(want));
    CHECK_MSG(strcmp(why, want) == 0, "got '%s'", why);
    CHECK(bk_filter_full_reason(f, why, 8) == 7 && strlen(why) == 7); /* truncated */
    for (int t = 0; t < 3; t++) /* every new key is refused, each time */
        CHECK_STATUS(add_one_new(f, &next), BK_EFULL);
    CHECK_EQ_U64(f->nsubs, 2);
    CHECK_EQ_U64(bk_filter_items(f), items);
    CHECK_EQ_U64(f->subs_bytes, bytes);
    char key[32];
    bool was_new = true;
    CHECK_OK(bk_filter_add(f, key, make_key(0, key), &was_new)); /* already in */
    CHECK(!was_new);
    int missing = 0;
    for (uint64_t i = 0; i < next; i++)
        missing += !bk_filter_contains(f, key, make_key(i, key)) && i < 300;
    CHECK_EQ_U64(missing, 0);
    /* Clones keep the cap; lifting it allows growth. */
    bk_filter_t *c = NULL;
    CHECK_OK(bk_filter_clone(&c, f));
    if (c) {
        uint64_t n2 = next;
        CHECK_STATUS(add_one_new(c, &n2), BK_EFULL);
        bk_filter_set_max_bytes(c, 0);
        CHECK_OK(add_one_new(c, &n2));
        CHECK_EQ_U64(c->nsubs, 3);
        CHECK(c->subs_bytes > cap);
    }
    bk_filter_free(c);
    bk_filter_free(f);
}

/* bk_filter_add_batch checks the cap before each growth, not once per
 * batch: one batch far larger than the cap allows stops at the key that
 * would cross it; the keys before it are in, none after it. */
static void test_cap_batch(void)
{
    uint64_t cap;
    bk_filter_t *f = capped_chain(62, &cap);
    if (!f)
        return;
    const size_t n = 5000;
    char (*text)[32] = malloc(n * sizeof *text);
    bk_key_t *keys = malloc(n * sizeof *keys);
    bool *was_new = malloc(n);
    if (!text || !keys || !was_new) {
        CHECK(0);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i].len = make_key(i, text[i]);
        keys[i].ptr = text[i];
        was_new[i] = true;
    }
    uint64_t n_new = 0;
    CHECK_STATUS(bk_filter_add_batch(f, keys, n, was_new, &n_new), BK_EFULL);
    CHECK(f->subs_bytes <= cap);
    CHECK_EQ_U64(f->nsubs, 2);
    CHECK_EQ_U64(bk_filter_items(f), n_new);
    /* The two sub-filters are exactly full: capacities 100 and 200. */
    CHECK_EQ_U64(n_new, 300);
    /* The failing key is the first new key past the full chain; it and
     * everything after it have was_new false and were not added. */
    size_t fail = 0;
    uint64_t seen_new = 0;
    while (fail < n && seen_new < n_new)
        seen_new += was_new[fail++];
    for (size_t i = 0; i < fail; i++)
        CHECK(bk_filter_contains(f, keys[i].ptr, keys[i].len));
    size_t flagged_after = 0;
    for (size_t i = fail; i < n; i++)
        flagged_after += was_new[i];
    CHECK_EQ_U64(flagged_after, 0);
    size_t absent_after = 0;
    for (size_t i = fail; i < n; i++)
        absent_after += !bk_filter_contains(f, keys[i].ptr, keys[i].len);
    CHECK(absent_after > (n - fail) * 9 / 10); /* only false positives are in */
out:
    free(text);
    free(keys);
    free(was_new);
    bk_filter_free(f);
}

/* The cap at creation: a first sub-filter (or a single-array payload)
 * larger than the cap is refused with BK_EFULL. */
static void test_cap_at_create(void)
{
    bk_plan_t plan;
    CHECK_OK(bk_plan(BK_KIND_SCALABLE, 1000, 0.01, &plan));
    bk_options_t o = sopts(63);
    o.max_bytes = plan.bytes - 1;
    bk_filter_t *f = NULL;
    CHECK_STATUS(bk_filter_create(&f, 1000, 0.01, &o), BK_EFULL);
    CHECK(f == NULL);
    o.max_bytes = plan.bytes;
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, &o));
    if (f) {
        uint64_t next = add_new(f, 0, 1000);
        CHECK_STATUS(add_one_new(f, &next), BK_EFULL);
        CHECK_EQ_U64(f->nsubs, 1);
    }
    bk_filter_free(f);
    bk_options_t b = {.kind = BK_KIND_BLOCKED, .max_bytes = 64};
    CHECK_STATUS(bk_filter_create(&f, 100000, 0.01, &b), BK_EFULL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_CLASSIC, 1024, 3, &b), BK_EFULL);
    CHECK_OK(bk_filter_create_exact(&f, BK_KIND_CLASSIC, 512, 3, &b));
    bk_filter_free(f);
}

/* The module repro in the library: capacity 1, growth 1, p 0.0001,
 * a cap of 64 KiB, one batch of 5,001 keys: the chain stops under the cap
 * with BK_EFULL for the key that would cross it. */
static void test_cap_deep_batch(void)
{
    bk_options_t o = sopts(64);
    o.growth = 1.0;
    o.max_bytes = 64 * 1024;
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 1, 0.0001, &o));
    if (!f)
        return;
    const size_t n = 5001;
    char (*text)[32] = malloc(n * sizeof *text);
    bk_key_t *keys = malloc(n * sizeof *keys);
    if (text && keys) {
        for (size_t i = 0; i < n; i++) {
            keys[i].len = make_key(i, text[i]);
            keys[i].ptr = text[i];
        }
        uint64_t n_new = 0;
        CHECK_STATUS(bk_filter_add_batch(f, keys, n, NULL, &n_new), BK_EFULL);
        bk_filter_shape_t sh;
        bk_filter_shape(f, &sh);
        CHECK(sh.bytes <= o.max_bytes);
        CHECK_EQ_U64(sh.items, n_new);
        CHECK(n_new > 1000); /* thousands of sub-filters fit in 64 KiB */
        uint64_t next_bytes = 0;
        CHECK_STATUS(bk_filter_next_growth(f, NULL, NULL, &next_bytes), BK_EFULL);
        CHECK(sh.bytes + next_bytes > o.max_bytes);
    } else {
        CHECK(0);
    }
    free(text);
    free(keys);
    bk_filter_free(f);
}

/* bk_filter_sub_shape: each sub-filter's own figures, which sum to the
 * chain's; refused for a single array and past the last sub-filter. */
static void test_sub_shape(void)
{
    bk_options_t o = {.kind = BK_KIND_SCALABLE, .seed_set = true, .seed = 5};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 100, 0.01, &o));
    if (!f)
        return;
    char key[32];
    for (int i = 0; i < 1000; i++) {
        int len = snprintf(key, sizeof key, "s%d", i);
        bk_filter_add(f, key, (size_t)len, NULL);
    }
    bk_filter_shape_t all, sub;
    bk_filter_shape(f, &all);
    CHECK(all.filters >= 3);
    uint64_t cap = 0, items = 0, bytes = 0;
    for (uint32_t i = 0; i < all.filters; i++) {
        CHECK_OK(bk_filter_sub_shape(f, i, &sub));
        cap += sub.capacity;
        items += sub.items;
        bytes += sub.bytes;
        CHECK(sub.k >= 1 && sub.fpr_target > 0 && sub.fpr_target < 0.01);
    }
    CHECK_EQ_U64(cap, all.capacity);
    CHECK_EQ_U64(items, all.items);
    CHECK_EQ_U64(bytes, all.bytes);
    CHECK_STATUS(bk_filter_sub_shape(f, all.filters, &sub), BK_EINVAL);
    bk_filter_free(f);
    bk_options_t plain = {.kind = BK_KIND_BLOCKED};
    CHECK_OK(bk_filter_create(&f, 100, 0.01, &plain));
    if (f)
        CHECK_STATUS(bk_filter_sub_shape(f, 0, &sub), BK_EKIND);
    bk_filter_free(f);
}

/* bk_filter_add_batch_done names the key a full chain stopped at: the keys
 * before it are in, that key cannot be added, and a batch that fits says n. */
static void test_add_batch_done(void)
{
    bk_options_t o = {.kind = BK_KIND_SCALABLE, .nonscaling = true, .seed_set = true,
                      .seed = 9};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 100, 1e-6, &o));
    if (!f)
        return;
    enum { N = 300 };
    static char text[N][16];
    bk_key_t keys[N];
    bool was_new[N];
    for (int i = 0; i < N; i++) {
        keys[i].len = (size_t)snprintf(text[i], sizeof text[i], "d%d", i);
        keys[i].ptr = text[i];
    }
    size_t done = 12345;
    uint64_t n_new = 0;
    CHECK_STATUS(bk_filter_add_batch_done(f, keys, N, was_new, &n_new, &done), BK_EFULL);
    CHECK_MSG(done >= 100 && done < N, "stopped at %zu", done);
    uint64_t counted = 0;
    for (size_t i = 0; i < done; i++) {
        CHECK(bk_filter_contains(f, keys[i].ptr, keys[i].len));
        counted += was_new[i];
    }
    CHECK_EQ_U64(counted, n_new);
    CHECK_EQ_U64(bk_filter_items(f), n_new);
    if (done < N)
        CHECK_STATUS(bk_filter_add(f, keys[done].ptr, keys[done].len, NULL), BK_EFULL);
    bk_filter_free(f);
    /* The pre-hashed call stops at the same key of a filter made alike. */
    f = NULL;
    CHECK_OK(bk_filter_create(&f, 100, 1e-6, &o));
    if (f) {
        bk_hash_t hs[N];
        bool hnew[N];
        for (int i = 0; i < N; i++)
            hs[i] = bk_filter_hash(f, keys[i].ptr, keys[i].len);
        size_t hdone = 12345;
        uint64_t h_new = 0;
        CHECK_STATUS(bk_filter_add_hash_batch_done(f, hs, N, hnew, &h_new, &hdone), BK_EFULL);
        CHECK_EQ_U64(hdone, done);
        CHECK_EQ_U64(h_new, n_new);
        CHECK(memcmp(hnew, was_new, sizeof hnew) == 0);
        CHECK_STATUS(bk_filter_add_hash_batch_done(f, NULL, 5, NULL, NULL, &hdone), BK_EINVAL);
        CHECK_EQ_U64(hdone, 0);
        bk_filter_free(f);
    }
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, &o));
    if (f) {
        CHECK_OK(bk_filter_add_batch_done(f, keys, N, NULL, NULL, &done));
        CHECK_EQ_U64(done, N);
        CHECK_STATUS(bk_filter_add_batch_done(f, NULL, 5, NULL, NULL, &done), BK_EINVAL);
        CHECK_EQ_U64(done, 0);
    }
    bk_filter_free(f);
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
    bkt_run("error_sequence_bounded", test_error_sequence_bounded);
    bkt_run("deep_chain", test_deep_chain);
    bkt_run("cap_single_adds", test_cap_single_adds);
    bkt_run("cap_batch", test_cap_batch);
    bkt_run("cap_at_create", test_cap_at_create);
    bkt_run("cap_deep_batch", test_cap_deep_batch);
    bkt_run("sub_shape", test_sub_shape);
    bkt_run("add_batch_done", test_add_batch_done);
    return bkt_finish();
}
