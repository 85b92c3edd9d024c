/* Tests for src/hash.c: the classic hashes against independent reference
 * computations, XXH3 against a published test vector, seeding, names. */
#include "harness.h"
#include "internal.h"
#include "keyhash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Reference versions written the way the articles' PHP does it: 64-bit
 * arithmetic masked to 32 bits after each step. */
static uint64_t ref_bkdr(const char *s)
{
    uint64_t h = 0;
    for (; *s; s++)
        h = (h * 131 + (unsigned char)*s) & 0xFFFFFFFFu;
    return h;
}

static uint64_t ref_djb(const char *s)
{
    uint64_t h = 5381;
    for (; *s; s++)
        h = (h * 33 + (unsigned char)*s) & 0xFFFFFFFFu;
    return h;
}

static uint64_t ref_sdbm(const char *s)
{
    uint64_t h = 0;
    for (; *s; s++)
        h = ((unsigned char)*s + h * 65599) & 0xFFFFFFFFu; /* (h<<6)+(h<<16)-h */
    return h;
}

static uint64_t ref_rs(const char *s)
{
    uint64_t a = 63689, b = 378551, h = 0;
    for (; *s; s++) {
        h = (h * a + (unsigned char)*s) & 0xFFFFFFFFu;
        a = (a * b) & 0xFFFFFFFFu;
    }
    return h;
}

static uint64_t ref_js(const char *s)
{
    uint64_t h = 1315423911;
    for (; *s; s++)
        h ^= (((h << 5) & 0xFFFFFFFFu) + (unsigned char)*s + (h >> 2)) & 0xFFFFFFFFu;
    return h;
}

static uint64_t ref_fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3u;
    return h;
}

static const char *const samples[] = {
    "", "a", "abc", "http://example.com/index.html", "spam@example.org",
    "\xff\xfe\x80 high bytes", "The quick brown fox jumps over the lazy dog",
};
#define NSAMPLES (sizeof samples / sizeof samples[0])

static void test_classic_hashes_match_reference(void)
{
    for (size_t i = 0; i < NSAMPLES; i++) {
        const char *s = samples[i];
        size_t n = strlen(s);
        CHECK_EQ_U64(bk_hash_raw(BK_HASH_BKDR, 0, s, n), ref_bkdr(s));
        CHECK_EQ_U64(bk_hash_raw(BK_HASH_DJB, 0, s, n), ref_djb(s));
        CHECK_EQ_U64(bk_hash_raw(BK_HASH_SDBM, 0, s, n), ref_sdbm(s));
        CHECK_EQ_U64(bk_hash_raw(BK_HASH_RS, 0, s, n), ref_rs(s));
        CHECK_EQ_U64(bk_hash_raw(BK_HASH_JS, 0, s, n), ref_js(s));
        CHECK_EQ_U64(bk_hash_raw(BK_HASH_FNV1A, 0, s, n), ref_fnv1a(s));
    }
    /* Worked by hand: BKDR("abc") = (97*131 + 98)*131 + 99. */
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_BKDR, 0, "abc", 3), 1677554);
    /* Published FNV-1a 64 vectors. */
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_FNV1A, 0, "", 0), UINT64_C(0xcbf29ce484222325));
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_FNV1A, 0, "a", 1), UINT64_C(0xaf63dc4c8601ec8c));
    /* DEK starts from the length: one char c gives ((1<<5) ^ 0) ^ c. */
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_DEK, 0, "a", 1), 32u ^ 97u);
    /* ELF/PJW of short strings (no high nibble yet) are plain shifts. */
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_ELF, 0, "ab", 2), (97u << 4) + 98u);
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_PJW, 0, "ab", 2), (97u << 4) + 98u);
    /* AP of one char: h ^= (h << 7) ^ (c * (h >> 3)) from 0xAAAAAAAA. */
    uint32_t ap = 0xAAAAAAAAu;
    ap ^= (ap << 7) ^ (97u * (ap >> 3));
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_AP, 0, "a", 1), ap);
}

static void test_elf_pjw_fold_high_nibble(void)
{
    /* Long inputs reach the high nibble; the result must keep it clear. */
    const char *s = "a fairly long key that pushes bits into the top nibble";
    CHECK(bk_hash_raw(BK_HASH_ELF, 0, s, strlen(s)) < 0x10000000u);
    CHECK(bk_hash_raw(BK_HASH_PJW, 0, s, strlen(s)) < 0x10000000u);
}

static void test_xxh3_vector(void)
{
    /* Published XXH3-128 of the empty input, seed 0:
     * 99aa06d3014798d86001c324468d497f (high, low). */
    bk_hash_t h = bk_hash_key(BK_HASH_XXH3, 0, NULL, 0);
    CHECK_EQ_U64(h.hi, UINT64_C(0x99aa06d3014798d8));
    CHECK_EQ_U64(h.lo, UINT64_C(0x6001c324468d497f));
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_XXH3, 0, "", 0), UINT64_C(0x6001c324468d497f));
    /* The default id means xxh3-mix8, which is XXH3 for keys not 8 bytes. */
    bk_hash_t d = bk_hash_key(BK_HASH_DEFAULT, 7, "key", 3);
    bk_hash_t m = bk_hash_key(BK_HASH_XXH3_MIX8, 7, "key", 3);
    bk_hash_t x = bk_hash_key(BK_HASH_XXH3, 7, "key", 3);
    CHECK(d.lo == x.lo && d.hi == x.hi);
    CHECK(m.lo == x.lo && m.hi == x.hi);
}

/* XXH3-128 of short keys, pinned from libxxhash's generic entry point (the
 * length passed at run time). Keys of 8 bytes take their own path in the
 * library (the length fixed at compile time, one load; keyhash.h), so 8 sits
 * between lengths that do not. Checked through bk_hash_key, bk_filter_hash,
 * and the one-key add and lookup of the split and both blocked kinds, which
 * hash inline:
 * a key added one way is found the other way. */
static void test_short_keys_pinned(void)
{
    static const struct {
        size_t len;
        uint64_t lo, hi;
    } want[] = {
        {4, UINT64_C(0x0ea39353230e5e66), UINT64_C(0xe54087318a51676a)},
        {8, UINT64_C(0x15940afae761b3b0), UINT64_C(0x63d944f8bd56b2f0)},
        {12, UINT64_C(0xec0a9b85b85bdf7c), UINT64_C(0xf59b6ef03653c29f)},
        {16, UINT64_C(0xaa5c9a675ae8defe), UINT64_C(0x66f3e0a106e7e1c4)},
    };
    const char *text = "0123456789abcdefghij";
    const uint64_t seed = UINT64_C(0x0123456789abcdef);
    static const bk_kind_t kinds[] = {BK_KIND_BLOCKED, BK_KIND_BLOCKED2, BK_KIND_SPLIT};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        /* The key in a local, as a caller making one-key calls has it. */
        unsigned char key[16];
        memcpy(key, text, want[i].len);
        bk_hash_t h = bk_hash_key(BK_HASH_XXH3, seed, key, want[i].len);
        CHECK_EQ_U64(h.lo, want[i].lo);
        CHECK_EQ_U64(h.hi, want[i].hi);
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            bk_options_t o = {0};
            o.kind = kinds[k];
            o.hash = BK_HASH_XXH3;
            o.seed_set = true;
            o.seed = seed;
            bk_filter_t *by_key = NULL, *by_hash = NULL;
            CHECK_OK(bk_filter_create(&by_key, 1000, 1e-6, &o));
            CHECK_OK(bk_filter_create(&by_hash, 1000, 1e-6, &o));
            if (!by_key || !by_hash) {
                bk_filter_free(by_key);
                bk_filter_free(by_hash);
                return;
            }
            bk_hash_t fh = bk_filter_hash(by_key, key, want[i].len);
            CHECK_EQ_U64(fh.lo, want[i].lo);
            CHECK_EQ_U64(fh.hi, want[i].hi);
            bool added = false;
            CHECK_OK(bk_filter_add(by_key, key, want[i].len, &added));
            CHECK(added);
            CHECK(bk_filter_contains_hash(by_key, h));
            CHECK_OK(bk_filter_add_hash(by_hash, h, NULL));
            CHECK(bk_filter_contains(by_hash, key, want[i].len));
            /* Nothing else: one key in a 1e-6 filter. */
            CHECK(!bk_filter_contains(by_hash, text + 1, want[i].len));
            bk_filter_free(by_key);
            bk_filter_free(by_hash);
        }
    }
}

/* The one-key calls' 8-byte hash (keyhash.h: the seed's part computed once
 * per filter) is XXH3-128's, for any key and seed: seeds whose halves
 * differ, are zero or all ones, and random ones; keys likewise. Checked
 * against xxhash.h's own entry point, and through filters of both kinds
 * with one-key calls (a key added by one path is found by the other). */
/* Seeds and 8-byte keys at the edges: zero, all ones, halves that differ,
 * the top bit alone, and the default mixer's own constant. */
static const uint64_t edge[] = {0,
                                1,
                                UINT64_MAX,
                                UINT64_C(0xffffffff),
                                UINT64_C(0x100000000),
                                UINT64_C(0x0123456789abcdef),
                                UINT64_C(0x8000000000000000),
                                UINT64_C(0x8ebc6af09c88c6e3)};
#define NEDGE (sizeof edge / sizeof edge[0])

/* Case i of 20,000: every pair of edge values first, then random ones. */
static void edge_or_random(size_t i, uint64_t *state, uint64_t *seed, uint64_t *key)
{
    bool at_edge = i < NEDGE * NEDGE;
    *seed = at_edge ? edge[i / NEDGE] : bkt_rand(state);
    *key = at_edge ? edge[i % NEDGE] : bkt_rand(state);
}

static void test_key8_path_is_xxh3(void)
{
    const size_t nedge = NEDGE;
    uint64_t state = UINT64_C(0x9e3779b97f4a7c15), mismatches = 0;
    for (size_t i = 0; i < 20000; i++) {
        uint64_t seed, key;
        edge_or_random(i, &state, &seed, &key);
        unsigned char bytes[8];
        memcpy(bytes, &key, 8);
        XXH128_hash_t want = XXH3_128bits_withSeed(bytes, 8, seed);
        XXH128_hash_t got = bki_xxh3_key8(bki_key8_le(bytes), bki_xxh3_key8_flip(seed));
        mismatches += want.low64 != got.low64 || want.high64 != got.high64;
    }
    CHECK_EQ_U64(mismatches, 0);

    static const bk_kind_t kinds[] = {BK_KIND_SPLIT, BK_KIND_BLOCKED, BK_KIND_BLOCKED2};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (size_t s = 0; s < nedge; s++) {
            bk_options_t o = {0};
            o.kind = kinds[k];
            o.hash = BK_HASH_XXH3;
            o.seed_set = true;
            o.seed = edge[s];
            bk_filter_t *f = NULL;
            CHECK_OK(bk_filter_create(&f, 1000, 1e-4, &o));
            if (!f)
                return;
            uint64_t missed = 0;
            for (uint64_t key = 0; key < 200; key++) {
                uint64_t v = key * UINT64_C(0x9e3779b97f4a7c15);
                CHECK_OK(bk_filter_add(f, &v, 8, NULL));
                missed += !bk_filter_contains_hash(f, bk_hash_key(BK_HASH_XXH3, edge[s], &v, 8));
            }
            CHECK_EQ_U64(missed, 0);
            bk_filter_free(f);
        }
    }
}

/* The default hash (xxh3-mix8) of an 8-byte key is FORMAT.md's function
 * (bkt_spec_mix8, written apart from the library's), through every way a
 * key reaches it: bk_hash_key with the id and with BK_HASH_DEFAULT, a
 * default filter's bk_filter_hash, and the one-key calls of the kinds that
 * have their own (split, blocked, blocked2) and of one that does not
 * (classic): a key added by one path is found by the other. Seeds and keys
 * at the edges (0, all ones, halves that differ) and random. Two values are
 * pinned as numbers, so that the spec and the code cannot change together. */
static void test_mix8_is_the_spec(void)
{
    const size_t nedge = NEDGE;
    uint64_t state = UINT64_C(0x5eed), mismatches = 0;
    for (size_t i = 0; i < 20000; i++) {
        uint64_t seed, key;
        edge_or_random(i, &state, &seed, &key);
        unsigned char bytes[8];
        for (int b = 0; b < 8; b++)
            bytes[b] = (unsigned char)(key >> (8 * b));
        uint64_t lo, hi;
        bkt_spec_mix8(key, seed, &lo, &hi);
        bk_hash_t a = bk_hash_key(BK_HASH_XXH3_MIX8, seed, bytes, 8);
        bk_hash_t d = bk_hash_key(BK_HASH_DEFAULT, seed, bytes, 8);
        mismatches += a.lo != lo || a.hi != hi || d.lo != lo || d.hi != hi;
    }
    CHECK_EQ_U64(mismatches, 0);
    bk_hash_t pin = bk_hash_key(BK_HASH_XXH3_MIX8, UINT64_C(0x0123456789abcdef), "01234567", 8);
    CHECK_EQ_U64(pin.lo, UINT64_C(0xfd5fa5202de59667));
    CHECK_EQ_U64(pin.hi, UINT64_C(0x2d6460ad6401cc65));
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_XXH3_MIX8, UINT64_C(0x0123456789abcdef), "01234567", 8),
                 UINT64_C(0xfd5fa5202de59667));

    static const bk_kind_t kinds[] = {BK_KIND_SPLIT, BK_KIND_BLOCKED, BK_KIND_BLOCKED2,
                                      BK_KIND_CLASSIC, BK_KIND_CUCKOO};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (size_t s = 0; s < nedge; s++) {
            bk_options_t o = {.kind = kinds[k], .seed_set = true, .seed = edge[s]};
            bk_filter_t *by_key = NULL, *by_hash = NULL;
            CHECK_OK(bk_filter_create(&by_key, 1000, 1e-4, &o));
            CHECK_OK(bk_filter_create(&by_hash, 1000, 1e-4, &o));
            if (!by_key || !by_hash) {
                bk_filter_free(by_key);
                bk_filter_free(by_hash);
                return;
            }
            bk_filter_info_t info;
            bk_filter_info(by_key, &info);
            CHECK(info.hash == BK_HASH_XXH3_MIX8);
            uint64_t missed = 0, wrong = 0;
            for (uint64_t i = 0; i < 200; i++) {
                uint64_t v = i * UINT64_C(0x9e3779b97f4a7c15), lo, hi;
                bkt_spec_mix8(v, edge[s], &lo, &hi);
                bk_hash_t spec = {lo, hi};
                bk_hash_t fh = bk_filter_hash(by_key, &v, 8);
                wrong += fh.lo != lo || fh.hi != hi;
                CHECK_OK(bk_filter_add(by_key, &v, 8, NULL));
                CHECK_OK(bk_filter_add_hash(by_hash, spec, NULL));
                missed += !bk_filter_contains_hash(by_key, spec) || !bk_filter_contains(by_hash, &v, 8);
            }
            CHECK_EQ_U64(wrong, 0);
            CHECK_MSG(missed == 0, "%s seed %zu: %llu missed", bk_kind_name(kinds[k]), s,
                      (unsigned long long)missed);
            bk_filter_free(by_key);
            bk_filter_free(by_hash);
        }
    }
    /* A cuckoo filter asked for XXH3 (as every one was before the default
     * reached the kind) keeps it: its one-key calls, its batch calls and
     * its calls on hashes agree on XXH3's (lo, hi). */
    bk_options_t c = {.kind = BK_KIND_CUCKOO, .hash = BK_HASH_XXH3, .seed_set = true, .seed = 9};
    bk_filter_t *cf = NULL;
    CHECK_OK(bk_filter_create(&cf, 1000, 0.01, &c));
    if (cf) {
        bk_filter_info_t info;
        bk_filter_info(cf, &info);
        CHECK(info.hash == BK_HASH_XXH3);
        uint64_t missed = 0;
        for (uint64_t i = 0; i < 500; i++) {
            uint64_t v = i * UINT64_C(0x9e3779b97f4a7c15);
            CHECK_OK(bk_filter_add_hash(cf, bk_hash_key(BK_HASH_XXH3, 9, &v, 8), NULL));
            bk_key_t one = {&v, 8};
            bool in = false;
            missed += !bk_filter_contains(cf, &v, 8) + (bk_filter_contains_batch(cf, &one, 1, &in) != 1);
        }
        CHECK_EQ_U64(missed, 0);
        bk_filter_free(cf);
    }
    /* Other hashes do not give a cuckoo filter 128 mixed bits. */
    c.hash = BK_HASH_BKDR;
    CHECK_STATUS(bk_filter_create(&cf, 1000, 0.01, &c), BK_EINVAL);
}

/* Integer keys with structure (consecutive, strided by powers of two so
 * that only high bits vary, only low bits vary, or both) give every kind
 * the false-positive rate it was sized for under the default hash, as
 * random keys do. A mixer that leaves some key bits out of the bits that
 * place a key fails here: with the second multiply's halves used unfolded
 * as (lo, hi), every pattern measured 1.08-1.5x the rate asked for in
 * split and blocked filters. Queries come from the same pattern past the
 * added keys. */
static uint64_t patterned(int pattern, uint64_t i)
{
    switch (pattern) {
    case 0: return i;                                      /* consecutive ids */
    case 1: return i << 40;                                /* only high bits vary */
    case 2: return (i << 32) | UINT64_C(0xfff);            /* the high half counts */
    case 3: return i * UINT64_C(0x100000001);              /* both halves count */
    case 4: return UINT64_C(0xffffffff00000000) | (i * 8); /* aligned offsets */
    default: return bkt_rand(&i);
    }
}

static void test_mix8_structured_keys_fpr(void)
{
    static const bk_kind_t kinds[] = {BK_KIND_SPLIT, BK_KIND_BLOCKED, BK_KIND_BLOCKED2,
                                      BK_KIND_CLASSIC, BK_KIND_COUNTING};
    const double p = 0.01;
    const uint64_t n = bkt_scaled(200000), q = bkt_scaled(400000);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int pattern = 0; pattern < 6; pattern++) {
            bk_options_t o = {.kind = kinds[k], .seed_set = true, .seed = 99 + (uint64_t)pattern};
            bk_filter_t *f = NULL;
            CHECK_OK(bk_filter_create(&f, n, p, &o));
            if (!f)
                return;
            uint64_t missing = 0, fp = 0;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t v = patterned(pattern, i);
                CHECK_OK(bk_filter_add(f, &v, 8, NULL));
            }
            for (uint64_t i = 0; i < n; i++) {
                uint64_t v = patterned(pattern, i);
                missing += !bk_filter_contains(f, &v, 8);
            }
            for (uint64_t i = 0; i < q; i++) {
                uint64_t v = patterned(pattern, n + i);
                fp += bk_filter_contains(f, &v, 8);
            }
            double measured = (double)fp / (double)q;
            double bound = p + 3 * sqrt(p * (1 - p) / (double)q);
            CHECK_EQ_U64(missing, 0);
            CHECK_MSG(measured <= bound, "%s, pattern %d: measured %g > %g", bk_kind_name(kinds[k]),
                      pattern, measured, bound);
            bk_filter_free(f);
        }
    }
}

/* RedisBloom's pairs (murmur64a, murmur2) hash as RedisBloom does: with
 * its fixed seeds, whatever the filter's. */
static bool redisbloom_pair(unsigned id)
{
    return id == BK_HASH_MURMUR64A || id == BK_HASH_MURMUR2;
}

static void test_seed_changes_hash(void)
{
    for (unsigned id = 1; id <= BK_HASH_COUNT; id++) {
        bk_hash_t a = bk_hash_key((bk_hash_id_t)id, 1, "same key", 8);
        bk_hash_t b = bk_hash_key((bk_hash_id_t)id, 2, "same key", 8);
        bk_hash_t c = bk_hash_key((bk_hash_id_t)id, 1, "same key", 8);
        if (redisbloom_pair(id))
            CHECK_MSG(a.lo == b.lo && a.hi == b.hi, "hash %u uses the seed", id);
        else
            CHECK_MSG(a.lo != b.lo && a.hi != b.hi, "hash %u ignores the seed", id);
        CHECK_MSG(a.lo == c.lo && a.hi == c.hi, "hash %u is not deterministic", id);
    }
}

static void test_classic_collisions_stay_collisions(void)
{
    /* Keys with equal 32-bit classic hashes must map to the same 128-bit
     * hash (the filter cannot tell them apart) -- and for XXH3 they don't.
     * DJB: "Ez" and "FY" collide (E*33+z == F*33+Y). */
    CHECK_EQ_U64(bk_hash_raw(BK_HASH_DJB, 0, "Ez", 2), bk_hash_raw(BK_HASH_DJB, 0, "FY", 2));
    bk_hash_t a = bk_hash_key(BK_HASH_DJB, 9, "Ez", 2), b = bk_hash_key(BK_HASH_DJB, 9, "FY", 2);
    CHECK(a.lo == b.lo && a.hi == b.hi);
    a = bk_hash_key(BK_HASH_XXH3, 9, "Ez", 2);
    b = bk_hash_key(BK_HASH_XXH3, 9, "FY", 2);
    CHECK(a.lo != b.lo);
}

static void test_spread_of_halves(void)
{
    /* Over many keys each output bit of both halves is set about half the
     * time: a broken mixer (e.g. hi == lo, or a constant) fails this.
     * RedisBloom's 32-bit pair has 32 bits a half, checked as such. */
    for (unsigned id = 1; id <= BK_HASH_COUNT; id++) {
        int width = id == BK_HASH_MURMUR2 ? 32 : 64;
        unsigned ones_lo[64] = {0}, ones_hi[64] = {0};
        const unsigned n = 4000;
        unsigned equal_halves = 0;
        char key[32];
        for (unsigned i = 0; i < n; i++) {
            int len = snprintf(key, sizeof key, "user%u@example.com", i);
            bk_hash_t h = bk_hash_key((bk_hash_id_t)id, 42, key, (size_t)len);
            equal_halves += h.lo == h.hi;
            for (int b = 0; b < 64; b++) {
                ones_lo[b] += (h.lo >> b) & 1;
                ones_hi[b] += (h.hi >> b) & 1;
            }
        }
        CHECK(equal_halves == 0);
        for (int b = width; b < 64; b++)
            CHECK(ones_lo[b] == 0 && ones_hi[b] == 0);
        for (int b = 0; b < width; b++) {
            /* 6 sigma around n/2 for n = 4000 is about +-190. */
            CHECK_MSG(ones_lo[b] > 1800 && ones_lo[b] < 2200, "hash %u lo bit %d: %u", id, b,
                      ones_lo[b]);
            CHECK_MSG(ones_hi[b] > 1800 && ones_hi[b] < 2200, "hash %u hi bit %d: %u", id, b,
                      ones_hi[b]);
        }
    }
}

static void test_pinned_outputs(void)
{
    /* Filters saved to disk depend on these values never changing for a
     * given format version. If this fails, the format version must bump. */
    static const uint64_t want_lo[BK_HASH_COUNT + 1] = {
#include "hash_golden.inc"
    };
    for (unsigned id = 1; id <= BK_HASH_COUNT; id++) {
        bk_hash_t h = bk_hash_key((bk_hash_id_t)id, UINT64_C(0x0123456789abcdef),
                                  "https://example.com/a/b?c=d", 27);
        CHECK_MSG(h.lo == want_lo[id], "hash %s changed: 0x%016llx", bk_hash_name((bk_hash_id_t)id),
                  (unsigned long long)h.lo);
    }
}

static void test_names(void)
{
    for (unsigned id = 1; id <= BK_HASH_COUNT; id++) {
        const char *name = bk_hash_name((bk_hash_id_t)id);
        bk_hash_id_t back;
        CHECK(name != NULL);
        CHECK_OK(bk_hash_parse(name, &back));
        CHECK(back == (bk_hash_id_t)id);
    }
    bk_hash_id_t id;
    CHECK_OK(bk_hash_parse("XXH3", &id));
    CHECK(id == BK_HASH_XXH3);
    CHECK_STATUS(bk_hash_parse("md5", &id), BK_EINVAL);
    CHECK_STATUS(bk_hash_parse(NULL, &id), BK_EINVAL);
    CHECK(bk_hash_name((bk_hash_id_t)0) == NULL);
    CHECK(bk_hash_name((bk_hash_id_t)(BK_HASH_COUNT + 1)) == NULL);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Seeds come from a per-thread pool: all different across its refills,
 * and a forked child never hands out the seed its parent hands out next
 * (the pool is dropped in the child). */
static void test_random_seed(void)
{
    enum { N = 1000 };
    static uint64_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = bk_random_seed();
    qsort(v, N, sizeof v[0], cmp_u64);
    int same = 0;
    for (int i = 1; i < N; i++)
        same += v[i] == v[i - 1];
    CHECK_EQ_U64(same, 0);
    (void)bk_random_seed(); /* the pool now holds values for the parent */
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t mine = bk_random_seed();
        ssize_t w = write(fds[1], &mine, sizeof mine);
        _exit(w == (ssize_t)sizeof mine ? 0 : 1);
    }
    uint64_t parent = bk_random_seed(), child = 0;
    CHECK(pid > 0 && read(fds[0], &child, sizeof child) == (ssize_t)sizeof child);
    int status = 1;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(parent != child);
    close(fds[0]);
    close(fds[1]);
}

int main(void)
{
    bkt_run("classic hashes match reference", test_classic_hashes_match_reference);
    bkt_run("elf/pjw fold the high nibble", test_elf_pjw_fold_high_nibble);
    bkt_run("xxh3 published vector", test_xxh3_vector);
    bkt_run("short keys pinned, 8 bytes on its own path", test_short_keys_pinned);
    bkt_run("8-byte one-key hash is xxh3's", test_key8_path_is_xxh3);
    bkt_run("default 8-byte hash is the spec's", test_mix8_is_the_spec);
    bkt_run("default hash: structured integer keys", test_mix8_structured_keys_fpr);
    bkt_run("seed changes every hash", test_seed_changes_hash);
    bkt_run("classic collisions stay collisions", test_classic_collisions_stay_collisions);
    bkt_run("both halves spread", test_spread_of_halves);
    bkt_run("pinned outputs", test_pinned_outputs);
    bkt_run("names", test_names);
    bkt_run("random seed", test_random_seed);
    return bkt_finish();
}
