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

/* Each block remembers its size and where malloc's block starts in the 16
 * bytes in front, so free can update the ledger. align: 64 for a block
 * that must be 64-byte aligned (a mover keeps a block's alignment), else 1. */
static void *ledger_alloc_aligned(size_t n, size_t align)
{
    if (n > budget - used)
        return NULL;
    uint8_t *raw = malloc(n + 16 + align - 1);
    if (!raw)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + 16 + align - 1) & ~(uintptr_t)(align - 1));
    size_t head[2] = {n, (size_t)(p - raw)};
    memcpy(p - 16, head, sizeof head);
    used += n;
    blocks++;
    /* Garbage, as a reused block would hold: the library must zero it. */
    memset(p, 0xA5, n);
    return p;
}

static void *ledger_alloc(size_t n)
{
    return ledger_alloc_aligned(n, 1);
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
    size_t head[2];
    memcpy(head, (uint8_t *)p - 16, sizeof head);
    used -= head[0];
    blocks--;
    free((uint8_t *)p - head[1]);
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

/* ---- defragmentation ---- */

/* A mover as Redis' defragmenter is one: a new block of the same ledger
 * and size, the bytes copied, the old one scribbled over and freed, so a
 * pointer the library failed to update reads garbage (and ASan calls it a
 * use after free). header: the ledger's bytes in front of a block. */
static long moves;
static void *move_ledger(void *arg, void *p)
{
    size_t header = *(const size_t *)arg;
    size_t n = *(size_t *)(void *)((uint8_t *)p - header);
    void *q = header == 64 ? aligned_ledger_alloc(n)
              : ledger_alloc_aligned(n, ((uintptr_t)p & 63) == 0 ? 64 : 1);
    if (!q)
        return NULL;
    memcpy(q, p, n);
    memset(p, 0x5A, n);
    if (header == 64)
        aligned_ledger_free(p);
    else
        ledger_free(p);
    moves++;
    return q;
}

/* Every kind a server keeps (single arrays inline and on their own, a
 * grown chain, a window, a cuckoo filter with its sub-filters), through a
 * ledger whose blocks keep their payload's alignment (the payload is the
 * block) and one whose do not (the payload is shifted to a 64-byte
 * boundary in the new block): every live block is offered and moved,
 * answers are unchanged, the payloads stay aligned, nothing leaks. */
static void test_defrag_moves_every_block(void)
{
    static const size_t headers[] = {64, 16};
    const struct {
        bk_kind_t kind;
        uint64_t cap;
        uint64_t keys;
    } shapes[] = {{BK_KIND_BLOCKED, 10, 10},       {BK_KIND_BLOCKED, 20000, 5000},
                  {BK_KIND_CLASSIC, 30, 20},       {BK_KIND_COUNTING, 5000, 3000},
                  {BK_KIND_SPLIT, 5000, 3000},     {BK_KIND_PRECISE, 50, 40},
                  {BK_KIND_BLOCKED2, 5000, 3000},  {BK_KIND_SCALABLE, 100, 5000},
                  {BK_KIND_WINDOW, 2000, 5000},    {BK_KIND_CUCKOO, 500, 3000},
                  /* one sub-filter: its one-key calls' own pointer to the
                   * buckets moves with them */
                  {BK_KIND_CUCKOO, 5000, 3000}};
    for (size_t h = 0; h < 2; h++) {
        CHECK_OK(bk_allocator_set(h == 0 ? &aligned_ledger : &ledger));
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            bk_options_t o = {.kind = shapes[i].kind, .seed = 7, .seed_set = true};
            bk_filter_t *f = NULL;
            CHECK_OK(bk_filter_create(&f, shapes[i].cap, 0.01, &o));
            if (!f)
                continue;
            for (uint64_t k = 0; k < shapes[i].keys; k++)
                CHECK_OK(bk_filter_add(f, &k, sizeof k, NULL));
            /* Answers before: every key, and a sample of others. */
            enum { PROBES = 20000 };
            static bool before[PROBES];
            for (uint64_t k = 0; k < PROBES; k++)
                before[k] = bk_filter_contains(f, &k, sizeof k);
            bk_filter_info_t in0, in1;
            bk_filter_info(f, &in0);
            long live = blocks;
            moves = 0;
            size_t moved = bk_filter_defrag(&f, move_ledger, (void *)&headers[h]);
            CHECK_MSG(moved == (size_t)moves && moves == live,
                      "kind %d: %zu reported, %ld moved, %ld blocks live", (int)shapes[i].kind,
                      moved, moves, live);
            CHECK_EQ_U64(blocks, (uint64_t)live);
            int wrong = 0;
            for (uint64_t k = 0; k < PROBES; k++)
                wrong += bk_filter_contains(f, &k, sizeof k) != before[k];
            CHECK_MSG(wrong == 0, "kind %d: %d answers changed", (int)shapes[i].kind, wrong);
            bk_filter_info(f, &in1);
            CHECK_EQ_U64(in1.items, in0.items);
            CHECK_EQ_U64(in1.cells_set, in0.cells_set);
            const bk_filter_t *arr = f->kind == BK_KIND_SCALABLE ? f->subs[f->nsubs - 1] : f;
            if (arr->data)
                CHECK_MSG(((uintptr_t)arr->data & 63) == 0, "kind %d header %zu misaligned", (int)shapes[i].kind, headers[h]);
            /* And it goes on working: adds after the move. */
            uint64_t more = UINT64_C(1) << 40;
            CHECK_OK(bk_filter_add(f, &more, sizeof more, NULL));
            CHECK(bk_filter_contains(f, &more, sizeof more));
            bk_filter_free(f);
            CHECK_EQ_U64(used, 0);
        }
        /* The cuckoo filter of the public bk_cuckoo calls (the Redis CF). */
        bk_cuckoo_t *c = NULL;
        CHECK_OK(bk_cuckoo_create(&c, 300, 0.01, NULL));
        for (uint64_t k = 0; k < 2000; k++)
            CHECK_OK(bk_cuckoo_add(c, &k, sizeof k));
        long live = blocks;
        moves = 0;
        CHECK(bk_cuckoo_defrag(&c, move_ledger, (void *)&headers[h]) == (size_t)live);
        CHECK(moves == live);
        int missing = 0;
        for (uint64_t k = 0; k < 2000; k++)
            missing += !bk_cuckoo_contains(c, &k, sizeof k);
        CHECK_MSG(missing == 0, "%d keys lost", missing);
        bk_cuckoo_free(c);
        CHECK_EQ_U64(used, 0);
        CHECK_OK(bk_allocator_set(NULL));
    }
    /* Nothing of the default allocator's is offered. */
    bk_filter_t *f = NULL;
    CHECK_OK(bk_filter_create(&f, 1000, 0.01, NULL));
    size_t header = 16;
    moves = 0;
    CHECK(bk_filter_defrag(&f, move_ledger, &header) == 0 && moves == 0);
    bk_filter_free(f);
}

int main(void)
{
    bkt_run("allocator set rules", test_set_rules);
    bkt_run("all memory through the allocator", test_all_memory_through_allocator);
    bkt_run("growth, clone and load through the allocator", test_growth_clone_load);
    bkt_run("allocator refusal is BK_ENOMEM", test_refusal_is_enomem);
    bkt_run("no overhead when aligned", test_no_overhead_when_aligned);
    bkt_run("defrag moves every block", test_defrag_moves_every_block);
    return bkt_finish();
}
