/* Tests for src/alloc.c: a program's own allocator (bk_allocator_set) gets
 * every byte the library keeps, payloads stay 64-byte aligned through it,
 * its refusals become BK_ENOMEM, and it can be swapped only while the
 * library holds nothing. The allocator here is a budgeted malloc that
 * keeps a ledger of live blocks and bytes, like Redis' used_memory. */
#include "harness.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static size_t budget = SIZE_MAX; /* bytes the ledger allocator may hand out */
static size_t used;              /* bytes live */
static long blocks;              /* blocks live */
static long calloc_calls;

/* Each block remembers its size in front, so free can update the ledger. */
static void *ledger_alloc(size_t n)
{
    if (n > budget - used)
        return NULL;
    size_t *raw = malloc(n + 16);
    if (!raw)
        return NULL;
    raw[0] = n;
    used += n;
    blocks++;
    /* Garbage, as a reused block would hold: the library must zero it. */
    memset((uint8_t *)raw + 16, 0xA5, n);
    return (uint8_t *)raw + 16;
}

static void *ledger_calloc(size_t count, size_t size)
{
    calloc_calls++;
    void *p = ledger_alloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

static void ledger_free(void *p)
{
    size_t *raw = (size_t *)((uint8_t *)p - 16);
    used -= raw[0];
    blocks--;
    free(raw);
}

static const bk_allocator_t ledger = {ledger_alloc, NULL, ledger_free};

/* A ledger whose blocks are 64-byte aligned, as a size-class allocator's
 * (jemalloc's) are for sizes that are multiples of 64. */
static void *aligned_ledger_alloc(size_t n)
{
    if (n > budget - used)
        return NULL;
    size_t *raw = aligned_alloc(64, 64 + ((n + 63) & ~(size_t)63));
    if (!raw)
        return NULL;
    raw[0] = n;
    used += n;
    blocks++;
    return (uint8_t *)raw + 64;
}

static void aligned_ledger_free(void *p)
{
    size_t *raw = (size_t *)((uint8_t *)p - 64);
    used -= raw[0];
    blocks--;
    free(raw);
}

static const bk_allocator_t aligned_ledger = {aligned_ledger_alloc, NULL, aligned_ledger_free};
static const bk_allocator_t ledger_z = {ledger_alloc, ledger_calloc, ledger_free};

static void test_set_rules(void)
{
    bk_allocator_t half = {ledger_alloc, NULL, NULL};
    CHECK_STATUS(bk_allocator_set(&half), BK_EINVAL);
    CHECK_OK(bk_allocator_set(&ledger));
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, NULL));
    /* Refused while a filter is live: it must go back where it came from. */
    CHECK_STATUS(bk_allocator_set(NULL), BK_EINVAL);
    CHECK(used > 0);
    bk_filter_free(f);
    CHECK_EQ_U64(used, 0);
    CHECK_EQ_U64(blocks, 0);
    CHECK_OK(bk_allocator_set(NULL));
}

/* Every kind, from small to past the size where the default allocator
 * maps: all memory through the ledger, payload aligned, freed in full. */
static void test_all_memory_through_allocator(void)
{
    const bk_kind_t kinds[] = {BK_KIND_BLOCKED, BK_KIND_CLASSIC, BK_KIND_COUNTING,
                               BK_KIND_SCALABLE};
    const uint64_t caps[] = {10, 100000, 4000000};
    for (int z = 0; z < 2; z++) {
        CHECK_OK(bk_allocator_set(z ? &ledger_z : &ledger));
        calloc_calls = 0;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            for (size_t j = 0; j < sizeof caps / sizeof caps[0]; j++) {
                bk_options_t o = {.kind = kinds[i]};
                bk_filter_t *f = NULL;
                CHECK_OK(bk_filter_create(&f, caps[j], 0.01, &o));
                if (!f)
                    continue;
                bk_filter_info_t in;
                bk_filter_info(f, &in);
                /* The payload plus at most a few hundred bytes of structs
                 * and alignment: nothing came from anywhere else. */
                CHECK_MSG(used >= in.bytes && used <= in.bytes + 1024,
                          "kind %d cap %llu: ledger %zu, payload %llu", (int)kinds[i],
                          (unsigned long long)caps[j], used, (unsigned long long)in.bytes);
                const bk_filter_t *arr = f->kind == BK_KIND_SCALABLE ? f->subs[0] : f;
                CHECK(((uintptr_t)arr->data & 63) == 0);
                CHECK(in.cells_set == 0); /* zeroed */
                bool was_new;
                CHECK_OK(bk_filter_add(f, "x", 1, &was_new));
                CHECK(was_new && bk_filter_contains(f, "x", 1));
                bk_filter_free(f);
                CHECK_EQ_U64(used, 0);
            }
        }
        CHECK(z == 0 ? calloc_calls == 0 : calloc_calls > 0);
        CHECK_OK(bk_allocator_set(NULL));
    }
}

/* A scalable filter's growth (sub-filters, each with a struct of a few
 * hundred bytes and the realloc'ed list of them)
 * goes through the ledger; clone and deserialize too. */
static void test_growth_clone_load(void)
{
    CHECK_OK(bk_allocator_set(&ledger));
    bk_options_t o = {.kind = BK_KIND_SCALABLE, .growth = 2};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 16, 0.01, &o));
    char key[32];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        CHECK_OK(bk_filter_add(f, key, (size_t)n, NULL));
    }
    bk_filter_info_t in;
    bk_filter_info(f, &in);
    CHECK(in.filters >= 10);
    CHECK_MSG(used >= in.bytes && used <= in.bytes + 400 * (uint64_t)in.filters + 1024,
              "ledger %zu, payload %llu in %u subs", used, (unsigned long long)in.bytes,
              in.filters);
    for (int i = 0; i < 20000; i += 97) {
        int n = snprintf(key, sizeof key, "k%d", i);
        CHECK(bk_filter_contains(f, key, (size_t)n)); /* the copied list is intact */
    }
    size_t one = used;
    bk_filter_t *c = NULL;
    CHECK_OK(bk_filter_clone(&c, f));
    /* Each payload is the allocator's block itself when that came 64-byte
     * aligned, else 64 bytes more (this allocator aligns to 16, so by
     * chance): a copy may differ from the original by that much each. */
    size_t slack = 64 * ((size_t)in.filters + 1);
    CHECK_MSG(used >= 2 * one - slack && used <= 2 * one + slack, "one %zu, used %zu", one, used);
    uint64_t len = bk_filter_serialized_size(f);
    void *buf = malloc((size_t)len);
    size_t w = 0;
    CHECK_OK(bk_filter_serialize(f, buf, (size_t)len, &w));
    bk_filter_t *l = NULL;
    CHECK_OK(bk_filter_deserialize(&l, buf, w, NULL));
    free(buf);
    CHECK(l && bk_filter_contains(l, "k1", 2));
    bk_filter_free(l);
    bk_filter_free(c);
    bk_filter_free(f);
    CHECK_EQ_U64(used, 0);
    CHECK_OK(bk_allocator_set(NULL));
}

/* The allocator refusing (a full maxmemory) is BK_ENOMEM at every point,
 * never a crash, and leaves nothing behind. */
static void test_refusal_is_enomem(void)
{
    CHECK_OK(bk_allocator_set(&ledger));
    bk_filter_t *f = NULL;
    budget = 1 << 20;
    CHECK_STATUS(bk_filter_create(&f, 10000000, 0.01, NULL), BK_ENOMEM);
    CHECK(f == NULL);
    CHECK_EQ_U64(used, 0);
    /* Each budget from 0 up: creation fails cleanly until it fits. */
    for (budget = 0; budget < 4096; budget += 8) {
        bk_options_t o = {.kind = BK_KIND_SCALABLE};
        bk_status_t st = bk_filter_create(&f, 100, 0.01, &o);
        if (st == BK_OK) {
            bk_filter_free(f);
            f = NULL;
        } else {
            CHECK_STATUS(st, BK_ENOMEM);
        }
        CHECK_EQ_U64(used, 0);
    }
    /* Growth refused: the add fails, the filter keeps what it had. */
    budget = SIZE_MAX;
    bk_options_t o = {.kind = BK_KIND_SCALABLE};
    CHECK_OK(bk_filter_create(&f, 100, 0.01, &o));
    for (int i = 0; i < 100; i++)
        CHECK_OK(bk_filter_add(f, &i, sizeof i, NULL));
    budget = used;
    bk_status_t st = BK_OK;
    int i = 100;
    for (; i < 200 && st == BK_OK; i++)
        st = bk_filter_add(f, &i, sizeof i, NULL);
    CHECK_STATUS(st, BK_ENOMEM);
    for (int j = 0; j < 100; j++)
        CHECK(bk_filter_contains(f, &j, sizeof j));
    budget = SIZE_MAX;
    bk_filter_free(f);
    CHECK_EQ_U64(used, 0);
    CHECK_OK(bk_allocator_set(NULL));
}

/* Through an allocator that aligns its blocks (Redis' jemalloc), a filter
 * costs its payload and its struct, nothing more: no header on a block, no
 * alignment slack on a payload. */
static void test_no_overhead_when_aligned(void)
{
    CHECK_OK(bk_allocator_set(&aligned_ledger));
    bk_options_t o = {.kind = BK_KIND_CLASSIC};
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 100000, 0.01, &o));
    bk_filter_info_t in;
    bk_filter_info(f, &in);
    size_t payload = ((size_t)in.bytes + 63) & ~(size_t)63;
    CHECK_MSG(used == payload + sizeof(bk_filter_t) && blocks == 2,
              "used %zu for a payload of %zu and a struct of %zu (%ld blocks)", used, payload,
              sizeof(bk_filter_t), blocks);
    bk_filter_free(f);
    CHECK(used == 0 && blocks == 0);
    CHECK_OK(bk_allocator_set(NULL));
}

int main(void)
{
    bkt_run("allocator set rules", test_set_rules);
    bkt_run("all memory through the allocator", test_all_memory_through_allocator);
    bkt_run("growth, clone and load through the allocator", test_growth_clone_load);
    bkt_run("allocator refusal is BK_ENOMEM", test_refusal_is_enomem);
    bkt_run("no overhead when aligned", test_no_overhead_when_aligned);
    return bkt_finish();
}
