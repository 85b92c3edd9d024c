/* Tests for src/blocked.c: the payload built by the library equals one built
 * by a naive reference of the documented layout; the AVX2 and scalar paths
 * build bit-identical filters and answer identically. */
#include "harness.h"
#include "internal.h"
#include "batch.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The layout as docs/FORMAT.md and blocked.c describe it, written plainly:
 * bytes and bit numbers, no lanes-as-words, no SIMD. */
static void ref_add(uint8_t *payload, uint64_t lines, uint32_t k, const uint32_t *salt, bk_hash_t h)
{
    uint64_t line = (uint64_t)(((bki_u128)h.hi * lines) >> 64);
    uint32_t x = (uint32_t)h.lo;
    uint32_t r = (uint32_t)(h.lo >> 32) % 16;
    uint32_t s = 2 * ((uint32_t)(h.lo >> 36) % 8) + 1;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t lane = (r + i * s) % 16;
        uint32_t bit = (uint32_t)((uint64_t)x * salt[lane] % 4294967296u) / 134217728u;
        uint64_t index = line * 512 + lane * 32 + bit;
        payload[index / 8] |= (uint8_t)(1u << (index % 8));
    }
}

static bool ref_contains(const uint8_t *payload, uint64_t lines, uint32_t k, const uint32_t *salt,
                         bk_hash_t h)
{
    uint8_t *probe = calloc(lines * 64, 1);
    ref_add(probe, lines, k, salt, h);
    bool all = true;
    for (uint64_t i = 0; i < lines * 64; i++)
        if ((probe[i] & payload[i]) != probe[i])
            all = false;
    free(probe);
    return all;
}

static void test_matches_reference_layout(void)
{
    const uint32_t *salt = bki_lane_salt;
    for (uint32_t k = 1; k <= 16; k += 5) {
        bk_options_t o = {.kind = BK_KIND_BLOCKED, .seed_set = true, .seed = 99 + k};
        bk_filter_t *f;
        CHECK_OK(bk_filter_create_exact(&f, BK_KIND_BLOCKED, 512 * 37, k, &o));
        if (!f)
            return;
        uint8_t *ref = calloc(f->nbytes, 1);
        uint64_t rng = k;
        for (int i = 0; i < 2000; i++) {
            char key[24];
            int len = snprintf(key, sizeof key, "k%llu", (unsigned long long)bkt_rand(&rng));
            bool was_new;
            CHECK_OK(bk_filter_add(f, key, (size_t)len, &was_new));
            ref_add(ref, f->lines, k, salt, bk_filter_hash(f, key, (size_t)len));
        }
        CHECK_MSG(memcmp(ref, f->data, f->nbytes) == 0, "k=%u: payload differs from reference", k);
        /* Queries agree with the reference on present and absent keys. */
        for (int i = 0; i < 300; i++) {
            char key[24];
            int len = snprintf(key, sizeof key, "q%d", i);
            bk_hash_t h = bk_filter_hash(f, key, (size_t)len);
            CHECK(bk_filter_contains(f, key, (size_t)len) == ref_contains(ref, f->lines, k, salt, h));
        }
        free(ref);
        bk_filter_free(f);
    }
}

static void test_k_distinct_bits_per_key(void)
{
    /* A key alone in an empty filter sets exactly k bits, all in one line. */
    for (uint32_t k = 1; k <= 16; k++) {
        bk_filter_t *f;
        CHECK_OK(bk_filter_create_exact(&f, BK_KIND_BLOCKED, 512 * 8, k, NULL));
        if (!f)
            return;
        bk_hash_t h = bk_filter_hash(f, "solo", 4);
        bool was_new;
        CHECK_OK(bk_filter_add_hash(f, h, &was_new));
        CHECK(was_new);
        CHECK_EQ_U64(bki_cells_set(f), k);
        uint64_t line = bki_reduce(h.hi, f->lines);
        for (uint64_t i = 0; i < f->nbytes; i++)
            if (f->data[i])
                CHECK(i / 64 == line);
        bk_filter_free(f);
    }
}

static void test_simd_and_scalar_identical(void)
{
    if (!(bki_simd_available() >= BKI_SIMD_AVX2)) {
        printf("  (no AVX2 on this CPU: comparing the scalar path with itself is pointless; "
               "checking the reference layout only)\n");
        return;
    }
    uint64_t n = bkt_scaled(300000);
    for (uint32_t k = 1; k <= 16; k++) {
        bk_options_t o = {.seed_set = true, .seed = 1000 + k};
        bk_filter_t *simd, *scalar;
        CHECK_OK(bk_filter_create_exact(&simd, BK_KIND_BLOCKED, 512 * 4096, k, &o));
        CHECK_OK(bk_filter_create_exact(&scalar, BK_KIND_BLOCKED, 512 * 4096, k, &o));
        if (!simd || !scalar)
            return;
        uint64_t rng = k, new_simd = 0, new_scalar = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t key = bkt_rand(&rng);
            bk_hash_t h = bk_filter_hash(simd, &key, sizeof key);
            bki_simd_force_scalar(false);
            new_simd += bki_blocked_add(simd, h);
            bki_simd_force_scalar(true);
            new_scalar += bki_blocked_add(scalar, h);
        }
        CHECK_MSG(memcmp(simd->data, scalar->data, simd->nbytes) == 0, "k=%u: payloads differ", k);
        CHECK_EQ_U64(new_simd, new_scalar);
        unsigned disagree = 0;
        for (uint64_t i = 0; i < 20000; i++) {
            uint64_t key = bkt_rand(&rng) | 1;
            bk_hash_t h = bk_filter_hash(simd, &key, sizeof key);
            bki_simd_force_scalar(false);
            bool a = bki_blocked_contains(simd, h);
            bki_simd_force_scalar(true);
            bool b = bki_blocked_contains(simd, h);
            disagree += a != b;
        }
        CHECK_EQ_U64(disagree, 0);
        bki_simd_force_scalar(false);
        bk_filter_free(simd);
        bk_filter_free(scalar);
    }
}

/* Keys of every length class XXH3 treats differently (0, 1-3, 4-8, 9-16,
 * 17-128, 129-240, longer), plus a NULL pointer with length 0. */
static void make_keys(uint64_t *rng, size_t n, uint8_t *bytes, bk_key_t *keys)
{
    static const size_t lens[] = {0, 1, 3, 4, 8, 9, 16, 17, 66, 128, 129, 240, 241, 300};
    for (size_t i = 0; i < n; i++) {
        size_t len = lens[bkt_rand(rng) % (sizeof lens / sizeof lens[0])];
        uint8_t *p = bytes + i * 300;
        bkt_rand_bytes(rng, p, len);
        keys[i].ptr = i % 97 == 5 && len == 0 ? NULL : p;
        keys[i].len = len;
    }
}

/* bk_filter_contains_batch on a blocked filter runs its own loop (hash
 * inlined, per-CPU probe, prefetch pipeline on large payloads): it must
 * answer exactly what the one-at-a-time calls answer, on every probe path,
 * for batch lengths around the pipeline depth, both payload sizes (direct
 * and pipelined), and the inlined hashes (the default and XXH3) and another. */
static void test_batch_matches_single(void)
{
    static const uint64_t cells[] = {512 * 64, 512 * (BKI_BATCH_PIPELINE_MIN_BYTES / 64 + 3)};
    static const bk_hash_id_t hashes[] = {BK_HASH_XXH3_MIX8, BK_HASH_XXH3, BK_HASH_FNV1A};
    static const size_t lengths[] = {0, 1, BKI_BATCH_AHEAD - 1, BKI_BATCH_AHEAD,
                                     BKI_BATCH_AHEAD + 1, 3 * BKI_BATCH_AHEAD + 7, 2000};
    size_t nmax = (size_t)bkt_scaled(2000) < 40 ? 40 : (size_t)bkt_scaled(2000);
    uint8_t *bytes = malloc(nmax * 300);
    bk_key_t *keys = malloc(nmax * sizeof *keys);
    bool *out = malloc(nmax);
    CHECK(bytes && keys && out);
    if (!bytes || !keys || !out)
        goto done;
    int was = bki_simd_set(BKI_SIMD_SCALAR);
    for (int level = BKI_SIMD_SCALAR; level <= bki_simd_available(); level++) {
        bki_simd_set(level);
        for (size_t c = 0; c < 2; c++) {
            for (size_t hh = 0; hh < 3; hh++) {
                bk_options_t o = {.hash = hashes[hh], .seed_set = true, .seed = 77 + c};
                bk_filter_t *f;
                uint32_t k = 3 + (uint32_t)(c * 5 + hh * 2); /* 3, 5, 7; 8, 10, 12 */
                CHECK_OK(bk_filter_create_exact(&f, BK_KIND_BLOCKED, cells[c], k, &o));
                if (!f)
                    continue;
                CHECK(c == 0 ? f->nbytes < BKI_BATCH_PIPELINE_MIN_BYTES
                             : f->nbytes >= BKI_BATCH_PIPELINE_MIN_BYTES);
                uint64_t rng = 5 + c + 10 * hh;
                make_keys(&rng, nmax, bytes, keys);
                /* Every third key is added; a small payload also fills up
                 * enough that many of the others are false positives. */
                for (size_t i = 0; i < nmax; i += 3)
                    CHECK_OK(bk_filter_add(f, keys[i].ptr, keys[i].len, NULL));
                for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
                    size_t n = lengths[li] < nmax ? lengths[li] : nmax;
                    size_t off = li % 3; /* start on an added key or not */
                    if (off + n > nmax)
                        n = nmax - off;
                    memset(out, 0xA5, n);
                    size_t hits = bk_filter_contains_batch(f, keys + off, n, out);
                    size_t want = 0, wrong = 0, missed = 0;
                    for (size_t i = 0; i < n; i++) {
                        const bk_key_t *key = &keys[off + i];
                        bool single = bk_filter_contains(f, key->ptr, key->len);
                        want += single;
                        wrong += out[i] != single;
                        missed += (off + i) % 3 == 0 && !out[i];
                    }
                    CHECK_MSG(wrong == 0 && missed == 0 && hits == want,
                              "level %d, %llu cells, hash %d, n %zu: %zu differ, %zu added "
                              "keys missed, %zu hits (want %zu)",
                              level, (unsigned long long)cells[c], (int)hashes[hh], n, wrong,
                              missed, hits, want);
                }
                bk_filter_free(f);
            }
        }
    }
    bki_simd_set(was);
done:
    free(bytes);
    free(keys);
    free(out);
}

/* bk_filter_add_batch on a blocked filter (its own loop too) must leave the
 * payload, the new-key flags, the count and the item total exactly as the
 * one-at-a-time calls do, keys repeated within a batch included. */
static void test_add_batch_matches_single(void)
{
    static const uint64_t cells[] = {512 * 64, 512 * (BKI_BATCH_PIPELINE_MIN_BYTES / 64 + 3)};
    static const bk_hash_id_t hashes[] = {BK_HASH_XXH3_MIX8, BK_HASH_XXH3, BK_HASH_DJB};
    size_t n = (size_t)bkt_scaled(3000) < 200 ? 200 : (size_t)bkt_scaled(3000);
    uint8_t *bytes = malloc(n * 300);
    bk_key_t *keys = malloc(n * sizeof *keys);
    bool *flags = malloc(n), *single = malloc(n);
    CHECK(bytes && keys && flags && single);
    if (!bytes || !keys || !flags || !single)
        goto done;
    int was = bki_simd_set(BKI_SIMD_SCALAR);
    for (int level = BKI_SIMD_SCALAR; level <= bki_simd_available(); level++) {
        for (size_t c = 0; c < 2; c++) {
            for (size_t hh = 0; hh < 3; hh++) {
                bk_options_t o = {.hash = hashes[hh], .seed_set = true, .seed = 300 + c};
                bk_filter_t *batch, *ref;
                uint32_t k = 2 + (uint32_t)(c * 7 + hh * 3); /* 2, 5, 8; 9, 12, 15 */
                CHECK_OK(bk_filter_create_exact(&batch, BK_KIND_BLOCKED, cells[c], k, &o));
                CHECK_OK(bk_filter_create_exact(&ref, BK_KIND_BLOCKED, cells[c], k, &o));
                if (!batch || !ref)
                    continue;
                uint64_t rng = 40 + c + 10 * hh;
                make_keys(&rng, n, bytes, keys);
                /* Repeats: some keys again, near (inside the ring) and far. */
                for (size_t i = 50; i < n; i += 37)
                    keys[i] = keys[i - 1 - (i % 3 ? 3 : 40)];
                uint64_t ref_new = 0;
                bki_simd_set(BKI_SIMD_SCALAR);
                for (size_t i = 0; i < n; i++) {
                    CHECK_OK(bk_filter_add(ref, keys[i].ptr, keys[i].len, &single[i]));
                    ref_new += single[i];
                }
                bki_simd_set(level);
                /* Two batches: the second starts on a filled filter. */
                size_t half = n / 2 + 5;
                uint64_t n1 = 99, n2 = 99;
                memset(flags, 0xA5, n);
                CHECK_OK(bk_filter_add_batch(batch, keys, half, flags, &n1));
                CHECK_OK(bk_filter_add_batch(batch, keys + half, n - half, flags + half, &n2));
                size_t differ = 0;
                for (size_t i = 0; i < n; i++)
                    differ += flags[i] != single[i];
                CHECK_MSG(differ == 0, "level %d, %llu cells, hash %d: %zu flags differ", level,
                          (unsigned long long)cells[c], (int)hashes[hh], differ);
                CHECK_EQ_U64(n1 + n2, ref_new);
                CHECK(ref_new < n); /* the repeats were not new */
                CHECK_EQ_U64(bk_filter_items(batch), ref_new);
                CHECK_MSG(memcmp(batch->data, ref->data, ref->nbytes) == 0,
                          "level %d, %llu cells, hash %d: payloads differ", level,
                          (unsigned long long)cells[c], (int)hashes[hh]);
                /* NULL flags are allowed. */
                uint64_t again = 99;
                CHECK_OK(bk_filter_add_batch(batch, keys, n, NULL, &again));
                CHECK_EQ_U64(again, 0);
                bk_filter_free(batch);
                bk_filter_free(ref);
            }
        }
    }
    bki_simd_set(was);
done:
    free(bytes);
    free(keys);
    free(flags);
    free(single);
}

/* bk_filter_add and bk_filter_contains on blocked and blocked2 filters take
 * their own one-key path (hash inlined for short XXH3 keys, a call for the rest):
 * on every probe path, for every XXH3 length class and for a classic hash,
 * they must set the bits, report new keys and count items exactly as the
 * pre-hashed calls do, and answer as they do. */
static void test_one_key_calls_match_hashed(void)
{
    static const bk_hash_id_t hashes[] = {BK_HASH_XXH3_MIX8, BK_HASH_XXH3, BK_HASH_SDBM};
    size_t n = (size_t)bkt_scaled(3000) < 300 ? 300 : (size_t)bkt_scaled(3000);
    uint8_t *bytes = malloc(n * 300);
    bk_key_t *keys = malloc(n * sizeof *keys);
    CHECK(bytes && keys);
    if (!bytes || !keys)
        goto done;
    int was = bki_simd_set(BKI_SIMD_SCALAR);
    for (int level = BKI_SIMD_SCALAR; level <= bki_simd_available(); level++) {
        bki_simd_set(level);
        for (size_t t = 0; t < 6; t++) { /* blocked, blocked2; each hash */
            size_t hh = t % 3;
            bk_kind_t kind = t < 3 ? BK_KIND_BLOCKED : BK_KIND_BLOCKED2;
            bk_options_t o = {.hash = hashes[hh], .seed_set = true, .seed = 900 + t};
            bk_filter_t *one, *hashed;
            CHECK_OK(bk_filter_create_exact(&one, kind, 512 * 40, 6, &o));
            CHECK_OK(bk_filter_create_exact(&hashed, kind, 512 * 40, 6, &o));
            if (!one || !hashed)
                continue;
            uint64_t rng = 11 + hh;
            make_keys(&rng, n, bytes, keys);
            for (size_t i = 30; i < n; i += 29) /* repeats are not new */
                keys[i] = keys[i - 7];
            size_t flags_differ = 0, answers_differ = 0, missed = 0;
            for (size_t i = 0; i < n; i++) {
                bool a = false, b = true;
                CHECK_OK(bk_filter_add(one, keys[i].ptr, keys[i].len, &a));
                bk_hash_t h = bk_filter_hash(hashed, keys[i].ptr, keys[i].len);
                CHECK_OK(bk_filter_add_hash(hashed, h, &b));
                flags_differ += a != b;
                missed += !bk_filter_contains(one, keys[i].ptr, keys[i].len);
            }
            CHECK_MSG(memcmp(one->data, hashed->data, one->nbytes) == 0,
                      "level %d kind %d hash %d: payloads differ", level, (int)kind,
                      (int)hashes[hh]);
            CHECK_EQ_U64(bk_filter_items(one), bk_filter_items(hashed));
            CHECK(bk_filter_items(one) < n); /* the repeats were not counted */
            /* The small filter is crowded: many of these are false positives,
             * so both answers are exercised. */
            size_t hits = 0;
            for (size_t i = 0; i < n; i++) {
                const uint8_t *q = bytes + ((i * 7919) % n) * 300 + 1;
                size_t len = i % 20;
                bool a = bk_filter_contains(one, q, len);
                answers_differ += a != bk_filter_contains_hash(one, bk_filter_hash(one, q, len));
                hits += a;
            }
            CHECK_MSG(flags_differ == 0 && answers_differ == 0 && missed == 0,
                      "level %d kind %d hash %d: %zu flags, %zu answers differ, %zu missed",
                      level, (int)kind, (int)hashes[hh], flags_differ, answers_differ, missed);
            CHECK(hits > 0 && hits < n);
            bk_filter_free(one);
            bk_filter_free(hashed);
        }
    }
    bki_simd_set(was);
done:
    free(bytes);
    free(keys);
}

/* ---- blocked2 ---- */

/* The two-line layout as docs/FORMAT.md describes it: the blocked layout
 * in line reduce(hi) with the bits of lo, and again in line reduce(lo)
 * with the bits of hi. */
static void ref_add2(uint8_t *payload, uint64_t lines, uint32_t k, bk_hash_t h)
{
    bk_hash_t swapped = {h.hi, h.lo};
    ref_add(payload, lines, k, bki_lane_salt, h);
    ref_add(payload, lines, k, bki_lane_salt, swapped);
}

static void test_blocked2_matches_reference(void)
{
    int was = bki_simd_set(BKI_SIMD_SCALAR);
    for (int level = BKI_SIMD_SCALAR; level <= bki_simd_available(); level++) {
        bki_simd_set(level);
        for (uint32_t k = 1; k <= 16; k += 3) {
            bk_options_t o = {.seed_set = true, .seed = 500 + k};
            bk_filter_t *f;
            CHECK_OK(bk_filter_create_exact(&f, BK_KIND_BLOCKED2, 512 * 53, k, &o));
            if (!f)
                continue;
            CHECK(f->kind == BK_KIND_BLOCKED2 && f->k == k && f->lines == 53);
            uint8_t *ref = calloc(f->nbytes, 1);
            uint64_t rng = k, fresh = 0, added[1500];
            for (int i = 0; i < 1500; i++) {
                uint64_t key = added[i] = bkt_rand(&rng);
                bool was_new;
                CHECK_OK(bk_filter_add(f, &key, sizeof key, &was_new));
                fresh += was_new;
                ref_add2(ref, f->lines, k, bk_filter_hash(f, &key, sizeof key));
            }
            CHECK_MSG(memcmp(ref, f->data, f->nbytes) == 0, "level %d k=%u: payload differs", level,
                      k);
            CHECK_EQ_U64(bk_filter_items(f), fresh);
            /* Lookups agree with the reference (a key is in when all 2k
             * bits are set), on added keys and others alternately. */
            size_t disagree = 0, hits = 0;
            uint8_t *probe = calloc(f->nbytes, 1);
            for (int i = 0; i < 400; i++) {
                uint64_t key = i % 2 ? added[i * 3] : bkt_rand(&rng);
                bk_hash_t h = bk_filter_hash(f, &key, sizeof key);
                memset(probe, 0, f->nbytes);
                ref_add2(probe, f->lines, k, h);
                bool want = true;
                for (uint64_t b = 0; b < f->nbytes; b++)
                    want &= (probe[b] & ref[b]) == probe[b];
                bool got = bk_filter_contains(f, &key, sizeof key);
                disagree += got != want;
                hits += got;
            }
            CHECK_MSG(disagree == 0, "level %d k=%u: %zu lookups differ", level, k, disagree);
            CHECK(hits >= 200); /* every added key, and a few false positives */
            free(probe);
            free(ref);
            bk_filter_free(f);
        }
    }
    bki_simd_set(was);
}

/* A key alone sets k bits in line reduce(hi) and k in line reduce(lo). */
static void test_blocked2_two_lines(void)
{
    for (uint32_t k = 1; k <= 16; k++) {
        bk_filter_t *f;
        CHECK_OK(bk_filter_create_exact(&f, BK_KIND_BLOCKED2, 512 * 1000, k, NULL));
        if (!f)
            return;
        bk_hash_t h = bk_filter_hash(f, "solo", 4);
        uint64_t a = bki_reduce(h.hi, f->lines), b = bki_reduce(h.lo, f->lines);
        bool was_new;
        CHECK_OK(bk_filter_add_hash(f, h, &was_new));
        CHECK(was_new);
        CHECK_EQ_U64(bki_cells_set(f), a == b ? bki_cells_set(f) : 2 * k);
        uint64_t in_a = 0, in_b = 0, elsewhere = 0;
        for (uint64_t i = 0; i < f->nbytes; i++) {
            int bits = __builtin_popcount(f->data[i]);
            if (i / 64 == a)
                in_a += bits;
            else if (i / 64 == b)
                in_b += bits;
            else
                elsewhere += bits;
        }
        CHECK(a == b || (in_a == k && in_b == k));
        CHECK_EQ_U64(elsewhere, 0);
        CHECK_OK(bk_filter_add_hash(f, h, &was_new));
        CHECK(!was_new);
        bk_filter_free(f);
    }
}

/* Selecting a probe path changes which one runs, never the answers: the
 * scalar and SIMD paths are told apart here only through the selector. */
static void test_simd_selector(void)
{
    int avail = bki_simd_available();
    CHECK(avail == BKI_SIMD_SCALAR || avail == BKI_SIMD_AVX2);
    CHECK((bki_simd_available() >= BKI_SIMD_AVX2) == (avail >= BKI_SIMD_AVX2));
    int was = bki_simd_set(BKI_SIMD_SCALAR);
    CHECK_EQ_U64(was, avail); /* the best one is chosen at load time */
    CHECK(!bki_simd_force_scalar(false));
    CHECK_EQ_U64(bki_simd_set(avail + 5), avail); /* clamped */
    CHECK_EQ_U64(bki_simd_set(avail), avail);
    CHECK(bki_simd_force_scalar(true) == (avail != BKI_SIMD_SCALAR));
    CHECK_EQ_U64(bki_simd_set(avail), BKI_SIMD_SCALAR);
}

int main(void)
{
    bkt_run("matches reference layout", test_matches_reference_layout);
    bkt_run("k distinct bits in one line", test_k_distinct_bits_per_key);
    bkt_run("simd selector", test_simd_selector);
    bkt_run("simd and scalar identical", test_simd_and_scalar_identical);
    bkt_run("batch lookups match single ones", test_batch_matches_single);
    bkt_run("batch adds match single ones", test_add_batch_matches_single);
    bkt_run("one-key calls match pre-hashed ones", test_one_key_calls_match_hashed);
    bkt_run("blocked2 matches reference layout", test_blocked2_matches_reference);
    bkt_run("blocked2: k bits in each of two lines", test_blocked2_two_lines);
    return bkt_finish();
}
