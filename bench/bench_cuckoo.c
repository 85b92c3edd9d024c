/*
 * Benchmark: the cuckoo filter against the counting Bloom filter (the
 * articles' way to delete) and the Bloom kinds it sits beside, side by side
 * in one run on the same keys, at 1e-3: bytes per key, and ns per add,
 * lookup of added (+) and absent (-) keys, and delete, one key per call
 * and (lookups) in batches of 1024. Sizes: 1 million keys (mostly in the
 * caches) and 100 million (BK_BENCH_QUICK=1: 1 million only).
 *
 * It asserts nothing: it prints a table. Each time is the median of RUNS
 * runs over different slices of the keys; compare rows of one run.
 */
#define _GNU_SOURCE
#include "bloomkit/bloomkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

#define RUNS 5
#define FPR 1e-3
#define BATCH 1024u

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

typedef struct row {
    const char *name;
    bk_kind_t kind;
    bool deletes;
} row_t;

static const row_t rows[] = {
    {"cuckoo", BK_KIND_CUCKOO, true},
    {"counting", BK_KIND_COUNTING, true},
    {"blocked", BK_KIND_BLOCKED, false},
    {"split", BK_KIND_SPLIT, false},
};

/* ns per call of `op` over keys [from, from + count) of `f`, median of
 * RUNS slices. */
typedef enum { OP_ADD, OP_HIT, OP_MISS, OP_DEL, OP_HIT_BATCH, OP_MISS_BATCH } op_t;

static double time_op(bk_filter_t *f, op_t op, uint64_t n, uint64_t per_run, uint64_t *sink)
{
    double t[RUNS];
    bk_key_t *batch = malloc(BATCH * sizeof *batch);
    uint64_t *vals = malloc(BATCH * sizeof *vals);
    bool *out = malloc(BATCH);
    for (int r = 0; r < RUNS; r++) {
        uint64_t base = (uint64_t)r * per_run;
        double t0 = now_ns();
        if (op == OP_HIT_BATCH || op == OP_MISS_BATCH) {
            for (uint64_t i = 0; i < per_run; i += BATCH) {
                for (uint32_t j = 0; j < BATCH; j++) {
                    uint64_t idx = base + i + j;
                    vals[j] = mix64(op == OP_HIT_BATCH ? idx % n : n + idx);
                    batch[j].ptr = &vals[j];
                    batch[j].len = sizeof vals[j];
                }
                *sink += bk_filter_contains_batch(f, batch, BATCH, out);
            }
        } else {
            for (uint64_t i = 0; i < per_run; i++) {
                uint64_t idx = base + i, key;
                switch (op) {
                case OP_HIT: key = mix64(idx % n); *sink += bk_filter_contains(f, &key, 8); break;
                case OP_MISS: key = mix64(n + idx); *sink += bk_filter_contains(f, &key, 8); break;
                case OP_DEL: key = mix64(idx); *sink += bk_filter_remove(f, &key, 8) == BK_OK; break;
                default: break;
                }
            }
        }
        t[r] = (now_ns() - t0) / (double)per_run;
    }
    free(batch);
    free(vals);
    free(out);
    return median(t, RUNS);
}

static void bench_size(uint64_t n)
{
    printf("\n%llu keys at p = %g\n\n", (unsigned long long)n, FPR);
    printf("| kind | bits/key | bytes vs counting | add ns | lookup+ ns | lookup- ns | "
           "batch+ ns | batch- ns | delete ns | measured FPR |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    uint64_t counting_bytes = 0, sink = 0;
    bk_plan_t cp;
    if (bk_plan(BK_KIND_COUNTING, n, FPR, &cp) == BK_OK)
        counting_bytes = cp.bytes;
    uint64_t per_run = n / RUNS < 2000000 ? n / RUNS : 2000000;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        bk_options_t o = {.kind = rows[r].kind, .seed_set = true, .seed = 42};
        bk_filter_t *f = NULL;
        if (bk_filter_create(&f, n, FPR, &o) != BK_OK) {
            printf("| %s | (cannot be made here) |\n", rows[r].name);
            continue;
        }
        double t0 = now_ns();
        for (uint64_t i = 0; i < n; i++) {
            uint64_t key = mix64(i);
            bk_filter_add(f, &key, sizeof key, NULL);
        }
        double add = (now_ns() - t0) / (double)n;
        bk_filter_shape_t s;
        bk_filter_shape(f, &s);
        double hit = time_op(f, OP_HIT, n, per_run, &sink);
        double miss = time_op(f, OP_MISS, n, per_run, &sink);
        double bhit = time_op(f, OP_HIT_BATCH, n, per_run, &sink);
        double bmiss = time_op(f, OP_MISS_BATCH, n, per_run, &sink);
        uint64_t fp = 0, probes = 1000000;
        for (uint64_t i = 0; i < probes; i++) {
            uint64_t key = mix64(4 * n + i);
            fp += bk_filter_contains(f, &key, sizeof key);
        }
        char del[32] = "-";
        if (rows[r].deletes)
            snprintf(del, sizeof del, "%.1f", time_op(f, OP_DEL, n, per_run, &sink));
        printf("| %s | %.2f | %.2fx | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %.2e |\n",
               rows[r].name, 8.0 * (double)s.bytes / (double)n,
               counting_bytes ? (double)s.bytes / (double)counting_bytes : 0.0, add, hit, miss,
               bhit, bmiss, del, (double)fp / (double)probes);
        bk_filter_free(f);
    }
    if (sink == 42) /* keeps the lookups from being optimized away */
        printf(" \n");
}

int main(void)
{
    int quick = getenv("BK_BENCH_QUICK") != NULL;
    printf("## Cuckoo filter against counting and Bloom filters (bench/bench_cuckoo.c)\n");
    bench_size(1000000);
    if (!quick)
        bench_size(100000000);
    return 0;
}
