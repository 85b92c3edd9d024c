/*
 * Tests for src/counting.c (and its dispatch in filter.c): a counter-level
 * reference model (every counter of a small filter simulated from the
 * documented layout and compared after every operation, so saturation,
 * all-or-nothing remove and the layout itself are checked exactly), zero
 * false negatives and the measured FPR at capacity on a filter sized from
 * (n, p), union against per-counter saturating sums, and an allocation
 * failure injected at each allocation.
 */
#include "harness.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static bk_options_t counting_opts(uint64_t seed)
{
    bk_options_t o;
    memset(&o, 0, sizeof o);
    o.kind = BK_KIND_COUNTING;
    o.seed_set = true;
    o.seed = seed;
    return o;
}

/* A key from a number: 8 to 23 bytes. */
static size_t make_key(uint64_t i, char *buf)
{
    return (size_t)snprintf(buf, 32, "key-%llu-%llu", (unsigned long long)i,
                            (unsigned long long)(i * 2654435761u % 1000003));
}

/* ---- the documented layout, written out independently ---- */

/* Global counter index (line * 128 + lane * 8 + counter) of probe i. */
static uint64_t ref_counter(const bk_filter_t *f, bk_hash_t h, uint32_t i)
{
    const uint32_t *salt = bki_lane_salt;
    uint64_t line = (uint64_t)(((bki_u128)h.hi * f->lines) >> 64);
    uint32_t x = (uint32_t)h.lo;
    uint32_t r = (uint32_t)(h.lo >> 32) & 15;
    uint32_t s = 2 * ((uint32_t)(h.lo >> 36) & 7) + 1;
    uint32_t lane = (r + i * s) % 16;
    uint32_t c = (x * salt[lane]) >> 29;
    return line * 128 + lane * 8 + c;
}

static unsigned nibble(const bk_filter_t *f, uint64_t g)
{
    uint8_t b = f->data[g / 2];
    return (g & 1) ? b >> 4 : b & 15;
}

/* Simulated counters: add / remove exactly as specified. */
static bool model_add(uint8_t *m, const bk_filter_t *f, bk_hash_t h)
{
    bool was_new = false;
    for (uint32_t i = 0; i < f->k; i++) {
        uint64_t g = ref_counter(f, h, i);
        was_new |= m[g] == 0;
        if (m[g] < 15)
            m[g]++;
    }
    return was_new;
}

static bk_status_t model_remove(uint8_t *m, const bk_filter_t *f, bk_hash_t h)
{
    for (uint32_t i = 0; i < f->k; i++)
        if (m[ref_counter(f, h, i)] == 0)
            return BK_ENOTFOUND;
    for (uint32_t i = 0; i < f->k; i++) {
        uint64_t g = ref_counter(f, h, i);
        if (m[g] != 15)
            m[g]--;
    }
    return BK_OK;
}

static unsigned model_min(const uint8_t *m, const bk_filter_t *f, bk_hash_t h)
{
    unsigned min = 15;
    for (uint32_t i = 0; i < f->k; i++)
        if (m[ref_counter(f, h, i)] < min)
            min = m[ref_counter(f, h, i)];
    return min;
}

static void test_layout_one_key(void)
{
    for (uint32_t k = 1; k <= 16; k++) {
        bk_filter_t *f = NULL;
        bk_options_t o = counting_opts(k);
        CHECK_OK(bk_filter_create_exact(&f, BK_KIND_COUNTING, 1000, k, &o));
        if (!f)
            continue;
        CHECK_EQ_U64(f->cells, 1024); /* rounded up to whole lines */
        CHECK_EQ_U64(f->nbytes, 512);
        bool was_new = false;
        CHECK_OK(bk_filter_add(f, "hello", 5, &was_new));
        CHECK(was_new);
        bk_hash_t h = bk_filter_hash(f, "hello", 5);
        /* Exactly k distinct counters are 1, all in the key's line. */
        uint64_t ones = 0, line = ref_counter(f, h, 0) / 128;
        for (uint64_t g = 0; g < f->cells; g++) {
            unsigned v = nibble(f, g);
            CHECK(v <= 1);
            if (v) {
                ones++;
                CHECK_EQ_U64(g / 128, line);
            }
        }
        CHECK_EQ_U64(ones, k);
        for (uint32_t i = 0; i < k; i++)
            CHECK_EQ_U64(nibble(f, ref_counter(f, h, i)), 1);
        bk_filter_free(f);
    }
}

/* Random adds and removes on a 2-line filter, so counters collide and
 * saturate often; the payload must equal the simulation after every step. */
static void test_counter_model(void)
{
    uint64_t rng = 42;
    const uint32_t ks[] = {1, 3, 7, 16};
    for (size_t ki = 0; ki < 4; ki++) {
        bk_filter_t *f = NULL;
        bk_options_t o = counting_opts(ki + 100);
        CHECK_OK(bk_filter_create_exact(&f, BK_KIND_COUNTING, 256, ks[ki], &o));
        if (!f)
            continue;
        uint8_t *m = calloc(f->cells, 1);
        uint64_t steps = bkt_scaled(20000), saturated = 0, notfound = 0;
        for (uint64_t step = 0; step < steps; step++) {
            char key[32];
            uint64_t r = bkt_rand(&rng);
            size_t len = make_key(r % 300, key);
            bk_hash_t h = bk_filter_hash(f, key, len);
            if ((r >> 32) % 5 < 3) {
                bool was_new = model_add(m, f, h), got = false;
                CHECK_OK(bk_filter_add(f, key, len, &got));
                CHECK(got == was_new);
            } else {
                bk_status_t want = model_remove(m, f, h);
                notfound += want == BK_ENOTFOUND;
                CHECK_STATUS(bk_filter_remove(f, key, len), want);
            }
            CHECK(bk_filter_contains(f, key, len) == (model_min(m, f, h) > 0));
            CHECK_EQ_U64(bk_filter_count(f, key, len), model_min(m, f, h));
            for (uint64_t g = 0; g < f->cells; g++)
                if (nibble(f, g) != m[g]) {
                    CHECK_MSG(0, "k=%u step %llu: counter %llu is %u, model %u", ks[ki],
                              (unsigned long long)step, (unsigned long long)g, nibble(f, g),
                              m[g]);
                    break;
                }
        }
        uint64_t nonzero = 0;
        for (uint64_t g = 0; g < f->cells; g++) {
            saturated += m[g] == 15;
            nonzero += m[g] != 0;
        }
        bk_filter_info_t info;
        bk_filter_info(f, &info);
        CHECK_EQ_U64(info.cells_set, nonzero);
        /* The run did exercise both special cases. */
        CHECK(saturated > 0);
        CHECK(notfound > 0);
        free(m);
        bk_filter_free(f);
    }
}

static void test_saturation_and_remove(void)
{
    bk_filter_t *f = NULL;
    bk_options_t o = counting_opts(7);
    CHECK_OK(bk_filter_create_exact(&f, BK_KIND_COUNTING, 128, 16, &o));
    if (!f)
        return;
    bool was_new = false;
    CHECK_OK(bk_filter_add(f, "a", 1, &was_new));
    CHECK(was_new);
    CHECK_OK(bk_filter_add(f, "a", 1, &was_new));
    CHECK(!was_new);
    CHECK_EQ_U64(bk_filter_items(f), 1);
    CHECK_EQ_U64(bk_filter_count(f, "a", 1), 2);
    CHECK_OK(bk_filter_remove(f, "a", 1));
    CHECK(bk_filter_contains(f, "a", 1));
    CHECK_EQ_U64(bk_filter_items(f), 1);
    CHECK_OK(bk_filter_remove(f, "a", 1));
    CHECK(!bk_filter_contains(f, "a", 1));
    CHECK_EQ_U64(bk_filter_items(f), 0);
    CHECK_EQ_U64(bk_filter_count(f, "a", 1), 0);
    CHECK_STATUS(bk_filter_remove(f, "a", 1), BK_ENOTFOUND);

    /* 20 adds saturate at 15; the counters then never come down, so the
     * key stays present after any number of removes. */
    for (int i = 0; i < 20; i++)
        CHECK_OK(bk_filter_add(f, "b", 1, NULL));
    CHECK_EQ_U64(bk_filter_count(f, "b", 1), 15);
    for (int i = 0; i < 40; i++)
        CHECK_OK(bk_filter_remove(f, "b", 1));
    CHECK(bk_filter_contains(f, "b", 1));
    CHECK_EQ_U64(bk_filter_count(f, "b", 1), 15);
    bk_filter_free(f);
}

/* Removing a key that was never added: BK_ENOTFOUND and not one byte of the
 * payload changes (unless the key is a false positive). */
static void test_remove_absent_changes_nothing(void)
{
    bk_filter_t *f = NULL;
    bk_options_t o = counting_opts(9);
    uint64_t n = bkt_scaled(20000);
    CHECK_OK(bk_filter_create(&f, n, 0.01, &o));
    if (!f)
        return;
    char key[32];
    for (uint64_t i = 0; i < n; i++)
        CHECK_OK(bk_filter_add(f, key, make_key(i, key), NULL));
    uint8_t *snap = malloc(f->nbytes);
    memcpy(snap, f->data, f->nbytes);
    uint64_t items = bk_filter_items(f), tried = 0;
    for (uint64_t i = n; i < n + 2000; i++) {
        size_t len = make_key(i, key);
        if (bk_filter_contains(f, key, len))
            continue; /* a false positive: its remove would be allowed */
        tried++;
        CHECK_STATUS(bk_filter_remove(f, key, len), BK_ENOTFOUND);
    }
    CHECK(tried > 1900);
    CHECK(memcmp(snap, f->data, f->nbytes) == 0);
    CHECK_EQ_U64(bk_filter_items(f), items);
    free(snap);
    bk_filter_free(f);
}

/* Sized from (n, p): zero false negatives, measured FPR at capacity <= p,
 * and after removing half the keys, the other half is all still there and
 * the removed ones are gone (up to the FPR). */
static void test_fpr_and_no_false_negatives(void)
{
    const double ps[] = {0.01, 0.001};
    for (int pi = 0; pi < 2; pi++) {
        uint64_t n = bkt_scaled(200000), q = bkt_scaled(400000);
        bk_filter_t *f = NULL;
        bk_options_t o = counting_opts(1234 + (uint64_t)pi);
        CHECK_OK(bk_filter_create(&f, n, ps[pi], &o));
        if (!f)
            continue;
        bk_plan_t plan;
        CHECK_OK(bk_plan(BK_KIND_COUNTING, n, ps[pi], &plan));
        CHECK_EQ_U64(f->cells, plan.cells);
        CHECK_EQ_U64(f->k, plan.k);
        CHECK_EQ_U64(f->nbytes, plan.cells / 2);
        char key[32];
        uint64_t fresh = 0;
        for (uint64_t i = 0; i < n; i++) {
            bool was_new;
            CHECK_OK(bk_filter_add(f, key, make_key(i, key), &was_new));
            fresh += was_new;
        }
        CHECK_EQ_U64(bk_filter_items(f), fresh);
        uint64_t fn = 0, fp = 0;
        for (uint64_t i = 0; i < n; i++)
            fn += !bk_filter_contains(f, key, make_key(i, key));
        for (uint64_t i = n; i < n + q; i++)
            fp += bk_filter_contains(f, key, make_key(i, key));
        double fpr = (double)fp / (double)q;
        CHECK_EQ_U64(fn, 0);
        CHECK_MSG(fpr <= ps[pi], "p=%g measured %g", ps[pi], fpr);
        /* not vacuous: a filter with half the counters would exceed p */
        CHECK(fpr > ps[pi] / 20 || q * ps[pi] < 50);

        for (uint64_t i = 0; i < n; i += 2)
            CHECK_OK(bk_filter_remove(f, key, make_key(i, key)));
        uint64_t fn2 = 0, still = 0;
        for (uint64_t i = 0; i < n; i++) {
            bool in = bk_filter_contains(f, key, make_key(i, key));
            if (i & 1)
                fn2 += !in;
            else
                still += in;
        }
        CHECK_EQ_U64(fn2, 0);
        CHECK_MSG((double)still / (double)(n / 2) <= ps[pi], "removed but present: %llu",
                  (unsigned long long)still);
        bk_filter_free(f);
    }
}

static void test_union(void)
{
    bk_filter_t *a = NULL, *b = NULL, *c = NULL, *other = NULL;
    bk_options_t o = counting_opts(77), o2 = counting_opts(78);
    CHECK_OK(bk_filter_create_exact(&a, BK_KIND_COUNTING, 1024, 4, &o));
    CHECK_OK(bk_filter_create_exact(&b, BK_KIND_COUNTING, 1024, 4, &o));
    CHECK_OK(bk_filter_create_exact(&other, BK_KIND_COUNTING, 1024, 4, &o2));
    if (!a || !b || !other)
        goto out;
    char key[32];
    uint64_t rng = 5;
    /* Heavy repeats, so that sums saturate. */
    for (int i = 0; i < 3000; i++) {
        uint64_t r = bkt_rand(&rng);
        CHECK_OK(bk_filter_add((r & 1) ? a : b, key, make_key(r % 400, key), NULL));
    }
    CHECK_OK(bk_filter_clone(&c, a));
    if (!c)
        goto out;
    CHECK(memcmp(c->data, a->data, a->nbytes) == 0);
    CHECK_EQ_U64(bk_filter_items(c), bk_filter_items(a));
    CHECK_OK(bk_filter_union(c, b));
    uint64_t saturated = 0, nonzero = 0;
    for (uint64_t g = 0; g < a->cells; g++) {
        unsigned want = nibble(a, g) + nibble(b, g);
        if (want > 15)
            want = 15, saturated++;
        nonzero += want != 0;
        CHECK_EQ_U64(nibble(c, g), want);
    }
    CHECK(saturated > 0);
    /* items: the estimate from the non-zero counters */
    bk_filter_info_t info;
    bk_filter_info(c, &info);
    CHECK_EQ_U64(info.cells_set, nonzero);
    CHECK_STATUS(bk_filter_union(c, other), BK_EINCOMPAT); /* other seed */
    CHECK_OK(bk_filter_clear(c));
    for (uint64_t g = 0; g < c->cells; g++)
        CHECK_EQ_U64(nibble(c, g), 0);
    CHECK_EQ_U64(bk_filter_items(c), 0);
out:
    bk_filter_free(a);
    bk_filter_free(b);
    bk_filter_free(c);
    bk_filter_free(other);
}

static void test_batch_matches_single(void)
{
    bk_filter_t *f = NULL, *g = NULL;
    bk_options_t o = counting_opts(31);
    uint64_t n = bkt_scaled(5000);
    CHECK_OK(bk_filter_create(&f, n, 0.01, &o));
    CHECK_OK(bk_filter_create(&g, n, 0.01, &o));
    char (*keys)[32] = malloc(2 * n * 32);
    bk_key_t *kv = malloc(2 * n * sizeof *kv);
    bool *flags = malloc(2 * n), *flags2 = malloc(2 * n);
    if (!f || !g || !keys || !kv || !flags || !flags2)
        goto out;
    for (uint64_t i = 0; i < 2 * n; i++) {
        kv[i].ptr = keys[i];
        kv[i].len = make_key(i % (n + n / 2), keys[i]); /* some repeats */
    }
    uint64_t n_new = 0, single_new = 0;
    CHECK_OK(bk_filter_add_batch(f, kv, n, flags, &n_new));
    for (uint64_t i = 0; i < n; i++) {
        bool w;
        CHECK_OK(bk_filter_add(g, kv[i].ptr, kv[i].len, &w));
        CHECK(w == flags[i]);
        single_new += w;
    }
    CHECK_EQ_U64(n_new, single_new);
    CHECK(memcmp(f->data, g->data, f->nbytes) == 0);
    size_t hits = bk_filter_contains_batch(f, kv, 2 * n, flags);
    size_t hits2 = 0;
    for (uint64_t i = 0; i < 2 * n; i++) {
        flags2[i] = bk_filter_contains(g, kv[i].ptr, kv[i].len);
        hits2 += flags2[i];
        CHECK(flags[i] == flags2[i]);
    }
    CHECK_EQ_U64(hits, hits2);
out:
    free(keys);
    free(kv);
    free(flags);
    free(flags2);
    bk_filter_free(f);
    bk_filter_free(g);
}

static void test_api_errors(void)
{
    bk_filter_t *f = NULL;
    bk_options_t o = counting_opts(1);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_COUNTING, 128, 17, &o), BK_EINVAL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_COUNTING, 128, 0, &o), BK_EINVAL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_COUNTING, 0, 4, &o), BK_EINVAL);
    CHECK(f == NULL);
    CHECK_STATUS(bk_filter_create(&f, 0, 0.01, &o), BK_EINVAL);
    CHECK_STATUS(bk_filter_create(&f, 100, 1.0, &o), BK_EINVAL);
    CHECK(f == NULL);
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, &o));
    if (f) {
        CHECK_EQ_U64(bk_filter_kind(f), BK_KIND_COUNTING);
        CHECK_STATUS(bk_filter_add_atomic(f, "x", 1, NULL), BK_EKIND);
        CHECK_EQ_U64(bk_filter_count(f, "x", 1), 0);
        bk_filter_info_t info;
        bk_filter_info(f, &info);
        CHECK_EQ_U64(info.kind, BK_KIND_COUNTING);
        CHECK_EQ_U64(info.bytes, info.cells / 2);
        CHECK_EQ_U64(info.filters, 1);
        f->readonly = true; /* as a read-only mapping would be */
        CHECK_STATUS(bk_filter_remove(f, "x", 1), BK_EREADONLY);
        CHECK_STATUS(bk_filter_add(f, "x", 1, NULL), BK_EREADONLY);
        f->readonly = false;
        bk_filter_free(f);
    }
    bk_options_t blocked = o;
    blocked.kind = BK_KIND_BLOCKED;
    f = NULL;
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, &blocked));
    if (f) {
        CHECK_OK(bk_filter_add(f, "x", 1, NULL));
        CHECK_STATUS(bk_filter_remove(f, "x", 1), BK_EKIND);
        CHECK_EQ_U64(bk_filter_count(f, "x", 1), 1);
        bk_filter_t *c = NULL;
        CHECK_OK(bk_filter_create(&c, 1000, 0.01, &o));
        if (c)
            CHECK_STATUS(bk_filter_union(f, c), BK_EINCOMPAT); /* kinds differ */
        bk_filter_free(c);
        bk_filter_free(f);
    }
}

static void test_alloc_failures(void)
{
    bk_options_t o = counting_opts(3);
    const uint64_t ns[] = {1000, 3000000}; /* heap and mapped payloads */
    for (int ni = 0; ni < 2; ni++) {
        bool done = false;
        for (long fail_at = 1; fail_at < 20 && !done; fail_at++) {
            bk_filter_t *f = NULL;
            bki_fail_countdown = fail_at;
            bk_status_t st = bk_filter_create(&f, ns[ni], 0.01, &o);
            bki_fail_countdown = 0;
            if (st == BK_OK) {
                done = true;
                CHECK(fail_at > 1); /* at least one allocation was failed */
                CHECK_OK(bk_filter_add(f, "k", 1, NULL));
                /* clone, failing each of its allocations in turn */
                bool cloned = false;
                for (long c_at = 1; c_at < 20 && !cloned; c_at++) {
                    bk_filter_t *c = NULL;
                    bki_fail_countdown = c_at;
                    bk_status_t cs = bk_filter_clone(&c, f);
                    bki_fail_countdown = 0;
                    if (cs == BK_OK) {
                        cloned = true;
                        CHECK(bk_filter_contains(c, "k", 1));
                    } else {
                        CHECK_STATUS(cs, BK_ENOMEM);
                    }
                    bk_filter_free(c);
                }
                CHECK(cloned);
            } else {
                CHECK_STATUS(st, BK_ENOMEM);
                CHECK(f == NULL);
            }
            bk_filter_free(f);
        }
        CHECK(done);
    }
}

int main(void)
{
    /* Every layout-level test runs on the AVX2 path (where the CPU has
     * it) and again on the portable scalar path: both must match the
     * simulated counters exactly. */
    bool avx2 = bki_simd_force_scalar(false);
    printf("# AVX2 path %s\n", avx2 ? "in use" : "not available: scalar twice");
    bkt_run("layout_one_key", test_layout_one_key);
    bkt_run("counter_model", test_counter_model);
    bkt_run("saturation_and_remove", test_saturation_and_remove);
    bkt_run("remove_absent_changes_nothing", test_remove_absent_changes_nothing);
    bki_simd_force_scalar(true);
    bkt_run("scalar: layout_one_key", test_layout_one_key);
    bkt_run("scalar: counter_model", test_counter_model);
    bkt_run("scalar: saturation_and_remove", test_saturation_and_remove);
    bkt_run("scalar: remove_absent_changes_nothing", test_remove_absent_changes_nothing);
    bkt_run("scalar: fpr_and_no_false_negatives", test_fpr_and_no_false_negatives);
    bki_simd_force_scalar(false);
    bkt_run("fpr_and_no_false_negatives", test_fpr_and_no_false_negatives);
    bkt_run("union", test_union);
    bkt_run("batch_matches_single", test_batch_matches_single);
    bkt_run("api_errors", test_api_errors);
    bkt_run("alloc_failures", test_alloc_failures);
    return bkt_finish();
}
