/* Tests for src/blocked.c: the payload built by the library equals one built
 * by a naive reference of the documented layout; the AVX2 and scalar paths
 * build bit-identical filters and answer identically. */
#include "harness.h"
#include "internal.h"

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
    const uint32_t *salt = bki_blocked_salts();
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
    if (!bki_blocked_have_avx2()) {
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
            bki_blocked_force_scalar(false);
            new_simd += bki_blocked_add(simd, h);
            bki_blocked_force_scalar(true);
            new_scalar += bki_blocked_add(scalar, h);
        }
        CHECK_MSG(memcmp(simd->data, scalar->data, simd->nbytes) == 0, "k=%u: payloads differ", k);
        CHECK_EQ_U64(new_simd, new_scalar);
        unsigned disagree = 0;
        for (uint64_t i = 0; i < 20000; i++) {
            uint64_t key = bkt_rand(&rng) | 1;
            bk_hash_t h = bk_filter_hash(simd, &key, sizeof key);
            bki_blocked_force_scalar(false);
            bool a = bki_blocked_contains(simd, h);
            bki_blocked_force_scalar(true);
            bool b = bki_blocked_contains(simd, h);
            disagree += a != b;
        }
        CHECK_EQ_U64(disagree, 0);
        bki_blocked_force_scalar(false);
        bk_filter_free(simd);
        bk_filter_free(scalar);
    }
}

int main(void)
{
    bkt_run("matches reference layout", test_matches_reference_layout);
    bkt_run("k distinct bits in one line", test_k_distinct_bits_per_key);
    bkt_run("simd and scalar identical", test_simd_and_scalar_identical);
    return bkt_finish();
}
