/*
 * Tests for src/format.c: round trips of every kind through memory, files
 * and mappings; golden files that pin the format; truncation at every byte
 * and every single-bit flip; hand-crafted hostile headers (with valid
 * checksums, so the field checks themselves are exercised); allocation
 * failure at each allocation; saving into a full disk, a read-only mount
 * and an impossible path, with the old file checked byte for byte.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "internal.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];

/* ---- helpers ---- */

static void put_u32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Recomputes the header checksum after a test edited header fields, as a
 * hostile writer would (docs/FORMAT.md: XXH3-64 of the header and table). */
static void reseal(uint8_t *buf)
{
    uint32_t nparts = get_u32le(buf + 20);
    uint64_t end = 128 + 96 * (uint64_t)nparts;
    put_u64le(buf + end, XXH3_64bits(buf, (size_t)end));
}

static char *path_in_tmp(const char *name)
{
    static char bufs[8][512];
    static int next;
    char *p = bufs[next++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static uint8_t *read_whole(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, fp) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(fp);
    *len = (size_t)n;
    return b;
}

static bool write_whole(const char *path, const void *buf, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return false;
    bool ok = fwrite(buf, 1, len, fp) == len;
    return fclose(fp) == 0 && ok;
}

static uint8_t *serialize(const bk_filter_t *f, size_t *len)
{
    uint64_t n = bk_filter_serialized_size(f);
    uint8_t *b = malloc((size_t)n);
    size_t w = 0;
    if (!b || bk_filter_serialize(f, b, (size_t)n, &w) != BK_OK || w != n) {
        free(b);
        return NULL;
    }
    *len = w;
    return b;
}

static void key_of(uint64_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "https://example.com/page/%llu", (unsigned long long)i);
}

static bk_filter_t *make_filter_hashed(bk_kind_t kind, uint64_t cells, uint32_t k,
                                       uint64_t seed, uint64_t nkeys, bk_hash_id_t hash)
{
    bk_options_t o = {.hash = hash, .seed_set = true, .seed = seed};
    bk_filter_t *f = NULL;
    if (bk_filter_create_exact(&f, kind, cells, k, &o) != BK_OK)
        return NULL;
    f->capacity = nkeys;
    f->fpr = 0.01;
    char key[64];
    for (uint64_t i = 0; i < nkeys; i++) {
        key_of(i, key, sizeof key);
        bk_filter_add(f, key, strlen(key), NULL);
    }
    return f;
}

static bk_filter_t *make_filter(bk_kind_t kind, uint64_t cells, uint32_t k, uint64_t seed,
                                uint64_t nkeys)
{
    return make_filter_hashed(kind, cells, k, seed, nkeys, BK_HASH_DEFAULT);
}

/* Two filters are the same if every field and every payload byte is. */
static bool same_filter(const bk_filter_t *a, const bk_filter_t *b)
{
    if (a->kind != b->kind || a->hash != b->hash || a->seed != b->seed ||
        a->capacity != b->capacity || memcmp(&a->fpr, &b->fpr, sizeof a->fpr) != 0 ||
        bk_filter_items(a) != bk_filter_items(b))
        return false;
    if (a->kind == BK_KIND_SCALABLE) {
        if (a->nsubs != b->nsubs || a->sub_kind != b->sub_kind || a->growth != b->growth ||
            a->tightening != b->tightening || a->nonscaling != b->nonscaling ||
            a->first_error_as_given != b->first_error_as_given)
            return false;
        for (uint32_t i = 0; i < a->nsubs; i++)
            if (!same_filter(a->subs[i], b->subs[i]))
                return false;
        return true;
    }
    return a->cells == b->cells && a->k == b->k && a->lines == b->lines &&
           a->nbytes == b->nbytes && memcmp(a->data, b->data, (size_t)a->nbytes) == 0;
}

/* Every added key is found, and on other keys the answers agree with the
 * original filter (the reference). */
static void check_answers(const bk_filter_t *orig, const bk_filter_t *loaded, uint64_t nkeys)
{
    char key[64];
    uint64_t missing = 0, disagree = 0;
    for (uint64_t i = 0; i < nkeys; i++) {
        key_of(i, key, sizeof key);
        if (!bk_filter_contains(loaded, key, strlen(key)))
            missing++;
    }
    for (uint64_t i = nkeys; i < nkeys + 2000; i++) {
        key_of(i, key, sizeof key);
        if (bk_filter_contains(loaded, key, strlen(key)) !=
            bk_filter_contains(orig, key, strlen(key)))
            disagree++;
    }
    CHECK_EQ_U64(missing, 0);
    CHECK_EQ_U64(disagree, 0);
}

/* ---- round trips ---- */

static void roundtrip_kind(bk_kind_t kind, uint32_t k)
{
    uint64_t nkeys = bkt_scaled(5000);
    bk_filter_t *f = make_filter(kind, nkeys * 10, k, 0xfeedULL + kind, nkeys);
    CHECK(f != NULL);
    if (!f)
        return;
    size_t len;
    uint8_t *buf = serialize(f, &len);
    CHECK(buf != NULL);
    CHECK_EQ_U64(len % 64, 0);
    bk_filter_t *g = NULL;
    const char *why = NULL;
    CHECK_OK(bk_filter_deserialize(&g, buf, len, &why));
    if (g) {
        CHECK(same_filter(f, g));
        check_answers(f, g, nkeys);
        /* Serializing what was loaded gives the same bytes. */
        size_t len2;
        uint8_t *buf2 = serialize(g, &len2);
        CHECK(buf2 && len2 == len && memcmp(buf, buf2, len) == 0);
        free(buf2);
    }
    /* Through a file, both ways of loading. */
    const char *path = path_in_tmp("rt.bkf");
    CHECK_OK(bk_filter_save(f, path));
    size_t flen;
    uint8_t *fbytes = read_whole(path, &flen);
    CHECK(fbytes && flen == len && memcmp(fbytes, buf, len) == 0);
    free(fbytes);
    bk_filter_t *h = NULL;
    CHECK_OK(bk_filter_load(&h, path, &why));
    if (h) {
        CHECK(same_filter(f, h));
        check_answers(f, h, nkeys);
    }
    bk_filter_t *m = NULL;
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_READONLY, &why));
    if (m) {
        CHECK(same_filter(f, m));
        check_answers(f, m, nkeys);
        CHECK(m->data != NULL && ((uintptr_t)m->data & 63) == 0);
        bk_filter_info_t info;
        bk_filter_info(m, &info);
        CHECK(info.mapped);
        CHECK(info.readonly);
        CHECK_OK(bk_filter_verify(m, &why));
        CHECK_STATUS(bk_filter_add(m, "new", 3, NULL), BK_EREADONLY);
        CHECK_STATUS(bk_filter_sync(m), BK_EREADONLY);
        /* The mapping is the whole file, and holds the payload. */
        const void *maddr = NULL;
        size_t mlen = 0;
        CHECK_OK(bk_filter_mapping(m, &maddr, &mlen));
        CHECK_EQ_U64(mlen, flen);
        CHECK((const char *)m->data >= (const char *)maddr &&
              (const char *)m->data + m->nbytes <= (const char *)maddr + mlen);
    }
    const void *maddr = &why;
    size_t mlen = 1;
    CHECK_STATUS(bk_filter_mapping(f, &maddr, &mlen), BK_EINVAL);
    CHECK(maddr == NULL && mlen == 0);
    CHECK_STATUS(bk_filter_sync(f), BK_EINVAL);
    CHECK_OK(bk_filter_verify(f, &why));
    bk_filter_free(m);
    bk_filter_free(h);
    bk_filter_free(g);
    bk_filter_free(f);
    free(buf);
    unlink(path);
}

static void test_roundtrip_blocked(void)
{
    roundtrip_kind(BK_KIND_BLOCKED, 8);
}

static void test_roundtrip_blocked2(void)
{
    roundtrip_kind(BK_KIND_BLOCKED2, 6);
}

static void test_roundtrip_split(void)
{
    roundtrip_kind(BK_KIND_SPLIT, 8);
}

static void test_roundtrip_classic(void)
{
    roundtrip_kind(BK_KIND_CLASSIC, 7);
}

static void test_roundtrip_counting(void)
{
    roundtrip_kind(BK_KIND_COUNTING, 4);
    /* Counters survive: keys added twice count 2, and remove works on the
     * loaded copy exactly as on the original. */
    bk_filter_t *f = make_filter(BK_KIND_COUNTING, 1 << 14, 4, 77, 500);
    char key[64];
    for (uint64_t i = 0; i < 100; i++) {
        key_of(i, key, sizeof key);
        bk_filter_add(f, key, strlen(key), NULL);
    }
    size_t len;
    uint8_t *buf = serialize(f, &len);
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_deserialize(&g, buf, len, NULL));
    if (g && f) {
        uint64_t bad = 0;
        for (uint64_t i = 0; i < 600; i++) {
            key_of(i, key, sizeof key);
            if (bk_filter_count(g, key, strlen(key)) != bk_filter_count(f, key, strlen(key)))
                bad++;
        }
        CHECK_EQ_U64(bad, 0);
        key_of(3, key, sizeof key);
        CHECK(bk_filter_count(g, key, strlen(key)) >= 2);
        CHECK_OK(bk_filter_remove(g, key, strlen(key)));
        CHECK_OK(bk_filter_remove(f, key, strlen(key)));
        CHECK(bk_filter_count(g, key, strlen(key)) == bk_filter_count(f, key, strlen(key)));
    }
    bk_filter_free(g);
    free(buf);
    bk_filter_free(f);
}

static bk_filter_t *make_scalable(uint64_t cap, double fpr, uint64_t seed, uint64_t nkeys,
                                  const bk_options_t *extra)
{
    bk_options_t o = extra ? *extra : (bk_options_t){0};
    o.kind = BK_KIND_SCALABLE;
    o.seed_set = true;
    o.seed = seed;
    bk_filter_t *f = NULL;
    if (bk_filter_create(&f, cap, fpr, &o) != BK_OK)
        return NULL;
    char key[64];
    for (uint64_t i = 0; i < nkeys; i++) {
        key_of(i, key, sizeof key);
        bk_filter_add(f, key, strlen(key), NULL);
    }
    return f;
}

static void roundtrip_scalable(const bk_options_t *extra, uint64_t cap, uint64_t nkeys,
                               uint32_t min_subs)
{
    bk_filter_t *f = make_scalable(cap, 0.01, 1234, nkeys, extra);
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(f->nsubs >= min_subs);
    size_t len;
    uint8_t *buf = serialize(f, &len);
    bk_filter_t *g = NULL, *h = NULL, *m = NULL;
    const char *why = NULL;
    CHECK_OK(bk_filter_deserialize(&g, buf, len, &why));
    const char *path = path_in_tmp("sc.bkf");
    CHECK_OK(bk_filter_save(f, path));
    CHECK_OK(bk_filter_load(&h, path, &why));
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_READONLY, &why));
    bk_filter_t *all[3] = {g, h, m};
    for (int i = 0; i < 3; i++) {
        if (!all[i])
            continue;
        CHECK(same_filter(f, all[i]));
        check_answers(f, all[i], nkeys);
    }
    if (m) {
        for (uint32_t i = 0; i < m->nsubs; i++)
            CHECK(((uintptr_t)m->subs[i]->data & 63) == 0);
        CHECK_OK(bk_filter_verify(m, &why));
        CHECK_STATUS(bk_filter_add(m, "new key", 7, NULL), BK_EREADONLY);
    }
    /* The loaded chain keeps growing like the original. */
    if (g && !f->nonscaling) {
        char key[64];
        for (uint64_t i = nkeys; i < 3 * nkeys; i++) {
            key_of(i, key, sizeof key);
            CHECK_OK(bk_filter_add(g, key, strlen(key), NULL));
            CHECK_OK(bk_filter_add(f, key, strlen(key), NULL));
        }
        CHECK(same_filter(f, g));
    }
    bk_filter_free(g);
    bk_filter_free(h);
    bk_filter_free(m);
    free(buf);
    bk_filter_free(f);
    unlink(path);
}

static void test_roundtrip_scalable(void)
{
    roundtrip_scalable(NULL, 1000, bkt_scaled(10000) + 3000, 3);
    bk_options_t o = {.sub_kind = BK_KIND_CLASSIC, .growth = 3, .tightening = 0.8,
                      .first_error_as_given = true};
    roundtrip_scalable(&o, 500, 5000, 2);
    bk_options_t ns = {.nonscaling = true};
    roundtrip_scalable(&ns, 500, 400, 1);
}

/* A mapped chain borrows the file's memory: it accepts keys while its
 * newest sub-filter has room, then gives BK_EFULL instead of growing. */
static void test_mapped_scalable_full(void)
{
    bk_filter_t *f = make_scalable(100, 0.01, 5, 0, NULL);
    char key[64];
    uint64_t added = 0;
    for (uint64_t i = 0; f && added < 90; i++) {
        bool was_new = false;
        key_of(i, key, sizeof key);
        bk_filter_add(f, key, strlen(key), &was_new);
        added += was_new;
    }
    const char *path = path_in_tmp("scw.bkf");
    CHECK_OK(bk_filter_save(f, path));
    bk_filter_t *m = NULL;
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_WRITABLE, NULL));
    if (!m || !f)
        goto out;
    bk_status_t st = BK_OK;
    uint64_t i = 100000;
    while (st == BK_OK && i < 101000) {
        key_of(i++, key, sizeof key);
        st = bk_filter_add(m, key, strlen(key), NULL);
    }
    CHECK_STATUS(st, BK_EFULL);
    CHECK_EQ_U64(bk_filter_items(m), 100);
    CHECK_EQ_U64(m->nsubs, 1);
    CHECK_OK(bk_filter_sync(m));
    bk_filter_free(m);
    m = NULL;
    bk_filter_t *l = NULL;
    CHECK_OK(bk_filter_load(&l, path, NULL));
    if (l) {
        CHECK_EQ_U64(bk_filter_items(l), 100);
        CHECK_EQ_U64(l->subs[0]->items, 100);
        /* every key the mapping took is there */
        uint64_t missing = 0;
        for (uint64_t j = 100000; j < i - 1; j++) {
            key_of(j, key, sizeof key);
            missing += !bk_filter_contains(l, key, strlen(key));
        }
        CHECK_EQ_U64(missing, 0);
        /* in memory it grows again */
        key_of(i, key, sizeof key);
        CHECK_OK(bk_filter_add(l, key, strlen(key), NULL));
        CHECK_EQ_U64(l->nsubs, 2);
    }
    bk_filter_free(l);
out:
    bk_filter_free(m);
    bk_filter_free(f);
    unlink(path);
}

/* Clearing a writable mapping of a grown chain empties every sub-filter in
 * place: the file keeps its shape, syncs, and loads as an empty chain. */
static void test_mapped_scalable_clear(void)
{
    bk_filter_t *f = make_scalable(100, 0.01, 6, 0, NULL);
    char key[64];
    for (uint64_t i = 0; f && i < 500; i++) {
        key_of(i, key, sizeof key);
        bk_filter_add(f, key, strlen(key), NULL);
    }
    const char *path = path_in_tmp("scclear.bkf");
    CHECK_OK(bk_filter_save(f, path));
    bk_filter_t *m = NULL, *l = NULL;
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_WRITABLE, NULL));
    if (!m || !f)
        goto out;
    uint32_t subs = m->nsubs;
    CHECK(subs >= 3);
    CHECK_OK(bk_filter_clear(m));
    CHECK_EQ_U64(m->nsubs, subs);
    CHECK_EQ_U64(bk_filter_items(m), 0);
    CHECK_OK(bk_filter_sync(m));
    bk_filter_free(m);
    m = NULL;
    CHECK_OK(bk_filter_load(&l, path, NULL));
    if (l) {
        CHECK_EQ_U64(l->nsubs, subs);
        CHECK_EQ_U64(bk_filter_items(l), 0);
        uint64_t set = 0;
        for (uint32_t s = 0; s < l->nsubs; s++)
            set += bki_cells_set(l->subs[s]);
        CHECK_EQ_U64(set, 0);
    }
out:
    bk_filter_free(l);
    bk_filter_free(m);
    bk_filter_free(f);
    unlink(path);
}

/* Bitmaps against a naive reference: an array of counts. */
static void test_roundtrip_bitmaps(void)
{
    uint64_t n = bkt_scaled(100000) + 13; /* not a multiple of a word */
    uint8_t *ref = calloc((size_t)n, 1);
    bk_bitmap_t *b = NULL;
    bk_bitmap2_t *b2 = NULL;
    CHECK_OK(bk_bitmap_create(&b, n));
    CHECK_OK(bk_bitmap2_create(&b2, n));
    if (!ref || !b || !b2)
        goto out;
    uint64_t rng = 7;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = bkt_rand(&rng) % n;
        bk_bitmap_set(b, v);
        bk_bitmap2_add(b2, v);
        if (ref[v] < 2)
            ref[v]++;
    }
    bk_bitmap_set(b, n - 1); /* the last value, next to the tail */
    bk_bitmap2_add(b2, n - 1);
    if (ref[n - 1] < 2)
        ref[n - 1]++;
    const char *why = NULL;
    const char *p1 = path_in_tmp("b1.bkf"), *p2 = path_in_tmp("b2.bkf");
    CHECK_OK(bk_bitmap_save(b, p1));
    CHECK_OK(bk_bitmap2_save(b2, p2));
    uint64_t s1 = bk_bitmap_serialized_size(b), s2 = bk_bitmap2_serialized_size(b2);
    uint8_t *m1 = malloc((size_t)s1), *m2 = malloc((size_t)s2);
    size_t w1 = 0, w2 = 0;
    CHECK_OK(bk_bitmap_serialize(b, m1, (size_t)s1, &w1));
    CHECK_OK(bk_bitmap2_serialize(b2, m2, (size_t)s2, &w2));
    CHECK_STATUS(bk_bitmap_serialize(b, m1, (size_t)s1 - 1, NULL), BK_EINVAL);
    CHECK_EQ_U64(w1, s1);
    CHECK_EQ_U64(w2, s2);
    bk_kind_t kind;
    CHECK_OK(bk_peek_kind(m1, w1, &kind));
    CHECK(kind == BK_KIND_BITMAP);
    CHECK_OK(bk_peek_kind(m2, w2, &kind));
    CHECK(kind == BK_KIND_BITMAP2);

    bk_bitmap_t *l1 = NULL, *d1 = NULL;
    bk_bitmap2_t *l2 = NULL, *d2 = NULL;
    CHECK_OK(bk_bitmap_load(&l1, p1, &why));
    CHECK_OK(bk_bitmap2_load(&l2, p2, &why));
    CHECK_OK(bk_bitmap_deserialize(&d1, m1, w1, &why));
    CHECK_OK(bk_bitmap2_deserialize(&d2, m2, w2, &why));
    /* Wrong loader for the kind. */
    bk_bitmap_t *x1 = NULL;
    bk_filter_t *xf = NULL;
    CHECK_STATUS(bk_bitmap_deserialize(&x1, m2, w2, &why), BK_EKIND);
    CHECK_STATUS(bk_filter_deserialize(&xf, m1, w1, &why), BK_EKIND);
    CHECK(x1 == NULL && xf == NULL);
    if (l1 && l2 && d1 && d2) {
        uint64_t bad = 0;
        for (uint64_t v = 0; v < n; v++) {
            bool want1 = ref[v] > 0;
            if (bk_bitmap_test(l1, v) != want1 || bk_bitmap_test(d1, v) != want1)
                bad++;
            if (bk_bitmap2_state(l2, v) != ref[v] || bk_bitmap2_state(d2, v) != ref[v])
                bad++;
        }
        CHECK_EQ_U64(bad, 0);
        CHECK_EQ_U64(bk_bitmap_size(l1), n);
        CHECK_EQ_U64(bk_bitmap2_size(l2), n);
        CHECK_EQ_U64(bk_bitmap_count(l1), bk_bitmap_count(b));
    }
    bk_bitmap_free(l1);
    bk_bitmap_free(d1);
    bk_bitmap2_free(l2);
    bk_bitmap2_free(d2);
    free(m1);
    free(m2);
    unlink(p1);
    unlink(p2);
out:
    bk_bitmap_free(b);
    bk_bitmap2_free(b2);
    free(ref);
}

/* A writable mapping: updates land in the file after sync; before sync
 * the stale checksum is detected, never silently trusted. */
static void test_mapped_writable(void)
{
    bk_filter_t *f = make_filter(BK_KIND_BLOCKED, 1 << 16, 6, 99, 1000);
    const char *path = path_in_tmp("w.bkf");
    CHECK_OK(bk_filter_save(f, path));
    bk_filter_t *m = NULL;
    const char *why = NULL;
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_WRITABLE, &why));
    if (!m || !f) {
        bk_filter_free(f);
        return;
    }
    char key[64];
    for (uint64_t i = 1000; i < 2000; i++) {
        key_of(i, key, sizeof key);
        CHECK_OK(bk_filter_add(m, key, strlen(key), NULL));
        CHECK_OK(bk_filter_add(f, key, strlen(key), NULL));
    }
    CHECK_STATUS(bk_filter_verify(m, &why), BK_ECORRUPT);
    bk_filter_t *stale = NULL;
    CHECK_STATUS(bk_filter_load(&stale, path, &why), BK_ECORRUPT);
    CHECK_OK(bk_filter_sync(m));
    CHECK_OK(bk_filter_verify(m, &why));
    bk_filter_free(m);
    bk_filter_t *l = NULL;
    CHECK_OK(bk_filter_load(&l, path, &why));
    if (l) {
        CHECK(same_filter(f, l)); /* same bits and item count as in memory */
        check_answers(f, l, 2000);
    }
    bk_filter_free(l);
    bk_filter_free(f);
    unlink(path);
}

static void test_peek_kind(void)
{
    bk_filter_t *f = make_filter(BK_KIND_CLASSIC, 4096, 5, 1, 10);
    size_t len;
    uint8_t *buf = serialize(f, &len);
    bk_kind_t kind = BK_KIND_DEFAULT;
    CHECK_OK(bk_peek_kind(buf, len, &kind));
    CHECK(kind == BK_KIND_CLASSIC);
    CHECK_OK(bk_peek_kind(buf, 128, &kind)); /* the fixed header is enough */
    CHECK_STATUS(bk_peek_kind(buf, 127, &kind), BK_ECORRUPT);
    buf[12] ^= 1; /* kind, with the checksum available to notice */
    CHECK_STATUS(bk_peek_kind(buf, len, &kind), BK_ECORRUPT);
    buf[12] ^= 1;
    buf[0] = 'X';
    CHECK_STATUS(bk_peek_kind(buf, len, &kind), BK_ECORRUPT);
    free(buf);
    bk_filter_free(f);
}

/* The writer refuses what the loader would refuse, so every file written
 * loads: here a chain whose sub-filter has another seed than its parent. */
static void test_writer_refuses_unloadable(void)
{
    bk_filter_t *f = make_scalable(10, 0.1, 9, 60, NULL);
    if (!f)
        return;
    uint8_t buf[4096];
    CHECK(bk_filter_serialized_size(f) > 0);
    f->subs[1]->seed ^= 1;
    CHECK_STATUS(bk_filter_serialize(f, buf, sizeof buf, NULL), BK_EINVAL);
    CHECK_EQ_U64(bk_filter_serialized_size(f), 0);
    CHECK_STATUS(bk_filter_save(f, path_in_tmp("never.bkf")), BK_EINVAL);
    f->subs[1]->seed ^= 1;
    CHECK_OK(bk_filter_serialize(f, buf, sizeof buf, NULL));
    CHECK_STATUS(bk_filter_serialize(NULL, buf, sizeof buf, NULL), BK_EINVAL);
    CHECK_STATUS(bk_filter_serialize(f, NULL, sizeof buf, NULL), BK_EINVAL);
    bk_filter_free(f);
}

/* ---- damage ---- */

/* Any error a damaged input may give, with a reason. */
static bool is_damage_status(bk_status_t st)
{
    return st == BK_ECORRUPT || st == BK_EVERSION;
}

static void check_rejects(const uint8_t *buf, size_t len, const char *what, size_t at)
{
    bk_filter_t *g = NULL;
    const char *why = NULL;
    bk_status_t st = bk_filter_deserialize(&g, buf, len, &why);
    CHECK_MSG(is_damage_status(st) && g == NULL && why && *why,
              "%s at %zu: got %s (%s)", what, at, bk_strerror(st), why ? why : "no reason");
    bk_filter_free(g);
}

static void test_truncation_every_byte(void)
{
    bk_filter_t *f = make_filter(BK_KIND_BLOCKED, 2048, 7, 5, 100);
    size_t len;
    uint8_t *buf = serialize(f, &len);
    if (!buf)
        return;
    for (size_t n = 0; n < len; n++) {
        /* A fresh allocation of exactly n bytes, so ASan sees any over-read. */
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, buf, n);
        check_rejects(cut, n, "truncated", n);
        free(cut);
    }
    /* Files truncated at every 8th byte, loaded and mapped. */
    const char *path = path_in_tmp("trunc.bkf");
    for (size_t n = 0; n < len; n += 8) {
        write_whole(path, buf, n);
        bk_filter_t *g = NULL;
        const char *why = NULL;
        bk_status_t st = bk_filter_load(&g, path, &why);
        CHECK_MSG(st == BK_ECORRUPT && why, "load truncated at %zu: %s", n, bk_strerror(st));
        bk_filter_free(g);
        g = NULL;
        st = bk_filter_open(&g, path, BK_MAP_READONLY, &why);
        CHECK_MSG(st == BK_ECORRUPT && why, "open truncated at %zu: %s", n, bk_strerror(st));
        bk_filter_free(g);
    }
    unlink(path);
    free(buf);
    bk_filter_free(f);
}

static void test_trailing_garbage(void)
{
    bk_filter_t *f = make_filter(BK_KIND_CLASSIC, 1024, 4, 5, 50);
    size_t len;
    uint8_t *buf = serialize(f, &len);
    uint8_t *big = calloc(len + 200, 1);
    memcpy(big, buf, len);
    for (size_t extra = 1; extra <= 200; extra++)
        check_rejects(big, len + extra, "trailing", extra);
    const char *path = path_in_tmp("trail.bkf");
    write_whole(path, big, len + 1);
    bk_filter_t *g = NULL;
    const char *why = NULL;
    CHECK_STATUS(bk_filter_load(&g, path, &why), BK_ECORRUPT);
    CHECK_STATUS(bk_filter_open(&g, path, BK_MAP_READONLY, &why), BK_ECORRUPT);
    unlink(path);
    free(big);
    free(buf);
    bk_filter_free(f);
}

/* Every single-bit flip anywhere is caught: by a checksum, the zero checks
 * on padding and reserved bytes, or a field check. */
static void test_bit_flips(void)
{
    /* 1088 bits: a 136-byte payload, so 56 bytes of padding follow it. */
    bk_filter_t *f = make_filter(BK_KIND_CLASSIC, 1088, 6, 11, 60);
    size_t len;
    uint8_t *buf = serialize(f, &len);
    if (!buf)
        return;
    for (size_t i = 0; i < len * 8; i++) {
        buf[i / 8] ^= (uint8_t)(1u << (i % 8));
        check_rejects(buf, len, "bit flip", i);
        buf[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    /* The bitmaps' loaders too. */
    bk_bitmap2_t *b2 = NULL;
    CHECK_OK(bk_bitmap2_create(&b2, 300));
    for (uint64_t v = 0; v < 300; v += 3)
        bk_bitmap2_add(b2, v);
    size_t l2 = (size_t)bk_bitmap2_serialized_size(b2);
    uint8_t *m2 = malloc(l2);
    CHECK_OK(bk_bitmap2_serialize(b2, m2, l2, NULL));
    for (size_t i = 0; i < l2 * 8; i++) {
        m2[i / 8] ^= (uint8_t)(1u << (i % 8));
        bk_bitmap2_t *g = NULL;
        const char *why = NULL;
        bk_status_t st = bk_bitmap2_deserialize(&g, m2, l2, &why);
        CHECK_MSG(is_damage_status(st) && g == NULL && why, "bitmap2 flip %zu: %s", i,
                  bk_strerror(st));
        bk_bitmap2_free(g);
        m2[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    /* A mapped open checks the header only; verify catches payload damage. */
    const char *path = path_in_tmp("flip.bkf");
    buf[256 + 100] ^= 0x10; /* inside the payload */
    write_whole(path, buf, len);
    bk_filter_t *m = NULL;
    const char *why = NULL;
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_READONLY, &why));
    CHECK_STATUS(bk_filter_verify(m, &why), BK_ECORRUPT);
    bk_filter_free(m);
    bk_filter_t *g = NULL;
    CHECK_STATUS(bk_filter_load(&g, path, &why), BK_ECORRUPT);
    unlink(path);
    free(m2);
    bk_bitmap2_free(b2);
    free(buf);
    bk_filter_free(f);
}

/* The same damage on a multi-part file: a scalable chain of 3. */
static void test_scalable_damage(void)
{
    bk_filter_t *f = make_scalable(10, 0.1, 9, 60, NULL);
    CHECK(f && f->nsubs >= 3);
    size_t len;
    uint8_t *buf = f ? serialize(f, &len) : NULL;
    if (!buf) {
        bk_filter_free(f);
        return;
    }
    for (size_t n = 0; n < len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, buf, n);
        check_rejects(cut, n, "scalable truncated", n);
        free(cut);
    }
    for (size_t i = 0; i < len * 8; i++) {
        buf[i / 8] ^= (uint8_t)(1u << (i % 8));
        check_rejects(buf, len, "scalable bit flip", i);
        buf[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    free(buf);
    bk_filter_free(f);
}

/* Header fields edited and resealed with a valid checksum: each must be
 * refused by its own check, before any allocation it could drive. */
typedef struct edit {
    const char *name;
    size_t off;
    int width; /* 4 or 8 */
    uint64_t value;
    bk_status_t want;
} edit_t;

static void apply_edits(const uint8_t *orig, size_t len, const edit_t *edits, size_t nedits)
{
    uint8_t *buf = malloc(len);
    for (size_t i = 0; i < nedits; i++) {
        const edit_t *e = &edits[i];
        memcpy(buf, orig, len);
        if (e->width == 4)
            put_u32le(buf + e->off, (uint32_t)e->value);
        else
            put_u64le(buf + e->off, e->value);
        /* A larger nparts would put the checksum elsewhere: leave it. */
        if (e->off != 20)
            reseal(buf);
        bk_filter_t *g = NULL;
        const char *why = NULL;
        /* The first allocation would fail: an input rejected with
         * ECORRUPT/EVERSION here was rejected before allocating anything. */
        bki_fail_countdown = 1;
        bk_status_t st = bk_filter_deserialize(&g, buf, len, &why);
        bki_fail_countdown = 0;
        CHECK_MSG(st == e->want && g == NULL && why && *why, "%s: got %s (%s), want %s",
                  e->name, bk_strerror(st), why ? why : "no reason", bk_strerror(e->want));
        bk_filter_free(g);
    }
    /* Control: the unedited bytes, resealed, still load. */
    memcpy(buf, orig, len);
    reseal(buf);
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_deserialize(&g, buf, len, NULL));
    bk_filter_free(g);
    free(buf);
}

static uint64_t f64_bits(double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    return v;
}

static void test_hostile_fields(void)
{
    bk_filter_t *f = make_filter(BK_KIND_BLOCKED, 4096, 6, 3, 100);
    size_t len;
    uint8_t *orig = serialize(f, &len);
    if (!orig)
        return;
    const size_t P = 128; /* the first part-table entry */
    const edit_t edits[] = {
        {"version 0", 8, 4, 0, BK_EVERSION},
        {"version 4", 8, 4, 4, BK_EVERSION},
        /* a paged file's version on bytes with no page checksums */
        {"version 3", 8, 4, 3, BK_ECORRUPT},
        {"version 2 without a key form", 8, 4, 2, BK_ECORRUPT},
        {"kind 0", 12, 4, 0, BK_ECORRUPT},
        {"kind unknown", 12, 4, 99, BK_ECORRUPT},
        {"kind counting vs part", 12, 4, BK_KIND_COUNTING, BK_ECORRUPT},
        {"kind scalable", 12, 4, BK_KIND_SCALABLE, BK_ECORRUPT},
        {"kind bitmap", 12, 4, BK_KIND_BITMAP, BK_ECORRUPT},
        {"hash 0", 16, 4, 0, BK_ECORRUPT},
        {"hash past the last id", 16, 4, BK_HASH_COUNT + 1, BK_ECORRUPT},
        {"nparts 0", 20, 4, 0, BK_ECORRUPT},
        {"nparts 2", 20, 4, 2, BK_ECORRUPT},
        {"nparts huge", 20, 4, 0xffffffffu, BK_ECORRUPT},
        {"fpr NaN", 40, 8, f64_bits(NAN), BK_ECORRUPT},
        {"fpr 2", 40, 8, f64_bits(2.0), BK_ECORRUPT},
        {"fpr -0.5", 40, 8, f64_bits(-0.5), BK_ECORRUPT},
        {"file size +64", 56, 8, len + 64, BK_ECORRUPT},
        {"file size -64", 56, 8, len - 64, BK_ECORRUPT},
        {"sub kind on blocked", 64, 4, BK_KIND_BLOCKED, BK_ECORRUPT},
        {"flags on blocked", 68, 4, 1, BK_ECORRUPT},
        {"growth on blocked", 72, 8, f64_bits(2.0), BK_ECORRUPT},
        {"reserved", 100, 4, 1, BK_ECORRUPT},
        {"part kind", P + 0, 4, BK_KIND_CLASSIC, BK_ECORRUPT},
        {"k 0", P + 4, 4, 0, BK_ECORRUPT},
        {"k 17", P + 4, 4, 17, BK_ECORRUPT},
        {"k huge", P + 4, 4, 0xffffffffu, BK_ECORRUPT},
        {"cells 0", P + 8, 8, 0, BK_ECORRUPT},
        {"cells not whole lines", P + 8, 8, 4096 + 1, BK_ECORRUPT},
        {"cells 2^45 in a tiny file", P + 8, 8, UINT64_C(1) << 45, BK_ECORRUPT},
        {"cells 2^63", P + 8, 8, UINT64_C(1) << 63, BK_ECORRUPT},
        {"cells max", P + 8, 8, UINT64_MAX, BK_ECORRUPT},
        {"part capacity", P + 16, 8, 5, BK_ECORRUPT},
        {"part items", P + 32, 8, 5, BK_ECORRUPT},
        {"part seed", P + 40, 8, 5, BK_ECORRUPT},
        {"payload offset", P + 48, 8, 0, BK_ECORRUPT},
        {"payload offset huge", P + 48, 8, UINT64_MAX - 63, BK_ECORRUPT},
        {"payload length", P + 56, 8, 4096 / 8 + 64, BK_ECORRUPT},
        {"payload checksum", P + 64, 8, 12345, BK_ECORRUPT},
        {"part reserved", P + 80, 4, 1, BK_ECORRUPT},
    };
    apply_edits(orig, len, edits, sizeof edits / sizeof edits[0]);
    free(orig);
    bk_filter_free(f);

    /* A scalable chain: its own fields and the parts' agreement. */
    f = make_scalable(10, 0.1, 9, 60, NULL);
    orig = f ? serialize(f, &len) : NULL;
    CHECK(orig && f->nsubs >= 3);
    if (!orig) {
        bk_filter_free(f);
        return;
    }
    const size_t P1 = 128 + 96, P2 = 128 + 2 * 96;
    const edit_t sedits[] = {
        {"sub kind 0", 64, 4, 0, BK_ECORRUPT},
        {"sub kind counting", 64, 4, BK_KIND_COUNTING, BK_ECORRUPT},
        {"sub kind scalable", 64, 4, BK_KIND_SCALABLE, BK_ECORRUPT},
        {"unknown flag", 68, 4, 4, BK_ECORRUPT},
        {"growth 0.5", 72, 8, f64_bits(0.5), BK_ECORRUPT},
        {"growth NaN", 72, 8, f64_bits(NAN), BK_ECORRUPT},
        {"growth inf", 72, 8, f64_bits(INFINITY), BK_ECORRUPT},
        {"tightening 0", 80, 8, f64_bits(0.0), BK_ECORRUPT},
        {"tightening 1", 80, 8, f64_bits(1.0), BK_ECORRUPT},
        {"fpr 0", 40, 8, f64_bits(0.0), BK_ECORRUPT},
        {"nparts 129", 20, 4, 129, BK_ECORRUPT},
        {"part 1 kind classic", P1 + 0, 4, BK_KIND_CLASSIC, BK_ECORRUPT},
        {"part 1 seed", P1 + 40, 8, 10, BK_ECORRUPT},
        {"part 2 k 0", P2 + 4, 4, 0, BK_ECORRUPT},
        {"part 2 offset", P2 + 48, 8, 448, BK_ECORRUPT},
        {"part 2 cells", P2 + 8, 8, 512 * 1000, BK_ECORRUPT},
    };
    apply_edits(orig, len, sedits, sizeof sedits / sizeof sedits[0]);
    free(orig);
    bk_filter_free(f);
}

/* A bitmap whose bits past n are set, or a 2-bit cell holding 3, with the
 * checksums recomputed: both would give wrong counts, both are refused. */
static void test_hostile_bitmap_payload(void)
{
    bk_bitmap_t *b = NULL;
    bk_bitmap2_t *b2 = NULL;
    CHECK_OK(bk_bitmap_create(&b, 100));
    CHECK_OK(bk_bitmap2_create(&b2, 100));
    if (!b || !b2)
        goto out;
    size_t l1 = (size_t)bk_bitmap_serialized_size(b), l2 = (size_t)bk_bitmap2_serialized_size(b2);
    uint8_t *m1 = malloc(l1), *m2 = malloc(l2);
    CHECK_OK(bk_bitmap_serialize(b, m1, l1, NULL));
    CHECK_OK(bk_bitmap2_serialize(b2, m2, l2, NULL));
    const size_t pay = 256; /* meta_len(1) */
    const char *why = NULL;
    bk_bitmap_t *g1 = NULL;
    bk_bitmap2_t *g2 = NULL;
    /* bit 100 (past n = 100) */
    m1[pay + 12] |= 0x10;
    put_u64le(m1 + 128 + 64, XXH3_64bits(m1 + pay, 64));
    reseal(m1);
    CHECK_STATUS(bk_bitmap_deserialize(&g1, m1, l1, &why), BK_ECORRUPT);
    /* bit 99 is inside: same edit one bit lower loads */
    m1[pay + 12] = 0x08;
    put_u64le(m1 + 128 + 64, XXH3_64bits(m1 + pay, 64));
    reseal(m1);
    CHECK_OK(bk_bitmap_deserialize(&g1, m1, l1, &why));
    CHECK(g1 && bk_bitmap_test(g1, 99) && bk_bitmap_count(g1) == 1);
    /* cell 5 = 3 */
    m2[pay + 1] = 0x0c;
    put_u64le(m2 + 128 + 64, XXH3_64bits(m2 + pay, 64));
    reseal(m2);
    CHECK_STATUS(bk_bitmap2_deserialize(&g2, m2, l2, &why), BK_ECORRUPT);
    m2[pay + 1] = 0x08; /* cell 5 = 2 */
    put_u64le(m2 + 128 + 64, XXH3_64bits(m2 + pay, 64));
    reseal(m2);
    CHECK_OK(bk_bitmap2_deserialize(&g2, m2, l2, &why));
    CHECK(g2 && bk_bitmap2_state(g2, 5) == 2);
    bk_bitmap_free(g1);
    bk_bitmap2_free(g2);
    free(m1);
    free(m2);
out:
    bk_bitmap_free(b);
    bk_bitmap2_free(b2);
}

/* ---- allocation failures ---- */

static void test_alloc_failures(void)
{
    bk_filter_t *f = make_filter(BK_KIND_BLOCKED, 4096, 6, 3, 100);
    size_t len;
    uint8_t *buf = serialize(f, &len);
    const char *path = path_in_tmp("oom.bkf");
    CHECK_OK(bk_filter_save(f, path));
    size_t before_len;
    uint8_t *before = read_whole(path, &before_len);
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_create(&b, 1000));
    bk_bitmap_set(b, 5);
    const char *bpath = path_in_tmp("oom-b.bkf");
    CHECK_OK(bk_bitmap_save(b, bpath));
    bk_filter_t *sc = make_scalable(10, 0.1, 9, 60, NULL);
    size_t sclen;
    uint8_t *scbuf = sc ? serialize(sc, &sclen) : NULL;
    const char *scpath = path_in_tmp("oom-sc.bkf");
    CHECK_OK(bk_filter_save(sc, scpath));
    enum { DESER, LOAD, OPEN, SAVE, BLOAD, SDESER, SOPEN, NOPS };
    for (int op = 0; op < NOPS; op++) {
        bool succeeded = false;
        for (long n = 1; n < 40 && !succeeded; n++) {
            bk_filter_t *g = NULL;
            bk_bitmap_t *bg = NULL;
            const char *why = NULL;
            bk_status_t st;
            bki_fail_countdown = n;
            switch (op) {
            case DESER: st = bk_filter_deserialize(&g, buf, len, &why); break;
            case LOAD: st = bk_filter_load(&g, path, &why); break;
            case OPEN: st = bk_filter_open(&g, path, BK_MAP_READONLY, &why); break;
            case SAVE: st = bk_filter_save(f, path); break;
            case BLOAD: st = bk_bitmap_load(&bg, bpath, &why); break;
            case SDESER: st = bk_filter_deserialize(&g, scbuf, sclen, &why); break;
            default: st = bk_filter_open(&g, scpath, BK_MAP_READONLY, &why); break;
            }
            bki_fail_countdown = 0;
            CHECK_MSG(st == BK_OK || st == BK_ENOMEM, "op %d, failing allocation %ld: %s", op,
                      n, bk_strerror(st));
            if (st == BK_OK) {
                succeeded = true;
                if (op == SAVE)
                    continue;
                CHECK(op == BLOAD ? bg != NULL : g != NULL);
                if (g)
                    CHECK(same_filter(op >= SDESER ? sc : f, g));
            } else {
                CHECK(g == NULL && bg == NULL);
            }
            bk_filter_free(g);
            bk_bitmap_free(bg);
        }
        CHECK_MSG(succeeded, "op %d never succeeded", op);
    }
    /* A failed save left the old file and no temp files. */
    size_t after_len;
    uint8_t *after = read_whole(path, &after_len);
    CHECK(after && after_len == before_len && memcmp(before, after, after_len) == 0);
    DIR *d = opendir(tmpdir);
    int stray = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".tmp-"))
            stray++;
    if (d)
        closedir(d);
    CHECK_EQ_U64(stray, 0);
    free(after);
    free(before);
    unlink(path);
    unlink(bpath);
    unlink(scpath);
    free(scbuf);
    bk_filter_free(sc);
    bk_bitmap_free(b);
    free(buf);
    bk_filter_free(f);
}

/* ---- saving where it cannot work ---- */

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

/* A saved filter is sparse: its zero 4 KiB blocks are holes, so a new
 * 64 MB filter takes next to no disk, one with a few keys the blocks they
 * touched, and the bytes read back are the same either way. */
static void test_save_is_sparse(void)
{
    bk_options_t o = {.kind = BK_KIND_BLOCKED, .seed_set = true, .seed = 3};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 50000000, 0.01, &o));
    if (!f)
        return;
    const char *path = path_in_tmp("sparse.bkf");
    CHECK_OK(bk_filter_save(f, path));
    struct stat sb;
    CHECK(stat(path, &sb) == 0);
    /* A paged file (docs/FORMAT.md, "Paged files"): the serialized form,
     * then from the next 4 KiB boundary a sum per 4 KiB page of it (the
     * first page from offset 0, the payload at 256), to the next 4 KiB
     * boundary, then a sum per 512 pages, to a multiple of 64. */
    uint64_t body = bk_filter_serialized_size(f), pages = (body + 4095) / 4096;
    uint64_t groups_at = (body + 4095) / 4096 * 4096 + (pages * 8 + 4095) / 4096 * 4096;
    CHECK_EQ_U64(sb.st_size, groups_at + ((pages + 511) / 512 * 8 + 63) / 64 * 64);
    CHECK_MSG((uint64_t)sb.st_blocks * 512 < (uint64_t)sb.st_size / 100,
              "a new filter's file takes %llu of %llu bytes on disk",
              (unsigned long long)sb.st_blocks * 512, (unsigned long long)sb.st_size);
    for (int i = 0; i < 100; i++) {
        char key[16];
        int len = snprintf(key, sizeof key, "s%d", i);
        bk_filter_add(f, key, (size_t)len, NULL);
    }
    CHECK_OK(bk_filter_save(f, path));
    CHECK(stat(path, &sb) == 0);
    CHECK_MSG((uint64_t)sb.st_blocks * 512 <= 2 * (100 + 8) * 4096u,
              "100 keys: %llu bytes on disk", (unsigned long long)sb.st_blocks * 512);
    bk_filter_t *g = NULL;
    const char *why = NULL;
    CHECK_OK(bk_filter_load(&g, path, &why));
    size_t la, lb;
    uint8_t *a = serialize(f, &la), *b = g ? serialize(g, &lb) : NULL;
    CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
    free(a);
    free(b);
    bk_filter_free(g);
    bk_filter_free(f);
    unlink(path);
}

/* bk_filter_save_new writes only where nothing is: EEXIST otherwise, the
 * existing file untouched; through a dangling link it creates the file
 * the link names. Every save removes this machine's leftovers of killed
 * saves (a temp file whose process is gone), and keeps others'. */
static void test_save_new_and_leftovers(void)
{
    bk_filter_t *f = make_filter(BK_KIND_BLOCKED, 4096, 6, 3, 100);
    bk_filter_t *g = make_filter(BK_KIND_BLOCKED, 4096, 6, 3, 7);
    const char *path = path_in_tmp("new.bkf");
    unlink(path);
    CHECK_OK(bk_filter_save_new(f, path));
    size_t before_len;
    uint8_t *before = read_whole(path, &before_len);
    errno = 0;
    CHECK_STATUS(bk_filter_save_new(g, path), BK_EEXIST);
    CHECK(errno == EEXIST);
    size_t after_len;
    uint8_t *after = read_whole(path, &after_len);
    CHECK(before && after && before_len == after_len && memcmp(before, after, after_len) == 0);
    free(before);
    free(after);
    const char *link = path_in_tmp("new-link.bkf"), *target = path_in_tmp("new-target.bkf");
    unlink(link);
    unlink(target);
    CHECK(symlink(target, link) == 0);
    CHECK_OK(bk_filter_save_new(f, link));
    struct stat sb;
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode) && stat(target, &sb) == 0 &&
          S_ISREG(sb.st_mode));
    /* leftovers: one of a process that is gone, with an old-style name;
     * one of another machine; both made a minute ago */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char stale[600], foreign[600];
    snprintf(stale, sizeof stale, "%s.tmp-%ld-0-0", path, (long)dead);
    snprintf(foreign, sizeof foreign, "%s.tmp-%ld-h00000000-0-0", path, (long)dead);
    for (int i = 0; i < 2; i++) {
        int fd = open(i ? foreign : stale, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0);
        if (fd >= 0)
            close(fd);
        struct timespec old[2] = {{time(NULL) - 120, 0}, {time(NULL) - 120, 0}};
        utimensat(AT_FDCWD, i ? foreign : stale, old, 0);
    }
    CHECK_OK(bk_filter_save(g, path));
    CHECK(access(stale, F_OK) != 0);
    CHECK(access(foreign, F_OK) == 0);
    unlink(foreign);
    unlink(path);
    unlink(link);
    unlink(target);
    bk_filter_free(f);
    bk_filter_free(g);
}

static void test_save_bad_path(void)
{
    bk_filter_t *f = make_filter(BK_KIND_BLOCKED, 4096, 6, 3, 10);
    /* The parent is a regular file: fails as root too. */
    const char *file = path_in_tmp("plain");
    write_whole(file, "x", 1);
    char path[600];
    snprintf(path, sizeof path, "%s/f.bkf", file);
    errno = 0;
    CHECK_STATUS(bk_filter_save(f, path), BK_EIO);
    CHECK(errno == ENOTDIR);
    snprintf(path, sizeof path, "%s/no/such/dir/f.bkf", tmpdir);
    CHECK_STATUS(bk_filter_save(f, path), BK_EIO);
    CHECK_STATUS(bk_filter_save(f, ""), BK_EINVAL);
    bk_filter_t *g = NULL;
    const char *why = NULL;
    CHECK_STATUS(bk_filter_load(&g, path, &why), BK_EIO);
    errno = 0;
    CHECK_STATUS(bk_filter_load(&g, tmpdir, &why), BK_ENOTFILE); /* a directory */
    CHECK(errno == EISDIR);
    CHECK_STATUS(bk_filter_save(f, tmpdir), BK_ENOTFILE); /* never replaced */
    CHECK(errno == EISDIR);
    CHECK_STATUS(bk_filter_load(&g, "/dev/null", &why), BK_ENOTFILE); /* a device */
    CHECK(errno == EINVAL);
    /* A save says which step failed, as a load does. */
    const char *swhy = "unset";
    snprintf(path, sizeof path, "%s/no/such/dir/f.bkf", tmpdir);
    CHECK_STATUS(bk_filter_save_why(f, path, false, &swhy), BK_EIO);
    CHECK_MSG(swhy && strcmp(swhy, "cannot create a temp file in its directory") == 0, "got %s",
              swhy ? swhy : "NULL");
    CHECK_STATUS(bk_filter_save_why(f, tmpdir, false, &swhy), BK_ENOTFILE);
    CHECK_MSG(swhy && strcmp(swhy, "a directory is there") == 0, "got %s", swhy ? swhy : "NULL");
    CHECK_STATUS(bk_filter_save_why(f, "", false, &swhy), BK_EINVAL);
    CHECK(swhy && strcmp(swhy, "no path") == 0);
    CHECK_OK(bk_filter_save_why(f, file, false, &swhy)); /* replaces the plain file */
    CHECK(swhy == NULL);
    CHECK_STATUS(bk_filter_save_why(f, file, true, &swhy), BK_EEXIST);
    CHECK(swhy && strcmp(swhy, "a file is already there") == 0);
    unlink(file);
    bk_filter_free(f);
}

/* A small tmpfs gives an honest full disk and read-only filesystem. Needs
 * root and mount(2); returns false (test skipped) otherwise. */
static char mnt[300];

static bool mount_small_tmpfs(void)
{
    snprintf(mnt, sizeof mnt, "%s/mnt", tmpdir);
    if (mkdir(mnt, 0700) != 0)
        return false;
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=512k") != 0) {
        rmdir(mnt);
        return false;
    }
    return true;
}

static void unmount_tmpfs(void)
{
    umount2(mnt, MNT_DETACH);
    rmdir(mnt);
}

/* bk_room_for: more than the memory is BK_ENOMEM with the memory's size;
 * more than a 512 KB file system's free space (but not the memory) is
 * BK_ENOSPC with that space; a small filter has room; NULL path: memory
 * only. */
static void test_room_for(void)
{
    uint64_t have = 0, mem = bk_memory_available();
    CHECK(mem > 0);
    CHECK_STATUS(bk_room_for(mem + 1, NULL, &have), BK_ENOMEM);
    CHECK_EQ_U64(have, mem);
    CHECK_OK(bk_room_for(4096, NULL, NULL));
    char here[400];
    snprintf(here, sizeof here, "%s/x.bk", tmpdir);
    CHECK_OK(bk_room_for(4096, here, &have));
    if (!mount_small_tmpfs()) {
        printf("  (disk case skipped: cannot mount a tmpfs here)\n");
        return;
    }
    char small[400];
    snprintf(small, sizeof small, "%s/x.bk", mnt);
    have = 0;
    CHECK_STATUS(bk_room_for(1 << 20, small, &have), BK_ENOSPC);
    CHECK(have > 0 && have <= 512 * 1024);
    CHECK_OK(bk_room_for(1 << 20, NULL, NULL)); /* the memory has room */
    CHECK_OK(bk_room_for(4096, small, NULL));
    unmount_tmpfs();
}

static void test_save_full_and_readonly(void)
{
    bk_filter_t *old = make_filter(BK_KIND_BLOCKED, 1 << 16, 6, 1, 100);
    bk_filter_t *next = make_filter(BK_KIND_BLOCKED, 1 << 20, 6, 2, 200); /* 128 KB */
    char path[400], filler[400];
    snprintf(path, sizeof path, "%s/f.bkf", mnt);
    snprintf(filler, sizeof filler, "%s/filler", mnt);
    CHECK_OK(bk_filter_save(old, path));
    size_t before_len;
    uint8_t *before = read_whole(path, &before_len);
    /* Fill the disk. */
    int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    static uint8_t chunk[4096];
    while (fd >= 0 && write(fd, chunk, sizeof chunk) > 0) {
    }
    if (fd >= 0)
        close(fd);
    errno = 0;
    CHECK_STATUS(bk_filter_save(next, path), BK_ENOSPC);
    CHECK(errno == ENOSPC);
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_create(&b, 1 << 20));
    CHECK_STATUS(bk_bitmap_save(b, path), BK_ENOSPC);
    bk_bitmap_free(b);
    size_t after_len;
    uint8_t *after = read_whole(path, &after_len);
    CHECK(after && after_len == before_len && memcmp(before, after, after_len) == 0);
    CHECK_EQ_U64(count_entries(mnt), 2); /* f.bkf and filler: no temp file left */
    free(after);
    /* Read-only filesystem. */
    unlink(filler);
    CHECK(mount("tmpfs", mnt, "tmpfs", MS_REMOUNT | MS_RDONLY, "size=512k") == 0);
    errno = 0;
    CHECK_STATUS(bk_filter_save(next, path), BK_EIO);
    CHECK(errno == EROFS);
    after = read_whole(path, &after_len);
    CHECK(after && after_len == before_len && memcmp(before, after, after_len) == 0);
    /* and the old file still loads */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, NULL));
    if (g && old)
        CHECK(same_filter(old, g));
    bk_filter_t *w = NULL;
    CHECK_STATUS(bk_filter_open(&w, path, BK_MAP_WRITABLE, NULL), BK_EIO);
    bk_filter_free(g);
    free(after);
    free(before);
    bk_filter_free(old);
    bk_filter_free(next);
}

/* Saving over a file keeps its permissions. */
static void test_save_keeps_mode(void)
{
    bk_filter_t *f = make_filter(BK_KIND_CLASSIC, 4096, 5, 1, 10);
    const char *path = path_in_tmp("mode.bkf");
    CHECK_OK(bk_filter_save(f, path));
    CHECK(chmod(path, 0640) == 0);
    CHECK_OK(bk_filter_save(f, path));
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640);
    unlink(path);
    bk_filter_free(f);
}

/* The key form (format version 2): recorded, kept by every path that
 * writes or copies a filter, and refused when it is malformed. */
static void test_key_form(void)
{
    bk_filter_t *f = make_filter(BK_KIND_BLOCKED, 1 << 14, 6, 7, 300);
    if (!f)
        return;
    size_t len;
    uint8_t *v1 = serialize(f, &len);
    CHECK(bk_filter_key_form(f) == BK_KEY_FORM_UNRECORDED);
    CHECK_EQ_U64(get_u32le(v1 + 8), 1); /* nothing recorded: version 1 bytes */
    CHECK_EQ_U64(get_u32le(v1 + 88), 0);
    CHECK_STATUS(bk_filter_set_key_form(f, (bk_key_form_t)4), BK_EINVAL);
    CHECK_OK(bk_filter_set_key_form(f, BK_KEY_FORM_URL));
    size_t len2;
    uint8_t *v2 = serialize(f, &len2);
    CHECK(len2 == len && get_u32le(v2 + 8) == 2 && get_u32le(v2 + 88) == BK_KEY_FORM_URL);
    CHECK(memcmp(v1 + 256, v2 + 256, len - 256) == 0); /* the payload is unchanged */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_deserialize(&g, v2, len2, NULL));
    if (g) {
        CHECK(bk_filter_key_form(g) == BK_KEY_FORM_URL);
        check_answers(f, g, 300);
    }
    /* Clones, saves, loads and mappings keep it; a writable mapping
     * stores a change at its sync. */
    bk_filter_t *c = NULL;
    CHECK_OK(bk_filter_clone(&c, f));
    CHECK(c && bk_filter_key_form(c) == BK_KEY_FORM_URL);
    const char *path = path_in_tmp("kf.bkf"), *why = NULL;
    CHECK_OK(bk_filter_save(f, path));
    bk_filter_t *m = NULL, *l = NULL;
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_WRITABLE, &why));
    CHECK(m && bk_filter_key_form(m) == BK_KEY_FORM_URL);
    if (m) {
        CHECK_OK(bk_filter_set_key_form(m, BK_KEY_FORM_EMAIL));
        CHECK_OK(bk_filter_sync(m));
        bk_filter_free(m);
    }
    CHECK_OK(bk_filter_load(&l, path, &why));
    CHECK(l && bk_filter_key_form(l) == BK_KEY_FORM_EMAIL);
    CHECK_OK(bk_filter_open(&m, path, BK_MAP_READONLY, &why));
    CHECK(m && bk_filter_set_key_form(m, BK_KEY_FORM_URL) == BK_EREADONLY);
    bk_filter_free(m);
    /* Union: two recorded forms must agree; an unrecorded side takes the
     * other's. */
    if (l && c) {
        CHECK_STATUS(bk_filter_union(l, c), BK_EINCOMPAT);
        bk_filter_t *u = make_filter(BK_KIND_BLOCKED, 1 << 14, 6, 7, 0);
        CHECK_OK(bk_filter_union(u, c));
        CHECK(u && bk_filter_key_form(u) == BK_KEY_FORM_URL);
        bk_filter_free(u);
    }
    /* Malformed: a key form in a version 1 header, version 2 without a
     * known form, and a version this library does not know. */
    edit_t edits[] = {
        {"key form in version 1", 88, 4, BK_KEY_FORM_URL, BK_ECORRUPT},
        {"version 2, form 0", 88, 4, 0, BK_ECORRUPT},
        {"version 2, form 4", 88, 4, 4, BK_ECORRUPT},
        {"version 4", 8, 4, 4, BK_EVERSION},
    };
    apply_edits(v1, len, &edits[0], 1);
    apply_edits(v2, len2, &edits[1], 3);
    CHECK(bk_key_form_name(BK_KEY_FORM_URL) && !strcmp(bk_key_form_name(BK_KEY_FORM_URL), "url"));
    CHECK(bk_key_form_name((bk_key_form_t)9) == NULL);
    unlink(path);
    bk_filter_free(l);
    bk_filter_free(c);
    bk_filter_free(g);
    bk_filter_free(f);
    free(v1);
    free(v2);
}

/* ---- golden files ---- */

/* The objects the golden files hold. Fixed geometry, seeds and keys: any
 * change to the bytes they serialize to is a format change. They hash with
 * XXH3 (hash id 1), what every filter recorded before the default became
 * xxh3-mix8 (id 14); split-mix8.bkf holds one of those. */
static bk_filter_t *golden_make(bk_kind_t kind, uint64_t cells, uint32_t k, uint64_t seed,
                                uint64_t nkeys)
{
    return make_filter_hashed(kind, cells, k, seed, nkeys, BK_HASH_XXH3);
}

static bk_filter_t *golden_scalable(uint64_t cap, double fpr, uint64_t seed, uint64_t nkeys,
                                    const bk_options_t *extra)
{
    bk_options_t o = extra ? *extra : (bk_options_t){0};
    o.hash = BK_HASH_XXH3;
    return make_scalable(cap, fpr, seed, nkeys, &o);
}

static bk_filter_t *golden_filter(bk_kind_t kind)
{
    return kind == BK_KIND_BLOCKED ? golden_make(BK_KIND_BLOCKED, 4096, 7, 0x0123456789abcdefULL, 200)
                                   : golden_make(BK_KIND_CLASSIC, 4096, 5, 0xfedcba9876543210ULL, 200);
}

static const char *data_dir(void)
{
    const char *d = getenv("BK_TEST_DATA");
    return d ? d : "tests/data";
}

/* split-mix8.bkf's integer keys, stored little-endian whatever the host. */
static uint64_t golden_int_key(uint64_t i)
{
    uint64_t v = i * UINT64_C(0x9e3779b97f4a7c15);
    unsigned char b[8];
    for (int j = 0; j < 8; j++)
        b[j] = (unsigned char)(v >> (8 * j));
    memcpy(&v, b, 8);
    return v;
}

static void golden_bytes(const char *name, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (!strcmp(name, "blocked-url.bkf")) { /* version 2: a recorded key form */
        bk_filter_t *f = golden_filter(BK_KIND_BLOCKED);
        bk_filter_set_key_form(f, BK_KEY_FORM_URL);
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "blocked.bkf") || !strcmp(name, "classic.bkf")) {
        bk_filter_t *f = golden_filter(name[0] == 'b' ? BK_KIND_BLOCKED : BK_KIND_CLASSIC);
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "counting.bkf")) {
        bk_filter_t *f = golden_make(BK_KIND_COUNTING, 1024, 4, 0x5eed5eed5eed5eedULL, 100);
        char key[64];
        for (uint64_t i = 0; i < 20; i++) { /* counters of 2 and more */
            key_of(i, key, sizeof key);
            bk_filter_add(f, key, strlen(key), NULL);
        }
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "scalable.bkf")) {
        /* Sub-filter sizes come from bk_plan: a sizing change changes
         * these bytes too (new files, not the format); regenerate then,
         * and golden_load still checks that the old file loads. */
        bk_filter_t *f = golden_scalable(50, 0.01, 0x0badcafe0badcafeULL, 200, NULL);
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "precise.bkf")) {
        bk_filter_t *f = golden_make(BK_KIND_PRECISE, 4096, 5, 0x1122334455667788ULL, 200);
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "scalable_deep.bkf")) {
        /* A deep chain: one key per sub-filter, precise from sub-filter 16
         * (error below 1e-7) and past the geometric 32. */
        bk_options_t o = {.growth = 1.0};
        bk_filter_t *f = golden_scalable(1, 0.01, 0xdee9c4a10dee9c4aULL, 40, &o);
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "scalable_blocked2.bkf")) {
        /* A chain of blocked2 sub-filters (sub_kind 8), two of them, at an
         * error where the Redis module picks that kind. */
        bk_options_t o = {.sub_kind = BK_KIND_BLOCKED2};
        bk_filter_t *f = golden_scalable(40, 1e-4, 0xb20cb20cb20cb20cULL, 60, &o);
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "split.bkf")) {
        bk_filter_t *f = golden_make(BK_KIND_SPLIT, 4096, 8, 0x5b1175b1175b1175ULL, 150);
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "split-mix8.bkf")) {
        /* The default hash, xxh3-mix8 (id 14): 150 8-byte integer keys,
         * which it mixes its own way, and one URL, which it hashes with
         * XXH3. */
        bk_filter_t *f = make_filter_hashed(BK_KIND_SPLIT, 4096, 8, 0x5b1175b1175b1175ULL, 0,
                                            BK_HASH_DEFAULT);
        f->capacity = 150;
        f->fpr = 0.01;
        for (uint64_t i = 0; i < 150; i++) {
            uint64_t v = golden_int_key(i);
            bk_filter_add(f, &v, 8, NULL);
        }
        bk_filter_add(f, "https://example.com/", 20, NULL);
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "blocked2.bkf")) {
        bk_filter_t *f = golden_make(BK_KIND_BLOCKED2, 4096, 4, 0x2bad2bad2bad2badULL, 150);
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "fuse8.bkf") || !strcmp(name, "fuse32.bkf")) {
        /* A static filter (kind 13, 15): the golden keys 0..149 built
         * whole; XXH3 (hash id 1), one part. */
        bk_options_t o = {.kind = name[4] == '8' ? BK_KIND_FUSE8 : BK_KIND_FUSE32,
                          .hash = BK_HASH_XXH3, .seed_set = true,
                          .seed = 0xf05ef05ef05ef05eULL};
        char keys[150][64];
        bk_key_t k[150];
        for (uint64_t i = 0; i < 150; i++) {
            key_of(i, keys[i], sizeof keys[i]);
            k[i].ptr = keys[i];
            k[i].len = strlen(keys[i]);
        }
        bk_filter_t *f = NULL;
        bk_filter_build(&f, k, 150, o.kind == BK_KIND_FUSE8 ? 0.01 : 1e-9, &o);
        *out = f ? serialize(f, len) : NULL;
        bk_filter_free(f);
    } else if (!strcmp(name, "cuckoo.bkf")) {
        /* A cuckoo filter (kind 12): 150 keys in room for 200, two removed;
         * XXH3 (hash id 1), as every cuckoo file was before the default
         * hash reached the kind. */
        bk_options_t o = {.kind = BK_KIND_CUCKOO, .hash = BK_HASH_XXH3, .seed_set = true,
                          .seed = 0xc0c0c0c0c0c0c0c0ULL};
        bk_filter_t *f = NULL;
        bk_filter_create(&f, 200, 0.001, &o);
        char key[64];
        for (uint64_t i = 0; i < 150; i++) {
            key_of(i, key, sizeof key);
            bk_filter_add(f, key, strlen(key), NULL);
        }
        for (uint64_t i = 0; i < 2; i++) {
            key_of(i, key, sizeof key);
            bk_filter_remove(f, key, strlen(key));
        }
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "redisbloom.bkf")) {
        /* A chain taken over from RedisBloom (sub_kind 11): one link as
         * RedisBloom makes it for BF.RESERVE k 0.01 100, then 150 keys, so
         * it grows a second link by RedisBloom's rule. */
        bk_redisbloom_chain_t ch = {0, 1, BK_REDISBLOOM_NOROUND | BK_REDISBLOOM_FORCE64, 2};
        bk_redisbloom_link_t l = {100, 0.005, bki_rb_bpe(0.005), 8, 1152, 0, 0};
        bk_filter_t *f = NULL;
        bk_redisbloom_new(&f, &ch, &l, NULL);
        char key[64];
        for (uint64_t i = 0; i < 150; i++) {
            key_of(i, key, sizeof key);
            bk_filter_add(f, key, strlen(key), NULL);
        }
        *out = serialize(f, len);
        bk_filter_free(f);
    } else if (!strcmp(name, "bitmap.bkf")) {
        bk_bitmap_t *b = NULL;
        bk_bitmap_create(&b, 1000);
        for (uint64_t v = 0; v < 1000; v += 7)
            bk_bitmap_set(b, v);
        *len = (size_t)bk_bitmap_serialized_size(b);
        *out = malloc(*len);
        bk_bitmap_serialize(b, *out, *len, NULL);
        bk_bitmap_free(b);
    } else if (!strcmp(name, "bitmap2.bkf")) {
        bk_bitmap2_t *b = NULL;
        bk_bitmap2_create(&b, 1000);
        for (uint64_t v = 0; v < 1000; v += 3)
            bk_bitmap2_add(b, v);
        for (uint64_t v = 0; v < 1000; v += 5)
            bk_bitmap2_add(b, v);
        *len = (size_t)bk_bitmap2_serialized_size(b);
        *out = malloc(*len);
        bk_bitmap2_serialize(b, *out, *len, NULL);
        bk_bitmap2_free(b);
    }
}

static const char *const golden_names[] = {
    "blocked.bkf", "classic.bkf", "counting.bkf", "scalable.bkf",     "bitmap.bkf",
    "bitmap2.bkf", "precise.bkf", "scalable_deep.bkf", "blocked2.bkf", "blocked-url.bkf",
    "scalable_blocked2.bkf", "split.bkf", "cuckoo.bkf", "redisbloom.bkf", "split-mix8.bkf", "fuse8.bkf",
    "fuse32.bkf"};

/* Regenerating the golden objects gives the committed bytes exactly.
 * BK_WRITE_GOLDEN=1 rewrites them instead (only for a deliberate format
 * change, which must also bump the format version). */
static void test_golden_regenerate(void)
{
    bool write = getenv("BK_WRITE_GOLDEN") != NULL;
    for (size_t i = 0; i < sizeof golden_names / sizeof golden_names[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", data_dir(), golden_names[i]);
        uint8_t *want;
        size_t want_len;
        golden_bytes(golden_names[i], &want, &want_len);
        CHECK(want != NULL);
        if (write)
            CHECK(write_whole(path, want, want_len));
        size_t have_len;
        uint8_t *have = read_whole(path, &have_len);
        CHECK_MSG(have && have_len == want_len && memcmp(have, want, want_len) == 0,
                  "%s differs from what this build writes", path);
        free(have);
        free(want);
    }
}

/* The deep-chain variant (precise parts after the first) loads and
 * answers as the spec says. */
static void golden_load_deep(void)
{
    char path[512], key[64];
    const char *why = NULL;
    snprintf(path, sizeof path, "%s/scalable_deep.bkf", data_dir());
    bk_filter_t *d = NULL;
    CHECK_OK(bk_filter_load(&d, path, &why));
    if (d) {
        CHECK(d->kind == BK_KIND_SCALABLE && d->sub_kind == BK_KIND_BLOCKED);
        CHECK(d->growth == 1.0 && d->fpr == 0.01 && d->capacity == 1);
        CHECK_EQ_U64(d->seed, 0xdee9c4a10dee9c4aULL);
        CHECK(d->nsubs >= 38 && d->nsubs == bk_filter_items(d));
        for (uint32_t i = 0; i < d->nsubs; i++) {
            /* 0.005 * 2^-i drops below 1e-7 at i = 16 */
            bk_kind_t want = i > 0 && i >= 16 ? BK_KIND_PRECISE : BK_KIND_BLOCKED;
            CHECK_MSG(d->subs[i]->kind == want, "part %u kind %d", i, (int)d->subs[i]->kind);
            CHECK_EQ_U64(d->subs[i]->capacity, 1);
        }
        int missing = 0;
        for (uint64_t i = 0; i < 40; i++) {
            key_of(i, key, sizeof key);
            missing += !bk_filter_contains(d, key, strlen(key));
        }
        CHECK_EQ_U64(missing, 0);
    }
    bk_filter_free(d);
}

/* blocked2.bkf: kind 8, its geometry, and its keys as FORMAT.md's two-line
 * layout places them (each key's k bits in line reduce(hi) and in line
 * reduce(lo), checked on the raw payload). */
static void golden_load_blocked2(void)
{
    char path[512];
    const char *why = NULL;
    snprintf(path, sizeof path, "%s/blocked2.bkf", data_dir());
    size_t len;
    uint8_t *raw = read_whole(path, &len);
    CHECK(raw != NULL && len == 256 + 512);
    if (!raw)
        return;
    CHECK_EQ_U64(get_u32le(raw + 12), 8); /* kind: blocked2 */
    CHECK_EQ_U64(get_u32le(raw + 128 + 4), 4); /* k per line */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, &why));
    if (g) {
        CHECK(g->kind == BK_KIND_BLOCKED2 && g->hash == BK_HASH_XXH3);
        CHECK_EQ_U64(g->cells, 4096);
        CHECK_EQ_U64(g->k, 4);
        CHECK_EQ_U64(g->seed, 0x2bad2bad2bad2badULL);
        CHECK(bk_filter_items(g) > 130 && bk_filter_items(g) <= 150);
        char key[64];
        int missing = 0, misplaced = 0;
        for (uint64_t i = 0; i < 150; i++) {
            key_of(i, key, sizeof key);
            missing += !bk_filter_contains(g, key, strlen(key));
            bk_hash_t h = bk_filter_hash(g, key, strlen(key));
            uint64_t lines[2] = {bki_reduce(h.hi, 8), bki_reduce(h.lo, 8)};
            uint64_t lo_of[2] = {h.lo, h.hi};
            for (int half = 0; half < 2; half++) {
                uint32_t x = (uint32_t)lo_of[half], r = (uint32_t)(lo_of[half] >> 32) % 16;
                uint32_t s = 2 * ((uint32_t)(lo_of[half] >> 36) % 8) + 1;
                for (uint32_t j = 0; j < 4; j++) {
                    uint32_t lane = (r + j * s) % 16;
                    uint32_t bit = (x * bki_lane_salt[lane]) >> 27;
                    uint64_t at = lines[half] * 512 + lane * 32 + bit;
                    misplaced += !((raw[256 + at / 8] >> (at % 8)) & 1);
                }
            }
        }
        CHECK_EQ_U64(missing, 0);
        CHECK_EQ_U64(misplaced, 0);
    }
    bk_filter_free(g);
    free(raw);
}

/* Reads golden file name into *len bytes (NULL, after a failed check, if
 * it is missing or not want_len long); path gets its path. */
static uint8_t *read_golden(const char *name, size_t want_len, char *path, size_t cap,
                            size_t *len)
{
    snprintf(path, cap, "%s/%s", data_dir(), name);
    uint8_t *raw = read_whole(path, len);
    CHECK_MSG(raw != NULL && *len == want_len, "%s: missing or not %zu bytes", path, want_len);
    if (raw && *len != want_len) {
        free(raw);
        raw = NULL;
    }
    return raw;
}

/* How many of key hash h's eight bits are clear in a split payload of
 * `blocks` blocks, placed as FORMAT.md says (Parquet's salts). */
static int split_bits_clear(const uint8_t *payload, uint64_t blocks, bk_hash_t h)
{
    static const uint32_t salt[8] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
                                     0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u};
    uint64_t block = bki_reduce(h.hi, blocks);
    int clear = 0;
    for (uint32_t w = 0; w < 8; w++) {
        uint64_t at = block * 256 + w * 32 + (((uint32_t)h.lo * salt[w]) >> 27);
        clear += !((payload[at / 8] >> (at % 8)) & 1);
    }
    return clear;
}

/* split.bkf: kind 10, k 8, and its keys where FORMAT.md's split layout
 * puts them (one bit in each 32-bit word of block reduce(hi, 16), checked
 * on the raw payload with the salts written out again here). */
static void golden_load_split(void)
{
    char path[512];
    const char *why = NULL;
    size_t len;
    uint8_t *raw = read_golden("split.bkf", 256 + 512, path, sizeof path, &len);
    if (!raw)
        return;
    CHECK_EQ_U64(get_u32le(raw + 12), 10);     /* kind: split */
    CHECK_EQ_U64(get_u32le(raw + 128 + 4), 8); /* k */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, &why));
    if (g) {
        CHECK(g->kind == BK_KIND_SPLIT && g->hash == BK_HASH_XXH3);
        CHECK_EQ_U64(g->cells, 4096);
        CHECK_EQ_U64(g->seed, 0x5b1175b1175b1175ULL);
        CHECK(bk_filter_items(g) > 130 && bk_filter_items(g) <= 150);
        char key[64];
        int missing = 0, misplaced = 0;
        for (uint64_t i = 0; i < 150; i++) {
            key_of(i, key, sizeof key);
            missing += !bk_filter_contains(g, key, strlen(key));
            misplaced += split_bits_clear(raw + 256, 16, bk_filter_hash(g, key, strlen(key)));
        }
        CHECK_EQ_U64(missing, 0);
        CHECK_EQ_U64(misplaced, 0);
    }
    bk_filter_free(g);
    free(raw);
    /* The same file with k = 7 in its part entry (checksum made valid
     * again) is refused: a split filter has no other k. */
    uint8_t *bad = read_whole(path, &len);
    if (bad) {
        put_u32le(bad + 128 + 4, 7);
        reseal(bad);
        bk_filter_t *h = NULL;
        CHECK(bk_filter_deserialize(&h, bad, len, &why) == BK_ECORRUPT);
        bk_filter_free(h);
        free(bad);
    }
}

/* split-mix8.bkf: hash id 14 in its header, and each key's eight bits where
 * FORMAT.md's split layout puts them for FORMAT.md's hash: an integer key
 * through the 8-byte mixer (bkt_spec_mix8), the URL through XXH3. */
static void golden_load_split_mix8(void)
{
    const uint64_t seed = 0x5b1175b1175b1175ULL;
    char path[512];
    const char *why = NULL;
    size_t len;
    uint8_t *raw = read_golden("split-mix8.bkf", 256 + 512, path, sizeof path, &len);
    if (!raw)
        return;
    CHECK_EQ_U64(get_u32le(raw + 12), 10); /* kind: split */
    CHECK_EQ_U64(get_u32le(raw + 16), 14); /* hash: xxh3-mix8 */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, &why));
    int missing = 0, misplaced = 0;
    for (uint64_t i = 0; i <= 150 && g; i++) {
        uint64_t v = golden_int_key(i);
        bk_hash_t h;
        if (i < 150) {
            bkt_spec_mix8(i * UINT64_C(0x9e3779b97f4a7c15), seed, &h.lo, &h.hi);
            missing += !bk_filter_contains(g, &v, 8);
        } else {
            h = bk_hash_key(BK_HASH_XXH3, seed, "https://example.com/", 20);
            missing += !bk_filter_contains(g, "https://example.com/", 20);
        }
        misplaced += split_bits_clear(raw + 256, 16, h);
    }
    CHECK(g != NULL && g->hash == BK_HASH_XXH3_MIX8);
    CHECK_EQ_U64(missing, 0);
    CHECK_EQ_U64(misplaced, 0);
    bk_filter_free(g);
    free(raw);
}

static uint64_t golden_keys_missing(const bk_filter_t *f, uint64_t n);

/* fuse8.bkf, fuse32.bkf: kind 13 or 15, one part of k 3 whose geometry
 * is in the entry's reserved bytes, a payload of 1 or 4 bytes a cell,
 * every key present, the rate asked for kept. */
static void golden_load_static(const char *name, size_t size, uint32_t kind, uint32_t cell_bytes)
{
    char path[512];
    const char *why = NULL;
    size_t len;
    uint8_t *raw = read_golden(name, size, path, sizeof path, &len);
    if (!raw)
        return;
    CHECK_EQ_U64(get_u32le(raw + 12), kind);
    CHECK_EQ_U64(get_u32le(raw + 20), 1);  /* one part */
    CHECK_EQ_U64(get_u32le(raw + 128 + 4), 3);
    uint64_t cells = get_u32le(raw + 128 + 8);
    uint32_t seg_log = get_u32le(raw + 128 + 72), seg_count = get_u32le(raw + 128 + 76);
    CHECK_EQ_U64(cells, ((uint64_t)seg_count + 2) << seg_log);
    CHECK_EQ_U64(get_u32le(raw + 128 + 56), cells * cell_bytes); /* payload length */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, &why));
    if (g) {
        CHECK(bk_filter_kind(g) == (bk_kind_t)kind);
        CHECK_EQ_U64(golden_keys_missing(g, 150), 0);
        CHECK_EQ_U64(bk_filter_items(g), 150);
    }
    bk_filter_free(g);
    free(raw);
}

/* How many of the golden objects' keys 0..n-1 f does not have. */
static uint64_t golden_keys_missing(const bk_filter_t *f, uint64_t n)
{
    char key[64];
    uint64_t missing = 0;
    for (uint64_t i = 0; i < n; i++) {
        key_of(i, key, sizeof key);
        missing += !bk_filter_contains(f, key, strlen(key));
    }
    return missing;
}

/* A chain of blocked2 sub-filters: header sub_kind 8, both parts of kind
 * 8, every key present. */
static void golden_load_scalable_blocked2(void)
{
    char path[512];
    const char *why = NULL;
    snprintf(path, sizeof path, "%s/scalable_blocked2.bkf", data_dir());
    size_t len;
    uint8_t *raw = read_whole(path, &len);
    CHECK(raw != NULL && len > 256);
    if (!raw)
        return;
    CHECK_EQ_U64(get_u32le(raw + 12), 4);  /* kind: scalable */
    CHECK_EQ_U64(get_u32le(raw + 20), 2);  /* two parts */
    CHECK_EQ_U64(get_u32le(raw + 64), 8);  /* sub_kind: blocked2 */
    bk_filter_t *g = NULL;
    CHECK_OK(bk_filter_load(&g, path, &why));
    if (g) {
        bk_filter_info_t info;
        bk_filter_info(g, &info);
        CHECK(info.kind == BK_KIND_SCALABLE && info.sub_kind == BK_KIND_BLOCKED2);
        CHECK_EQ_U64(info.filters, 2);
        CHECK_EQ_U64(info.seed, 0xb20cb20cb20cb20cULL);
        CHECK_EQ_U64(info.items, 60);
        CHECK_EQ_U64(golden_keys_missing(g, 60), 0);
    }
    bk_filter_free(g);
    free(raw);
}

/* The committed golden files load and answer as the spec says, checked
 * against constants, independently of this build's writer. */
static void test_golden_load(void)
{
    char path[512];
    const char *why = NULL;
    static const struct {
        const char *name;
        bk_kind_t kind;
        uint32_t k;
        uint64_t seed;
    } one_part[] = {
        {"blocked.bkf", BK_KIND_BLOCKED, 7, 0x0123456789abcdefULL},
        {"classic.bkf", BK_KIND_CLASSIC, 5, 0xfedcba9876543210ULL},
        {"precise.bkf", BK_KIND_PRECISE, 5, 0x1122334455667788ULL},
        {"blocked-url.bkf", BK_KIND_BLOCKED, 7, 0x0123456789abcdefULL}, /* version 2 */
    };
    for (size_t t = 0; t < sizeof one_part / sizeof one_part[0]; t++) {
        snprintf(path, sizeof path, "%s/%s", data_dir(), one_part[t].name);
        bk_filter_t *g = NULL;
        CHECK_OK(bk_filter_load(&g, path, &why));
        if (!g)
            continue;
        CHECK(g->kind == one_part[t].kind);
        CHECK(bk_filter_key_form(g) ==
              (strstr(one_part[t].name, "url") ? BK_KEY_FORM_URL : BK_KEY_FORM_UNRECORDED));
        CHECK(g->hash == BK_HASH_XXH3);
        CHECK_EQ_U64(g->cells, 4096);
        CHECK_EQ_U64(g->k, one_part[t].k);
        CHECK_EQ_U64(g->seed, one_part[t].seed);
        CHECK_EQ_U64(g->capacity, 200);
        CHECK(g->fpr == 0.01);
        CHECK(bk_filter_items(g) > 150 && bk_filter_items(g) <= 200);
        CHECK_EQ_U64(golden_keys_missing(g, 200), 0);
        bk_filter_free(g);
    }
    snprintf(path, sizeof path, "%s/counting.bkf", data_dir());
    bk_filter_t *c = NULL;
    CHECK_OK(bk_filter_load(&c, path, &why));
    if (c) {
        CHECK(c->kind == BK_KIND_COUNTING);
        CHECK_EQ_U64(c->cells, 1024);
        CHECK_EQ_U64(c->k, 4);
        CHECK_EQ_U64(c->seed, 0x5eed5eed5eed5eedULL);
        char key[64];
        int bad = 0;
        for (uint64_t i = 0; i < 100; i++) {
            key_of(i, key, sizeof key);
            bad += bk_filter_count(c, key, strlen(key)) < (i < 20 ? 2u : 1u);
        }
        CHECK_EQ_U64(bad, 0);
        key_of(0, key, sizeof key);
        CHECK_OK(bk_filter_remove(c, key, strlen(key)));
    }
    bk_filter_free(c);
    snprintf(path, sizeof path, "%s/scalable.bkf", data_dir());
    bk_filter_t *sc = NULL;
    CHECK_OK(bk_filter_load(&sc, path, &why));
    if (sc) {
        CHECK(sc->kind == BK_KIND_SCALABLE && sc->sub_kind == BK_KIND_BLOCKED);
        CHECK_EQ_U64(sc->nsubs, 3); /* 50 + 100 + 200 >= 200 keys */
        CHECK_EQ_U64(sc->capacity, 50);
        CHECK(sc->fpr == 0.01 && sc->growth == 2.0 && sc->tightening == 0.5);
        CHECK_EQ_U64(sc->seed, 0x0badcafe0badcafeULL);
        CHECK(bk_filter_items(sc) > 190 && bk_filter_items(sc) <= 200);
        char key[64];
        int missing = 0;
        for (uint64_t i = 0; i < 200; i++) {
            key_of(i, key, sizeof key);
            missing += !bk_filter_contains(sc, key, strlen(key));
        }
        CHECK_EQ_U64(missing, 0);
    }
    bk_filter_free(sc);
    golden_load_deep();
    golden_load_blocked2();
    golden_load_split();
    golden_load_split_mix8();
    golden_load_scalable_blocked2();
    golden_load_static("fuse8.bkf", 512, 13, 1);
    golden_load_static("fuse32.bkf", 1280, 15, 4);
    snprintf(path, sizeof path, "%s/bitmap.bkf", data_dir());
    bk_bitmap_t *b = NULL;
    CHECK_OK(bk_bitmap_load(&b, path, &why));
    if (b) {
        int bad = 0;
        for (uint64_t v = 0; v < 1000; v++)
            bad += bk_bitmap_test(b, v) != (v % 7 == 0);
        CHECK_EQ_U64(bad, 0);
        CHECK_EQ_U64(bk_bitmap_size(b), 1000);
    }
    bk_bitmap_free(b);
    snprintf(path, sizeof path, "%s/bitmap2.bkf", data_dir());
    bk_bitmap2_t *b2 = NULL;
    CHECK_OK(bk_bitmap2_load(&b2, path, &why));
    if (b2) {
        int bad = 0;
        for (uint64_t v = 0; v < 1000; v++)
            bad += bk_bitmap2_state(b2, v) != (unsigned)((v % 3 == 0) + (v % 5 == 0));
        CHECK_EQ_U64(bad, 0);
    }
    bk_bitmap2_free(b2);
}

/* The bytes of the blocked golden file, field by field, as FORMAT.md
 * describes them: a reader written from the spec alone would see these. */
static void test_golden_layout(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/blocked.bkf", data_dir());
    size_t len;
    uint8_t *b = read_whole(path, &len);
    CHECK(b != NULL);
    if (!b)
        return;
    static const uint8_t magic[8] = {0x89, 'B', 'K', 'F', '\r', '\n', 0x1a, '\n'};
    CHECK(len == 256 + 512);
    CHECK(memcmp(b, magic, 8) == 0);
    CHECK_EQ_U64(get_u32le(b + 8), 1);  /* version */
    CHECK_EQ_U64(get_u32le(b + 12), 1); /* blocked */
    CHECK_EQ_U64(get_u32le(b + 16), 1); /* xxh3 */
    CHECK_EQ_U64(get_u32le(b + 20), 1); /* one part */
    CHECK_EQ_U64(get_u32le(b + 24), 0x89abcdefu); /* seed, low half first */
    CHECK_EQ_U64(get_u32le(b + 28), 0x01234567u);
    CHECK_EQ_U64(b[56] | b[57] << 8, len); /* file size */
    CHECK_EQ_U64(get_u32le(b + 128 + 8), 4096);  /* cells */
    CHECK_EQ_U64(get_u32le(b + 128 + 48), 256);  /* payload offset */
    CHECK_EQ_U64(get_u32le(b + 128 + 56), 512);  /* payload length */
    uint64_t sum = 0;
    for (int i = 7; i >= 0; i--)
        sum = sum << 8 | b[128 + 64 + i];
    CHECK(sum == XXH3_64bits(b + 256, 512));
    uint64_t hsum = 0;
    for (int i = 7; i >= 0; i--)
        hsum = hsum << 8 | b[224 + i];
    CHECK(hsum == XXH3_64bits(b, 224));
    free(b);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/bkt-format-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    bkt_run("roundtrip_blocked", test_roundtrip_blocked);
    bkt_run("roundtrip_blocked2", test_roundtrip_blocked2);
    bkt_run("roundtrip_split", test_roundtrip_split);
    bkt_run("roundtrip_classic", test_roundtrip_classic);
    bkt_run("roundtrip_counting", test_roundtrip_counting);
    bkt_run("roundtrip_scalable", test_roundtrip_scalable);
    bkt_run("mapped_scalable_full", test_mapped_scalable_full);
    bkt_run("mapped_scalable_clear", test_mapped_scalable_clear);
    bkt_run("roundtrip_bitmaps", test_roundtrip_bitmaps);
    bkt_run("mapped_writable", test_mapped_writable);
    bkt_run("peek_kind", test_peek_kind);
    bkt_run("writer_refuses_unloadable", test_writer_refuses_unloadable);
    bkt_run("truncation_every_byte", test_truncation_every_byte);
    bkt_run("trailing_garbage", test_trailing_garbage);
    bkt_run("bit_flips", test_bit_flips);
    bkt_run("scalable_damage", test_scalable_damage);
    bkt_run("hostile_fields", test_hostile_fields);
    bkt_run("hostile_bitmap_payload", test_hostile_bitmap_payload);
    bkt_run("alloc_failures", test_alloc_failures);
    bkt_run("save_is_sparse", test_save_is_sparse);
    bkt_run("save_new_and_leftovers", test_save_new_and_leftovers);
    bkt_run("room_for", test_room_for);
    bkt_run("save_bad_path", test_save_bad_path);
    bkt_run("save_keeps_mode", test_save_keeps_mode);
    if (mount_small_tmpfs()) {
        bkt_run("save_full_and_readonly", test_save_full_and_readonly);
        unmount_tmpfs();
    } else {
        printf("skip    save_full_and_readonly (cannot mount a tmpfs: %s; needs root)\n",
               strerror(errno));
    }
    bkt_run("key_form", test_key_form);
    bkt_run("golden_regenerate", test_golden_regenerate);
    bkt_run("golden_load", test_golden_load);
    bkt_run("golden_layout", test_golden_layout);
    rmdir(tmpdir);
    return bkt_finish();
}
