/*
 * Tests for src/bitmap.c: both maps are run against naive reference models
 * (one byte per value) on sizes around word and line boundaries, the two
 * jobs from the articles are checked against sort-based answers, every
 * allocation is made to fail in turn, and a map over 2^40 values is created
 * and used at both ends.
 */
#include "harness.h"

#include <pthread.h>
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>

static const uint64_t sizes[] = {1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129,
                                 511, 512, 513, 1000, 4097, 100003};

/* ---- collecting callbacks ---- */

typedef struct collect {
    uint64_t *v;
    uint64_t n, cap, stop_after; /* stop_after 0: never stop */
} collect_t;

static bool collect_fn(uint64_t v, void *ctx)
{
    collect_t *c = ctx;
    if (c->n < c->cap)
        c->v[c->n] = v;
    c->n++;
    return !(c->stop_after && c->n >= c->stop_after);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- 1-bit map ---- */

static void test_create_invalid(void)
{
    bk_bitmap_t *b = (bk_bitmap_t *)&b; /* must be reset to NULL */
    CHECK_STATUS(bk_bitmap_create(&b, 0), BK_EINVAL);
    CHECK(b == NULL);
    CHECK_STATUS(bk_bitmap_create(&b, (UINT64_C(1) << 48) + 1), BK_EINVAL);
    CHECK(b == NULL);
    bk_bitmap2_t *b2 = (bk_bitmap2_t *)&b2;
    CHECK_STATUS(bk_bitmap2_create(&b2, 0), BK_EINVAL);
    CHECK(b2 == NULL);
    CHECK_STATUS(bk_bitmap2_create(&b2, UINT64_MAX), BK_EINVAL);
    CHECK(b2 == NULL);
    bk_bitmap_free(NULL);
    bk_bitmap2_free(NULL);
}

static void test_bitmap_model(void)
{
    uint64_t rng = 1;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        uint64_t n = sizes[si];
        bk_bitmap_t *b = NULL;
        CHECK_OK(bk_bitmap_create(&b, n));
        if (!b)
            continue;
        CHECK_EQ_U64(bk_bitmap_size(b), n);
        CHECK_EQ_U64(b->nbytes % 64, 0);
        CHECK(b->nbytes * 8 >= n);
        uint8_t *model = calloc(n, 1);
        uint64_t ops = n * 2 + 10, model_count = 0;
        for (uint64_t i = 0; i < ops; i++) {
            /* Mostly values in range, sometimes the ends and out-of-range. */
            uint64_t r = bkt_rand(&rng), v;
            switch (r & 7) {
            case 0: v = 0; break;
            case 1: v = n - 1; break;
            case 2: v = n + (r >> 40); break; /* out of range */
            default: v = (r >> 3) % n;
            }
            bool was_clear = bk_bitmap_set(b, v);
            if (v >= n) {
                CHECK(!was_clear);
                CHECK(!bk_bitmap_test(b, v));
                continue;
            }
            CHECK(was_clear == !model[v]);
            model_count += !model[v];
            model[v] = 1;
        }
        for (uint64_t v = 0; v < n; v++)
            CHECK_MSG(bk_bitmap_test(b, v) == (model[v] != 0), "n=%llu v=%llu",
                      (unsigned long long)n, (unsigned long long)v);
        CHECK_EQ_U64(bk_bitmap_count(b), model_count);

        /* foreach: exactly the model's values, increasing. */
        collect_t c = {calloc(n, sizeof(uint64_t)), 0, n, 0};
        CHECK(bk_bitmap_foreach(b, collect_fn, &c));
        CHECK_EQ_U64(c.n, model_count);
        uint64_t j = 0;
        for (uint64_t v = 0; v < n && j < c.n; v++)
            if (model[v])
                CHECK_EQ_U64(c.v[j++], v);

        /* next from every position agrees with a linear scan. */
        for (uint64_t from = 0; from <= n + 1; from++) {
            uint64_t want = UINT64_MAX, got = UINT64_MAX;
            for (uint64_t v = from; v < n; v++)
                if (model[v]) {
                    want = v;
                    break;
                }
            bool found = bk_bitmap_next(b, from, &got);
            CHECK(found == (want != UINT64_MAX));
            if (found)
                CHECK_EQ_U64(got, want);
            if (n > 5000)
                from += bkt_rand(&rng) % 97; /* sample the big one */
        }

        bk_bitmap_clear(b);
        CHECK_EQ_U64(bk_bitmap_count(b), 0);
        CHECK(!bk_bitmap_next(b, 0, &j));
        free(c.v);
        free(model);
        bk_bitmap_free(b);
    }
}

static void test_bitmap_foreach_stops(void)
{
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_create(&b, 1000));
    if (!b)
        return;
    for (uint64_t v = 3; v < 1000; v += 7)
        bk_bitmap_set(b, v);
    uint64_t seen[5];
    collect_t c = {seen, 0, 5, 5};
    CHECK(!bk_bitmap_foreach(b, collect_fn, &c));
    CHECK_EQ_U64(c.n, 5);
    CHECK_EQ_U64(seen[0], 3);
    CHECK_EQ_U64(seen[4], 31);
    bk_bitmap_free(b);
}

/* Bits past n (which a loaded payload could hold) are never reported. */
static void test_bitmap_ignores_padding(void)
{
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_create(&b, 70));
    if (!b)
        return;
    bk_bitmap_set(b, 69);
    b->words[1] |= ~UINT64_C(0) << 6; /* values 70..127: past the end */
    b->words[7] = ~UINT64_C(0);       /* padding up to the line end */
    CHECK_EQ_U64(bk_bitmap_count(b), 1);
    uint64_t v = 0;
    CHECK(bk_bitmap_next(b, 0, &v));
    CHECK_EQ_U64(v, 69);
    CHECK(!bk_bitmap_next(b, 70, &v));
    CHECK(!bk_bitmap_test(b, 70));
    uint64_t got[4];
    collect_t c = {got, 0, 4, 0};
    bk_bitmap_foreach(b, collect_fn, &c);
    CHECK_EQ_U64(c.n, 1);
    bk_bitmap_free(b);
}

static void test_bitmap_or_and(void)
{
    uint64_t rng = 7;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        uint64_t n = sizes[si];
        bk_bitmap_t *x = NULL, *y = NULL, *x2 = NULL;
        CHECK_OK(bk_bitmap_create(&x, n));
        CHECK_OK(bk_bitmap_create(&y, n));
        CHECK_OK(bk_bitmap_create(&x2, n));
        if (!x || !y || !x2)
            goto out;
        uint8_t *mx = calloc(n, 1), *my = calloc(n, 1);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t r = bkt_rand(&rng);
            if (r & 1) {
                bk_bitmap_set(x, i);
                bk_bitmap_set(x2, i);
                mx[i] = 1;
            }
            if (r & 2) {
                bk_bitmap_set(y, i);
                my[i] = 1;
            }
        }
        CHECK_OK(bk_bitmap_or(x, y));
        CHECK_OK(bk_bitmap_and(x2, y));
        uint64_t n_or = 0, n_and = 0;
        for (uint64_t i = 0; i < n; i++) {
            CHECK(bk_bitmap_test(x, i) == (mx[i] || my[i]));
            CHECK(bk_bitmap_test(x2, i) == (mx[i] && my[i]));
            n_or += mx[i] || my[i];
            n_and += mx[i] && my[i];
        }
        CHECK_EQ_U64(bk_bitmap_count(x), n_or);
        CHECK_EQ_U64(bk_bitmap_count(x2), n_and);
        free(mx);
        free(my);
    out:
        bk_bitmap_free(x);
        bk_bitmap_free(y);
        bk_bitmap_free(x2);
    }
    bk_bitmap_t *a = NULL, *c = NULL;
    CHECK_OK(bk_bitmap_create(&a, 64));
    CHECK_OK(bk_bitmap_create(&c, 65));
    if (a && c) {
        bk_bitmap_set(c, 1);
        CHECK_STATUS(bk_bitmap_or(a, c), BK_EINCOMPAT);
        CHECK_STATUS(bk_bitmap_and(a, c), BK_EINCOMPAT);
        CHECK_EQ_U64(bk_bitmap_count(a), 0);
    }
    bk_bitmap_free(a);
    bk_bitmap_free(c);
}

/* A map big enough to be an anonymous mapping: clear must still zero it. */
static void test_bitmap_large_clear(void)
{
    uint64_t n = UINT64_C(1) << 26; /* 8 MiB */
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_create(&b, n));
    if (!b)
        return;
    CHECK(b->mem == BKI_MEM_ANON);
    uint64_t rng = 3, want = 0;
    for (int i = 0; i < 1000; i++)
        want += bk_bitmap_set(b, bkt_rand(&rng) % n);
    CHECK(bk_bitmap_set(b, n - 1));
    want++;
    CHECK_EQ_U64(bk_bitmap_count(b), want);
    bk_bitmap_clear(b);
    CHECK_EQ_U64(bk_bitmap_count(b), 0);
    CHECK(!bk_bitmap_test(b, n - 1));
    CHECK(bk_bitmap_set(b, n - 1)); /* still writable after clearing */
    CHECK_EQ_U64(bk_bitmap_count(b), 1);
    bk_bitmap_free(b);
}

/* 2^40 values: 128 GiB of address space, of which only touched pages are
 * ever backed. */
static void test_bitmap_2_pow_40(void)
{
    uint64_t n = UINT64_C(1) << 40;
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_create(&b, n));
    if (b) {
        CHECK_EQ_U64(b->nbytes, n / 8);
        CHECK(bk_bitmap_set(b, 0));
        CHECK(bk_bitmap_set(b, n - 1));
        CHECK(bk_bitmap_set(b, n / 2 + 12345));
        CHECK(!bk_bitmap_set(b, n - 1));
        CHECK(!bk_bitmap_set(b, n)); /* out of range */
        CHECK(bk_bitmap_test(b, 0));
        CHECK(bk_bitmap_test(b, n - 1));
        CHECK(bk_bitmap_test(b, n / 2 + 12345));
        CHECK(!bk_bitmap_test(b, n / 2 + 12344));
        CHECK(!bk_bitmap_test(b, n - 2));
        uint64_t v = 0;
        CHECK(bk_bitmap_next(b, n - 1000, &v));
        CHECK_EQ_U64(v, n - 1);
        bk_bitmap_clear(b); /* hands the pages back rather than writing */
        CHECK(!bk_bitmap_test(b, n - 1));
        bk_bitmap_free(b);
    }
    bk_bitmap2_t *b2 = NULL;
    CHECK_OK(bk_bitmap2_create(&b2, n));
    if (b2) {
        CHECK_EQ_U64(bk_bitmap2_add(b2, n - 1), 1);
        CHECK_EQ_U64(bk_bitmap2_add(b2, n - 1), 2);
        CHECK_EQ_U64(bk_bitmap2_add(b2, 0), 1);
        CHECK_EQ_U64(bk_bitmap2_state(b2, n - 1), 2);
        CHECK_EQ_U64(bk_bitmap2_state(b2, n - 2), 0);
        CHECK_EQ_U64(bk_bitmap2_state(b2, 0), 1);
        bk_bitmap2_free(b2);
    }
}

/* Large maps keep a summary of the pages their updates touched (the
 * library's touched.c): counting, iterating, or and and over 2^44 values
 * (2 TiB of address space) read only those pages, and the answers are
 * exactly those of a dense scan. Without the summary these passes would
 * read 2 TiB and never finish. */
static bool collect(uint64_t v, void *ctx)
{
    uint64_t *got = ctx;
    if (got[0] < 15)
        got[1 + got[0]] = v;
    got[0]++;
    return true;
}

static void test_touched_pages(void)
{
    const uint64_t n = UINT64_C(1) << 44;
    const uint64_t vals[] = {0, 5, 4095, 32768 * 3 + 1, (UINT64_C(1) << 43) + 7,
                             (UINT64_C(1) << 43) + 64 * 512 * 4096, n - 1};
    const size_t nv = sizeof vals / sizeof vals[0];
    bk_bitmap_t *b = NULL, *c = NULL;
    CHECK_OK(bk_bitmap_create(&b, n));
    CHECK_OK(bk_bitmap_create(&c, n));
    if (!b || !c) {
        bk_bitmap_free(b);
        bk_bitmap_free(c);
        return;
    }
    CHECK_EQ_U64(bk_bitmap_set_batch(b, vals, nv - 1), nv - 1);
    CHECK(bk_bitmap_set(b, vals[nv - 1]));
    CHECK_EQ_U64(bk_bitmap_count(b), nv);
    uint64_t got[16] = {0};
    CHECK(bk_bitmap_foreach(b, collect, got));
    CHECK_EQ_U64(got[0], nv);
    for (size_t i = 0; i < nv; i++)
        CHECK_EQ_U64(got[1 + i], vals[i]);
    uint64_t v = 0;
    CHECK(bk_bitmap_next(b, 6, &v) && v == 4095);
    CHECK(bk_bitmap_next(b, 4096, &v) && v == vals[3]);
    CHECK(bk_bitmap_next(b, vals[4] + 1, &v) && v == vals[5]);
    CHECK(!bk_bitmap_next(b, n, &v));
    /* or: c gains b's values; and: only the common ones stay */
    CHECK(bk_bitmap_set(c, 123456789));
    CHECK(bk_bitmap_set(c, vals[4]));
    CHECK_OK(bk_bitmap_or(c, b));
    CHECK_EQ_U64(bk_bitmap_count(c), nv + 1);
    CHECK(bk_bitmap_test(c, 123456789));
    CHECK_OK(bk_bitmap_and(b, c));
    CHECK_EQ_U64(bk_bitmap_count(b), nv);
    bk_bitmap_clear(c);
    CHECK_EQ_U64(bk_bitmap_count(c), 0);
    CHECK(!bk_bitmap_next(c, 0, &v));
    CHECK(bk_bitmap_set(c, n - 2));
    CHECK_EQ_U64(bk_bitmap_count(c), 1);
    bk_bitmap_free(b);
    bk_bitmap_free(c);

    bk_bitmap2_t *b2 = NULL;
    CHECK_OK(bk_bitmap2_create(&b2, n));
    if (b2) {
        CHECK_EQ_U64(bk_bitmap2_add_batch(b2, vals, nv), nv);
        CHECK_EQ_U64(bk_bitmap2_add(b2, vals[2]), 2); /* twice */
        uint64_t counts[3];
        bk_bitmap2_counts(b2, counts);
        CHECK_EQ_U64(counts[1], nv - 1);
        CHECK_EQ_U64(counts[2], 1);
        CHECK_EQ_U64(counts[0], n - nv);
        memset(got, 0, sizeof got);
        CHECK(bk_bitmap2_foreach(b2, 1, collect, got));
        CHECK_EQ_U64(got[0], nv - 1);
        CHECK_EQ_U64(got[3], vals[3]); /* vals[2] is in state 2 */
        CHECK_EQ_U64(got[nv - 1], n - 1);
        bk_bitmap2_clear(b2);
        bk_bitmap2_counts(b2, counts);
        CHECK_EQ_U64(counts[1] + counts[2], 0);
        bk_bitmap2_free(b2);
    }
}

/* A large map read from a file has every page counted as touched: values
 * loaded are found by every pass, and later updates still count. */
static void test_touched_after_load(void)
{
    const uint64_t n = UINT64_C(1) << 29; /* 64 MiB: keeps a summary */
    bk_bitmap_t *b = NULL, *l = NULL;
    CHECK_OK(bk_bitmap_create(&b, n));
    if (!b)
        return;
    CHECK(b->touched.l1 != NULL);
    uint64_t rng = 5;
    for (int i = 0; i < 1000; i++)
        bk_bitmap_set(b, bkt_rand(&rng) % n);
    char path[256];
    snprintf(path, sizeof path, "%s/bk-touched-%d.bkf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    CHECK_OK(bk_bitmap_save(b, path));
    CHECK_OK(bk_bitmap_load(&l, path, NULL));
    unlink(path);
    if (l) {
        CHECK_EQ_U64(bk_bitmap_count(l), bk_bitmap_count(b));
        uint64_t want = 0, got = 0;
        for (uint64_t v = 0; bk_bitmap_next(b, v, &v); v++)
            want += v;
        for (uint64_t v = 0; bk_bitmap_next(l, v, &v); v++)
            got += v;
        CHECK_EQ_U64(got, want);
        uint64_t before = bk_bitmap_count(l);
        uint64_t fresh = bk_bitmap_test(l, n - 1) ? 0 : 1;
        bk_bitmap_set(l, n - 1);
        CHECK_EQ_U64(bk_bitmap_count(l), before + fresh);
    }
    bk_bitmap_free(l);
    bk_bitmap_free(b);
}

/* ---- 2-bit map ---- */

static void test_bitmap2_model(void)
{
    uint64_t rng = 11;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        uint64_t n = sizes[si];
        bk_bitmap2_t *b = NULL;
        CHECK_OK(bk_bitmap2_create(&b, n));
        if (!b)
            continue;
        CHECK_EQ_U64(bk_bitmap2_size(b), n);
        CHECK_EQ_U64(b->nbytes % 64, 0);
        CHECK(b->nbytes * 4 >= n);
        uint8_t *model = calloc(n, 1);
        uint64_t ops = n * 2 + 10;
        for (uint64_t i = 0; i < ops; i++) {
            uint64_t r = bkt_rand(&rng), v;
            switch (r & 7) {
            case 0: v = 0; break;
            case 1: v = n - 1; break;
            case 2: v = n + (r >> 40); break;
            default: v = (r >> 3) % n;
            }
            unsigned st = bk_bitmap2_add(b, v);
            if (v >= n) {
                CHECK_EQ_U64(st, 0);
                CHECK_EQ_U64(bk_bitmap2_state(b, v), 0);
                continue;
            }
            if (model[v] < 2)
                model[v]++;
            CHECK_EQ_U64(st, model[v]);
        }
        uint64_t want[3] = {0, 0, 0};
        for (uint64_t v = 0; v < n; v++) {
            CHECK_MSG(bk_bitmap2_state(b, v) == model[v], "n=%llu v=%llu",
                      (unsigned long long)n, (unsigned long long)v);
            want[model[v]]++;
        }
        uint64_t got[3] = {9, 9, 9};
        bk_bitmap2_counts(b, got);
        for (int s = 0; s < 3; s++)
            CHECK_EQ_U64(got[s], want[s]);

        uint64_t *buf = calloc(n, sizeof(uint64_t));
        for (unsigned s = 0; s < 3; s++) {
            collect_t c = {buf, 0, n, 0};
            CHECK(bk_bitmap2_foreach(b, s, collect_fn, &c));
            CHECK_EQ_U64(c.n, want[s]);
            uint64_t j = 0;
            for (uint64_t v = 0; v < n && j < c.n; v++)
                if (model[v] == s)
                    CHECK_EQ_U64(buf[j++], v);
        }
        collect_t none = {buf, 0, n, 0};
        CHECK(bk_bitmap2_foreach(b, 3, collect_fn, &none));
        CHECK_EQ_U64(none.n, 0);

        bk_bitmap2_clear(b);
        bk_bitmap2_counts(b, got);
        CHECK_EQ_U64(got[0], n);
        CHECK_EQ_U64(got[1], 0);
        CHECK_EQ_U64(got[2], 0);
        free(buf);
        free(model);
        bk_bitmap2_free(b);
    }
}

static void test_bitmap2_foreach_stops_and_padding(void)
{
    bk_bitmap2_t *b = NULL;
    CHECK_OK(bk_bitmap2_create(&b, 40));
    if (!b)
        return;
    for (uint64_t v = 0; v < 40; v += 2)
        bk_bitmap2_add(b, v);
    /* cells 40..63 of word 1 and the rest of the line: "seen twice",
     * but past n, so never reported or counted. */
    b->words[1] |= UINT64_C(0xAAAAAAAAAAAAAAAA) << 16;
    b->words[5] = UINT64_C(0x5555555555555555);
    uint64_t counts[3];
    bk_bitmap2_counts(b, counts);
    CHECK_EQ_U64(counts[0], 20);
    CHECK_EQ_U64(counts[1], 20);
    CHECK_EQ_U64(counts[2], 0);
    uint64_t got[64];
    collect_t c = {got, 0, 64, 0};
    bk_bitmap2_foreach(b, 2, collect_fn, &c);
    CHECK_EQ_U64(c.n, 0);
    collect_t c0 = {got, 0, 64, 0};
    bk_bitmap2_foreach(b, 0, collect_fn, &c0);
    CHECK_EQ_U64(c0.n, 20);
    CHECK_EQ_U64(got[19], 39);
    collect_t c1 = {got, 0, 64, 3};
    CHECK(!bk_bitmap2_foreach(b, 1, collect_fn, &c1));
    CHECK_EQ_U64(c1.n, 3);
    CHECK_EQ_U64(got[2], 4);
    bk_bitmap2_free(b);
}

/* ---- the articles' jobs, small, against sort-based answers ---- */

static void test_distinct_phone_numbers(void)
{
    uint64_t n = bkt_scaled(1000000), rng = 99;
    uint64_t *vals = malloc(n * sizeof *vals);
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_create(&b, 100000000)); /* every 8-digit number */
    if (!b || !vals)
        goto out;
    CHECK(b->nbytes <= 12500032); /* about 12 MB */
    uint64_t new_ones = 0;
    for (uint64_t i = 0; i < n; i++) {
        /* a narrow-ish range, so that there are many repeats */
        vals[i] = 10000000 + bkt_rand(&rng) % (n / 2 + 1);
        new_ones += bk_bitmap_set(b, vals[i]);
    }
    qsort(vals, n, sizeof *vals, cmp_u64);
    uint64_t distinct = 0;
    for (uint64_t i = 0; i < n; i++)
        distinct += i == 0 || vals[i] != vals[i - 1];
    CHECK_EQ_U64(bk_bitmap_count(b), distinct);
    CHECK_EQ_U64(new_ones, distinct);
    CHECK(distinct < n); /* the data did have repeats */
out:
    free(vals);
    bk_bitmap_free(b);
}

static void test_integers_seen_once(void)
{
    uint64_t n = bkt_scaled(1000000), rng = 5, domain = UINT64_C(1) << 32;
    uint64_t *vals = malloc(n * sizeof *vals);
    bk_bitmap2_t *b = NULL;
    CHECK_OK(bk_bitmap2_create(&b, domain)); /* every 32-bit integer */
    if (!b || !vals)
        goto out;
    for (uint64_t i = 0; i < n; i++) {
        /* Half the values from a small pool (repeats), half from a wide
         * range; every 1024th from the top of the 32-bit range, so the
         * whole map is in play without touching all of its 1 GiB. */
        uint64_t r = bkt_rand(&rng);
        if (i % 1024 == 0)
            vals[i] = domain - 1 - (r >> 1) % 64;
        else
            vals[i] = (r & 1) ? (r >> 1) % (n / 4 + 1) * 61 : (r >> 36);
        bk_bitmap2_add(b, vals[i]);
    }
    qsort(vals, n, sizeof *vals, cmp_u64);
    uint64_t *once = malloc(n * sizeof *once), nonce = 0, nmore = 0;
    for (uint64_t i = 0; i < n;) {
        uint64_t j = i;
        while (j < n && vals[j] == vals[i])
            j++;
        if (j - i == 1)
            once[nonce++] = vals[i];
        else
            nmore++;
        i = j;
    }
    uint64_t *got = malloc((nonce + 1) * sizeof *got);
    collect_t c = {got, 0, nonce + 1, 0};
    CHECK(bk_bitmap2_foreach(b, 1, collect_fn, &c));
    CHECK_EQ_U64(c.n, nonce);
    if (c.n == nonce)
        CHECK(memcmp(got, once, nonce * sizeof *got) == 0);
    uint64_t counts[3];
    bk_bitmap2_counts(b, counts);
    CHECK_EQ_U64(counts[1], nonce);
    CHECK_EQ_U64(counts[2], nmore);
    CHECK_EQ_U64(counts[0], domain - nonce - nmore);
    CHECK(nmore > 0 && nonce > 0);
    free(got);
    free(once);
out:
    free(vals);
    bk_bitmap2_free(b);
}

/* ---- allocation failures ---- */

/* The batch calls against one call per value: the same map, bit for bit,
 * and the same count of new values, for batches shorter and longer than
 * the prefetch distance, with repeats inside a batch (near and far) and
 * values past the end (skipped, as the single calls skip them). */
static void test_batches_match_single_calls(void)
{
    static const size_t lens[] = {0, 1, 15, 16, 17, 100, 5000};
    const uint64_t n = 100003;
    uint64_t rng = 77;
    uint64_t *v = malloc(5000 * sizeof *v);
    CHECK(v != NULL);
    if (!v)
        return;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t len = lens[li];
        for (size_t i = 0; i < len; i++) {
            uint64_t r = bkt_rand(&rng);
            v[i] = r % 11 == 0 ? n + r % 5                           /* past the end */
                   : r % 7 == 0 && i > 20 ? v[i - 1 - (r >> 8) % 20] /* a repeat */
                                          : (r >> 4) % n;
        }
        bk_bitmap_t *b1 = NULL, *s1 = NULL;
        bk_bitmap2_t *b2 = NULL, *s2 = NULL;
        CHECK_OK(bk_bitmap_create(&b1, n));
        CHECK_OK(bk_bitmap_create(&s1, n));
        CHECK_OK(bk_bitmap2_create(&b2, n));
        CHECK_OK(bk_bitmap2_create(&s2, n));
        if (!b1 || !s1 || !b2 || !s2)
            break;
        /* Twice over the same values: the second pass finds them set, and
         * takes bitmap2 cells to state 2. */
        for (int pass = 0; pass < 2; pass++) {
            uint64_t fresh1 = 0, first2 = 0;
            for (size_t i = 0; i < len; i++) {
                fresh1 += bk_bitmap_set(s1, v[i]);
                first2 += bk_bitmap2_add(s2, v[i]) == 1; /* 0 -> 1 */
            }
            uint64_t got1 = bk_bitmap_set_batch(b1, v, len);
            uint64_t got2 = bk_bitmap2_add_batch(b2, v, len);
            CHECK_MSG(got1 == fresh1, "len %zu pass %d: %llu new, want %llu", len, pass,
                      (unsigned long long)got1, (unsigned long long)fresh1);
            CHECK_EQ_U64(got2, first2);
            CHECK(pass == 0 ? got2 == got1 : got2 == 0); /* a value's first sighting */
            CHECK(memcmp(b1->words, s1->words, b1->nbytes) == 0);
            CHECK(memcmp(b2->words, s2->words, b2->nbytes) == 0);
            CHECK_EQ_U64(bk_bitmap_count(b1), bk_bitmap_count(s1));
        }
        bk_bitmap_free(b1);
        bk_bitmap_free(s1);
        bk_bitmap2_free(b2);
        bk_bitmap2_free(s2);
    }
    free(v);
}

/* Counting with the popcount instruction and without it gives the same
 * numbers (the level cpu.c picked decides which runs). */
static void test_counts_on_every_path(void)
{
    const uint64_t n = 70001;
    bk_bitmap_t *b = NULL;
    bk_bitmap2_t *b2 = NULL;
    CHECK_OK(bk_bitmap_create(&b, n));
    CHECK_OK(bk_bitmap2_create(&b2, n));
    if (!b || !b2)
        goto done;
    uint64_t rng = 5, want1 = 0, want2[3] = {n, 0, 0};
    for (uint64_t i = 0; i < 50000; i++) {
        uint64_t x = bkt_rand(&rng) % n;
        want1 += bk_bitmap_set(b, x);
        unsigned before = bk_bitmap2_state(b2, x), after = bk_bitmap2_add(b2, x);
        want2[before]--;
        want2[after]++;
    }
    int was = bki_simd_set(BKI_SIMD_SCALAR);
    for (int level = BKI_SIMD_SCALAR; level <= bki_simd_available(); level++) {
        bki_simd_set(level);
        uint64_t counts[3];
        bk_bitmap2_counts(b2, counts);
        CHECK_MSG(bk_bitmap_count(b) == want1, "level %d", level);
        CHECK_MSG(counts[0] == want2[0] && counts[1] == want2[1] && counts[2] == want2[2],
                  "level %d: %llu %llu %llu", level, (unsigned long long)counts[0],
                  (unsigned long long)counts[1], (unsigned long long)counts[2]);
    }
    bki_simd_set(was);
done:
    bk_bitmap_free(b);
    bk_bitmap2_free(b2);
}

static void test_alloc_failures(void)
{
    /* Each allocation of create fails in turn: BK_ENOMEM, nothing leaked
     * (the sanitizer build checks leaks), *out NULL. */
    /* heap, mapped, and mapped with a touched-page summary */
    const uint64_t ns[] = {100, UINT64_C(1) << 25, UINT64_C(1) << 30};
    for (size_t k = 0; k < 3; k++) {
        long allocations = k == 2 ? 4 : 2; /* struct, payload, summary maps */
        bool ok1 = false, ok2 = false;
        for (long fail_at = 1; fail_at < 10 && !(ok1 && ok2); fail_at++) {
            bk_bitmap_t *b = NULL;
            bk_bitmap2_t *b2 = NULL;
            if (!ok1) {
                bki_fail_countdown = fail_at;
                bk_status_t s = bk_bitmap_create(&b, ns[k]);
                bki_fail_countdown = 0;
                if (s == BK_OK) {
                    ok1 = true;
                    CHECK(fail_at == allocations + 1);
                    CHECK(bk_bitmap_set(b, ns[k] - 1));
                    CHECK_EQ_U64(bk_bitmap_count(b), 1);
                } else {
                    CHECK_STATUS(s, BK_ENOMEM);
                    CHECK(b == NULL);
                }
                bk_bitmap_free(b);
            }
            if (!ok2) {
                bki_fail_countdown = fail_at;
                bk_status_t s = bk_bitmap2_create(&b2, ns[k]);
                bki_fail_countdown = 0;
                if (s == BK_OK) {
                    ok2 = true;
                    CHECK(fail_at == allocations + 1);
                    CHECK_EQ_U64(bk_bitmap2_add(b2, ns[k] - 1), 1);
                } else {
                    CHECK_STATUS(s, BK_ENOMEM);
                    CHECK(b2 == NULL);
                }
                bk_bitmap2_free(b2);
            }
        }
        CHECK(ok1 && ok2);
    }
}

/* The shared batch calls from several threads at once: every value set,
 * and the fresh / first-sighting counts summed over the threads exact,
 * against the same values added by one thread with the plain calls. Small
 * map (many threads on each word) and one past the touched-page record. */
typedef struct {
    bk_bitmap_t *b1;
    bk_bitmap2_t *b2;
    const uint64_t *v;
    size_t n;
    uint64_t fresh;
} shared_arg_t;

static void *shared_add(void *p)
{
    shared_arg_t *a = p;
    for (size_t i = 0; i < a->n; i += 1000) {
        size_t k = a->n - i < 1000 ? a->n - i : 1000;
        a->fresh += a->b1 ? bk_bitmap_set_batch_shared(a->b1, a->v + i, k)
                          : bk_bitmap2_add_batch_shared(a->b2, a->v + i, k);
    }
    return NULL;
}

static void test_shared_batches_from_threads(void)
{
    enum { THREADS = 4, PER = 200000 };
    uint64_t map_sizes[2] = {5000, UINT64_C(1) << 30}; /* the second has touched pages */
    uint64_t *v = malloc(sizeof *v * THREADS * PER);
    if (!v)
        return;
    for (int m = 0; m < 2; m++) {
        uint64_t seed = 77 + (uint64_t)m;
        for (size_t i = 0; i < (size_t)THREADS * PER; i++)
            v[i] = bkt_rand(&seed) % (m ? 3000000 : map_sizes[0]) * (m ? 97 : 1);
        for (int two = 0; two < 2; two++) {
            bk_bitmap_t *b1 = NULL, *r1 = NULL;
            bk_bitmap2_t *b2 = NULL, *r2 = NULL;
            if (two) {
                CHECK_OK(bk_bitmap2_create(&b2, map_sizes[m]));
                CHECK_OK(bk_bitmap2_create(&r2, map_sizes[m]));
            } else {
                CHECK_OK(bk_bitmap_create(&b1, map_sizes[m]));
                CHECK_OK(bk_bitmap_create(&r1, map_sizes[m]));
            }
            if ((!two && (!b1 || !r1)) || (two && (!b2 || !r2)))
                continue;
            pthread_t th[THREADS];
            shared_arg_t args[THREADS];
            for (int t = 0; t < THREADS; t++) {
                args[t] = (shared_arg_t){b1, b2, v + (size_t)t * PER, PER, 0};
                pthread_create(&th[t], NULL, shared_add, &args[t]);
            }
            uint64_t fresh = 0;
            for (int t = 0; t < THREADS; t++) {
                pthread_join(th[t], NULL);
                fresh += args[t].fresh;
            }
            uint64_t want = two ? bk_bitmap2_add_batch(r2, v, (size_t)THREADS * PER)
                                : bk_bitmap_set_batch(r1, v, (size_t)THREADS * PER);
            CHECK_MSG(fresh == want, "map %d %s: %llu fresh from 4 threads, %llu from one", m,
                      two ? "bitmap2" : "bitmap", (unsigned long long)fresh,
                      (unsigned long long)want);
            bool same = true;
            for (size_t i = 0; i < (size_t)THREADS * PER && same; i++)
                same = two ? bk_bitmap2_state(b2, v[i]) == bk_bitmap2_state(r2, v[i])
                           : bk_bitmap_test(b1, v[i]) && bk_bitmap_test(r1, v[i]);
            CHECK_MSG(same, "map %d: a value's state differs from one thread's", m);
            if (two) {
                uint64_t c[3], rc[3];
                bk_bitmap2_counts(b2, c);
                bk_bitmap2_counts(r2, rc);
                CHECK(c[1] == rc[1] && c[2] == rc[2]);
            } else {
                CHECK_EQ_U64(bk_bitmap_count(b1), bk_bitmap_count(r1));
            }
            bk_bitmap_free(b1);
            bk_bitmap_free(r1);
            bk_bitmap2_free(b2);
            bk_bitmap2_free(r2);
        }
    }
    free(v);
}

int main(void)
{
    bkt_run("create_invalid", test_create_invalid);
    bkt_run("bitmap_model", test_bitmap_model);
    bkt_run("bitmap_foreach_stops", test_bitmap_foreach_stops);
    bkt_run("bitmap_ignores_padding", test_bitmap_ignores_padding);
    bkt_run("bitmap_or_and", test_bitmap_or_and);
    bkt_run("bitmap_large_clear", test_bitmap_large_clear);
    bkt_run("bitmap_2_pow_40", test_bitmap_2_pow_40);
    bkt_run("touched_pages", test_touched_pages);
    bkt_run("touched_after_load", test_touched_after_load);
    bkt_run("bitmap2_model", test_bitmap2_model);
    bkt_run("bitmap2_foreach_stops_and_padding", test_bitmap2_foreach_stops_and_padding);
    bkt_run("distinct_phone_numbers", test_distinct_phone_numbers);
    bkt_run("integers_seen_once", test_integers_seen_once);
    bkt_run("batches match single calls", test_batches_match_single_calls);
    bkt_run("counts on every popcount path", test_counts_on_every_path);
    bkt_run("alloc_failures", test_alloc_failures);
    bkt_run("shared batches from threads", test_shared_batches_from_threads);
    return bkt_finish();
}
