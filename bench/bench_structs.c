/*
 * Counting and scalable vs. blocked filter, side by side in one run: bits per key for the
 * same (n, p), and nanoseconds per operation (add, lookup of present keys,
 * lookup of absent keys, batched lookup, remove) on a filter that fits in
 * the caches and on one far larger than them. The blocked filter is the
 * peer: the counting filter uses the same one-line layout with 4-bit
 * counters, so it should cost about 4x the memory and, being one memory
 * access per key too, a similar time per operation.
 *
 * A third row shows what not knowing n costs: a scalable filter started at
 * n/63 that grew (growth 2, tightening 0.5) to hold the same n keys. Its
 * later sub-filters have tighter errors (more bits per key), and a lookup of
 * an absent key probes every sub-filter, one line each.
 *
 * Each timing is the median of REPS runs; the machine is shared, so read the
 * ratios, which are measured back to back. BK_BENCH_QUICK=1 shrinks sizes.
 */
#define _GNU_SOURCE
#include "bloomkit/bloomkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

#define REPS 5

/* Keys: 16-byte strings from a counter, like short URLs' ids. */
static char *make_keys(uint64_t n, uint64_t base)
{
    char *k = malloc(n * 16);
    if (!k)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = (base + i) * UINT64_C(0x9E3779B97F4A7C15);
        snprintf(k + i * 16, 17, "%016llx", (unsigned long long)x);
    }
    return k;
}

typedef struct row {
    double bits_per_key, add, hit, miss, batch, remove, fpr;
    uint32_t subs;
} row_t;

static volatile size_t sink;

/* Scalable filters start at n / SCALABLE_START and grow (growth 2) to n:
 * with 63 = 1 + 2 + ... + 32, six sub-filters end up just full, the
 * chain's best case for memory (right after a growth, the newest, largest
 * sub-filter would be nearly empty). */
#define SCALABLE_START 63

static int run_kind(bk_kind_t kind, uint64_t n, const char *present, const char *absent,
                    row_t *out)
{
    double t_add[REPS], t_hit[REPS], t_miss[REPS], t_batch[REPS], t_rm[REPS];
    bk_key_t *kv = malloc(n * sizeof *kv);
    bool *flags = malloc(n);
    if (!kv || !flags)
        return 1;
    for (uint64_t i = 0; i < n; i++) {
        kv[i].ptr = absent + i * 16;
        kv[i].len = 16;
    }
    bk_options_t o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.seed_set = true;
    o.seed = 42;
    for (int r = 0; r < REPS; r++) {
        bk_filter_t *f;
        uint64_t cap = kind == BK_KIND_SCALABLE ? n / SCALABLE_START : n;
        if (bk_filter_create(&f, cap, 0.01, &o) != BK_OK)
            return 1;
        double t0 = now_ns();
        for (uint64_t i = 0; i < n; i++)
            bk_filter_add(f, present + i * 16, 16, NULL);
        t_add[r] = (now_ns() - t0) / (double)n;

        size_t hits = 0;
        t0 = now_ns();
        for (uint64_t i = 0; i < n; i++)
            hits += bk_filter_contains(f, present + i * 16, 16);
        t_hit[r] = (now_ns() - t0) / (double)n;

        size_t fp = 0;
        t0 = now_ns();
        for (uint64_t i = 0; i < n; i++)
            fp += bk_filter_contains(f, absent + i * 16, 16);
        t_miss[r] = (now_ns() - t0) / (double)n;

        t0 = now_ns();
        sink += bk_filter_contains_batch(f, kv, n, flags);
        t_batch[r] = (now_ns() - t0) / (double)n;

        if (kind == BK_KIND_COUNTING) {
            t0 = now_ns();
            for (uint64_t i = 0; i < n; i++)
                hits += bk_filter_remove(f, present + i * 16, 16) == BK_OK;
            t_rm[r] = (now_ns() - t0) / (double)n;
        } else {
            t_rm[r] = 0;
        }
        sink += hits;
        bk_filter_info_t info;
        bk_filter_info(f, &info);
        out->bits_per_key = (double)info.bytes * 8.0 / (double)n;
        out->fpr = (double)fp / (double)n;
        out->subs = info.filters;
        bk_filter_free(f);
    }
    out->add = median(t_add, REPS);
    out->hit = median(t_hit, REPS);
    out->miss = median(t_miss, REPS);
    out->batch = median(t_batch, REPS);
    out->remove = median(t_rm, REPS);
    free(kv);
    free(flags);
    return 0;
}

static void print_row(const char *name, const row_t *r)
{
    printf("| %-8s | %6.2f | %7.2f | %7.2f | %7.2f | %7.2f | ", name, r->bits_per_key, r->add,
           r->hit, r->miss, r->batch);
    if (r->remove > 0)
        printf("%7.2f", r->remove);
    else
        printf("%7s", "-");
    printf(" | %.4f |\n", r->fpr);
}

int main(void)
{
    const char *quick = getenv("BK_BENCH_QUICK");
    bool q = quick && *quick && strcmp(quick, "0") != 0;
    const uint64_t sizes[] = {q ? 100000 : 1000000, q ? 2000000 : 20000000};
    printf("## Counting and scalable vs. blocked filter (p = 0.01, 16-byte keys, XXH3; ns per op, median of "
           "%d)\n",
           REPS);
    for (int s = 0; s < 2; s++) {
        uint64_t n = sizes[s];
        char *present = make_keys(n, 0), *absent = make_keys(n, UINT64_C(1) << 40);
        if (!present || !absent) {
            fprintf(stderr, "bench_structs: out of memory\n");
            return 1;
        }
        row_t blocked, counting, scalable;
        if (run_kind(BK_KIND_BLOCKED, n, present, absent, &blocked) ||
            run_kind(BK_KIND_COUNTING, n, present, absent, &counting) ||
            run_kind(BK_KIND_SCALABLE, n, present, absent, &scalable)) {
            fprintf(stderr, "bench_structs: filter creation failed\n");
            return 1;
        }
        printf("\nn = %llu keys (blocked %.1f MB, counting %.1f MB, scalable %.1f MB)\n\n",
               (unsigned long long)n, blocked.bits_per_key * (double)n / 8e6,
               counting.bits_per_key * (double)n / 8e6, scalable.bits_per_key * (double)n / 8e6);
        printf("| kind     | bits/key | add | contains (present) | contains (absent) | "
               "contains_batch | remove | measured FPR |\n");
        printf("|---|---|---|---|---|---|---|---|\n");
        print_row("blocked", &blocked);
        print_row("counting", &counting);
        printf("| ratio    | %6.2fx | %6.2fx | %6.2fx | %6.2fx | %6.2fx |         |        |\n",
               counting.bits_per_key / blocked.bits_per_key, counting.add / blocked.add,
               counting.hit / blocked.hit, counting.miss / blocked.miss,
               counting.batch / blocked.batch);
        print_row("scalable", &scalable);
        printf("| ratio    | %6.2fx | %6.2fx | %6.2fx | %6.2fx | %6.2fx |         |        |\n",
               scalable.bits_per_key / blocked.bits_per_key, scalable.add / blocked.add,
               scalable.hit / blocked.hit, scalable.miss / blocked.miss,
               scalable.batch / blocked.batch);
        printf("\n(scalable: started at n/%d, grown to %u blocked sub-filters; ratios are to "
               "blocked)\n",
               SCALABLE_START, scalable.subs);
        free(present);
        free(absent);
    }
    return 0;
}
