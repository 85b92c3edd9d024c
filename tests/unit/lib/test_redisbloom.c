/*
 * Chains taken over from RedisBloom (bk_redisbloom_*, kind redisbloom):
 * rebuilt from the SCANDUMP chunks RedisBloom 2.8.20 wrote
 * (tests/data/redisbloom/answers.txt, with RedisBloom's own answers), each
 * answers every item and every one of 20,000 probes exactly as RedisBloom
 * did; RedisBloom's sizing rule reproduces every link it made; the fields
 * and payload read back give RedisBloom's chunks byte for byte; the
 * library's file format keeps such a chain; growth follows RedisBloom.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "internal.h"
#include "redisbloom_answers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)le64((const uint8_t[8]){p[0], p[1], p[2], p[3], 0, 0, 0, 0});
}

static double f64(const uint8_t *p)
{
    uint64_t v = le64(p);
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* RedisBloom's SCANDUMP header (docs/FORMAT.md, "RedisBloom chains"):
 * u64 items, u32 links, u32 options, u32 growth, then 53 bytes a link. */
#define HDR 20
#define LINK 53

static bool parse_header(const rb_chunk_t *c, bk_redisbloom_chain_t *ch, bk_redisbloom_link_t *l)
{
    if (c->iter != 1 || c->len < HDR)
        return false;
    ch->items = le64(c->bytes);
    ch->links = le32(c->bytes + 8);
    ch->options = le32(c->bytes + 12);
    ch->growth = le32(c->bytes + 16);
    if (c->len != HDR + (size_t)LINK * ch->links || ch->links > RB_MAX_CHUNKS)
        return false;
    for (uint32_t i = 0; i < ch->links; i++) {
        const uint8_t *e = c->bytes + HDR + LINK * i;
        l[i].bits = le64(e + 8);
        l[i].items = le64(e + 16);
        l[i].error = f64(e + 24);
        l[i].bpe = f64(e + 32);
        l[i].hashes = le32(e + 40);
        l[i].entries = le64(e + 44);
        l[i].n2 = e[52];
        if (le64(e) * 8 != l[i].bits)
            return false;
    }
    return true;
}

static void encode_header(const bk_filter_t *f, uint8_t *out, size_t *len)
{
    bk_redisbloom_chain_t ch;
    CHECK_OK(bk_redisbloom_chain(f, &ch));
    put64(out, ch.items);
    uint8_t w[8];
    put64(w, ch.links);
    memcpy(out + 8, w, 4);
    put64(w, ch.options);
    memcpy(out + 12, w, 4);
    put64(w, ch.growth);
    memcpy(out + 16, w, 4);
    for (uint32_t i = 0; i < ch.links; i++) {
        bk_redisbloom_link_t l;
        CHECK_OK(bk_redisbloom_link(f, i, &l));
        uint8_t *e = out + HDR + LINK * i;
        put64(e, l.bits / 8);
        put64(e + 8, l.bits);
        put64(e + 16, l.items);
        memcpy(e + 24, &l.error, 8);
        memcpy(e + 32, &l.bpe, 8);
        put64(w, l.hashes);
        memcpy(e + 40, w, 4);
        put64(e + 44, l.entries);
        e[52] = (uint8_t)l.n2;
    }
    *len = HDR + (size_t)LINK * ch.links;
}

/* The chain a key's chunks describe, as BF.LOADCHUNK rebuilds it. */
static bk_filter_t *rebuild(const rb_answer_t *a)
{
    bk_redisbloom_chain_t ch;
    bk_redisbloom_link_t links[RB_MAX_CHUNKS];
    if (a->nchunks < 1 || !parse_header(&a->chunks[0], &ch, links))
        return NULL;
    bk_filter_t *f = NULL;
    const char *why = NULL;
    if (bk_redisbloom_new(&f, &ch, links, &why) != BK_OK)
        return NULL;
    for (int i = 1; i < a->nchunks; i++) {
        const rb_chunk_t *c = &a->chunks[i];
        /* The iterator after a chunk is 1 + the offset of its end. */
        if (bk_redisbloom_write(f, (uint64_t)c->iter - 1 - c->len, c->bytes, c->len, &why) != BK_OK) {
            bk_filter_free(f);
            return NULL;
        }
    }
    return f;
}

/* Every item present; the probes RedisBloom answered 1 for, and no
 * other, present. Returns the false positives seen. */
static uint64_t check_answers(const rb_answer_t *a, const bk_filter_t *f)
{
    uint64_t missing = 0, wrong = 0, fp = 0;
    for (size_t i = 0; i < a->nitems; i++)
        missing += !bk_filter_contains(f, a->items[i], strlen(a->items[i]));
    for (uint64_t i = 0; i < rb_nprobes; i++) {
        char probe[32];
        int n = snprintf(probe, sizeof probe, "probe7:%llu", (unsigned long long)i);
        bool in = bk_filter_contains(f, probe, (size_t)n);
        wrong += in != a->positive[i];
        fp += in;
    }
    CHECK_MSG(missing == 0, "%s: %llu of %zu items missing", a->name,
              (unsigned long long)missing, a->nitems);
    CHECK_MSG(wrong == 0, "%s: %llu of %llu probes answer unlike RedisBloom", a->name,
              (unsigned long long)wrong, (unsigned long long)rb_nprobes);
    return fp;
}

static void test_answers_as_redisbloom(void)
{
    int bf = 0;
    for (int k = 0; k < rb_nkeys; k++) {
        const rb_answer_t *a = &rb_keys[k];
        if (strncmp(a->name, "bf:", 3))
            continue;
        bf++;
        bk_filter_t *f = rebuild(a);
        CHECK_MSG(f != NULL, "%s: chunks refused", a->name);
        if (!f)
            continue;
        uint64_t fp = check_answers(a, f);
        CHECK_MSG(fp > 0 || a->nitems < 1000, "%s: no false positive at all", a->name);
        bk_filter_shape_t s;
        bk_filter_shape(f, &s);
        CHECK_EQ_U64(s.items, a->card);
        CHECK_EQ_U64(s.capacity, rb_info(a, "Capacity"));
        CHECK_EQ_U64(s.filters, rb_info(a, "Number_of_filters"));
        CHECK(s.sub_kind == BK_KIND_REDISBLOOM);
        CHECK(bk_redisbloom_is(f));
        bk_filter_free(f);
    }
    CHECK_MSG(bf == 6, "answers.txt has %d BF keys, want 6", bf);
}

/* f's header and payload, read back, are key a's SCANDUMP: RedisBloom's
 * header, then each chunk byte for byte at its iterator, then the end. */
static void check_dump_is_redisbloom(const rb_answer_t *a, const bk_filter_t *f)
{
    uint8_t hdr[HDR + LINK * RB_MAX_CHUNKS];
    size_t len;
    encode_header(f, hdr, &len);
    CHECK_MSG(len == a->chunks[0].len && !memcmp(hdr, a->chunks[0].bytes, len),
              "%s: header differs from RedisBloom's", a->name);
    uint64_t off = 0;
    for (int i = 1; i < a->nchunks; i++) {
        const void *bytes;
        uint64_t n = 0;
        CHECK_OK(bk_redisbloom_read(f, off, 16u << 20, &bytes, &n));
        CHECK_MSG(n == a->chunks[i].len && !memcmp(bytes, a->chunks[i].bytes, n) &&
                      (long long)(off + n + 1) == a->chunks[i].iter,
                  "%s: chunk %d differs", a->name, i);
        off += n;
    }
    const void *bytes;
    uint64_t n = 1;
    CHECK_OK(bk_redisbloom_read(f, off, 16u << 20, &bytes, &n));
    CHECK_EQ_U64(n, 0);
    CHECK_EQ_U64(bk_redisbloom_bytes(f), off);
}

/* The header and chunks read back are RedisBloom's own, byte for byte:
 * what BF.SCANDUMP and an AOF rewrite of a taken-over key send. */
static void test_dump_is_redisbloom_bytes(void)
{
    for (int k = 0; k < rb_nkeys; k++) {
        const rb_answer_t *a = &rb_keys[k];
        if (strncmp(a->name, "bf:", 3))
            continue;
        bk_filter_t *f = rebuild(a);
        if (!f) {
            CHECK_MSG(0, "%s: chunks refused", a->name);
            continue;
        }
        check_dump_is_redisbloom(a, f);
        bk_filter_free(f);
    }
}

/* A chain made new (bk_redisbloom_create, as BF.RESERVE makes one under
 * LAYOUT redisbloom) and given a key's items in order is that key's
 * chain byte for byte: RedisBloom's header and chunks. The parameters are
 * the commands the keys were made with (README.md); bf:big holds only
 * its first 5,000 items here and is left out. */
static void test_created_chain_is_redisbloom(void)
{
    static const struct {
        const char *name;
        uint64_t capacity;
        double error;
        uint32_t growth;
        bool nonscaling;
    } made[] = {{"bf:small", 100, 0.01, 2, false},
                {"bf:scaled", 1000, 0.001, 2, false},
                {"bf:nonscaling", 5000, 0.0001, 2, true},
                {"bf:default", 100, 0.01, 2, false},
                {"bf:exp1", 100, 0.001, 1, false}};
    int seen = 0;
    for (size_t m = 0; m < sizeof made / sizeof made[0]; m++) {
        const rb_answer_t *a = NULL;
        for (int k = 0; k < rb_nkeys; k++)
            if (strcmp(rb_keys[k].name, made[m].name) == 0)
                a = &rb_keys[k];
        if (!a) {
            CHECK_MSG(0, "%s: not in answers.txt", made[m].name);
            continue;
        }
        seen++;
        bk_filter_t *f = NULL;
        CHECK_OK(bk_redisbloom_create(&f, made[m].capacity, made[m].error, made[m].growth,
                                      made[m].nonscaling));
        if (!f)
            continue;
        uint64_t planned = 0;
        CHECK_OK(bk_redisbloom_plan(made[m].capacity, made[m].error, made[m].nonscaling, &planned));
        CHECK_EQ_U64(planned, bk_redisbloom_bytes(f));
        for (size_t i = 0; i < a->nitems; i++)
            (void)bk_filter_add(f, a->items[i], strlen(a->items[i]), NULL);
        check_dump_is_redisbloom(a, f);
        bk_filter_free(f);
    }
    CHECK_EQ_U64(seen, 5);
    bk_filter_t *f = NULL;
    CHECK_STATUS(bk_redisbloom_create(&f, 0, 0.01, 2, false), BK_EINVAL);
    CHECK_STATUS(bk_redisbloom_create(&f, 100, 1.0, 2, false), BK_EINVAL);
    CHECK_STATUS(bk_redisbloom_create(&f, 100, 0.01, 0, false), BK_EINVAL);
    CHECK_STATUS(bk_redisbloom_create(&f, UINT64_C(1) << 62, 1e-9, 2, false), BK_ENOMEM);
    uint64_t planned = 1;
    CHECK_STATUS(bk_redisbloom_plan(UINT64_C(1) << 62, 1e-9, false, &planned), BK_ENOMEM);
    CHECK_EQ_U64(planned, 0);
    CHECK_STATUS(bk_redisbloom_plan(0, 0.01, false, &planned), BK_EINVAL);
    CHECK(f == NULL);
}

/* RedisBloom's sizing rule, applied to each link's entries and error,
 * gives the bits, hashes and bits per entry RedisBloom recorded. */
static void test_sizing_rule_matches_redisbloom(void)
{
    int links = 0;
    for (int k = 0; k < rb_nkeys; k++) {
        bk_redisbloom_chain_t ch;
        bk_redisbloom_link_t l[RB_MAX_CHUNKS];
        if (strncmp(rb_keys[k].name, "bf:", 3) || !parse_header(&rb_keys[k].chunks[0], &ch, l))
            continue;
        for (uint32_t i = 0; i < ch.links; i++, links++) {
            uint64_t entries = l[i].entries, bits = 0;
            uint32_t hashes = 0, n2 = 99;
            double bpe = 0;
            CHECK_OK(bki_rb_geometry(&entries, l[i].error, ch.options, &bits, &hashes, &n2, &bpe));
            CHECK_EQ_U64(entries, l[i].entries);
            CHECK_EQ_U64(bits, l[i].bits);
            CHECK_EQ_U64(hashes, l[i].hashes);
            CHECK_EQ_U64(n2, l[i].n2);
            CHECK_MSG(memcmp(&bpe, &l[i].bpe, sizeof bpe) == 0, "%s link %u: bpe %.17g vs %.17g",
                      rb_keys[k].name, i, bpe, l[i].bpe);
        }
    }
    CHECK(links >= 17);
    /* Without NOROUND (RedisBloom 1.x's links): a power of two, and the
     * spare bits counted as entries. 100 keys at 0.01: 958.5 bits -> 1024,
     * (1024 - 958.5) / 9.585 = 6 more entries. */
    uint64_t entries = 100, bits;
    uint32_t hashes, n2;
    double bpe;
    CHECK_OK(bki_rb_geometry(&entries, 0.01, BK_REDISBLOOM_FORCE64, &bits, &hashes, &n2, &bpe));
    CHECK_EQ_U64(bits, 1024);
    CHECK_EQ_U64(n2, 10);
    CHECK_EQ_U64(entries, 106);
    CHECK_EQ_U64(hashes, 7);
    CHECK_STATUS(bki_rb_geometry(&entries, 1.0, 5, &bits, &hashes, &n2, &bpe), BK_EFULL);
}

/* A taken-over chain grows as RedisBloom's does, and keeps answering. */
static void test_growth_follows_redisbloom(void)
{
    const rb_answer_t *a = rb_key("bf:default");
    bk_filter_t *f = a ? rebuild(a) : NULL;
    CHECK(f != NULL);
    if (!f)
        return;
    bk_redisbloom_link_t newest;
    CHECK_OK(bk_redisbloom_link(f, 3, &newest));
    uint64_t added = 0;
    char key[32];
    for (int i = 0; i < 100000 && added < 3000; i++) {
        int n = snprintf(key, sizeof key, "grow:%d", i);
        bool was_new;
        CHECK_OK(bk_filter_add(f, key, (size_t)n, &was_new));
        added += was_new;
    }
    bk_redisbloom_chain_t ch;
    CHECK_OK(bk_redisbloom_chain(f, &ch));
    CHECK_EQ_U64(ch.links, 6);
    bk_redisbloom_link_t l4, l5;
    CHECK_OK(bk_redisbloom_link(f, 4, &l4));
    CHECK_OK(bk_redisbloom_link(f, 5, &l5));
    CHECK_EQ_U64(l4.entries, newest.entries * 2);
    CHECK(l4.error == newest.error * 0.5);
    CHECK_EQ_U64(l5.entries, l4.entries * 2);
    /* 1600 entries at 0.0003125: bpe 16.7985..., 26877 bits -> 26880 */
    double bpe = -log(l4.error) / 0.480453013918201;
    CHECK_EQ_U64(l4.bits, ((uint64_t)(1600 * bpe) + 63) / 64 * 64);
    CHECK_EQ_U64(l4.hashes, (uint64_t)ceil(0.693147180559945 * bpe));
    CHECK_EQ_U64(l4.items, l4.entries); /* full before the next link */
    CHECK_EQ_U64(ch.items, a->card + added);
    /* No key lost, and every probe RedisBloom found still found. */
    uint64_t lost = 0;
    for (size_t i = 0; i < a->nitems; i++)
        lost += !bk_filter_contains(f, a->items[i], strlen(a->items[i]));
    for (uint64_t i = 0; i < rb_nprobes; i++) {
        char probe[32];
        int n = snprintf(probe, sizeof probe, "probe7:%llu", (unsigned long long)i);
        lost += a->positive[i] && !bk_filter_contains(f, probe, (size_t)n);
    }
    CHECK_EQ_U64(lost, 0);
    for (int i = 0; i < 100; i++) {
        int n = snprintf(key, sizeof key, "grow:%d", i);
        CHECK(bk_filter_contains(f, key, (size_t)n));
    }
    bk_filter_free(f);
}

/* The library's own file format keeps a RedisBloom chain: saved and
 * loaded (and deserialized), it answers the same and still reads back
 * RedisBloom's header. */
static void test_file_format_keeps_chain(void)
{
    const rb_answer_t *a = rb_key("bf:scaled");
    bk_filter_t *f = a ? rebuild(a) : NULL;
    CHECK(f != NULL);
    if (!f)
        return;
    char path[] = "/tmp/bk-rb-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_OK(bk_filter_save(f, path));
    bk_filter_t *g = NULL;
    const char *why = NULL;
    CHECK_OK(bk_filter_load(&g, path, &why));
    if (g) {
        check_answers(a, g);
        uint8_t h1[HDR + LINK * RB_MAX_CHUNKS], h2[HDR + LINK * RB_MAX_CHUNKS];
        size_t l1, l2;
        encode_header(f, h1, &l1);
        encode_header(g, h2, &l2);
        CHECK(l1 == l2 && !memcmp(h1, h2, l1));
        bk_filter_info_t info;
        bk_filter_info(g, &info);
        CHECK(info.hash == BK_HASH_MURMUR64A);
        CHECK(!strcmp(bk_kind_name(info.sub_kind), "redisbloom"));
        bk_filter_free(g);
    }
    size_t n = bk_filter_serialized_size(f);
    uint8_t *buf = malloc(n);
    size_t wrote = 0;
    CHECK_OK(bk_filter_serialize(f, buf, n, &wrote));
    /* A flipped option, re-checksummed, is refused: the options decide
     * the hash, and a chain cannot have another. */
    bk_filter_t *h = NULL;
    CHECK_OK(bk_filter_deserialize(&h, buf, wrote, &why));
    bk_filter_free(h);
    buf[92] ^= BK_REDISBLOOM_FORCE64;
    uint32_t nparts = le32(buf + 20);
    uint64_t table_end = 128 + 96 * (uint64_t)nparts;
    put64(buf + table_end, bk_hash_raw(BK_HASH_XXH3, 0, buf, table_end));
    CHECK_STATUS(bk_filter_deserialize(&h, buf, wrote, &why), BK_ECORRUPT);
    free(buf);
    bk_filter_free(f);
    unlink(path);
}

/* Bad fields are refused with a reason, as RedisBloom refuses them. */
static void test_bad_fields_refused(void)
{
    bk_redisbloom_chain_t ch = {.items = 5, .links = 1, .options = 5, .growth = 2};
    bk_redisbloom_link_t l = {.entries = 100, .error = 0.005, .bpe = 11.03, .hashes = 8,
                              .bits = 1152, .n2 = 0, .items = 5};
    bk_filter_t *f = NULL;
    const char *why = NULL;
    CHECK_OK(bk_redisbloom_new(&f, &ch, &l, &why));
    /* writes must stay inside one link */
    uint8_t bytes[200] = {0};
    CHECK_STATUS(bk_redisbloom_write(f, 100, bytes, 100, &why), BK_EINVAL);
    CHECK_STATUS(bk_redisbloom_write(f, 144, bytes, 1, &why), BK_EINVAL);
    CHECK_OK(bk_redisbloom_write(f, 44, bytes, 100, &why));
    bk_filter_free(f);

    struct {
        bk_redisbloom_chain_t ch;
        bk_redisbloom_link_t l;
    } bad[] = {
        {{6, 1, 5, 2}, l},             /* items not the links' sum */
        {{5, 1, 5 | 16, 2}, l},        /* unknown option */
        {{5, 1, 5, 0}, l},             /* growth 0 */
        {{5, 0, 5, 2}, l},             /* no link */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        CHECK_STATUS(bk_redisbloom_new(&f, &bad[i].ch, &bad[i].l, &why), BK_ECORRUPT);
        CHECK(why != NULL && f == NULL);
    }
    bk_redisbloom_link_t links[] = {l, l, l, l, l};
    links[0].bits = 1000;   /* not whole words */
    links[1].n2 = 11;       /* 2^11 > 1152 */
    links[2].error = 1.0;
    links[3].hashes = 0;
    links[4].bpe = NAN;
    for (size_t i = 0; i < 5; i++) {
        why = NULL;
        CHECK_STATUS(bk_redisbloom_new(&f, &ch, &links[i], &why), BK_ECORRUPT);
        CHECK(why != NULL && f == NULL);
    }
    /* the kind is never made on its own */
    bk_options_t o = {.kind = BK_KIND_REDISBLOOM};
    CHECK_STATUS(bk_filter_create(&f, 100, 0.01, &o), BK_EINVAL);
    CHECK_STATUS(bk_filter_create_exact(&f, BK_KIND_REDISBLOOM, 1024, 7, NULL), BK_EINVAL);
    bk_plan_t plan;
    CHECK_STATUS(bk_plan(BK_KIND_REDISBLOOM, 100, 0.01, &plan), BK_EINVAL);
    /* nor is a non-RedisBloom filter read as one */
    CHECK_OK(bk_filter_create(&f, 100, 0.01, NULL));
    CHECK(!bk_redisbloom_is(f));
    CHECK_STATUS(bk_redisbloom_chain(f, &ch), BK_EKIND);
    bk_filter_free(f);
}

/* SMHasher's verification value of a hash: keys 0..255 bytes long, key
 * i the bytes 0..i-1, seed 256 - i; the hashes (little-endian) hashed
 * with seed 0; the first 4 bytes of that. */
static uint32_t smhasher_verification(int bits)
{
    uint8_t key[256], hashes[256 * 8];
    size_t width = (size_t)bits / 8;
    for (int i = 0; i < 256; i++) {
        key[i] = (uint8_t)i;
        uint64_t h = bits == 32 ? bki_murmur2(key, (size_t)i, 256u - (unsigned)i)
                                : bki_murmur64a(key, (size_t)i, 256u - (unsigned)i);
        for (size_t b = 0; b < width; b++)
            hashes[(size_t)i * width + b] = (uint8_t)(h >> (8 * b));
    }
    uint64_t final = bits == 32 ? bki_murmur2(hashes, 256 * width, 0)
                                : bki_murmur64a(hashes, 256 * width, 0);
    return (uint32_t)final;
}

/* RedisBloom's hashes: the functions' published verification values
 * (SMHasher: MurmurHash2 0x27864C1E, MurmurHash64A 0x1F0D3804), and the
 * pairs built from them as RedisBloom builds them. */
static void test_murmur_vectors(void)
{
    CHECK_MSG(smhasher_verification(32) == 0x27864C1Eu, "MurmurHash2 verification %#x",
              smhasher_verification(32));
    CHECK_MSG(smhasher_verification(64) == 0x1F0D3804u, "MurmurHash64A verification %#x",
              smhasher_verification(64));
    const char *fox = "The quick brown fox jumps over the lazy dog";
    const unsigned char *u = (const unsigned char *)fox;
    size_t n = strlen(fox);
    bk_hash_t h = bk_hash_key(BK_HASH_MURMUR2, 123, fox, n);
    CHECK(h.lo == bki_murmur2(u, n, 0x9747b28cu) && h.hi == bki_murmur2(u, n, (uint32_t)h.lo));
    h = bk_hash_key(BK_HASH_MURMUR64A, 9, fox, n);
    CHECK(h.lo == bki_murmur64a(u, n, 0xc6a4a7935bd1e995ull) && h.hi == bki_murmur64a(u, n, h.lo));
    CHECK(bk_hash_raw(BK_HASH_MURMUR64A, 0, fox, n) == h.lo);
    bk_hash_id_t id;
    CHECK_OK(bk_hash_parse("murmur64a", &id));
    CHECK(id == BK_HASH_MURMUR64A);
}

int main(void)
{
    if (!rb_load_answers()) {
        fprintf(stderr, "cannot read tests/data/redisbloom/answers.txt\n");
        return 1;
    }
    bkt_run("answers_as_redisbloom", test_answers_as_redisbloom);
    bkt_run("dump_is_redisbloom_bytes", test_dump_is_redisbloom_bytes);
    bkt_run("created_chain_is_redisbloom", test_created_chain_is_redisbloom);
    bkt_run("sizing_rule_matches_redisbloom", test_sizing_rule_matches_redisbloom);
    bkt_run("growth_follows_redisbloom", test_growth_follows_redisbloom);
    bkt_run("file_format_keeps_chain", test_file_format_keeps_chain);
    bkt_run("bad_fields_refused", test_bad_fields_refused);
    bkt_run("murmur_vectors", test_murmur_vectors);
    return bkt_finish();
}
