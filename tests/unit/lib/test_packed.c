/* Tests for src/packed.c: a packed filter answers as the ordinary chain
 * it stands for (no false negatives, its error within the request, its
 * serialized bytes those of a chain of one sub-filter, which load); the
 * bits fill the block; one view is rebound between blocks without
 * allocating; store writes the count back, refuses a grown view, and
 * detach makes it a filter of its own; a damaged head is refused; the
 * program's bytes of the head are never touched. */
#include "harness.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bk_options_t opts_for(uint64_t seed)
{
    bk_options_t o;
    memset(&o, 0, sizeof o);
    o.kind = BK_KIND_SCALABLE;
    o.sub_kind = BK_KIND_CLASSIC;
    o.tightening = 0.5;
    o.growth = 2;
    o.seed_set = true;
    o.seed = seed;
    return o;
}

static void key_of(char *buf, size_t len, const char *tag, uint64_t i)
{
    snprintf(buf, len, "%s-%llu", tag, (unsigned long long)i);
}

/* A block of `size` bytes with the program's 8 bytes set to a pattern. */
static uint8_t *new_block(size_t size)
{
    uint8_t *b = calloc(1, size);
    if (b)
        memset(b, 0xA5, BK_PACKED_CALLER);
    return b;
}

/* A new empty packed filter of n keys at p (seed), in a block of the
 * smallest size; *need receives the size. NULL after a failed check. */
static uint8_t *new_packed(uint64_t n, double p, uint64_t seed, size_t *need)
{
    bk_options_t o = opts_for(seed);
    *need = bk_packed_size(n, p, &o);
    uint8_t *b = *need ? new_block(*need) : NULL;
    CHECK(b != NULL);
    if (b && bk_packed_init(b, *need, n, p, &o, true) != BK_OK) {
        CHECK_MSG(0, "bk_packed_init n %llu p %g", (unsigned long long)n, p);
        free(b);
        b = NULL;
    }
    return b;
}

static bool caller_bytes_kept(const uint8_t *b)
{
    for (int i = 0; i < BK_PACKED_CALLER; i++)
        if (b[i] != 0xA5)
            return false;
    return true;
}

static void test_answers_within_error(void)
{
    const struct {
        uint64_t n;
        double p;
    } cases[] = {{100, 0.001}, {100, 1e-6}, {5000, 0.01}, {20000, 1e-4}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t n = cases[c].n;
        double p = cases[c].p;
        bk_options_t o = opts_for(7 + c);
        size_t need = bk_packed_size(n, p, &o);
        CHECK(need > BK_PACKED_HEAD);
        /* 10% more room than needed: every byte becomes bits. */
        size_t size = need + need / 10;
        uint8_t *b = new_block(size);
        CHECK_OK(bk_packed_init(b, size, n, p, &o, true));
        bk_filter_t *v = NULL;
        CHECK_OK(bk_packed_view(&v, b, size, NULL));
        if (!v)
            return;
        bk_filter_shape_t s;
        bk_filter_shape(v, &s);
        CHECK_EQ_U64(s.filters, 1);
        CHECK(s.bytes >= (size - BK_PACKED_HEAD) / 8 * 8 - 64 && s.bytes <= size - BK_PACKED_HEAD);
        char key[64];
        uint64_t added = 0; /* a key that looked present is not counted */
        for (uint64_t i = 0; i < n; i++) {
            key_of(key, sizeof key, "in", i);
            bool was_new = false;
            CHECK_OK(bk_filter_add(v, key, strlen(key), &was_new));
            added += was_new;
        }
        CHECK(added > n - n / 100);
        CHECK_OK(bk_packed_store(v, b, size));
        CHECK(caller_bytes_kept(b));
        /* Rebind to the same block: the count came back from the head. */
        CHECK_OK(bk_packed_view(&v, b, size, NULL));
        CHECK_EQ_U64(bk_filter_items(v), added);
        bk_filter_shape(v, &s);
        CHECK_EQ_U64(s.filters, 1); /* exactly at capacity: not grown */
        for (uint64_t i = 0; i < n; i++) {
            key_of(key, sizeof key, "in", i);
            CHECK(bk_filter_contains(v, key, strlen(key)));
        }
        uint64_t probes = 400000, fp = 0;
        for (uint64_t i = 0; i < probes; i++) {
            key_of(key, sizeof key, "out", i);
            fp += bk_filter_contains(v, key, strlen(key));
        }
        double rate = (double)fp / (double)probes;
        /* The first sub-filter's error is p / 2 at capacity; allow for
         * sampling noise (at 1e-6 a single false positive is 2.5e-6). */
        CHECK_MSG(rate <= p / 2 * 1.3 + 3.0 / (double)probes, "n %llu p %g: measured %g",
                  (unsigned long long)n, p, rate);
        bk_filter_free(v);
        free(b);
    }
}

/* The packed form of a filter, and the filter a view serializes to, are
 * the ordinary chain: same bytes, same answers. */
static void test_pack_round_trip(void)
{
    bk_options_t o = opts_for(99);
    bk_filter_t *f;
    CHECK_OK(bk_filter_create(&f, 3000, 0.01, &o));
    if (!f)
        return;
    char key[64];
    for (uint64_t i = 0; i < 2000; i++) {
        key_of(key, sizeof key, "k", i);
        CHECK_OK(bk_filter_add(f, key, strlen(key), NULL));
    }
    size_t need = bk_filter_packed_size(f);
    bk_filter_shape_t fs;
    bk_filter_shape(f, &fs);
    CHECK_EQ_U64(need, BK_PACKED_HEAD + fs.bytes);
    uint8_t *b = new_block(need);
    CHECK_OK(bk_filter_pack(f, b, need));
    CHECK(caller_bytes_kept(b));
    bk_filter_t *v = NULL;
    CHECK_OK(bk_packed_view(&v, b, need, NULL));
    if (!v)
        return;
    uint64_t len = bk_filter_serialized_size(f);
    CHECK_EQ_U64(bk_filter_serialized_size(v), len);
    uint8_t *x = malloc(len), *y = malloc(len);
    CHECK_OK(bk_filter_serialize_range(f, 0, x, len));
    CHECK_OK(bk_filter_serialize_range(v, 0, y, len));
    CHECK(memcmp(x, y, len) == 0);
    bk_filter_t *back = NULL;
    CHECK_OK(bk_filter_deserialize(&back, y, len, NULL));
    CHECK_EQ_U64(bk_filter_packed_size(back), need);
    for (uint64_t i = 0; i < 2000; i++) {
        key_of(key, sizeof key, "k", i);
        CHECK(bk_filter_contains(v, key, strlen(key)));
        CHECK(back && bk_filter_contains(back, key, strlen(key)));
    }
    free(x);
    free(y);
    bk_filter_free(back);
    bk_filter_free(v);
    bk_filter_free(f);
    free(b);
}

/* A small filter at a tiny error packs a precise sub-filter (fewer bits
 * than classic's), which saves and loads as a chain. */
static void test_small_precise(void)
{
    bk_options_t o = opts_for(5);
    size_t need = bk_packed_size(100, 1e-6, &o);
    bk_plan_t classic;
    CHECK_OK(bk_plan(BK_KIND_CLASSIC, 100, 5e-7, &classic));
    CHECK(need < BK_PACKED_HEAD + classic.bytes);
    uint8_t *b = new_block(need);
    CHECK_OK(bk_packed_init(b, need, 100, 1e-6, &o, true));
    bk_filter_t *v = NULL;
    CHECK_OK(bk_packed_view(&v, b, need, NULL));
    if (!v)
        return;
    bk_filter_shape_t sub;
    CHECK_OK(bk_filter_sub_shape(v, 0, &sub));
    CHECK(sub.kind == BK_KIND_PRECISE);
    CHECK_OK(bk_filter_add(v, "a", 1, NULL));
    uint64_t len = bk_filter_serialized_size(v);
    uint8_t *x = malloc(len);
    CHECK_OK(bk_filter_serialize_range(v, 0, x, len));
    bk_filter_t *back = NULL;
    CHECK_OK(bk_filter_deserialize(&back, x, len, NULL));
    CHECK(back && bk_filter_contains(back, "a", 1));
    free(x);
    bk_filter_free(back);
    bk_filter_free(v);
    free(b);
}

/* One view serves two blocks in turn without allocating; each keeps its
 * own keys and count. */
static void test_rebind_without_allocating(void)
{
    bk_options_t o = opts_for(3);
    size_t need = bk_packed_size(1000, 0.01, &o);
    uint8_t *a = new_block(need), *c = new_block(need);
    CHECK_OK(bk_packed_init(a, need, 1000, 0.01, &o, true));
    CHECK_OK(bk_packed_init(c, need, 1000, 0.01, &o, true));
    bk_filter_t *v = NULL;
    CHECK_OK(bk_packed_view(&v, a, need, NULL));
    bk_filter_t *first = v;
    CHECK_OK(bk_filter_add(v, "only-a", 6, NULL));
    CHECK_OK(bk_packed_store(v, a, need));
    bki_fail_countdown = 1; /* the next allocation would fail */
    CHECK_OK(bk_packed_view(&v, c, need, NULL));
    CHECK(bki_fail_countdown == 1); /* none was made */
    bki_fail_countdown = 0;
    CHECK(v == first);
    CHECK(!bk_filter_contains(v, "only-a", 6));
    CHECK_EQ_U64(bk_filter_items(v), 0);
    CHECK_OK(bk_filter_add(v, "only-c", 6, NULL));
    CHECK_OK(bk_packed_store(v, c, need));
    /* Storing into a block the view is not bound to is refused. */
    CHECK_STATUS(bk_packed_store(v, a, need), BK_EINVAL);
    CHECK_OK(bk_packed_view(&v, a, need, NULL));
    CHECK(bk_filter_contains(v, "only-a", 6));
    CHECK(!bk_filter_contains(v, "only-c", 6));
    CHECK_EQ_U64(bk_filter_items(v), 1);
    bk_filter_free(v);
    free(a);
    free(c);
}

/* Growing through a view: store refuses it, detach gives it bits of its
 * own, and the block can go. */
static void test_grow_then_detach(void)
{
    size_t need;
    uint8_t *b = new_packed(100, 0.01, 11, &need);
    if (!b)
        return;
    bk_filter_t *v = NULL;
    CHECK_OK(bk_packed_view(&v, b, need, NULL));
    if (!v)
        return;
    char key[64];
    for (uint64_t i = 0; i < 500; i++) {
        key_of(key, sizeof key, "g", i);
        CHECK_OK(bk_filter_add(v, key, strlen(key), NULL));
    }
    bk_filter_shape_t s;
    bk_filter_shape(v, &s);
    CHECK(s.filters > 1);
    CHECK_STATUS(bk_packed_store(v, b, need), BK_EINVAL);
    CHECK_OK(bk_packed_detach(v));
    memset(b, 0xEE, need); /* the block is no longer read */
    free(b);
    for (uint64_t i = 0; i < 500; i++) {
        key_of(key, sizeof key, "g", i);
        CHECK(bk_filter_contains(v, key, strlen(key)));
    }
    CHECK_EQ_U64(bk_filter_items(v), 500);
    CHECK_STATUS(bk_packed_detach(v), BK_EINVAL); /* no longer a view */
    bk_filter_free(v);
}

static void test_refusals(void)
{
    bk_options_t o = opts_for(1);
    size_t need = bk_packed_size(1000, 0.01, &o);
    uint8_t *b = new_block(need);
    /* a block too small for the error (a little below the plan's may
     * still hold it: test_below_plan) */
    CHECK(!bk_packed_fits(need / 2, 1000, 0.01, &o));
    CHECK_STATUS(bk_packed_init(b, need / 2, 1000, 0.01, &o, true), BK_EINVAL);
    CHECK_STATUS(bk_packed_init(b, need, 0, 0.01, &o, true), BK_EINVAL);
    CHECK_STATUS(bk_packed_init(b, need, 1000, 1.5, &o, true), BK_EINVAL);
    bk_options_t blocked = o;
    blocked.sub_kind = BK_KIND_BLOCKED;
    CHECK_STATUS(bk_packed_init(b, need, 1000, 0.01, &blocked, true), BK_EKIND);
    CHECK(bk_packed_size(1000, 0.01, &blocked) == 0);
    bk_options_t odd = o;
    odd.growth = 1.5; /* the head holds integer growth only */
    CHECK_STATUS(bk_packed_init(b, need, 1000, 0.01, &odd, true), BK_EINVAL);
    bk_options_t capped = o;
    capped.max_bytes = 64;
    CHECK_STATUS(bk_packed_init(b, need, 1000, 0.01, &capped, true), BK_EFULL);

    CHECK_OK(bk_packed_init(b, need, 1000, 0.01, &o, true));
    bk_filter_t *v = NULL;
    const char *why = NULL;
    /* A head whose bits would run past the block. */
    CHECK_STATUS(bk_packed_view(&v, b, need - 8, &why), BK_ECORRUPT);
    CHECK(why != NULL);
    uint8_t saved = b[9];
    b[9] = 0; /* k = 0 */
    CHECK_STATUS(bk_packed_view(&v, b, need, &why), BK_ECORRUPT);
    b[9] = saved;
    b[8] = BK_KIND_BLOCKED;
    CHECK_STATUS(bk_packed_view(&v, b, need, &why), BK_ECORRUPT);
    b[8] = BK_KIND_CLASSIC;
    CHECK(v == NULL);
    CHECK_OK(bk_packed_view(&v, b, need, NULL));

    /* Not packable: a blocked chain, a bare classic filter, two subs. */
    bk_filter_t *f;
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, &blocked));
    CHECK(bk_filter_packed_size(f) == 0);
    CHECK_STATUS(bk_filter_pack(f, b, need), BK_EKIND);
    bk_filter_free(f);
    bk_options_t plain = {.kind = BK_KIND_CLASSIC};
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, &plain));
    CHECK(bk_filter_packed_size(f) == 0);
    bk_filter_free(f);
    CHECK_STATUS(bk_packed_detach(NULL), BK_EINVAL);
    bk_filter_free(v);
    free(b);
}

/* Every allocation a new view makes may fail: BK_ENOMEM, nothing leaked
 * (the ASan run checks the leak), the block untouched. */
static void test_out_of_memory(void)
{
    size_t need;
    uint8_t *b = new_packed(1000, 0.01, 2, &need);
    if (!b)
        return;
    for (long n = 1; n < 10; n++) {
        bk_filter_t *v = NULL;
        bki_fail_countdown = n;
        bk_status_t st = bk_packed_view(&v, b, need, NULL);
        bki_fail_countdown = 0;
        CHECK(st == BK_OK || st == BK_ENOMEM);
        CHECK((st == BK_OK) == (v != NULL));
        bk_filter_free(v);
    }
    CHECK(caller_bytes_kept(b));
    free(b);
}

/* Keep: the view becomes an ordinary filter that goes on using the
 * block's bits (no copy), grows, serializes, and frees without touching
 * the block, which the caller frees after. */
static void test_keep_without_copy(void)
{
    size_t need;
    uint8_t *b = new_packed(100, 0.01, 21, &need);
    if (!b)
        return;
    bk_filter_t *v = NULL;
    CHECK_OK(bk_packed_view(&v, b, need, NULL));
    if (!v)
        return;
    CHECK_OK(bk_filter_add(v, "first", 5, NULL));
    CHECK_OK(bk_packed_keep(v));
    CHECK_STATUS(bk_packed_keep(v), BK_EINVAL); /* no longer a view */
    char key[64];
    for (uint64_t i = 0; i < 400; i++) {
        key_of(key, sizeof key, "kept", i);
        CHECK_OK(bk_filter_add(v, key, strlen(key), NULL));
    }
    bk_filter_shape_t s;
    bk_filter_shape(v, &s);
    CHECK(s.filters > 1);
    CHECK(bk_filter_contains(v, "first", 5));
    uint64_t len = bk_filter_serialized_size(v);
    uint8_t *x = malloc(len);
    CHECK_OK(bk_filter_serialize_range(v, 0, x, len));
    bk_filter_t *back = NULL;
    CHECK_OK(bk_filter_deserialize(&back, x, len, NULL));
    CHECK(back && bk_filter_contains(back, "first", 5));
    free(x);
    bk_filter_free(back);
    /* The first sub-filter's bits are the block's, not a copy: clearing
     * the block's bits loses the keys it held. */
    memset(b + BK_PACKED_HEAD, 0, need - BK_PACKED_HEAD);
    CHECK(!bk_filter_contains(v, "first", 5));
    bk_filter_free(v); /* leaves the block alone (ASan: no double free) */
    CHECK(caller_bytes_kept(b));
    free(b);
}

/* A dirty block (not zeroed) is zeroed by init: a small one by memset, a
 * large one (malloc's anonymous memory, 4 MB) by handing its pages back. */
static void test_init_zeroes(void)
{
    const size_t sizes[] = {4096, (size_t)4 << 20};
    for (size_t t = 0; t < 2; t++) {
        size_t size = sizes[t];
        uint8_t *b = malloc(size);
        if (!b)
            return;
        memset(b, 0xFF, size);
        bk_options_t o = opts_for(9);
        CHECK_OK(bk_packed_init(b, size, size / 4, 0.01, &o, false));
        size_t nonzero = 0;
        for (size_t i = BK_PACKED_HEAD; i < size; i++)
            nonzero += b[i] != 0;
        CHECK_EQ_U64(nonzero, 0);
        CHECK(b[0] == 0xFF); /* the program's bytes kept */
        free(b);
    }
}

/* A block one allocator class below the plan's holds the filter where
 * its bits still give the first sub-filter its error: 1,000 keys at 0.1%
 * plan 2,008 bytes of bits (aiming at 0.9 of the sub-filter's 0.05%),
 * which with the head pass 2,048; 2,048 bytes still hold the error, 1,792
 * do not. In the smaller block: no false negatives, and the measured rate
 * at capacity within the sub-filter's error. */
static void test_below_plan(void)
{
    bk_options_t o = opts_for(41);
    uint64_t n = 1000;
    double p = 0.001;
    size_t need = bk_packed_size(n, p, &o);
    CHECK(need > 2048);
    CHECK(bk_packed_fits(2048, n, p, &o));
    CHECK(!bk_packed_fits(1792, n, p, &o));
    CHECK(!bk_packed_fits(BK_PACKED_HEAD, n, p, &o));
    uint8_t *small = new_block(1792);
    CHECK_STATUS(bk_packed_init(small, 1792, n, p, &o, true), BK_EINVAL);
    free(small);
    uint8_t *b = new_block(2048);
    CHECK_OK(bk_packed_init(b, 2048, n, p, &o, true));
    bk_filter_t *v = NULL;
    CHECK_OK(bk_packed_view(&v, b, 2048, NULL));
    if (!v) {
        free(b);
        return;
    }
    bk_filter_shape_t s;
    bk_filter_shape(v, &s);
    CHECK(s.bytes <= 2048 - BK_PACKED_HEAD && s.bytes >= 2048 - BK_PACKED_HEAD - 64);
    char key[64];
    for (uint64_t i = 0; i < n; i++) {
        key_of(key, sizeof key, "in", i);
        CHECK_OK(bk_filter_add(v, key, strlen(key), NULL));
    }
    uint64_t missing = 0, fp = 0, probes = 1000000;
    for (uint64_t i = 0; i < n; i++) {
        key_of(key, sizeof key, "in", i);
        missing += !bk_filter_contains(v, key, strlen(key));
    }
    for (uint64_t i = 0; i < probes; i++) {
        key_of(key, sizeof key, "out", i);
        fp += bk_filter_contains(v, key, strlen(key));
    }
    CHECK_EQ_U64(missing, 0);
    double rate = (double)fp / (double)probes;
    /* expected about 4.9e-4 of the sub-filter's 5e-4 (the chain's p is
     * 1e-3); one million probes put 3 sigma at about 6.6e-5 */
    CHECK_MSG(rate <= p / 2 * 1.15, "measured %g", rate);
    bk_filter_free(v);
    free(b);
}

/* init_like: the same bytes bk_packed_init makes for the new seed, over a
 * grid of shapes (the size class below the plan included), the program's
 * bytes left alone; a head that does not fit the block is refused. */
static void test_init_like(void)
{
    static const uint64_t caps[] = {10, 100, 1000, 12345, 100000};
    static const double errs[] = {0.1, 0.01, 0.001, 1e-6};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        for (size_t j = 0; j < sizeof errs / sizeof errs[0]; j++) {
            bk_options_t a = opts_for(11), b = opts_for(0xfeedfacecafebeefULL);
            size_t size = bk_packed_size(caps[i], errs[j], &a);
            CHECK(size > BK_PACKED_HEAD);
            uint8_t *model = new_block(size), *want = new_block(size), *got = new_block(size);
            if (!model || !want || !got) {
                free(model);
                free(want);
                free(got);
                return;
            }
            CHECK_OK(bk_packed_init(model, size, caps[i], errs[j], &a, true));
            CHECK_OK(bk_packed_init(want, size, caps[i], errs[j], &b, true));
            memset(got + BK_PACKED_HEAD, 0x5a, size - BK_PACKED_HEAD);
            CHECK_OK(bk_packed_init_like(got, size, model, b.seed, false));
            CHECK_MSG(memcmp(got, want, size) == 0, "init_like differs at capacity %llu error %g",
                      (unsigned long long)caps[i], errs[j]);
            /* the model's bits (all of its size past the head) in a smaller block */
            if (size > BK_PACKED_HEAD + 8)
                CHECK_STATUS(bk_packed_init_like(got, BK_PACKED_HEAD + 8, model, 1, true),
                             BK_EINVAL);
            free(model);
            free(want);
            free(got);
        }
    }
    uint8_t junk[BK_PACKED_HEAD + 64];
    memset(junk, 0xff, sizeof junk);
    uint8_t out[BK_PACKED_HEAD + 64];
    CHECK_STATUS(bk_packed_init_like(out, sizeof out, junk, 1, false), BK_EINVAL);
    CHECK_STATUS(bk_packed_init_like(NULL, sizeof out, junk, 1, false), BK_EINVAL);
}

int main(void)
{
    bkt_run("answers_within_error", test_answers_within_error);
    bkt_run("pack_round_trip", test_pack_round_trip);
    bkt_run("small_precise", test_small_precise);
    bkt_run("rebind_without_allocating", test_rebind_without_allocating);
    bkt_run("grow_then_detach", test_grow_then_detach);
    bkt_run("refusals", test_refusals);
    bkt_run("out_of_memory", test_out_of_memory);
    bkt_run("init_zeroes", test_init_zeroes);
    bkt_run("keep_without_copy", test_keep_without_copy);
    bkt_run("below_plan", test_below_plan);
    bkt_run("init_like", test_init_like);
    return bkt_finish();
}
