/* Tests for src/bloom.c (classic filter): the payload equals a naive
 * reference of enhanced double hashing, probes spread over the whole array. */
#include "harness.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static void ref_positions(bk_hash_t h, uint64_t m, uint32_t k, uint64_t *pos)
{
    uint64_t x = h.hi, y = h.lo;
    for (uint32_t i = 0; i < k; i++) {
        pos[i] = (uint64_t)(((bki_u128)x * m) >> 64);
        x += y;
        y += i;
    }
}

static void test_matches_reference(void)
{
    const uint32_t ks[] = {1, 2, 7, 13, 64};
    for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
        uint32_t k = ks[t];
        bk_options_t o = {.seed_set = true, .seed = 7 * k};
        bk_filter_t *f;
        /* A size that is not a power of two: reduce() must handle any m. */
        CHECK_OK(bk_filter_create_exact(&f, BK_KIND_CLASSIC, 64 * 1001, k, &o));
        if (!f)
            return;
        CHECK_EQ_U64(f->cells, 64 * 1001);
        uint8_t *ref = calloc(f->nbytes, 1);
        uint64_t pos[64], rng = k;
        for (int i = 0; i < 3000; i++) {
            uint64_t key = bkt_rand(&rng);
            CHECK_OK(bk_filter_add(f, &key, sizeof key, NULL));
            ref_positions(bk_filter_hash(f, &key, sizeof key), f->cells, k, pos);
            for (uint32_t j = 0; j < k; j++)
                ref[pos[j] / 8] |= (uint8_t)(1u << (pos[j] % 8));
        }
        CHECK_MSG(memcmp(ref, f->data, f->nbytes) == 0, "k=%u: payload differs", k);
        for (int i = 0; i < 2000; i++) {
            uint64_t key = bkt_rand(&rng) ^ 0x5555;
            ref_positions(bk_filter_hash(f, &key, sizeof key), f->cells, k, pos);
            bool all = true;
            for (uint32_t j = 0; j < k; j++)
                all = all && (ref[pos[j] / 8] >> (pos[j] % 8) & 1);
            CHECK(bk_filter_contains(f, &key, sizeof key) == all);
        }
        free(ref);
        bk_filter_free(f);
    }
}

static void test_probes_cover_whole_array(void)
{
    /* Every 1/16th of the array receives a share of the bits. */
    bk_filter_t *f;
    CHECK_OK(bk_filter_create_exact(&f, BK_KIND_CLASSIC, 64 * 4096, 4, NULL));
    if (!f)
        return;
    for (uint64_t i = 0; i < 20000; i++)
        bk_filter_add(f, &i, sizeof i, NULL);
    uint64_t part = f->nbytes / 16;
    for (int s = 0; s < 16; s++) {
        uint64_t set = 0;
        for (uint64_t i = s * part; i < (s + 1) * part; i++)
            set += (uint64_t)__builtin_popcount(f->data[i]);
        CHECK_MSG(set > part * 8 / 4, "slice %d has only %llu bits set", s, (unsigned long long)set);
    }
    bk_filter_free(f);
}

int main(void)
{
    bkt_run("matches reference", test_matches_reference);
    bkt_run("probes cover the whole array", test_probes_cover_whole_array);
    return bkt_finish();
}
