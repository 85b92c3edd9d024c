/*
 * Serialized forms in pieces: bk_filter_serialize_range (slices read
 * straight from a filter) and bk_filter_loader_* (a load fed in pieces).
 * Each is checked against the whole-buffer calls it must agree with:
 * slices concatenate to bk_filter_serialize's bytes, and a loader accepts
 * exactly what bk_filter_deserialize accepts (same status on every
 * truncation and on damage), for every filter kind.
 */
#include "harness.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define CHECK_OK(expr) CHECK_STATUS(expr, BK_OK)

/* One filter of each kind and shape, holding n keys "k<i>". */
static bk_filter_t *make(int which, uint64_t n)
{
    bk_options_t o = {0};
    o.seed_set = true;
    o.seed = 42 + (uint64_t)which;
    uint64_t cap = 2000;
    double p = 0.01;
    switch (which) {
    case 0: o.kind = BK_KIND_BLOCKED; break;
    case 1: o.kind = BK_KIND_BLOCKED2; p = 1e-5; break;
    case 2: o.kind = BK_KIND_SPLIT; break;
    case 3: o.kind = BK_KIND_CLASSIC; break;
    case 4: o.kind = BK_KIND_COUNTING; break;
    case 5: o.kind = BK_KIND_PRECISE; p = 1e-8; break;
    case 6: o.kind = BK_KIND_SCALABLE; cap = 100; break; /* grows to several links */
    case 7: o.kind = BK_KIND_WINDOW; cap = 500; break;   /* count window */
    default: o.kind = BK_KIND_WINDOW; o.window_span = 60; cap = 500; break;
    }
    bk_filter_t *f = NULL;
    if (bk_filter_create(&f, cap, p, &o) != BK_OK)
        return NULL;
    if (which == 3)
        bk_filter_set_key_form(f, BK_KEY_FORM_EMAIL);
    char key[32];
    for (uint64_t i = 0; i < n; i++) {
        if (which == 8 && i % 100 == 0)
            bk_filter_advance(f, 1000 + i / 10);
        int len = snprintf(key, sizeof key, "k%llu", (unsigned long long)i);
        bk_filter_add(f, key, (size_t)len, NULL);
    }
    return f;
}
#define NKINDS 9

static uint8_t *whole(const bk_filter_t *f, size_t *len)
{
    uint64_t n = bk_filter_serialized_size(f);
    uint8_t *buf = malloc((size_t)n);
    size_t w = 0;
    if (!buf || bk_filter_serialize(f, buf, (size_t)n, &w) != BK_OK) {
        free(buf);
        return NULL;
    }
    *len = w;
    return buf;
}

/* Feeds buf in pieces of random sizes (1 .. maxpiece); the status of the
 * first refused piece, or of finish. */
static bk_status_t load_pieces(const uint8_t *buf, size_t len, uint64_t total, size_t maxpiece,
                               uint64_t *rng, bk_filter_t **out)
{
    bk_filter_loader_t *l = NULL;
    *out = NULL;
    bk_status_t st = bk_filter_loader_new(&l, total);
    for (size_t off = 0; st == BK_OK && off < len;) {
        size_t n = 1 + (size_t)(bkt_rand(rng) % maxpiece);
        if (n > len - off)
            n = len - off;
        st = bk_filter_loader_feed(l, buf + off, n, NULL);
        off += n;
    }
    if (st == BK_OK)
        st = bk_filter_loader_finish(l, out, NULL);
    bk_filter_loader_free(l);
    return st;
}

static void test_range_equals_serialize(void)
{
    uint64_t rng = 1;
    for (int which = 0; which < NKINDS; which++) {
        bk_filter_t *f = make(which, 1500);
        CHECK_MSG(f != NULL, "kind %d", which);
        if (!f)
            continue;
        size_t len;
        uint8_t *ref = whole(f, &len);
        uint8_t *got = calloc(1, len);
        size_t pieces[] = {1, 7, 64, 96, 100, 4096, len};
        for (size_t pi = 0; pi < sizeof pieces / sizeof pieces[0]; pi++) {
            memset(got, 0xA5, len);
            for (size_t off = 0; off < len; off += pieces[pi]) {
                size_t n = len - off < pieces[pi] ? len - off : pieces[pi];
                CHECK_OK(bk_filter_serialize_range(f, off, got + off, n));
            }
            CHECK_MSG(memcmp(got, ref, len) == 0, "kind %d, pieces of %zu", which, pieces[pi]);
        }
        for (int r = 0; r < 200; r++) { /* random slices */
            size_t off = (size_t)(bkt_rand(&rng) % len);
            size_t n = (size_t)(bkt_rand(&rng) % (len - off + 1));
            CHECK_OK(bk_filter_serialize_range(f, off, got, n));
            CHECK_MSG(memcmp(got, ref + off, n) == 0, "kind %d, [%zu, +%zu)", which, off, n);
        }
        CHECK_STATUS(bk_filter_serialize_range(f, len, got, 1), BK_EINVAL);
        CHECK_STATUS(bk_filter_serialize_range(f, 1, got, len), BK_EINVAL);
        CHECK_OK(bk_filter_serialize_range(f, len, got, 0));
        free(got);
        free(ref);
        bk_filter_free(f);
    }
}

static void test_loader_roundtrip(void)
{
    uint64_t rng = 2;
    for (int which = 0; which < NKINDS; which++) {
        bk_filter_t *f = make(which, 1500);
        if (!f)
            continue;
        size_t len;
        uint8_t *ref = whole(f, &len);
        size_t maxes[] = {1, 13, 200, 5000, len};
        for (size_t mi = 0; mi < sizeof maxes / sizeof maxes[0]; mi++) {
            bk_filter_t *g = NULL;
            CHECK_OK(load_pieces(ref, len, len, maxes[mi], &rng, &g));
            if (!g)
                continue;
            size_t glen;
            uint8_t *again = whole(g, &glen);
            CHECK_MSG(again && glen == len && memcmp(again, ref, len) == 0,
                      "kind %d: reloaded bytes differ", which);
            CHECK_EQ_U64(bk_filter_kind(g), bk_filter_kind(f));
            CHECK_EQ_U64(bk_filter_key_form(g), bk_filter_key_form(f));
            /* the loaded filter answers as the original for every key */
            char key[32];
            int differ = 0;
            for (int i = 0; i < 3000; i++) {
                int kl = snprintf(key, sizeof key, "k%d", i);
                differ += bk_filter_contains(g, key, (size_t)kl) !=
                          bk_filter_contains(f, key, (size_t)kl);
            }
            CHECK_MSG(differ == 0, "kind %d: %d answers differ", which, differ);
            free(again);
            bk_filter_free(g);
        }
        free(ref);
        bk_filter_free(f);
    }
}

/* What was received can be read back at any point, as the same bytes. */
static void test_loader_read_back(void)
{
    for (int which = 0; which < NKINDS; which++) {
        bk_filter_t *f = make(which, 300);
        if (!f)
            continue;
        size_t len;
        uint8_t *ref = whole(f, &len);
        uint8_t *back = malloc(len);
        size_t stops[] = {0, 5, 128, 200, len / 3, len / 2, len - 1, len};
        for (size_t si = 0; si < sizeof stops / sizeof stops[0]; si++) {
            bk_filter_loader_t *l = NULL;
            CHECK_OK(bk_filter_loader_new(&l, len));
            CHECK_OK(bk_filter_loader_feed(l, ref, stops[si], NULL));
            CHECK_EQ_U64(bk_filter_loader_received(l), stops[si]);
            memset(back, 0x5A, len);
            CHECK_OK(bk_filter_loader_read(l, 0, back, stops[si]));
            CHECK_MSG(memcmp(back, ref, stops[si]) == 0, "kind %d, after %zu bytes", which,
                      stops[si]);
            CHECK_STATUS(bk_filter_loader_read(l, 0, back, stops[si] + 1), BK_EINVAL);
            bk_filter_loader_free(l);
        }
        free(back);
        free(ref);
        bk_filter_free(f);
    }
}

/* Every truncation is refused, as by deserialize; so are extra bytes and
 * a total that disagrees with the header. */
static void test_loader_truncation(void)
{
    uint64_t rng = 3;
    for (int which = 0; which < NKINDS; which++) {
        bk_filter_t *f = make(which, 50);
        if (!f)
            continue;
        size_t len;
        uint8_t *ref = whole(f, &len);
        int wrong = 0;
        for (size_t cut = 0; cut < len; cut += (cut < 1024 ? 1 : 61)) {
            bk_filter_t *g = NULL;
            bk_status_t st = load_pieces(ref, cut, cut, 97, &rng, &g);
            bk_status_t want = bk_filter_deserialize(&g, ref, cut, NULL);
            if (st == BK_OK || st != want)
                wrong++;
            bk_filter_free(g);
            /* announced whole, delivered short: finish refuses */
            st = load_pieces(ref, cut, len, 97, &rng, &g);
            if (st != BK_ECORRUPT)
                wrong++;
            bk_filter_free(g);
        }
        CHECK_MSG(wrong == 0, "kind %d: %d truncations not refused as deserialize does", which,
                  wrong);
        bk_filter_loader_t *l = NULL;
        CHECK_OK(bk_filter_loader_new(&l, len));
        CHECK_OK(bk_filter_loader_feed(l, ref, len, NULL));
        const char *why = NULL;
        CHECK_STATUS(bk_filter_loader_feed(l, ref, 1, &why), BK_ECORRUPT);
        CHECK(why != NULL);
        bk_filter_t *g = NULL;
        CHECK_STATUS(bk_filter_loader_finish(l, &g, NULL), BK_ECORRUPT);
        CHECK(g == NULL);
        bk_filter_loader_free(l);
        /* a total larger than the header's size */
        uint8_t *longer = calloc(1, len + 64);
        memcpy(longer, ref, len);
        CHECK_STATUS(load_pieces(longer, len + 64, len + 64, 50, &rng, &g), BK_ECORRUPT);
        free(longer);
        free(ref);
        bk_filter_free(f);
    }
}

/* Damage anywhere: the loader's verdict is deserialize's. */
static void test_loader_damage(void)
{
    uint64_t rng = 4;
    for (int which = 0; which < NKINDS; which++) {
        bk_filter_t *f = make(which, 200);
        if (!f)
            continue;
        size_t len;
        uint8_t *ref = whole(f, &len);
        uint8_t *bad = malloc(len);
        int differ = 0, accepted = 0;
        for (int r = 0; r < 400; r++) {
            memcpy(bad, ref, len);
            size_t pos = r < 200 ? (size_t)(bkt_rand(&rng) % (len < 2048 ? len : 2048))
                                 : (size_t)(bkt_rand(&rng) % len);
            bad[pos] ^= (uint8_t)(1u << (bkt_rand(&rng) % 8));
            bk_filter_t *g = NULL, *h = NULL;
            bk_status_t st = load_pieces(bad, len, len, 333, &rng, &g);
            bk_status_t want = bk_filter_deserialize(&h, bad, len, NULL);
            differ += st != want;
            accepted += st == BK_OK;
            bk_filter_free(g);
            bk_filter_free(h);
        }
        CHECK_MSG(differ == 0, "kind %d: %d damaged inputs judged otherwise than deserialize",
                  which, differ);
        CHECK_MSG(accepted == 0, "kind %d: %d damaged inputs accepted", which, accepted);
        free(bad);
        free(ref);
        bk_filter_free(f);
    }
}

static void test_loader_refuses_bitmaps(void)
{
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_create(&b, 5000));
    bk_bitmap_set(b, 17);
    uint64_t n = bk_bitmap_serialized_size(b);
    uint8_t *buf = malloc((size_t)n);
    CHECK_OK(bk_bitmap_serialize(b, buf, (size_t)n, NULL));
    uint64_t rng = 5;
    bk_filter_t *g = NULL;
    CHECK_STATUS(load_pieces(buf, (size_t)n, n, 100, &rng, &g), BK_EKIND);
    free(buf);
    bk_bitmap_free(b);
}

/* A failed allocation anywhere in a load is BK_ENOMEM, leaks nothing (the
 * sanitizer run checks), and a later load succeeds. */
static void test_loader_alloc_failures(void)
{
    int kinds[] = {0, 6, 8};
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
        bk_filter_t *f = make(kinds[ki], 400);
        size_t len;
        uint8_t *ref = whole(f, &len);
        bool succeeded = false;
        for (long n = 1; n < 60 && !succeeded; n++) {
            uint64_t rng = 6;
            bk_filter_t *g = NULL;
            bki_fail_countdown = n;
            bk_status_t st = load_pieces(ref, len, len, 500, &rng, &g);
            bki_fail_countdown = 0;
            CHECK_MSG(st == BK_OK || st == BK_ENOMEM, "kind %d, allocation %ld: %s", kinds[ki], n,
                      bk_strerror(st));
            succeeded = st == BK_OK;
            bk_filter_free(g);
        }
        CHECK_MSG(succeeded, "kind %d never loaded", kinds[ki]);
        free(ref);
        bk_filter_free(f);
    }
}

int main(void)
{
    bkt_run("range_equals_serialize", test_range_equals_serialize);
    bkt_run("loader_roundtrip", test_loader_roundtrip);
    bkt_run("loader_read_back", test_loader_read_back);
    bkt_run("loader_truncation", test_loader_truncation);
    bkt_run("loader_damage", test_loader_damage);
    bkt_run("loader_refuses_bitmaps", test_loader_refuses_bitmaps);
    bkt_run("loader_alloc_failures", test_loader_alloc_failures);
    return bkt_finish();
}
