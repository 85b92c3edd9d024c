/* Tests for src/filter.c through the public API, for every single-array
 * kind: zero false negatives over random binary keys and every hash, the
 * measured FPR at capacity, batch calls against one-at-a-time calls, union,
 * clear, clone, info, thread-safe adds, allocation failure at each
 * allocation, sizes beyond 32 bits, bad parameters, and (every kind) the
 * calls for 64-bit keys against the byte calls. */
#include "harness.h"
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const bk_kind_t kinds[] = {BK_KIND_BLOCKED, BK_KIND_CLASSIC, BK_KIND_PRECISE,
                                   BK_KIND_BLOCKED2};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* Key i of a stream: random bytes, length mostly short (0..64) and one in
 * eight up to 4 KB, so both the short- and long-input paths of the hashes
 * are covered. Regenerated from (stream, i) for the checking pass. */
static size_t make_key(uint64_t stream, uint64_t i, uint8_t *buf)
{
    uint64_t st = stream * UINT64_C(0x100000001b3) ^ i;
    uint64_t r = bkt_rand(&st);
    size_t len = (r & 7) == 0 ? (size_t)(r >> 8) % 4097 : (size_t)(r >> 8) % 65;
    bkt_rand_bytes(&st, buf, len);
    return len;
}

static void test_zero_false_negatives(void)
{
    static uint8_t buf[4200];
    for (size_t t = 0; t < NKINDS; t++) {
        for (unsigned id = 1; id <= BK_HASH_COUNT; id++) {
            /* XXH3 (the default) gets the long run; the classic hashes a
             * shorter one each. */
            uint64_t n = bkt_scaled(id == BK_HASH_XXH3 ? 1000000 : 100000);
            bk_options_t o = {.kind = kinds[t], .hash = (bk_hash_id_t)id};
            bk_filter_t *f;
            CHECK_OK(bk_filter_create(&f, n, 0.01, &o));
            if (!f)
                return;
            for (uint64_t i = 0; i < n; i++) {
                size_t len = make_key(id, i, buf);
                CHECK_OK(bk_filter_add(f, buf, len, NULL));
            }
            uint64_t missing = 0;
            for (uint64_t i = 0; i < n; i++) {
                size_t len = make_key(id, i, buf);
                missing += !bk_filter_contains(f, buf, len);
            }
            CHECK_MSG(missing == 0, "%s/%s: %llu false negatives", bk_kind_name(kinds[t]),
                      bk_hash_name((bk_hash_id_t)id), (unsigned long long)missing);
            bk_filter_free(f);
        }
    }
}

static void test_fpr_at_capacity(void)
{
    const double ps[] = {0.1, 0.01, 0.001, 0.0001};
    for (size_t t = 0; t < NKINDS; t++) {
        for (size_t j = 0; j < 4; j++) {
            uint64_t n = bkt_scaled(1000000);
            double p = ps[j];
            /* Enough queries for ~100 expected false positives at least. */
            uint64_t q = bkt_scaled(p >= 0.01 ? 1000000 : 2000000);
            bk_options_t o = {.kind = kinds[t], .seed_set = true, .seed = 17 + j};
            bk_filter_t *f;
            CHECK_OK(bk_filter_create(&f, n, p, &o));
            if (!f)
                return;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t key = i * 2;
                bk_filter_add(f, &key, sizeof key, NULL);
            }
            uint64_t fp = 0;
            for (uint64_t i = 0; i < q; i++) {
                uint64_t key = i * 2 + 1;
                fp += bk_filter_contains(f, &key, sizeof key);
            }
            double measured = (double)fp / (double)q;
            /* Reject "true FPR <= p" only at 3 standard errors above p. */
            double bound = p + 3 * sqrt(p * (1 - p) / (double)q);
            CHECK_MSG(measured <= bound, "%s p=%g: measured %g > %g", bk_kind_name(kinds[t]), p,
                      measured, bound);
            /* And not absurdly below: a filter that is 10x oversized (or
             * probes nothing) would pass the bound but waste memory. */
            CHECK_MSG(measured > p * 0.5, "%s p=%g: measured %g, far below", bk_kind_name(kinds[t]),
                      p, measured);
            bk_filter_info_t info;
            bk_filter_info(f, &info);
            CHECK_MSG(fabs(info.expected_fpr - measured) < 0.25 * p + 3 * sqrt(p / (double)q),
                      "%s p=%g: info says %g, measured %g", bk_kind_name(kinds[t]), p,
                      info.expected_fpr, measured);
            bk_filter_free(f);
        }
    }
}

static void test_add_reports_new(void)
{
    for (size_t t = 0; t < NKINDS; t++) {
        bk_options_t o = {.kind = kinds[t]};
        bk_filter_t *f;
        CHECK_OK(bk_filter_create(&f, 1000, 0.001, &o));
        if (!f)
            return;
        bool was_new = false;
        CHECK_OK(bk_filter_add(f, "alpha", 5, &was_new));
        CHECK(was_new);
        CHECK_OK(bk_filter_add(f, "alpha", 5, &was_new));
        CHECK(!was_new);
        CHECK_OK(bk_filter_add(f, "", 0, &was_new)); /* empty key is a key */
        CHECK(was_new);
        CHECK(bk_filter_contains(f, NULL, 0));
        CHECK_EQ_U64(bk_filter_items(f), 2);
        CHECK(bk_filter_contains(f, "alpha", 5));
        CHECK(!bk_filter_contains(f, "beta", 4));
        CHECK(bk_filter_count(f, "alpha", 5) == 1 && bk_filter_count(f, "beta", 4) == 0);
        CHECK_STATUS(bk_filter_remove(f, "alpha", 5), BK_EKIND);
        CHECK(bk_filter_contains(f, "alpha", 5));
        CHECK(bk_filter_kind(f) == kinds[t]);
        bk_filter_free(f);
    }
}

static void test_batch_equals_single(void)
{
    const size_t n = 5000;
    bk_key_t *keys = malloc(n * sizeof *keys);
    char (*store)[24] = malloc(n * sizeof *store);
    bool *batch_new = malloc(n), *single_new = malloc(n), *batch_hit = malloc(n);
    for (size_t i = 0; i < n; i++) {
        /* Every 7th key repeats an earlier one: new only the first time. */
        size_t id = i % 7 == 6 ? i / 3 : i;
        int len = snprintf(store[i], sizeof store[i], "key-%zu", id);
        keys[i].ptr = store[i];
        keys[i].len = (size_t)len;
    }
    for (size_t t = 0; t < NKINDS; t++) {
        bk_options_t o = {.kind = kinds[t], .seed_set = true, .seed = 5};
        bk_filter_t *a, *b;
        CHECK_OK(bk_filter_create(&a, n, 0.01, &o));
        CHECK_OK(bk_filter_create(&b, n, 0.01, &o));
        if (!a || !b)
            break;
        uint64_t fresh = 0;
        CHECK_OK(bk_filter_add_batch(a, keys, n, batch_new, &fresh));
        uint64_t fresh_single = 0;
        for (size_t i = 0; i < n; i++) {
            CHECK_OK(bk_filter_add(b, keys[i].ptr, keys[i].len, &single_new[i]));
            fresh_single += single_new[i];
        }
        CHECK(memcmp(batch_new, single_new, n) == 0);
        CHECK_EQ_U64(fresh, fresh_single);
        CHECK(fresh < n); /* the repeats were seen */
        CHECK(memcmp(a->data, b->data, a->nbytes) == 0);
        CHECK_EQ_U64(bk_filter_items(a), bk_filter_items(b));
        /* contains_batch over present and absent keys. */
        for (size_t i = 0; i < n; i += 2)
            store[i][0] = 'K'; /* every other key now absent (mostly) */
        size_t hits = bk_filter_contains_batch(a, keys, n, batch_hit);
        size_t hits_single = 0;
        for (size_t i = 0; i < n; i++) {
            bool hit = bk_filter_contains(a, keys[i].ptr, keys[i].len);
            CHECK(hit == batch_hit[i]);
            hits_single += hit;
        }
        CHECK_EQ_U64(hits, hits_single);
        for (size_t i = 0; i < n; i += 2)
            store[i][0] = 'k';
        CHECK(bk_filter_contains_batch(a, keys, 0, batch_hit) == 0);
        CHECK_OK(bk_filter_add_batch(a, keys, 0, NULL, NULL));
        CHECK_STATUS(bk_filter_add_batch(a, NULL, 3, NULL, NULL), BK_EINVAL);
        bk_filter_free(a);
        bk_filter_free(b);
    }
    free(keys);
    free(store);
    free(batch_new);
    free(single_new);
    free(batch_hit);
}

/* The batch calls run a pipeline some keys deep on large filters and probe
 * small ones directly; batches shorter than the pipeline, equal to it, and
 * one past it (and past twice it) must still give exactly the one-at-a-time
 * results, with repeats inside the batch, in a tiny filter where keys
 * collide and in one of 4 MB (large enough to be pipelined). */
static void test_batch_pipeline_edges(void)
{
    static const size_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 130};
    enum { MAXN = 130 };
    char store[MAXN][16], probe[MAXN][16];
    bk_key_t keys[MAXN], probes[MAXN];
    bool batch_new[MAXN], single_new[MAXN], batch_hit[MAXN];
    static const uint64_t cells[] = {1024, UINT64_C(1) << 25};
    for (size_t c = 0; c < 2 * NKINDS; c++) {
        size_t t = c % NKINDS;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t n = sizes[s];
            for (size_t i = 0; i < n; i++) {
                size_t id = i % 5 == 4 ? i / 2 : i; /* some repeats */
                keys[i].len = (size_t)snprintf(store[i], sizeof store[i], "e%zu", id);
                keys[i].ptr = store[i];
                probes[i].len = (size_t)snprintf(probe[i], sizeof probe[i], "e%zu", i * 3);
                probes[i].ptr = probe[i];
            }
            bk_options_t o = {.seed_set = true, .seed = 99 + s};
            bk_filter_t *a, *b;
            /* The tiny one on purpose: about half the absent keys hit. */
            CHECK_OK(bk_filter_create_exact(&a, kinds[t], cells[c / NKINDS], 3, &o));
            CHECK_OK(bk_filter_create_exact(&b, kinds[t], cells[c / NKINDS], 3, &o));
            if (!a || !b) {
                bk_filter_free(a);
                bk_filter_free(b);
                return;
            }
            uint64_t fresh = 0, fresh_single = 0;
            CHECK_OK(bk_filter_add_batch(a, keys, n, batch_new, &fresh));
            for (size_t i = 0; i < n; i++) {
                CHECK_OK(bk_filter_add(b, keys[i].ptr, keys[i].len, &single_new[i]));
                fresh_single += single_new[i];
            }
            CHECK_MSG(memcmp(batch_new, single_new, n) == 0, "kind %d n %zu", (int)kinds[t], n);
            CHECK_EQ_U64(fresh, fresh_single);
            CHECK_MSG(memcmp(a->data, b->data, a->nbytes) == 0, "kind %d n %zu", (int)kinds[t], n);
            CHECK_EQ_U64(bk_filter_items(a), bk_filter_items(b));
            size_t hits = bk_filter_contains_batch(a, probes, n, batch_hit), hits_single = 0;
            for (size_t i = 0; i < n; i++) {
                bool hit = bk_filter_contains(a, probes[i].ptr, probes[i].len);
                CHECK_MSG(hit == batch_hit[i], "kind %d n %zu key %zu", (int)kinds[t], n, i);
                hits_single += hit;
            }
            CHECK_EQ_U64(hits, hits_single);
            /* The pre-hashed batch calls, on b emptied, at the same edges. */
            bk_hash_t hs[MAXN];
            bool hash_new[MAXN], hash_hit[MAXN];
            for (size_t i = 0; i < n; i++)
                hs[i] = bk_filter_hash(b, keys[i].ptr, keys[i].len);
            CHECK_OK(bk_filter_clear(b));
            uint64_t fresh_hash = 0;
            CHECK_OK(bk_filter_add_hash_batch(b, hs, n, hash_new, &fresh_hash));
            CHECK_MSG(memcmp(batch_new, hash_new, n) == 0, "kind %d n %zu", (int)kinds[t], n);
            CHECK_EQ_U64(fresh_hash, fresh);
            CHECK_MSG(memcmp(a->data, b->data, a->nbytes) == 0, "kind %d n %zu", (int)kinds[t], n);
            for (size_t i = 0; i < n; i++)
                hs[i] = bk_filter_hash(b, probes[i].ptr, probes[i].len);
            CHECK_EQ_U64(bk_filter_contains_hash_batch(b, hs, n, hash_hit), hits);
            CHECK_MSG(memcmp(batch_hit, hash_hit, n) == 0, "kind %d n %zu", (int)kinds[t], n);
            bk_filter_free(a);
            bk_filter_free(b);
        }
    }
}

/* The pre-hashed batch calls give exactly what the batch calls give on the
 * keys the hashes came from, for every kind: arrays (pipelined and not),
 * counting, a growing chain (and one that reaches its size cap: BK_EFULL
 * at the same key, the same keys in), and a count window whose generations
 * turn over within the batch. Twins fed the same keys must end up
 * answering alike. */
static void test_hash_batch_equals_batch(void)
{
    enum { N = 3000 };
    static char store[N][24];
    static bk_key_t keys[N];
    static bk_hash_t hashes[N];
    static bool new_k[N], new_h[N], hit_k[N], hit_h[N];
    bk_options_t opts[] = {
        {.kind = BK_KIND_BLOCKED},
        {.kind = BK_KIND_CLASSIC},
        {.kind = BK_KIND_PRECISE},
        {.kind = BK_KIND_BLOCKED2},
        {.kind = BK_KIND_COUNTING},
        {.kind = BK_KIND_SCALABLE},
        {.kind = BK_KIND_SCALABLE, .max_bytes = 4096},
        {.kind = BK_KIND_WINDOW},
    };
    /* Capacities: small (keys collide, chains grow, windows turn over)
     * and one large enough for the batch pipeline. */
    static const uint64_t caps[] = {500, 2000000};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        for (size_t t = 0; t < sizeof opts / sizeof opts[0]; t++) {
            bk_options_t o = opts[t];
            o.seed_set = true;
            o.seed = 77 + t;
            bk_filter_t *a = NULL, *b = NULL;
            if (bk_filter_create(&a, caps[c], 0.01, &o) != BK_OK ||
                bk_filter_create(&b, caps[c], 0.01, &o) != BK_OK) {
                CHECK_MSG(caps[c] > 500 && o.max_bytes, "create kind %d", (int)o.kind);
                bk_filter_free(a);
                bk_filter_free(b);
                continue;
            }
            for (size_t i = 0; i < N; i++) {
                size_t id = i % 7 == 6 ? i / 3 : i; /* some repeats */
                keys[i].len = (size_t)snprintf(store[i], sizeof store[i], "h%zu.%zu", id, c);
                keys[i].ptr = store[i];
                hashes[i] = bk_filter_hash(b, keys[i].ptr, keys[i].len);
            }
            uint64_t fresh_k = 0, fresh_h = 0;
            bk_status_t st_k = bk_filter_add_batch(a, keys, N, new_k, &fresh_k);
            bk_status_t st_h = bk_filter_add_hash_batch(b, hashes, N, new_h, &fresh_h);
            CHECK_MSG(st_k == st_h, "kind %d cap %zu: status %d vs %d", (int)o.kind, c, st_k,
                      st_h);
            CHECK_MSG(st_h == (o.max_bytes ? BK_EFULL : BK_OK), "kind %d: status %d",
                      (int)o.kind, st_h);
            CHECK_MSG(memcmp(new_k, new_h, N) == 0, "kind %d cap %zu: was_new", (int)o.kind, c);
            CHECK_EQ_U64(fresh_k, fresh_h);
            CHECK(fresh_h > 0 && fresh_h < N);
            CHECK_EQ_U64(bk_filter_items(a), bk_filter_items(b));
            /* Half the probes absent: new names. */
            for (size_t i = 0; i < N; i += 2) {
                store[i][0] = 'x';
                hashes[i] = bk_filter_hash(b, keys[i].ptr, keys[i].len);
            }
            size_t hits_k = bk_filter_contains_batch(a, keys, N, hit_k);
            size_t hits_h = bk_filter_contains_hash_batch(b, hashes, N, hit_h);
            CHECK_MSG(memcmp(hit_k, hit_h, N) == 0, "kind %d cap %zu: hits", (int)o.kind, c);
            CHECK_EQ_U64(hits_k, hits_h);
            for (size_t i = 0; i < N; i++)
                CHECK(hit_h[i] == bk_filter_contains_hash(b, hashes[i]));
            /* Arguments. */
            CHECK(bk_filter_contains_hash_batch(b, hashes, 0, hit_h) == 0);
            CHECK(bk_filter_contains_hash_batch(b, NULL, 3, hit_h) == 0);
            CHECK(bk_filter_contains_hash_batch(b, hashes, 3, NULL) == 0);
            uint64_t none = 9;
            CHECK_OK(bk_filter_add_hash_batch(b, hashes, 0, NULL, &none));
            CHECK_EQ_U64(none, 0);
            CHECK_STATUS(bk_filter_add_hash_batch(b, NULL, 3, NULL, NULL), BK_EINVAL);
            bk_filter_free(a);
            bk_filter_free(b);
        }
    }
}

static void test_union_clear_clone(void)
{
    for (size_t t = 0; t < NKINDS; t++) {
        bk_options_t o = {.kind = kinds[t], .seed_set = true, .seed = 77};
        bk_filter_t *a, *b, *c;
        CHECK_OK(bk_filter_create(&a, 10000, 0.01, &o));
        CHECK_OK(bk_filter_create(&b, 10000, 0.01, &o));
        if (!a || !b)
            return;
        for (uint64_t i = 0; i < 4000; i++) {
            uint64_t ka = i, kb = i + 1000000;
            bk_filter_add(a, &ka, 8, NULL);
            bk_filter_add(b, &kb, 8, NULL);
        }
        CHECK_OK(bk_filter_clone(&c, a));
        CHECK(c && memcmp(c->data, a->data, a->nbytes) == 0);
        CHECK_EQ_U64(bk_filter_items(c), bk_filter_items(a));
        CHECK_OK(bk_filter_union(a, b));
        for (uint64_t i = 0; i < 4000; i++) {
            uint64_t ka = i, kb = i + 1000000;
            CHECK(bk_filter_contains(a, &ka, 8) && bk_filter_contains(a, &kb, 8));
        }
        /* The union is exactly the OR of the payloads. */
        for (uint64_t i = 0; i < a->nbytes; i++)
            CHECK(a->data[i] == (c->data[i] | b->data[i]));
        /* Item count after union: the estimate from the bits, near 8000. */
        CHECK(bk_filter_items(a) > 7600 && bk_filter_items(a) < 8400);
        /* The clone is independent of the original: clearing it leaves
         * the original's keys in place. */
        uint64_t kb0 = 1000000;
        CHECK_OK(bk_filter_clear(c));
        CHECK_EQ_U64(bki_cells_set(c), 0);
        CHECK_EQ_U64(bk_filter_items(c), 0);
        CHECK(bk_filter_contains(a, &kb0, 8));
        /* Incompatible: other seed, other size, other kind. */
        bk_filter_t *d;
        bk_options_t o2 = o;
        o2.seed = 78;
        CHECK_OK(bk_filter_create(&d, 10000, 0.01, &o2));
        CHECK_STATUS(bk_filter_union(a, d), BK_EINCOMPAT);
        bk_filter_free(d);
        CHECK_OK(bk_filter_create(&d, 20000, 0.01, &o));
        CHECK_STATUS(bk_filter_union(a, d), BK_EINCOMPAT);
        bk_filter_free(d);
        bk_options_t o3 = o;
        o3.kind = kinds[t] == BK_KIND_BLOCKED ? BK_KIND_CLASSIC : BK_KIND_BLOCKED;
        CHECK_OK(bk_filter_create(&d, 10000, 0.01, &o3));
        CHECK_STATUS(bk_filter_union(a, d), BK_EINCOMPAT);
        bk_filter_free(d);
        bk_filter_free(a);
        bk_filter_free(b);
        bk_filter_free(c);
    }
}

static void test_info(void)
{
    for (size_t t = 0; t < NKINDS; t++) {
        bk_options_t o = {.kind = kinds[t], .hash = BK_HASH_FNV1A, .seed_set = true, .seed = 31};
        bk_filter_t *f;
        CHECK_OK(bk_filter_create(&f, 50000, 0.02, &o));
        if (!f)
            return;
        for (uint64_t i = 0; i < 50000; i++)
            bk_filter_add(f, &i, 8, NULL);
        bk_filter_info_t info;
        bk_filter_info(f, &info);
        CHECK(info.kind == kinds[t] && info.hash == BK_HASH_FNV1A && info.seed == 31);
        CHECK(info.capacity == 50000 && info.fpr_target == 0.02);
        CHECK(info.cells == f->cells && info.k == f->k && info.bytes == f->nbytes);
        CHECK(info.items == bk_filter_items(f) && info.items <= 50000 && info.items > 49000);
        uint64_t naive = 0;
        for (uint64_t i = 0; i < f->nbytes; i++)
            naive += (uint64_t)__builtin_popcount(f->data[i]);
        CHECK_EQ_U64(info.cells_set, naive);
        CHECK(fabs(info.fill - (double)naive / (double)f->cells) < 1e-12);
        CHECK_MSG(fabs(info.estimated_items - 50000) < 1000, "estimate %.0f", info.estimated_items);
        CHECK(info.expected_fpr > 0.01 && info.expected_fpr < 0.02);
        CHECK(info.filters == 1 && !info.mapped && !info.readonly);
        bk_filter_free(f);
    }
}

/* bk_filter_shape answers what bk_filter_info does (sizes, counts) without
 * a scan, for every kind, and stays right as a scalable chain grows, is
 * cleared and is cloned. */
static void check_shape_matches_info(const bk_filter_t *f)
{
    bk_filter_shape_t s;
    bk_filter_info_t in;
    bk_filter_shape(f, &s);
    bk_filter_info(f, &in);
    CHECK(s.kind == in.kind && s.sub_kind == in.sub_kind && s.hash == in.hash);
    CHECK(s.seed == in.seed && s.fpr_target == in.fpr_target && s.k == in.k);
    CHECK_EQ_U64(s.capacity, in.capacity);
    CHECK_EQ_U64(s.bytes, in.bytes);
    CHECK_EQ_U64(s.items, in.items);
    CHECK_EQ_U64(s.filters, in.filters);
    CHECK_EQ_U64(s.precise_filters, in.precise_filters);
    CHECK(s.growth == in.growth && s.tightening == in.tightening);
    CHECK(s.mapped == in.mapped && s.readonly == in.readonly);
    if (in.kind == BK_KIND_SCALABLE) {
        const bk_filter_t *newest = f->subs[f->nsubs - 1];
        CHECK(s.nonscaling == in.nonscaling);
        CHECK_EQ_U64(s.newest_capacity, newest->capacity);
        CHECK_EQ_U64(s.newest_items, bk_filter_items(newest));
    } else {
        CHECK(s.nonscaling);
    }
}

static const bk_kind_t all_kinds[] = {BK_KIND_BLOCKED, BK_KIND_CLASSIC, BK_KIND_COUNTING, BK_KIND_PRECISE,
                                      BK_KIND_SCALABLE};

static void test_shape(void)
{
    for (size_t t = 0; t < sizeof all_kinds / sizeof all_kinds[0]; t++) {
        bk_options_t o = {.kind = all_kinds[t], .seed_set = true, .seed = 5};
        bk_filter_t *f, *c = NULL;
        CHECK_OK(bk_filter_create(&f, 100, 0.01, &o));
        if (!f)
            return;
        check_shape_matches_info(f);
        for (uint64_t i = 0; i < 1000; i++) {
            bk_filter_add(f, &i, 8, NULL);
            if (i % 97 == 0)
                check_shape_matches_info(f);
        }
        check_shape_matches_info(f);
        CHECK_OK(bk_filter_clone(&c, f));
        if (c)
            check_shape_matches_info(c);
        CHECK_OK(bk_filter_clear(f));
        check_shape_matches_info(f);
        bk_filter_free(c);
        bk_filter_free(f);
    }
}

/* bk_filter_counter is one key's counter; the deprecated bk_filter_count
 * answers the same. */
static void test_counter_and_alias(void)
{
    for (size_t t = 0; t < sizeof all_kinds / sizeof all_kinds[0]; t++) {
        bk_options_t o = {.kind = all_kinds[t], .seed_set = true, .seed = 9};
        bk_filter_t *f;
        CHECK_OK(bk_filter_create(&f, 1000, 0.001, &o));
        if (!f)
            return;
        const char *key = "counted";
        CHECK_EQ_U64(bk_filter_counter(f, key, 7), 0);
        for (unsigned i = 1; i <= 3; i++) {
            CHECK_OK(bk_filter_add(f, key, 7, NULL));
            unsigned want = all_kinds[t] == BK_KIND_COUNTING ? i : 1;
            CHECK_EQ_U64(bk_filter_counter(f, key, 7), want);
            CHECK_EQ_U64(bk_filter_count(f, key, 7), want);
        }
        bk_filter_free(f);
    }
}

struct thread_arg {
    bk_filter_t *f;
    uint64_t first, count;
};

static void *add_range(void *p)
{
    struct thread_arg *a = p;
    for (uint64_t i = a->first; i < a->first + a->count; i++)
        bk_filter_add_atomic(a->f, &i, sizeof i, NULL);
    return NULL;
}

static void test_atomic_add_threads(void)
{
    const int nthreads = 4;
    uint64_t per = bkt_scaled(200000);
    for (size_t t = 0; t < NKINDS; t++) {
        bk_options_t o = {.kind = kinds[t], .seed_set = true, .seed = 3};
        bk_filter_t *shared, *serial;
        /* A small filter so threads collide on the same words often. */
        CHECK_OK(bk_filter_create(&shared, per * nthreads, 0.01, &o));
        CHECK_OK(bk_filter_create(&serial, per * nthreads, 0.01, &o));
        if (!shared || !serial)
            return;
        pthread_t th[4];
        struct thread_arg args[4];
        for (int i = 0; i < nthreads; i++) {
            args[i] = (struct thread_arg){shared, (uint64_t)i * per, per};
            pthread_create(&th[i], NULL, add_range, &args[i]);
        }
        for (int i = 0; i < nthreads; i++)
            pthread_join(th[i], NULL);
        for (uint64_t i = 0; i < per * nthreads; i++)
            bk_filter_add(serial, &i, sizeof i, NULL);
        /* OR is order-independent: a lost update would show as a missing bit. */
        CHECK_MSG(memcmp(shared->data, serial->data, shared->nbytes) == 0,
                  "%s: concurrent adds lost bits", bk_kind_name(kinds[t]));
        uint64_t items = bk_filter_items(shared), want = bk_filter_items(serial);
        /* Keys that were false positives at their turn are not new; the
         * turn order differs between runs, so allow the FPR's share. */
        CHECK(items <= per * nthreads && items + per * nthreads / 50 >= want);
        bk_filter_free(shared);
        bk_filter_free(serial);
    }
}

static void test_allocation_failures(void)
{
    for (size_t t = 0; t < NKINDS; t++) {
        bk_options_t o = {.kind = kinds[t]};
        long failures = 0;
        for (long n = 1; n < 50; n++) {
            bk_filter_t *f = (bk_filter_t *)&failures; /* must be reset */
            bki_fail_countdown = n;
            bk_status_t st = bk_filter_create(&f, 100000, 0.01, &o);
            bool injected = bki_fail_countdown == 0;
            bki_fail_countdown = 0;
            if (injected) {
                failures++;
                CHECK_STATUS(st, BK_ENOMEM);
                CHECK(f == NULL);
            } else {
                CHECK_OK(st);
                /* The filter created after the failures works. */
                CHECK(f && bk_filter_add(f, "x", 1, NULL) == BK_OK && bk_filter_contains(f, "x", 1));
                bk_filter_free(f);
                break;
            }
        }
        CHECK(failures >= 2); /* the struct and the payload */
        bk_filter_t *f, *c = NULL;
        CHECK_OK(bk_filter_create(&f, 1000, 0.01, &o));
        bki_fail_countdown = 1;
        CHECK_STATUS(bk_filter_clone(&c, f), BK_ENOMEM);
        bki_fail_countdown = 0;
        CHECK(c == NULL);
        bk_filter_free(f);
    }
}

static void test_beyond_32_bits(void)
{
    /* 5e9 keys at 1%: about 6 GB of address space (untouched pages cost
     * nothing). Lines past 2^32 bits must be reachable. */
    bk_filter_t *f;
    bk_status_t st = bk_filter_create(&f, UINT64_C(5000000000), 0.01, NULL);
    if (st == BK_ENOMEM) {
        printf("  (cannot map 6 GB here; skipped)\n");
        return;
    }
    CHECK_OK(st);
    if (st != BK_OK)
        return;
    CHECK(f->cells > (UINT64_C(1) << 32));
    /* Few keys: each one touches a fresh (huge) page. */
    uint64_t high = 0;
    for (uint64_t i = 0; i < 200; i++) {
        bk_hash_t h = bk_filter_hash(f, &i, 8);
        CHECK_OK(bk_filter_add_hash(f, h, NULL));
        high += bki_reduce(h.hi, f->lines) * 512 > (UINT64_C(1) << 32);
    }
    for (uint64_t i = 0; i < 200; i++)
        CHECK(bk_filter_contains(f, &i, 8));
    CHECK(high > 100); /* most lines lie above bit 2^32 */
    bk_filter_free(f);
}

static void test_bad_parameters(void)
{
    bk_filter_t *f = NULL;
    CHECK_STATUS(bk_filter_create(&f, 0, 0.01, NULL), BK_EINVAL);
    CHECK_STATUS(bk_filter_create(&f, 10, 1.5, NULL), BK_EINVAL);
    CHECK_STATUS(bk_filter_create(&f, 10, NAN, NULL), BK_EINVAL);
    CHECK_STATUS(bk_filter_create(NULL, 10, 0.01, NULL), BK_EINVAL);
    CHECK_STATUS(bk_filter_create(&f, UINT64_MAX, 0.01, NULL), BK_ENOMEM);
    bk_options_t o = {.hash = (bk_hash_id_t)42};
    CHECK_STATUS(bk_filter_create(&f, 10, 0.01, &o), BK_EINVAL);
    o = (bk_options_t){.kind = BK_KIND_BITMAP};
    CHECK_STATUS(bk_filter_create(&f, 10, 0.01, &o), BK_EINVAL);
    CHECK(f == NULL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_BLOCKED, 0, 3, NULL), BK_EINVAL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_BLOCKED, 512, 0, NULL), BK_EINVAL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_BLOCKED, 512, 17, NULL), BK_EINVAL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_CLASSIC, 512, 65, NULL), BK_EINVAL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_CLASSIC, UINT64_MAX, 3, NULL), BK_ENOMEM);
    CHECK_OK(bk_filter_create_exact(&f, BK_KIND_BLOCKED, 513, 3, NULL));
    CHECK(f && f->cells == 1024); /* rounded up to whole lines */
    bk_filter_free(f);
    bk_filter_free(NULL);
}

static void test_names_and_errors(void)
{
    const char *seen[BK_EBUDGET + 1];
    for (int s = BK_OK; s <= BK_EBUDGET; s++) {
        seen[s] = bk_strerror((bk_status_t)s);
        CHECK(seen[s] && seen[s][0]);
        for (int t = 0; t < s; t++)
            CHECK(strcmp(seen[s], seen[t]) != 0);
    }
    CHECK(strcmp(bk_strerror((bk_status_t)1000), "unknown status") == 0);
    for (int k = BK_KIND_BLOCKED; bk_kind_name((bk_kind_t)k); k++) {
        bk_kind_t back;
        CHECK_OK(bk_kind_parse(bk_kind_name((bk_kind_t)k), &back));
        CHECK(back == (bk_kind_t)k);
    }
    /* bk_filter_kinds: every kind whose filters a program makes, in kind
     * order; no bitmap, no RedisBloom link (made only inside its chains) */
    bk_kind_t made[64];
    size_t nmade = bk_filter_kinds(made, 64);
    CHECK(nmade >= 12 && nmade < 64);
    for (size_t i = 0; i < nmade && i < 64; i++) {
        CHECK(bk_kind_caps(made[i]) != 0);
        CHECK(made[i] != BK_KIND_REDISBLOOM);
        CHECK(i == 0 || made[i] > made[i - 1]);
    }
    CHECK_EQ_U64(bk_filter_kinds(NULL, 0), nmade);
    bk_kind_t kind;
    CHECK_STATUS(bk_kind_parse("quotient", &kind), BK_EINVAL);
    CHECK(bk_kind_name((bk_kind_t)77) == NULL);
}

/* bk_filter_prefault changes no bit, whatever the shares, on a large
 * (mmap'd) and a small (heap) filter; chains are left alone; a share out
 * of range is refused. */
static void test_prefault(void)
{
    static const uint64_t sizes[] = {2000000, 1000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        bk_options_t o = {.kind = BK_KIND_BLOCKED, .seed_set = true, .seed = 11};
        bk_filter_t *f = NULL;
        CHECK_OK(bk_filter_create(&f, sizes[s], 0.01, &o));
        if (!f)
            return;
        for (uint64_t i = 0; i < sizes[s] / 2; i++)
            CHECK_OK(bk_filter_add(f, &i, sizeof i, NULL));
        size_t n = bk_filter_serialized_size(f), w = 0, w2 = 0;
        unsigned char *before = malloc(n), *after = malloc(n);
        CHECK(before && after);
        if (before && after) {
            CHECK_OK(bk_filter_serialize(f, before, n, &w));
            for (unsigned share = 0; share < 3; share++)
                CHECK_OK(bk_filter_prefault(f, share, 3));
            CHECK_OK(bk_filter_prefault(f, 0, 1));
            CHECK_OK(bk_filter_serialize(f, after, n, &w2));
            CHECK_EQ_U64(w, w2);
            CHECK(memcmp(before, after, n) == 0);
        }
        CHECK_STATUS(bk_filter_prefault(f, 3, 3), BK_EINVAL);
        CHECK_STATUS(bk_filter_prefault(f, 0, 0), BK_EINVAL);
        for (uint64_t i = 0; i < sizes[s] / 2; i++)
            CHECK(bk_filter_contains(f, &i, sizeof i));
        free(before);
        free(after);
        bk_filter_free(f);
    }
    bk_options_t c = {.kind = BK_KIND_SCALABLE};
    bk_filter_t *chain = NULL;
    CHECK_OK(bk_filter_create(&chain, 1000, 0.01, &c));
    if (chain)
        CHECK_OK(bk_filter_prefault(chain, 1, 2));
    bk_filter_free(chain);
}

/* Each kind's capabilities (bk_kind_caps) are what its filters do: a kind
 * that says REMOVE removes, GROW grows past its capacity, MERGE takes the
 * union of two of one shape, WINDOW forgets keys older than its window,
 * BOUNDED keeps its rate far past its capacity, STATIC refuses adds; and
 * one that does not say so does not. */
static void test_kind_caps_are_behaviour(void)
{
    for (int k = 1; bk_kind_name((bk_kind_t)k); k++) { /* every kind there is */
        bk_kind_t kind = (bk_kind_t)k;
        unsigned caps = bk_kind_caps(kind);
        bk_filter_t *f = NULL, *g = NULL;
        if (caps & BK_CAP_STATIC) {
            uint64_t keys[100];
            bk_key_t kk[100];
            for (int i = 0; i < 100; i++) {
                keys[i] = (uint64_t)i;
                kk[i].ptr = &keys[i];
                kk[i].len = sizeof keys[i];
            }
            bk_options_t so = {.kind = kind};
            CHECK_OK(bk_filter_build(&f, kk, 100, 0, &so));
            if (f)
                CHECK_MSG(bk_filter_add(f, "x", 1, NULL) == BK_ESTATIC, "%s", bk_kind_name(kind));
            bk_filter_free(f);
            CHECK(!(caps & (BK_CAP_ADD | BK_CAP_REMOVE | BK_CAP_GROW | BK_CAP_MERGE)));
            continue;
        }
        bk_options_t o = {.kind = kind, .seed = 3, .seed_set = true, .window_generations = 4};
        if (bk_filter_create(&f, 200, 0.01, &o) != BK_OK) {
            /* bitmaps have none; a RedisBloom link is made only inside its
             * chain (bk_redisbloom_create), whose kind is scalable */
            CHECK_MSG(caps == 0 || kind == BK_KIND_REDISBLOOM,
                      "%s: has capabilities but cannot be made", bk_kind_name(kind));
            continue;
        }
        CHECK_OK(bk_filter_create(&g, 200, 0.01, &o));
        CHECK_MSG(caps & BK_CAP_ADD, "%s", bk_kind_name(kind));
        for (uint64_t i = 0; i < 100; i++)
            CHECK_OK(bk_filter_add(f, &i, sizeof i, NULL));
        uint64_t probe = 7;
        bk_status_t r = bk_filter_remove(f, &probe, sizeof probe);
        CHECK_MSG((r == BK_OK) == ((caps & BK_CAP_REMOVE) != 0), "%s: remove %s",
                  bk_kind_name(kind), bk_strerror(r));
        bk_status_t u = bk_filter_union(g, f);
        CHECK_MSG((u == BK_OK) == ((caps & BK_CAP_MERGE) != 0), "%s: union %s",
                  bk_kind_name(kind), bk_strerror(u));
        /* Past capacity: a kind that grows holds more sub-filters (or
         * capacity); a window has forgotten its first keys. */
        bk_filter_shape_t before, after;
        bk_filter_shape(f, &before);
        for (uint64_t i = 1000; i < 5000; i++)
            (void)bk_filter_add(f, &i, sizeof i, NULL);
        bk_filter_shape(f, &after);
        bool grew = after.filters > before.filters || after.capacity > before.capacity;
        CHECK_MSG(grew == ((caps & BK_CAP_GROW) != 0), "%s: grew %d", bk_kind_name(kind), grew);
        int forgotten = 0;
        for (uint64_t i = 8; i < 100; i++)
            forgotten += !bk_filter_contains(f, &i, sizeof i);
        CHECK_MSG((forgotten > 50) == ((caps & BK_CAP_WINDOW) != 0), "%s: %d of 92 forgotten",
                  bk_kind_name(kind), forgotten);
        /* 25 times its capacity in: a bounded kind still answers absent
         * keys falsely within its target (twice it, for the sample's
         * noise); one that neither bounds its rate nor grows is far past
         * it (a cuckoo filter grows, its rate bounded by nothing but its
         * sub-filters' count). */
        unsigned fp = 0;
        for (uint64_t i = 1000000; i < 1020000; i++)
            fp += bk_filter_contains(f, &i, sizeof i);
        if (caps & BK_CAP_BOUNDED)
            CHECK_MSG(fp <= 2 * 200, "%s: %u of 20000 absent keys found", bk_kind_name(kind), fp);
        else if (!(caps & BK_CAP_GROW))
            CHECK_MSG(fp > 2 * 200, "%s: %u of 20000 absent keys found", bk_kind_name(kind), fp);
        bk_filter_free(f);
        bk_filter_free(g);
    }
}

/* The key's 8 bytes in little-endian order, written out here as the
 * header documents them (not with the library's helper). */
static void le_bytes(uint8_t b[8], uint64_t key)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(key >> (8 * i));
}

/* Key i of the u64 test: random, with every seventh a repeat of an earlier
 * one and the two ends of the range among them. */
static uint64_t u64_key(uint64_t i)
{
    uint64_t st = i / 7 * 7 * UINT64_C(0x9E3779B97F4A7C15) + 5;
    if (i == 1)
        return 0;
    if (i == 2)
        return UINT64_MAX;
    return bkt_rand(&st) ^ (i % 7 == 6 ? 0 : i);
}

/* Two filters, one fed by the byte calls and one by the _u64 calls, end
 * with the same serialized bytes. */
static void check_same_bytes(const bk_filter_t *a, const bk_filter_t *b, const char *what)
{
    uint64_t na = bk_filter_serialized_size(a), nb = bk_filter_serialized_size(b);
    CHECK_MSG(na == nb && na > 0, "%s: serialized sizes %llu and %llu", what,
              (unsigned long long)na, (unsigned long long)nb);
    if (na != nb || na == 0)
        return;
    uint8_t *x = malloc(na), *y = malloc(nb);
    size_t wa = 0, wb = 0;
    CHECK(x && y);
    if (x && y) {
        CHECK_OK(bk_filter_serialize(a, x, na, &wa));
        CHECK_OK(bk_filter_serialize(b, y, nb, &wb));
        CHECK_MSG(wa == wb && memcmp(x, y, wa) == 0, "%s: the two filters' bytes differ", what);
    }
    free(x);
    free(y);
}

/* bk_filter_add_u64, bk_filter_contains_u64 and bk_filter_remove_u64 are
 * the byte calls on the key's 8 little-endian bytes: for every kind there
 * is (static ones built from the keys' bytes), an 8-byte hash of each
 * path (the default's mix, XXH3, a classic one) and each instruction set,
 * the same statuses, new-key flags and answers, and after the same calls
 * the same bytes; past capacity, so chains and cuckoo filters grow and
 * windows forget. A read-only mapping refuses both adds alike. */
static void test_u64_calls_equal_byte_calls(void)
{
    static const bk_hash_id_t hashes[] = {BK_HASH_XXH3_MIX8, BK_HASH_XXH3, BK_HASH_FNV1A};
    enum { CAP = 2000, N = 5000 };
    uint8_t b8[8];
    int was = bki_simd_set(BKI_SIMD_SCALAR);
    for (int level = BKI_SIMD_SCALAR; level <= bki_simd_available(); level++) {
        bki_simd_set(level);
        for (int k = 1; bk_kind_name((bk_kind_t)k); k++) {
            bk_kind_t kind = (bk_kind_t)k;
            unsigned caps = bk_kind_caps(kind), ran = 0;
            for (size_t h = 0; h < sizeof hashes / sizeof hashes[0]; h++) {
                char what[96];
                snprintf(what, sizeof what, "%s, hash %d, simd %d", bk_kind_name(kind),
                         (int)hashes[h], level);
                bk_options_t o = {.kind = kind, .hash = hashes[h], .seed = 11, .seed_set = true,
                                  .window_generations = 4};
                bk_filter_t *a = NULL, *b = NULL;
                if (caps & BK_CAP_STATIC) {
                    static uint8_t bytes[CAP][8];
                    bk_key_t keys[CAP];
                    for (uint64_t i = 0; i < CAP; i++) {
                        le_bytes(bytes[i], u64_key(i));
                        keys[i] = (bk_key_t){bytes[i], 8};
                    }
                    if (bk_filter_build(&a, keys, CAP, 0, &o) != BK_OK)
                        continue; /* a hash the kind does not take */
                    unsigned differ = 0, found = 0;
                    for (uint64_t i = 0; i < 2 * CAP; i++) {
                        uint64_t key = i < CAP ? u64_key(i) : u64_key(i) ^ 0x5555;
                        le_bytes(b8, key);
                        bool yes = bk_filter_contains_u64(a, key);
                        differ += yes != bk_filter_contains(a, b8, 8);
                        found += i < CAP && yes;
                    }
                    CHECK_MSG(differ == 0 && found == CAP, "%s: %u answers differ, %u of %d found",
                              what, differ, found, (int)CAP);
                    CHECK_STATUS(bk_filter_add_u64(a, 1, NULL), BK_ESTATIC);
                    bk_filter_free(a);
                    ran++;
                    continue;
                }
                if (bk_filter_create(&a, CAP, 0.01, &o) != BK_OK)
                    continue; /* bitmaps; a kind that takes no such hash */
                CHECK_OK(bk_filter_create(&b, CAP, 0.01, &o));
                if (!b) {
                    bk_filter_free(a);
                    continue;
                }
                unsigned differ = 0;
                for (uint64_t i = 0; i < N; i++) {
                    uint64_t key = u64_key(i);
                    le_bytes(b8, key);
                    bool na = false, nb = true;
                    bk_status_t sa = bk_filter_add(a, b8, 8, &na);
                    bk_status_t sb = bk_filter_add_u64(b, key, &nb);
                    differ += sa != sb || na != nb;
                }
                if (caps & BK_CAP_REMOVE)
                    for (uint64_t i = 0; i < N; i += 3) {
                        uint64_t key = u64_key(i);
                        le_bytes(b8, key);
                        differ += bk_filter_remove(a, b8, 8) != bk_filter_remove_u64(b, key);
                    }
                CHECK_MSG(differ == 0, "%s: %u adds or removes answered differently", what,
                          differ);
                CHECK_EQ_U64(bk_filter_items(b), bk_filter_items(a));
                /* the keys added and as many others; on one filter the two
                 * lookups agree, and the two filters agree */
                differ = 0;
                for (uint64_t i = 0; i < 2 * N; i++) {
                    uint64_t key = i < N ? u64_key(i) : u64_key(i) ^ 0x5555;
                    le_bytes(b8, key);
                    bool yes = bk_filter_contains(a, b8, 8);
                    differ += yes != bk_filter_contains_u64(a, key);
                    differ += yes != bk_filter_contains_u64(b, key);
                }
                CHECK_MSG(differ == 0, "%s: %u lookups answered differently", what, differ);
                check_same_bytes(a, b, what);
                bk_filter_free(a);
                bk_filter_free(b);
                ran++;
            }
            /* every kind that takes keys was tried, with the default hash
             * at least (a RedisBloom link is made only inside its chain) */
            if ((caps & (BK_CAP_ADD | BK_CAP_STATIC)) && kind != BK_KIND_REDISBLOOM)
                CHECK_MSG(ran >= 1, "%s: no filter made", bk_kind_name(kind));
        }
    }
    bki_simd_set(was);

    /* A read-only mapping: both adds refused, lookups as the filter's. */
    char dir[256], path[300];
    if (!bkt_tmpdir(dir, sizeof dir, "u64"))
        return;
    snprintf(path, sizeof path, "%s/f.bk", dir);
    static const bk_kind_t mapped[] = {BK_KIND_SPLIT, BK_KIND_BLOCKED, BK_KIND_CUCKOO};
    for (size_t m = 0; m < sizeof mapped / sizeof mapped[0]; m++) {
        bk_options_t o = {.kind = mapped[m], .seed = 5, .seed_set = true};
        bk_filter_t *f = NULL, *g = NULL;
        CHECK_OK(bk_filter_create(&f, 1000, 0.01, &o));
        if (!f)
            continue;
        for (uint64_t i = 0; i < 1000; i++)
            CHECK_OK(bk_filter_add_u64(f, i * 977, NULL));
        CHECK_OK(bk_filter_save(f, path));
        CHECK_OK(bk_filter_open(&g, path, BK_MAP_READONLY, NULL));
        if (g) {
            bool was_new = true;
            CHECK_STATUS(bk_filter_add_u64(g, 123456789, &was_new), BK_EREADONLY);
            CHECK(!was_new);
            le_bytes(b8, 123456789);
            CHECK_STATUS(bk_filter_add(g, b8, 8, NULL), BK_EREADONLY);
            if (mapped[m] == BK_KIND_CUCKOO)
                CHECK_STATUS(bk_filter_remove_u64(g, 977), BK_EREADONLY);
            unsigned found = 0;
            for (uint64_t i = 0; i < 1000; i++)
                found += bk_filter_contains_u64(g, i * 977);
            CHECK_EQ_U64(found, 1000);
            CHECK_EQ_U64(bk_filter_items(g), bk_filter_items(f));
        }
        bk_filter_free(g);
        bk_filter_free(f);
    }
    bkt_tmpdir_remove(dir);
}

int main(void)
{
    bkt_run("prefault keeps every bit", test_prefault);
    bkt_run("zero false negatives, every kind and hash", test_zero_false_negatives);
    bkt_run("fpr at capacity", test_fpr_at_capacity);
    bkt_run("add reports new", test_add_reports_new);
    bkt_run("batch equals single", test_batch_equals_single);
    bkt_run("batch pipeline edges", test_batch_pipeline_edges);
    bkt_run("pre-hashed batches equal batches, every kind", test_hash_batch_equals_batch);
    bkt_run("union, clear, clone", test_union_clear_clone);
    bkt_run("info", test_info);
    bkt_run("shape (O(1)) agrees with info", test_shape);
    bkt_run("counter and its deprecated alias", test_counter_and_alias);
    bkt_run("atomic add from threads", test_atomic_add_threads);
    bkt_run("allocation failures", test_allocation_failures);
    bkt_run("sizes beyond 32 bits", test_beyond_32_bits);
    bkt_run("bad parameters", test_bad_parameters);
    bkt_run("names and errors", test_names_and_errors);
    bkt_run("kind caps are behaviour", test_kind_caps_are_behaviour);
    bkt_run("64-bit key calls equal the byte calls, every kind", test_u64_calls_equal_byte_calls);
    return bkt_finish();
}
