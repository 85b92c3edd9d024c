/* Tests for src/split.c: the payload equals one built by a plain reference
 * of the layout docs/FORMAT.md gives (Parquet's split block with the key's
 * block from reduce(hi)); every path (one-key, pre-hashed, batches of keys
 * and of hashes, atomic, scalar and AVX2) builds the same bits and answers
 * the same; k is always 8. */
#include "harness.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The eight salts as the Parquet specification lists them. */
static const uint32_t parquet_salt[8] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
                                         0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u};

/* FORMAT.md's rule in bytes and bit numbers: block reduce(hi, blocks);
 * word i gets bit (x * SALT[i] mod 2^32) >> 27, x = lo mod 2^32. */
static void ref_add(uint8_t *payload, uint64_t blocks, bk_hash_t h)
{
    uint64_t block = (uint64_t)(((bki_u128)h.hi * blocks) >> 64);
    uint32_t x = (uint32_t)h.lo;
    for (uint32_t i = 0; i < 8; i++) {
        uint32_t bit = (uint32_t)((uint64_t)x * parquet_salt[i] % 4294967296u) / 134217728u;
        uint64_t index = block * 256 + i * 32 + bit;
        payload[index / 8] |= (uint8_t)(1u << (index % 8));
    }
}

static bool ref_contains(const uint8_t *payload, uint64_t blocks, bk_hash_t h)
{
    uint8_t *probe = calloc(blocks * 32, 1);
    ref_add(probe, blocks, h);
    bool all = true;
    for (uint64_t i = 0; i < blocks * 32; i++)
        if ((probe[i] & payload[i]) != probe[i])
            all = false;
    free(probe);
    return all;
}

static bk_filter_t *make_split(uint64_t blocks, uint64_t seed)
{
    bk_options_t o = {.seed_set = true, .seed = seed};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create_exact(&f, BK_KIND_SPLIT, 256 * blocks, 8, &o));
    return f;
}

/* On each instruction set: one-key adds build the reference's payload, and
 * one-key and pre-hashed lookups answer as the reference does. */
static void test_matches_reference_layout(void)
{
    int was = bki_simd_set(BKI_SIMD_SCALAR);
    for (int level = BKI_SIMD_SCALAR; level <= bki_simd_available(); level++) {
        bki_simd_set(level);
        bk_filter_t *f = make_split(37, 77 + (uint64_t)level);
        if (!f)
            break;
        CHECK(f->kind == BK_KIND_SPLIT && f->k == 8 && f->lines == 37 && f->nbytes == 37 * 32);
        uint8_t *ref = calloc(f->nbytes, 1);
        uint64_t rng = 5, fresh = 0;
        for (int i = 0; i < 1500; i++) {
            char key[24];
            int len = snprintf(key, sizeof key, "k%llu", (unsigned long long)bkt_rand(&rng));
            bool was_new;
            CHECK_OK(bk_filter_add(f, key, (size_t)len, &was_new));
            fresh += was_new;
            ref_add(ref, f->lines, bk_filter_hash(f, key, (size_t)len));
        }
        CHECK_MSG(memcmp(ref, f->data, f->nbytes) == 0, "level %d: payload differs", level);
        CHECK_EQ_U64(bk_filter_items(f), fresh);
        size_t disagree = 0, hits = 0;
        for (int i = 0; i < 400; i++) {
            uint64_t key = bkt_rand(&rng);
            bk_hash_t h = bk_filter_hash(f, &key, sizeof key);
            bool want = ref_contains(ref, f->lines, h);
            disagree += bk_filter_contains(f, &key, sizeof key) != want;
            disagree += bk_filter_contains_hash(f, h) != want;
            hits += want;
        }
        CHECK_MSG(disagree == 0, "level %d: %zu answers differ", level, disagree);
        CHECK(hits > 0 && hits < 400); /* crowded: both answers occur */
        free(ref);
        bk_filter_free(f);
    }
    bki_simd_set(was);
}

/* A key alone sets 8 bits, one in each 32-bit word of one 32-byte block. */
static void test_one_bit_per_word(void)
{
    bk_filter_t *f = make_split(1000, 3);
    if (!f)
        return;
    for (int t = 0; t < 50; t++) {
        bk_filter_clear(f);
        uint64_t key = (uint64_t)t * 0x9E3779B97F4A7C15u;
        bk_hash_t h = bk_filter_hash(f, &key, sizeof key);
        bool was_new = false;
        CHECK_OK(bk_filter_add_hash(f, h, &was_new));
        CHECK(was_new);
        uint64_t block = bki_reduce(h.hi, f->lines);
        const uint32_t *w = (const uint32_t *)(const void *)f->data;
        size_t outside = 0, bad_words = 0;
        for (uint64_t i = 0; i < f->lines * 8; i++) {
            if (i / 8 != block)
                outside += w[i] != 0;
            else
                bad_words += __builtin_popcount(w[i]) != 1;
        }
        CHECK_MSG(outside == 0 && bad_words == 0, "key %d: %zu words outside, %zu not one bit", t,
                  outside, bad_words);
        CHECK_OK(bk_filter_add_hash(f, h, &was_new));
        CHECK(!was_new);
    }
    bk_filter_free(f);
}

/* Keys of several lengths (XXH3 treats 0, 1-3, 4-8, 9-16 and longer keys
 * differently; the one-key path has its own 8-byte case). */
static void make_keys(uint64_t *rng, size_t n, uint8_t *bytes, bk_key_t *keys)
{
    static const size_t lens[] = {0, 1, 3, 4, 8, 8, 8, 9, 16, 17, 66, 200};
    for (size_t i = 0; i < n; i++) {
        for (size_t b = 0; b < 200; b++)
            bytes[i * 200 + b] = (uint8_t)bkt_rand(rng);
        keys[i].ptr = bytes + i * 200;
        keys[i].len = lens[i % (sizeof lens / sizeof lens[0])];
    }
    for (size_t i = 40; i < n; i += 37) /* repeats: not new the second time */
        keys[i] = keys[i - 11];
}

/* Every way to add builds the same payload, the same new-key flags and the
 * same item count; every way to look up gives the same answers. Run for
 * XXH3 and a classic hash, on each instruction set, at a size under the
 * batch pipeline's threshold and one over it. */
static void test_all_paths_agree(void)
{
    static const bk_hash_id_t hashes[] = {BK_HASH_XXH3_MIX8, BK_HASH_XXH3, BK_HASH_SDBM};
    size_t n = 6000;
    uint8_t *bytes = malloc(n * 200);
    bk_key_t *keys = malloc(n * sizeof *keys);
    bk_hash_t *hs = malloc(n * sizeof *hs);
    bool *flag[5], *out = malloc(n), *out2 = malloc(n);
    for (int p = 0; p < 5; p++)
        flag[p] = malloc(n);
    bool allocated = bytes && keys && hs && out && out2;
    for (int p = 0; p < 5; p++)
        allocated = allocated && flag[p];
    CHECK(allocated);
    if (!allocated)
        goto done;
    int was = bki_simd_set(BKI_SIMD_SCALAR);
    for (int level = BKI_SIMD_SCALAR; level <= bki_simd_available(); level++) {
        bki_simd_set(level);
        for (int t = 0; t < 6; t++) {
            bk_options_t o = {.hash = hashes[t % 3], .seed_set = true, .seed = 40 + (uint64_t)t};
            uint64_t blocks = t < 3 ? 150 : (UINT64_C(2) << 20) / 32; /* 4.8 KB, 2 MB */
            bk_filter_t *f[5] = {NULL};
            for (int p = 0; p < 5; p++)
                CHECK_OK(bk_filter_create_exact(&f[p], BK_KIND_SPLIT, 256 * blocks, 8, &o));
            if (!f[4])
                continue;
            uint64_t rng = 9 + (uint64_t)t;
            make_keys(&rng, n, bytes, keys);
            for (size_t i = 0; i < n; i++) {
                hs[i] = bk_filter_hash(f[0], keys[i].ptr, keys[i].len);
                CHECK_OK(bk_filter_add(f[0], keys[i].ptr, keys[i].len, &flag[0][i]));
                CHECK_OK(bk_filter_add_hash(f[1], hs[i], &flag[1][i]));
                CHECK_OK(bk_filter_add_atomic(f[4], keys[i].ptr, keys[i].len, &flag[4][i]));
            }
            uint64_t fresh2 = 0, fresh3 = 0;
            CHECK_OK(bk_filter_add_batch(f[2], keys, n, flag[2], &fresh2));
            CHECK_OK(bk_filter_add_hash_batch(f[3], hs, n, flag[3], &fresh3));
            CHECK_EQ_U64(fresh2, bk_filter_items(f[0]));
            CHECK_EQ_U64(fresh3, bk_filter_items(f[0]));
            for (int p = 1; p < 5; p++) {
                CHECK_MSG(memcmp(f[0]->data, f[p]->data, f[0]->nbytes) == 0,
                          "level %d case %d path %d: payload differs", level, t, p);
                CHECK_MSG(memcmp(flag[0], flag[p], n) == 0,
                          "level %d case %d path %d: new-key flags differ", level, t, p);
                CHECK_EQ_U64(bk_filter_items(f[p]), bk_filter_items(f[0]));
            }
            CHECK(bk_filter_items(f[0]) < n); /* the repeats were not counted */
            /* Lookups: the added keys (all present) and fresh ones. */
            for (int round = 0; round < 2; round++) {
                if (round == 1) {
                    make_keys(&rng, n, bytes, keys);
                    for (size_t i = 0; i < n; i++)
                        hs[i] = bk_filter_hash(f[0], keys[i].ptr, keys[i].len);
                }
                size_t hits = bk_filter_contains_batch(f[0], keys, n, out);
                CHECK_EQ_U64(bk_filter_contains_hash_batch(f[0], hs, n, out2), hits);
                size_t differ = memcmp(out, out2, n) != 0;
                for (size_t i = 0; i < n; i++) {
                    differ += bk_filter_contains(f[0], keys[i].ptr, keys[i].len) != out[i];
                    differ += bk_filter_contains_hash(f[0], hs[i]) != out[i];
                }
                CHECK_MSG(differ == 0, "level %d case %d round %d: %zu answers differ", level, t,
                          round, differ);
                if (round == 0)
                    CHECK_EQ_U64(hits, n); /* no false negatives */
                else if (t < 2)
                    CHECK(hits > 0 && hits < n); /* crowded: both answers */
            }
            for (int p = 0; p < 5; p++)
                bk_filter_free(f[p]);
        }
    }
    bki_simd_set(was);
done:
    free(bytes);
    free(keys);
    free(hs);
    free(out);
    free(out2);
    for (int p = 0; p < 5; p++)
        free(flag[p]);
}

/* k is 8: any other is refused; cells are rounded up to whole blocks. */
static void test_fixed_k(void)
{
    bk_filter_t *f = NULL;
    for (uint32_t k = 0; k <= 17; k++) {
        bk_status_t st = bk_filter_create_exact(&f, BK_KIND_SPLIT, 256 * 4, k, NULL);
        if (k == 8) {
            CHECK_OK(st);
            bk_filter_free(f);
        } else {
            CHECK_MSG(st == BK_EINVAL, "k=%u accepted", k);
        }
        f = NULL;
    }
    CHECK_OK(bk_filter_create_exact(&f, BK_KIND_SPLIT, 256 * 4 + 64, 8, NULL));
    if (f) /* rounded up to whole 32-byte blocks */
        CHECK(f->cells == 256 * 5 && f->lines == 5 && f->nbytes == 160);
    bk_filter_free(f);
    bk_plan_t plan;
    CHECK_OK(bk_plan(BK_KIND_SPLIT, 1000000, 0.05, &plan));
    CHECK(plan.kind == BK_KIND_SPLIT && plan.k == 8 && plan.cells % 256 == 0);
}

/* At capacity the measured FPR is within the target, and no added key is
 * ever missed, across the band where split is the default and outside it. */
static void test_fpr_at_capacity(void)
{
    static const double targets[] = {0.05, 0.01, 0.004, 0.001};
    uint64_t n = bkt_scaled(200000);
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        bk_options_t o = {.kind = BK_KIND_SPLIT, .seed_set = true, .seed = 1 + t};
        bk_filter_t *f = NULL;
        CHECK_OK(bk_filter_create(&f, n, targets[t], &o));
        if (!f)
            return;
        uint64_t missed = 0, fp = 0, queries = 4 * n;
        for (uint64_t i = 0; i < n; i++)
            CHECK_OK(bk_filter_add(f, &i, sizeof i, NULL));
        for (uint64_t i = 0; i < n; i++)
            missed += !bk_filter_contains(f, &i, sizeof i);
        for (uint64_t i = n; i < n + queries; i++)
            fp += bk_filter_contains(f, &i, sizeof i);
        double rate = (double)fp / (double)queries;
        CHECK_EQ_U64(missed, 0);
        CHECK_MSG(rate <= targets[t], "p=%g: measured %g", targets[t], rate);
        CHECK_MSG(rate >= targets[t] * 0.5, "p=%g: measured %g (sized far too large?)",
                  targets[t], rate);
        bk_filter_free(f);
    }
}

int main(void)
{
    bkt_run("matches reference layout", test_matches_reference_layout);
    bkt_run("one bit in each word of one block", test_one_bit_per_word);
    bkt_run("all paths agree", test_all_paths_agree);
    bkt_run("k fixed at 8", test_fixed_k);
    bkt_run("FPR at capacity", test_fpr_at_capacity);
    return bkt_finish();
}
